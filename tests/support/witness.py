"""A real C2SP tlog-witness for the ledger's tests: Filippo Valsorda's litewitness
(``filippo.io/torchwood/cmd/litewitness``, Go), built by ``.ci/run`` with ``go install``
and named by ``ARCHIVE_TEST_WITNESS`` (the binary's path). It is not ours: it checks the
log's signature and the consistency proofs itself and keeps what it cosigned in its own
SQLite database.

Its key lives in an ssh-agent of its own (``ssh-keygen``, ``ssh-agent``, ``ssh-add`` from
OpenSSH), as litewitness takes it. A log is made known to it as its operator tool
``witnessctl add-log`` / ``add-key`` does (that tool cannot be built here: a module it
needs is not served): a row in its ``log`` table (the origin at size 0 with the empty
tree's hash) and one in its ``key`` table (the log's verifier key).
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import apsw
import pytest

WITNESS_ENV = "ARCHIVE_TEST_WITNESS"


def witness_binary() -> str:
    return os.environ.get(WITNESS_ENV, "")


needs_witness = pytest.mark.skipif(
    not witness_binary(),
    reason=f"no witness ({WITNESS_ENV}: the litewitness binary .ci/run builds)",
)


@dataclass
class RunningWitness:
    name: str
    url: str
    vkey: str
    db: Path

    def add_log(self, origin: str, log_vkey: str) -> None:
        """Make the log known to the witness, at size 0 (as ``witnessctl add-log`` and
        ``add-key`` do)."""
        empty = base64.b64encode(hashlib.sha256(b"").digest()).decode("ascii")
        connection = apsw.Connection(str(self.db))
        connection.setbusytimeout(5000)
        try:
            with connection:
                connection.execute(
                    "INSERT INTO log (origin, tree_size, tree_hash) VALUES (?, 0, ?)",
                    (origin, empty),
                )
                connection.execute(
                    "INSERT INTO key (origin, key) VALUES (?, ?)", (origin, log_vkey)
                )
        finally:
            connection.close()

    def size_of(self, origin: str) -> int:
        """The size the witness last cosigned for ``origin`` (its own record)."""
        connection = apsw.Connection(str(self.db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rows = list(connection.execute("SELECT tree_size FROM log WHERE origin = ?", (origin,)))
        finally:
            connection.close()
        return int(rows[0][0])

    def setting(self) -> str:
        """This witness as ``ARCHIVE_LEDGER_WITNESSES`` names one."""
        return f"{self.url} {self.vkey}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(what: str, ready: object, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(0.05)
    raise AssertionError(f"the witness's {what} did not start within {seconds:g} s")


@contextmanager
def running_witness(folder: Path, name: str) -> Iterator[RunningWitness]:
    """A litewitness named ``name`` on a free loopback port, its key and database in
    ``folder``; stopped on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    key, sock, db = folder / "witness-key", folder / "agent.sock", folder / "witness.db"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{key}.pub"],
        check=True,
        capture_output=True,
        text=True,
    )
    fingerprint = listed.stdout.split()[1]
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    witness = None
    try:
        _wait_for("ssh-agent", sock.exists)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(key)], check=True, env=env, capture_output=True)
        port = _free_port()
        command = [witness_binary(), "-db", str(db), "-name", name, "-key", fingerprint]
        command += ["-ssh-agent", str(sock), "-listen", f"127.0.0.1:{port}"]
        with (folder / "witness.log").open("wb") as errors:
            witness = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        url = f"http://127.0.0.1:{port}"
        page: list[str] = []

        def answers() -> bool:
            try:
                with urllib.request.urlopen(url + "/", timeout=1) as response:
                    page.append(html.unescape(response.read().decode()))
                    return True
            except OSError:
                return witness is not None and witness.poll() is not None

        _wait_for("HTTP server", answers)
        assert witness.poll() is None, (folder / "witness.log").read_text()
        [vkey] = re.findall(rf"{re.escape(name)}\+[0-9a-f]{{8}}\+[A-Za-z0-9+/=]+", page[-1])
        yield RunningWitness(name, url, vkey, db)
    finally:
        for process in (witness, agent):
            if process is not None:
                process.terminate()
                process.wait(10)
