"""The ``imixs-archive`` command line: thin commands over the archive and service layers.

Each module in this package registers its commands (``register(sub)``); a command is a
function ``(args, ctx) -> exit code``. A command imports only its own module (and what
that needs): the parser of every command is built only for the top-level help or a
command not known (``COMMANDS`` names each command's module). Errors are mapped once, in
:func:`main`: an ``ArchiveError`` prints its message and exits with its code; anything
unexpected prints one line (a traceback only with ``IMIXS_ARCHIVE_DEBUG=1``). No
traceback reaches a user.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from imixs_archive import __version__
from imixs_archive.errors import ArchiveError

if TYPE_CHECKING:
    from imixs_archive.services.workers import Standby

COMMAND_MODULES = (  # in the order of the help
    "archive_commands",
    "recovery_commands",
    "analyze_commands",
    "retention_commands",
    "sync_commands",
    "serve_commands",
    "doctor_commands",
    "ftps_commands",
    "ledger_commands",
)
COMMANDS = {  # each command and the module registering it (a test holds them together)
    **dict.fromkeys(
        (
            "import",
            "get",
            "file",
            "list",
            "delete",
            "verify",
            "copy-store",
            "gc",
            "compact",
            "stats",
        ),
        "archive_commands",
    ),
    **dict.fromkeys(("backup", "restore", "export"), "recovery_commands"),
    **dict.fromkeys(("analyze", "export-table"), "analyze_commands"),
    **dict.fromkeys(("retention", "legal-hold"), "retention_commands"),
    **dict.fromkeys(("sync", "resync"), "sync_commands"),
    **dict.fromkeys(("serve", "hash-password"), "serve_commands"),
    "doctor": "doctor_commands",
    "backup-events": "ftps_commands",
    "ledger": "ledger_commands",
}
_DATA_DIR = "--data-dir"


def command_of(argv: Sequence[str]) -> str | None:
    """The command word of ``argv`` (past the options before it), if any."""
    at = _command_at(argv)
    return None if at is None else argv[at]


def _command_at(argv: Sequence[str]) -> int | None:
    skip = False
    for at, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == "--":
            return at + 1 if at + 1 < len(argv) else None
        elif not arg.startswith("-"):
            return at
        elif len(arg) > 2 and "=" not in arg and _DATA_DIR.startswith(arg):
            skip = True  # its value (argparse takes abbreviations of long options)
    return None


_PARSED_BY = "_usage_parser"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line, as every error of this CLI:
    ``imixs-archive import: error: ... (see imixs-archive import --help)``, exit 2. The
    parsers of the commands are of this class too (``add_subparsers`` makes them so)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, _PARSED_BY):  # the innermost (sub)command's parser
            setattr(parsed, _PARSED_BY, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        parser: argparse.ArgumentParser = getattr(parsed, _PARSED_BY, self)
        delattr(parsed, _PARSED_BY)
        if extras:  # named by the command they were given to
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``command`` (a known one) of that one only."""
    parser = Parser(
        prog="imixs-archive",
        description="Archive Imixs-Workflow snapshots on SQLite or Cassandra.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(  # also accepted before the command; after it, it wins
        "--data-dir",
        dest="data_dir_first",
        type=Path,
        help="embedded store folder (env ARCHIVE_DATA_DIR)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = (COMMANDS[command],) if command in COMMANDS else COMMAND_MODULES
    for name in names:
        import_module(f"imixs_archive.cli.{name}").register(sub)
    return parser


STANDBY_FROM_BYTES = 32 * 1024 * 1024
"""An import of at least this many bytes of files starts its workers before it loads the
archive's modules (the workers' interpreters start meanwhile; ``services.workers``)."""


def standby_workers(command: str | None, argv: Sequence[str]) -> Standby | None:
    """Workers for an ``import`` of large files by default (no ``--jobs``), started now."""
    skip = ("-h", "--help", "-")
    if command != "import" or any(a in skip or a.startswith("--jobs") for a in argv):
        return None
    from imixs_archive.services.workers import Standby, default_jobs

    jobs = default_jobs()
    if jobs < 2 or _bytes_named(argv, STANDBY_FROM_BYTES) < STANDBY_FROM_BYTES:
        return None
    try:
        return Standby(jobs - 1, ("imixs_archive.services.importer",))
    except OSError:  # no processes to be had now: the import starts its own, or works alone
        return None


def _bytes_named(argv: Sequence[str], enough: int) -> int:
    """Bytes of the inputs named after the command (``services.sources``, as the import
    will find them), counted until ``enough``; options and their values are skipped. A
    guess only: what cannot be found counts nothing (the command reports it)."""
    from imixs_archive.services.sources import find_sources

    total = 0
    at = _command_at(argv)
    args = iter(argv[at + 1 :] if at is not None else ())
    for arg in args:
        if arg == _DATA_DIR:
            next(args, None)
        if arg.startswith("-"):
            continue
        try:
            total += sum(source.size or 0 for source in find_sources([arg]))
        except (ArchiveError, OSError):
            continue
        if total >= enough:
            break
    return total


INTERRUPTED = 130
"""The exit code after Ctrl-C (128 + SIGINT, as a shell reports it)."""


def main(argv: Sequence[str] | None = None) -> int:
    argv_given = argv is not None  # else this is the program: Ctrl-C stays ours to its exit
    argv = sys.argv[1:] if argv is None else argv
    standby: Standby | None = None
    at_a_terminal = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if at_a_terminal and threading.current_thread() is threading.main_thread():
        _stopping.clear()
        _ended.clear()
        signal.signal(signal.SIGINT, _on_ctrl_c)
        if not argv_given:
            atexit.register(_exit_interrupted)
    try:
        command = command_of(argv)
        standby = standby_workers(command, argv)
        return _run(build_parser(command).parse_args(argv), standby)
    except KeyboardInterrupt:  # in the start-up (a command's own is met in _run)
        return _interrupted()
    except Exception:
        if _stopping.is_set():  # a Ctrl-C Python wrapped (a class made while it came)
            return _interrupted()
        raise
    finally:
        if standby is not None:
            standby.dismiss()  # a no-op once the command gave them work
        if at_a_terminal and argv_given and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)  # called, not the program


_stopping = threading.Event()


def _on_ctrl_c(_signum: int, _frame: object) -> None:
    """The first Ctrl-C stops the command where it is (``KeyboardInterrupt``: what it
    began is left as the next run completes it); a second one, while it stops, ends the
    process at once, as a kill would (every write is ordered for that)."""
    if _stopping.is_set():
        os.write(2, b"imixs-archive: interrupted again: stopped at once\n")
        os._exit(INTERRUPTED)
    _stopping.set()
    raise KeyboardInterrupt


_ended = threading.Event()
"""Set when a command was stopped by Ctrl-C and ``main`` answers ``INTERRUPTED``."""


def _interrupted() -> int:
    print("imixs-archive: interrupted", file=sys.stderr)
    _ended.set()
    return INTERRUPTED


def _exit_interrupted() -> None:
    """The program's last exit function (its work done, its worker processes ended): after
    a Ctrl-C, the process ends here with ``INTERRUPTED``. Left to the interpreter's own
    ending, a loaded machine saw it die of SIGINT now and then instead (exit -2, once the
    one line was printed): its cause lies in that ending, not found."""
    if _ended.is_set():
        gc.collect()  # what the stop left in cycles (queues of workers) is released first
        if "logging" in sys.modules:
            sys.modules["logging"].shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(INTERRUPTED)


def _run(args: argparse.Namespace, standby: Standby | None) -> int:
    from imixs_archive.cli.context import Context
    from imixs_archive.config import load_settings

    try:
        data_dir = getattr(args, "data_dir", None) or args.data_dir_first
        settings = load_settings(data_dir=data_dir)
        existing = getattr(args, "reads_only", False)
        writes = getattr(args, "writes", None)
        with Context(settings, existing_store=existing, writes=writes, standby=standby) as ctx:
            code: int = args.handler(args, ctx)
            return code
    except ArchiveError as exc:
        print(f"imixs-archive: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path given that cannot be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"imixs-archive: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last line of defence: one line, no traceback
        if _stopping.is_set():  # a Ctrl-C Python wrapped in another error
            return _interrupted()
        if os.environ.get("IMIXS_ARCHIVE_DEBUG"):
            traceback.print_exc()
        print(f"imixs-archive: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 70
