"""The program's way in: ``python -m imixs_archive`` and the ``imixs-archive`` script
(``run``). The command line is loaded here, inside a guard: a Ctrl-C while it loads (some
0.1 s, longer on a busy machine) is the one line every interrupted command prints."""

import sys

INTERRUPTED = 130


def run() -> int:
    try:
        from imixs_archive.cli import main
    except KeyboardInterrupt:
        print("imixs-archive: interrupted", file=sys.stderr)
        return INTERRUPTED
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
