"""A real vsftpd (Debian's package) on loopback, started per test session with a config
written here: explicit FTPS required for logins, ``require_ssl_reuse=YES`` (vsftpd's
default, written out), a self-signed certificate made here, and a local user chrooted to
a folder of the session.

Two set-ups (:data:`STRICT`, :data:`AS_FOR_JAVA`): data connections must be protected
(``force_local_data_ssl=YES``), or may be in clear as the Java backup service sends them
(``force_local_data_ssl=NO``, a certificate for ``ftp.example.org`` only, as the third
Java audit's server: the Java client does not check the host name).

vsftpd logs local users in through PAM, so it runs as root; the user
(:data:`USER`, a shell for Debian's ``pam_shells``) is made once per machine, its random
password kept in ``~/.cache/imixs-archive`` (one password for every session at once).
Without vsftpd, or not as root, the tests using it **fail** (they do not skip): ``.ci/run``
installs Debian's vsftpd.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.certificates import self_signed_pem

USER = "imixs-ftp-test"
STATE = Path.home() / ".cache" / "imixs-archive"
STRICT = {"force_local_data_ssl": "YES"}
AS_FOR_JAVA = {"force_local_data_ssl": "NO"}


def vsftpd_binary() -> str:
    """The vsftpd to run; a failed test (never a skip) when there is none or no root."""
    found = shutil.which("vsftpd") or next(
        (p for p in ("/usr/sbin/vsftpd", "/sbin/vsftpd") if os.access(p, os.X_OK)), None
    )
    if found is None:
        pytest.fail("vsftpd is not installed: apt-get install vsftpd (.ci/run installs it)")
    if os.geteuid() != 0:
        pytest.fail("the vsftpd tests run as root (vsftpd logs its local user in through PAM)")
    return found


def local_user() -> str:
    """The FTP user's password; the user made, and its password set, when missing."""
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "vsftpd-user.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        secret = STATE / "vsftpd-user"
        if not secret.exists():
            secret.touch(mode=0o600)
            secret.write_text(secrets.token_urlsafe(24))
        password = secret.read_text().strip()
        try:
            pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(
                ["useradd", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh", USER],
                check=True,
            )
        subprocess.run(["chpasswd"], input=f"{USER}:{password}\n", text=True, check=True)
    return password


@dataclass
class Vsftpd:
    """One running vsftpd: its address, the folder its user sees as ``/``, the CA file
    trusting its certificate."""

    host: str
    port: int
    root: Path
    cafile: Path
    password: str

    def folder(self, name: str) -> Path:
        """A new folder ``/<name>`` the FTP user may write in."""
        path = self.root / name
        path.mkdir()
        os.chown(path, pwd.getpwnam(USER).pw_uid, -1)
        return path

    def url(self, path: str) -> str:
        return f"ftps://{USER}@{self.host}:{self.port}{path}"

    def env(self, path: str, **more: str) -> dict[str, str]:
        """The ``BACKUP_FTP_*`` settings that back up into ``path`` of this server."""
        return {
            "BACKUP_FTP_HOST": self.host,
            "BACKUP_FTP_PORT": str(self.port),
            "BACKUP_FTP_USER": USER,
            "BACKUP_FTP_PASSWORD": self.password,
            "BACKUP_FTP_PATH": path,
            "BACKUP_FTP_CAFILE": str(self.cafile),
            **more,
        }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(folder: Path, port: int, pem: Path, setup: dict[str, str]) -> str:
    empty = folder / "empty"  # vsftpd's unprivileged process is chrooted there
    empty.mkdir()
    lines = {
        "listen": "YES",
        "listen_ipv6": "NO",
        "listen_address": "127.0.0.1",
        "listen_port": str(port),
        "background": "NO",
        "anonymous_enable": "NO",
        "local_enable": "YES",
        "write_enable": "YES",
        "local_umask": "022",
        "local_root": str(folder / "root"),
        "chroot_local_user": "YES",
        "allow_writeable_chroot": "YES",
        "secure_chroot_dir": str(empty),
        "pam_service_name": "vsftpd",
        "ssl_enable": "YES",
        "rsa_cert_file": str(pem),
        "rsa_private_key_file": str(pem),
        "ssl_ciphers": "HIGH",  # 3.0.3's default (DES-CBC3-SHA) is off in OpenSSL 3
        "force_local_logins_ssl": "YES",
        "require_ssl_reuse": "YES",
        "seccomp_sandbox": "NO",  # its filter does not know every call of a newer libc
        "xferlog_enable": "NO",
        **setup,
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def _wait_listening(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            pytest.fail(f"vsftpd exited at start ({process.returncode}): {err.strip()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.05)
    pytest.fail("vsftpd did not listen within 20 s")


def run_vsftpd(
    setup: dict[str, str], names: tuple[str, ...], *, expired: bool = False
) -> Iterator[Vsftpd]:
    """vsftpd with ``setup`` over the defaults, its certificate for the DNS ``names`` (and
    127.0.0.1 unless they are given; ``expired`` an hour ago), until the generator is
    closed. Its folder is a new one in the system's temporary folder, not the test's:
    vsftpd enters ``local_root`` as the user, through every folder above it (pytest's are
    closed to others)."""
    binary, password = vsftpd_binary(), local_user()
    folder = Path(tempfile.mkdtemp(prefix="imixs-archive-vsftpd-"))
    try:
        folder.chmod(0o755)
        (folder / "root").mkdir()
        addresses = () if names else ("127.0.0.1",)
        cert, key = self_signed_pem(
            names[0] if names else "localhost", names, addresses, expired=expired
        )
        yield from _run(binary, password, folder, setup, (cert, key))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(
    binary: str, password: str, folder: Path, setup: dict[str, str], pems: tuple[bytes, bytes]
) -> Iterator[Vsftpd]:
    cert, key = pems
    pem, ca = folder / "server.pem", folder / "ca.pem"
    pem.write_bytes(key + cert)
    pem.chmod(0o600)
    ca.write_bytes(cert)
    port = _free_port()
    conf = folder / "vsftpd.conf"
    conf.write_text(_config(folder, port, pem, setup))
    process = subprocess.Popen(
        [binary, str(conf)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_listening(process, port)
        yield Vsftpd("127.0.0.1", port, folder / "root", ca, password)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # the listener and its sessions
        process.wait(10)
        if process.stderr:
            process.stderr.close()
