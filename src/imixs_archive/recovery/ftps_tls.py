"""The TLS of the FTPS target: how the server's certificate is checked
(``BACKUP_FTP_CERTIFICATE_CHECK``), whether the data connections are protected
(``BACKUP_FTP_PROTECT_DATA``), and the control connection's TLS session resumed on every
protected data connection.

Servers check that resumption: vsftpd (``require_ssl_reuse=YES``, its default) and
ProFTPD's mod_tls refuse a data connection that starts a TLS session of its own ("522 SSL
connection failed: session reuse required"), which is what Python's ``ftplib`` does. The
session is resumed in TLS 1.2 and 1.3 alike (vsftpd 3.0.3 with OpenSSL 3 takes the 1.3
session ticket; ``tests/recovery/test_ftps_vsftpd.py`` checks it on the real server).

The Java backup service (commons-net ``FTPSClient("TLS", false)``) sends no ``PROT P``
(its data connections are in clear) and checks only the dates of the server's
certificates; both are here as explicit, weaker choices, each warned about
(:func:`tls_warnings`).
"""

from __future__ import annotations

import datetime as dt
import ftplib
import socket
import ssl
from typing import Any

from imixs_archive.config import Settings

_NAME_MISMATCH = (62, 64)  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH


def tls_context(check: str, cafile: str) -> ssl.SSLContext:
    """The client context of one of ``FTP_CERTIFICATE_CHECKS`` (``dates``: no chain, no
    host name; the dates are checked by :class:`ResumingFTP` after the handshake)."""
    if check == "dates":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context = ssl.create_default_context(cafile=cafile or None)
    if check == "chain":
        context.check_hostname = False
    return context


def check_dates(sock: ssl.SSLSocket, now: dt.datetime | None = None) -> None:
    """The Java check: the server's certificate is within its validity dates
    (``ssl.SSLCertVerificationError`` if not)."""
    from cryptography import x509  # only this check needs it: loaded when made

    der = sock.getpeercert(binary_form=True)
    if der is None:
        raise ssl.SSLCertVerificationError("the FTPS server sent no certificate")
    cert = x509.load_der_x509_certificate(der)
    now = now or dt.datetime.now(dt.UTC)
    first, last = cert.not_valid_before_utc, cert.not_valid_after_utc
    if now < first:
        raise ssl.SSLCertVerificationError(
            f"the server's certificate is not valid before {first:%Y-%m-%d %H:%M} UTC"
        )
    if now > last:
        raise ssl.SSLCertVerificationError(
            f"the server's certificate expired on {last:%Y-%m-%d %H:%M} UTC"
        )


class ResumingFTP(ftplib.FTP_TLS):
    """``ftplib``'s explicit FTPS, with each protected data connection resuming the control
    connection's TLS session (as FileZilla, curl and commons-net with a session cache do),
    and with the dates check of ``BACKUP_FTP_CERTIFICATE_CHECK=dates`` made before the
    credentials are sent."""

    def __init__(self, *, context: ssl.SSLContext, timeout: float, check: str) -> None:
        super().__init__(context=context, timeout=timeout, encoding="utf-8")
        self._check = check
        self._protected = False

    def auth(self) -> str:
        answer = super().auth()
        if self._check == "dates":
            assert isinstance(self.sock, ssl.SSLSocket)
            check_dates(self.sock)
        return answer

    def prot_p(self) -> str:
        answer = super().prot_p()
        self._protected = True
        return answer

    def prot_c(self) -> str:
        answer = super().prot_c()
        self._protected = False
        return answer

    def ntransfercmd(self, cmd: str, rest: int | str | None = None) -> tuple[socket.socket, Any]:
        conn, size = ftplib.FTP.ntransfercmd(self, cmd, rest)
        if not self._protected:
            return conn, size
        assert isinstance(self.sock, ssl.SSLSocket)
        try:
            wrapped = self.context.wrap_socket(
                conn, server_hostname=self.host, session=self.sock.session
            )
        except BaseException:
            conn.close()
            raise
        return wrapped, size


def certificate_reason(exc: ssl.SSLCertVerificationError, check: str) -> str:
    """A failed certificate check, and the setting that decides it."""
    # (one raised by check_dates carries neither)
    what = getattr(exc, "verify_message", None) or str(exc)
    if getattr(exc, "verify_code", None) in _NAME_MISMATCH:
        return (
            f"the server's certificate is not for this host name ({what}); connect by the "
            "name the certificate holds, or set BACKUP_FTP_CERTIFICATE_CHECK=chain (no host "
            "name check)"
        )
    if check == "dates":
        return what
    return (
        f"the server's certificate failed the check ({what}); set BACKUP_FTP_CAFILE to the "
        "PEM file of the CA that signed it"
    )


def tls_warnings(settings: Settings) -> list[str]:
    """One line per weaker choice of the FTPS settings (for the commands, ``serve`` and
    ``doctor``)."""
    said = []
    if not settings.backup_ftp_protect_data:
        said.append(
            "BACKUP_FTP_PROTECT_DATA=false: the FTPS data connections are not encrypted "
            "(PROT C, as the Java backup service): the backup files cross the network in clear"
        )
    check = settings.backup_ftp_certificate_check
    if check == "chain":
        said.append(
            "BACKUP_FTP_CERTIFICATE_CHECK=chain: the FTPS server's host name is not checked: "
            "any server with a certificate of a trusted CA can take the password and the backup"
        )
    elif check == "dates":
        said.append(
            "BACKUP_FTP_CERTIFICATE_CHECK=dates: the FTPS server's certificate is checked for "
            "its dates only (as the Java backup service): anyone between this archive and "
            "the server can take the password and the backup"
        )
    return said
