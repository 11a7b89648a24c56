"""An FTPS backup target in the layout of the Java backup service (``imixs-archive-backup``).

Explicit FTPS as the Java ``FTPConnector`` connects (``AUTH TLS`` on the control
connection, port 21 by default, passive mode, binary), and with the data connections
protected too (``PROT P``, each resuming the control connection's TLS session); the
server's certificate is checked (``BACKUP_FTP_CAFILE`` or the system's CAs). Java's
clear data connections and its dates-only check are explicit, weaker settings
(``ftps_tls.py``). Files are ``<BACKUP_FTP_PATH>/<yyyy>/<MM>/<origin uniqueid>.xml``,
year and month of ``$created``: the Java backup service and this archive read each
other's trees.

Writes are whole or absent: a file is stored as ``<name>.part`` in the month folder's
``.imixs-archive-upload`` folder and renamed into the month folder, so a dropped
connection never leaves a truncated backup, and what one leaves is in a folder the Java
restore skips (it reads every *file* of a month folder, and a ``.part`` among them would
stop it). What each file holds is appended to
``.imixs-archive-backup`` in the root (``path<TAB>snapshot id``; compacted when long,
``ftps_manifest.py``), so a file holding the same or a newer snapshot is not written again
unless asked (``overwrite``). A file of the Java backup service (not recorded) is
replaced.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ftplib
import io
import logging
import ssl
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO
from urllib.parse import quote, unquote, urlsplit

from imixs_archive.config import Settings
from imixs_archive.document.conventions import snapshot_millis
from imixs_archive.errors import ArchiveError, ConfigError, TargetUnavailableError
from imixs_archive.recovery.ftps_manifest import COMPACT_AT, MANIFEST, Record, compact, read_record
from imixs_archive.recovery.ftps_tls import ResumingFTP, certificate_reason, tls_context
from imixs_archive.timezones import zone

log = logging.getLogger(__name__)

UPLOADS = ".imixs-archive-upload"
"""The folder in each month folder where uploads are written before their rename."""
BLOCK = 64 * 1024
_YEAR_MONTH = (4, 2)


@dataclass(frozen=True)
class FtpsLocation:
    host: str
    port: int = 21
    path: str = "/"
    user: str = ""
    password: str = ""
    cafile: str = ""
    timeout: float = 60.0
    zone: str = ""
    """The zone of the month folders (``BACKUP_FTP_TIMEZONE``); '' the offset of ``$created``."""
    protect_data: bool = True
    """``PROT P`` (``BACKUP_FTP_PROTECT_DATA``); False: ``PROT C``, as Java."""
    certificate_check: str = "full"
    """``BACKUP_FTP_CERTIFICATE_CHECK``: full, chain or dates."""

    def month_time(self, created: dt.datetime | None) -> dt.datetime | None:
        """``$created`` as its month folder reads it: in ``zone`` when one is set."""
        if created is None or not self.zone:
            return created
        return created.astimezone(zone(self.zone))

    @classmethod
    def from_settings(cls, settings: Settings, url: str | None = None) -> FtpsLocation:
        """``BACKUP_FTP_*``, or ``ftps://[user[:password]@]host[:port]/path`` (settings fill
        in what the URL leaves out; a password is better kept in BACKUP_FTP_PASSWORD)."""
        location = cls(
            host=settings.backup_ftp_host.strip(),
            port=settings.backup_ftp_port,
            path=settings.backup_ftp_path or "/",
            user=settings.backup_ftp_user,
            password=settings.backup_ftp_password,
            cafile=settings.backup_ftp_cafile,
            timeout=settings.workflow_rest_readtimeout / 1000,
            zone=settings.backup_ftp_timezone,
            protect_data=settings.backup_ftp_protect_data,
            certificate_check=settings.backup_ftp_certificate_check,
        )
        if url is not None:
            location = location._with_url(url)
        if not location.host:
            raise ConfigError("no FTPS host: set BACKUP_FTP_HOST or give ftps://host/path")
        return location

    def _with_url(self, url: str) -> FtpsLocation:
        parts = urlsplit(url)
        if parts.scheme != "ftps" or not parts.hostname:
            raise ConfigError(f"expected ftps://[user@]host[:port]/path, got {url!r}")
        try:
            port = parts.port or 21
        except ValueError:
            raise ConfigError(f"{url!r}: the port is not a number") from None
        return replace(
            self,
            host=parts.hostname,
            port=port,
            path=unquote(parts.path) or "/",
            user=unquote(parts.username) if parts.username else self.user,
            password=unquote(parts.password) if parts.password else self.password,
        )

    def url(self) -> str:
        """The location as a URL that :meth:`from_settings` reads back (no password)."""
        user = f"{quote(self.user, safe='')}@" if self.user else ""
        return f"ftps://{user}{self.host}:{self.port}{quote(self.path)}"

    def __str__(self) -> str:
        return f"ftps://{self.user + '@' if self.user else ''}{self.host}:{self.port}{self.path}"


def is_ftps(target: str) -> bool:
    return target.startswith("ftps://")


class _PieceReader(io.RawIOBase):
    """A file object over pieces, for ``storbinary``."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self._pieces = iter(pieces)
        self._rest = b""
        self.sent = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while not self._rest:
            piece = next(self._pieces, None)
            if piece is None:
                return b""
            self._rest = bytes(piece)
        size = len(self._rest) if size < 0 else size
        taken, self._rest = self._rest[:size], self._rest[size:]
        self.sent += len(taken)
        return taken


class TargetError(ArchiveError):
    """The FTPS server failed a transfer or a listing (the session is closed; the next
    call opens a new one). A session that cannot be opened at all is a
    ``TargetUnavailableError``."""


class FtpsTarget:
    """One FTPS session (reconnected after a failure); every error of the server is a
    ``TargetError``, a session that cannot be opened (unreachable, refused, login or TLS
    failing) a ``TargetUnavailableError``."""

    def __init__(self, location: FtpsLocation, *, compact_at: int = COMPACT_AT) -> None:
        self.location = location
        self.compact_at = compact_at
        """Lines of the record below which it is never compacted."""
        self._retry_at = 0
        """After a compaction that did not happen: the lines the record must pass before
        the next try (twice what it had); 0 once one has happened."""
        self._ftp: ftplib.FTP_TLS | None = None
        self._record: Record | None = None
        self._upload_folders: set[str] = set()
        """Month folders known to hold the uploads folder (made once per session)."""

    def __enter__(self) -> FtpsTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        ftp, self._ftp = self._ftp, None
        self._upload_folders.clear()
        if ftp is not None:
            try:
                ftp.quit()
            except ftplib.all_errors:
                ftp.close()

    def _session(self) -> ftplib.FTP_TLS:
        if self._ftp is not None:
            return self._ftp
        where = self.location
        check = where.certificate_check
        context = tls_context(check, where.cafile)
        ftp = ResumingFTP(context=context, timeout=where.timeout, check=check)
        try:
            ftp.connect(where.host, where.port)
            ftp.login(where.user, where.password)  # AUTH TLS first, as FTPSClient("TLS")
            if where.protect_data:
                ftp.prot_p()
            else:
                ftp.prot_c()  # as Java, which sends no PROT P: the data in clear
            ftp.set_pasv(True)
            ftp.voidcmd("TYPE I")
        except ssl.SSLCertVerificationError as exc:
            ftp.close()
            raise TargetUnavailableError(
                f"FTPS {where}: {certificate_reason(exc, check)}"
            ) from None
        except ftplib.all_errors as exc:
            ftp.close()
            raise TargetUnavailableError(f"FTPS {where}: {_reason(exc)}") from None
        self._ftp = ftp
        return ftp

    def _failed(self, what: str, exc: BaseException) -> TargetError:
        self.close()  # the session may be half dead: the next call reconnects
        return TargetError(f"FTPS {self.location}: {what}: {_reason(exc)}")

    def _root(self) -> str:
        return "/" + self.location.path.strip("/")

    # ---- writing -------------------------------------------------------------------

    def held(self) -> dict[str, str]:
        """What each file holds, as recorded (``path -> snapshot id``; the last wins), read
        once (and compacted when long)."""
        if self._record is None:
            try:
                self._record = read_record(self._session(), self._root())
            except ftplib.all_errors as exc:
                raise self._failed("reading the record of the backup files", exc) from None
            self._compact_if_long()
        return self._record.held

    def _compact_if_long(self) -> None:
        """Compact the record once it has grown past ``compact_at`` lines and twice its
        paths. A compaction that fails (or that another process is doing) is logged and
        left until the record has doubled again: not tried again at every file written;
        the record is whole either way."""
        if self._record is None or not self._record.too_long(max(self.compact_at, self._retry_at)):
            return
        try:
            compacted = compact(self._session(), self._root())
        except (ftplib.Error, OSError, EOFError, ArchiveError) as exc:  # ArchiveError: no session
            self.close()
            log.warning("FTPS %s: compacting %s failed: %s", self.location, MANIFEST, exc)
            compacted = None
        if compacted is not None:
            self._record, self._retry_at = compacted, 0
        else:
            self._retry_at = 2 * self._record.lines

    def needs(self, relative: str, snapshot_id: str) -> bool:
        """False when the file holds this snapshot or a newer one (as recorded)."""
        there = self.held().get(relative)
        if there is None:
            return True
        return there != snapshot_id and snapshot_millis(there) <= snapshot_millis(snapshot_id)

    def store(self, relative: str, pieces: Iterable[bytes], snapshot_id: str) -> int:
        """Write ``<root>/<relative>`` from pieces (as ``.part``, then renamed) and record
        it; returns the bytes sent."""
        folder, _, name = relative.rpartition("/")
        partial = f"{UPLOADS}/{name}.part"
        reader = _PieceReader(pieces)
        try:
            ftp = self._session()
            self._enter(ftp, folder)
            if folder not in self._upload_folders:
                with contextlib.suppress(ftplib.error_perm):  # there already
                    ftp.mkd(UPLOADS)
                self._upload_folders.add(folder)
            ftp.storbinary(f"STOR {partial}", reader, BLOCK)
            self._replace(ftp, partial, name)
            ftp.cwd(self._root())
            ftp.storbinary(f"APPE {MANIFEST}", io.BytesIO(f"{relative}\t{snapshot_id}\n".encode()))
        except ftplib.all_errors as exc:
            raise self._failed(f"writing {relative}", exc) from None
        except BaseException:  # the pieces failed (the archive): the upload is cut off
            self.close()
            raise
        self.held()[relative] = snapshot_id
        assert self._record is not None
        self._record.lines += 1
        self._compact_if_long()
        return reader.sent

    def _enter(self, ftp: ftplib.FTP_TLS, folder: str) -> None:
        """cwd to the root (which must exist, as in Java), then into folder, made if needed."""
        ftp.cwd(self._root())
        for part in filter(None, folder.split("/")):
            try:
                ftp.cwd(part)
            except ftplib.error_perm:
                ftp.mkd(part)
                ftp.cwd(part)

    @staticmethod
    def _replace(ftp: ftplib.FTP_TLS, partial: str, name: str) -> None:
        try:
            ftp.rename(partial, name)
        except ftplib.error_perm:  # a server that does not rename over a file
            ftp.delete(name)
            ftp.rename(partial, name)

    # ---- reading -------------------------------------------------------------------

    def retrieve(self, relative: str, out: IO[bytes]) -> int:
        """Copy ``<root>/<relative>`` into ``out``; returns the bytes read."""
        counted = [0]

        def write(block: bytes) -> None:
            out.write(block)
            counted[0] += len(block)

        try:
            ftp = self._session()
            ftp.cwd(self._root())
            ftp.retrbinary(f"RETR {relative}", write, BLOCK)
        except ftplib.all_errors as exc:
            raise self._failed(f"reading {relative}", exc) from None
        return counted[0]

    def backup_files(self) -> Iterator[str]:
        """``yyyy/MM/<name>.xml`` of the tree, sorted."""
        for year in self._names("", _YEAR_MONTH[0]):
            for month in self._names(year, _YEAR_MONTH[1]):
                folder = f"{year}/{month}"
                try:
                    ftp = self._session()
                    ftp.cwd(f"{self._root()}/{folder}")
                    names = ftp.nlst()
                except ftplib.all_errors as exc:
                    raise self._failed(f"listing {folder}", exc) from None
                for name in sorted(n.rpartition("/")[2] for n in names):
                    if name.endswith(".xml"):
                        yield f"{folder}/{name}"

    def _names(self, folder: str, digits: int) -> list[str]:
        try:
            ftp = self._session()
            ftp.cwd(f"{self._root()}/{folder}".rstrip("/") or "/")
            names = ftp.nlst()
        except ftplib.all_errors as exc:
            raise self._failed(f"listing {folder or self._root()}", exc) from None
        found = (n.rpartition("/")[2] for n in names)
        return sorted(n for n in found if len(n) == digits and n.isdigit())


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
