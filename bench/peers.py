"""This archive against restic and borg on the same snapshots, in one run.

    .venv/bin/python bench/peers.py                               # the recorded run
    .venv/bin/python bench/peers.py --instances 3 --scale 0.3     # a quick one
    .venv/bin/python bench/peers.py --repeat 3 --dir /work        # three rounds, medians

Generates process instances with several snapshots each, one XML file per snapshot as the
workflow exports them: metadata that mostly repeats from step to step (a growing history),
attachments carried forward (a scanned PDF and an office file, both already compressed:
random bytes), a text report edited slightly at some steps, new attachments added over
time (compressible text or incompressible images). Then, each in its own fresh repository:

- **restic** (repository version 2, compression ``auto``): ``restic backup`` of the folder,
  ``restic restore latest``;
- **borg** (``-e none``, ``--compression lz4``): ``borg create``, ``borg extract``;
- **this archive**: ``imixs-archive import`` of the folder into an embedded store,
  ``imixs-archive backup --all-snapshots`` (every piece read back is hashed and checked).

It prints for each the bytes stored (the repository or store folder), the ingest wall time
and the read-back wall time (with the CPU seconds each used: on a shared machine wall
times move with the load), and the ratios against the targets: stored <= 0.33 x restic,
ingest <= 1.0 x borg, read-back <= 1.0 x restic. Every read-back is compared with the
input after its timing (the peers' trees file by file; the archive's backup by the SHA-256
of each file, as its names differ). Each read-back runs twice: on disk, then into memory
(``--memory-dir``, /dev/shm by default), where no tool pays for the disk: the archive's
backup makes every file durable before it returns (fsync), the peers' restores leave their
files in the page cache, so on disk the peers are also timed with an ``os.sync()`` after.
Needs ``restic`` and ``borg`` on the PATH (Debian: ``apt-get install -y restic
borgbackup``). Not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import hashlib
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from imixs_archive.document.model import Document
from imixs_archive.document.xml_writer import write_xml

MB = 1024 * 1024
BASE = 1_700_000_000_000
_WORD_TEXT = (
    "invoice order customer amount approved pending review contract delivery payment "
    "account supplier quantity price total tax discount remark signed date reference "
    "the a of to and in for with on by is was be this that from as at"
)
WORDS = _WORD_TEXT.split()
TARGETS = {"stored": 0.33, "ingest": 1.0, "read-back": 1.0}


# --- the workload ---------------------------------------------------------------------


def text(rng: random.Random, size: int) -> bytes:
    """Compressible text: lines of words and numbers (zstd takes it to about a third)."""
    lines: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choices(WORDS, k=12)) + f" {rng.randrange(10**6)};{rng.random():.4f}\n"
        lines.append(line)
        length += len(line)
    return "".join(lines).encode()[:size]


def edited(rng: random.Random, data: bytes, step: int) -> bytes:
    """``data`` with a few bytes changed in one place (an edit between two steps)."""
    out = bytearray(data)
    at = rng.randrange(max(1, len(out) - 40))
    out[at : at + 24] = b"EDITED AT STEP %04d ...\n" % step
    return bytes(out)


def metadata(rng: random.Random) -> dict[str, Any]:
    """About 15 KB of items, most of them kept from step to step."""
    items: dict[str, Any] = {
        "txtworkflowgroup": "Invoice approval",
        "namcreator": f"user{rng.randrange(50)}",
        "_subject": " ".join(rng.choices(WORDS, k=8)),
        "_amount": round(rng.uniform(10, 10_000), 2),
    }
    for number in range(60):
        items[f"_field{number}"] = " ".join(rng.choices(WORDS, k=rng.randint(5, 40)))
    return items


@dataclass
class Instance:
    origin: str
    meta: dict[str, Any]
    files: dict[str, tuple[str, bytes]]
    history: list[str]


def new_instance(rng: random.Random, number: int, scale: float) -> Instance:
    def size(low: float, high: float) -> int:
        return max(1024, int(rng.uniform(low, high) * MB * scale))

    files = {
        "scan.pdf": ("application/pdf", rng.randbytes(size(0.2, 2.0))),
        "offer.docx": ("application/vnd.openxmlformats", rng.randbytes(size(0.1, 0.6))),
        "report.txt": ("text/plain", text(rng, size(0.3, 2.0))),
    }
    origin = f"{number:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
    return Instance(origin, metadata(rng), files, [])


def step_once(rng: random.Random, instance: Instance, step: int, scale: float) -> None:
    """What changes between two snapshots of one instance."""
    instance.meta["$taskid"] = 1000 + 10 * step
    instance.meta["_field0"] = " ".join(rng.choices(WORDS, k=20))
    instance.history.append(f"step {step}: " + " ".join(rng.choices(WORDS, k=10)))
    instance.meta["txtworkflowhistory"] = list(instance.history)
    if step and rng.random() < 0.5:
        mime, data = instance.files["report.txt"]
        instance.files["report.txt"] = (mime, edited(rng, data, step))
    if step and rng.random() < 0.3:
        size = max(1024, int(rng.uniform(0.2, 1.5) * MB * scale))
        if rng.random() < 0.5:
            instance.files[f"table-{step}.csv"] = ("text/csv", text(rng, size))
        else:
            instance.files[f"photo-{step}.jpg"] = ("image/jpeg", rng.randbytes(size))


def snapshot(instance: Instance, step: int) -> Document:
    millis = BASE + step * 3_600_000 + int(instance.origin[:8], 16) * 1000
    doc = Document(
        {
            "$uniqueid": f"{instance.origin}-{millis}",
            "$modified": dt.datetime.fromtimestamp(millis / 1000, dt.UTC),
            "$created": dt.datetime.fromtimestamp(BASE / 1000, dt.UTC),
            "type": "snapshot-workitem",
            **instance.meta,
        }
    )
    doc["$file"] = [{name: [mime, data, {}] for name, (mime, data) in instance.files.items()}]
    return doc


def generate(folder: Path, instances: int, scale: float, seed: int) -> dict[str, int]:
    """One XML file per snapshot; returns what was written."""
    rng = random.Random(seed)
    figures = {"snapshots": 0, "xml": 0, "attachments": 0, "distinct": 0}
    distinct: set[bytes] = set()
    for number in range(instances):
        instance = new_instance(rng, number, scale)
        for step in range(rng.randint(4, 8)):
            step_once(rng, instance, step, scale)
            doc = snapshot(instance, step)
            with (folder / f"{doc.get_first('$uniqueid')}.xml").open("wb") as out:
                figures["xml"] += write_xml(doc, out)
            figures["snapshots"] += 1
            for _mime, data in instance.files.values():
                figures["attachments"] += len(data)
                key = hashlib.sha256(data).digest()
                if key not in distinct:
                    distinct.add(key)
                    figures["distinct"] += len(data)
    return figures


# --- the tools ------------------------------------------------------------------------


@dataclass
class Result:
    stored: int
    ingest: float
    read_back: float
    ingest_cpu: float = 0.0
    read_back_cpu: float = 0.0
    sync: float = 0.0
    """Seconds of an ``os.sync()`` right after the read-back: the peers leave the files
    they wrote in the page cache; the archive's backup fsyncs each file (0 here)."""
    read_back_memory: float = 0.0
    """The read-back again, into ``--memory-dir`` (0: not run)."""


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system, all its threads)."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def timed_sync() -> float:
    started = time.perf_counter()
    os.sync()
    return time.perf_counter() - started


def same_tree(source: Path, copy: Path) -> None:
    """The restored tree holds every input file with the same bytes."""
    for path in source.iterdir():
        if digest(path) != digest(copy / path.name):
            sys.exit(f"read-back differs: {path.name}")


def same_files(source: Path, copy: Path) -> None:
    """The backup holds the input's files (named differently): SHA-256 of each agree."""
    wanted = sorted(digest(path) for path in source.iterdir())
    got = sorted(digest(path) for path in copy.rglob("*.xml"))
    if wanted != got:
        sys.exit(f"read-back differs: {len(got)} files, {len(wanted)} expected or other bytes")


def digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


MEMORY_DIR: list[Path] = []
"""``--memory-dir``: where each read-back runs a second time (no disk in it)."""


@dataclass
class ReadBacks:
    wall: float
    cpu: float
    sync: float
    memory: float


def read_backs(
    work: Path,
    name: str,
    read: Callable[[Path], tuple[float, float]],
    check: Callable[[Path], None],
    sync: bool = True,
) -> ReadBacks:
    """``read`` into a fresh folder on disk (then, with ``sync``, a timed ``os.sync()``),
    and again into memory when there is a ``MEMORY_DIR``; each output checked, removed."""
    out = work / f"{name}-out"
    wall, cpu = read(out)
    synced = timed_sync() if sync else 0.0
    check(out)
    shutil.rmtree(out)
    memory = 0.0
    if MEMORY_DIR:
        out = MEMORY_DIR[0] / f"{work.parent.name}-{work.name}-{name}-out"
        shutil.rmtree(out, ignore_errors=True)
        memory = read(out)[0]
        check(out)
        shutil.rmtree(out)
    return ReadBacks(wall, cpu, synced, memory)


def restic(inputs: Path, work: Path) -> Result:
    repo = work / "restic-repo"
    env = {**os.environ, "RESTIC_PASSWORD": "bench", "RESTIC_CACHE_DIR": str(work / "rcache")}
    run(["restic", "init", "--repo", str(repo), "--repository-version", "2"], work, env)
    ingest = run(["restic", "--repo", str(repo), "backup", "--quiet", "."], inputs, env)

    def read(out: Path) -> tuple[float, float]:
        return run(
            ["restic", "--repo", str(repo), "restore", "latest", "--target", str(out)], work, env
        )

    back = read_backs(work, "restic", read, lambda out: same_tree(inputs, out))
    return _result(folder_bytes(repo), ingest, back)


def _result(stored: int, ingest: tuple[float, float], back: ReadBacks) -> Result:
    return Result(stored, ingest[0], back.wall, ingest[1], back.cpu, back.sync, back.memory)


def borg(inputs: Path, work: Path) -> Result:
    repo = work / "borg-repo"
    env = {
        **os.environ,
        "BORG_BASE_DIR": str(work / "borg-base"),
        "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes",
        "BORG_RELOCATED_REPO_ACCESS_IS_OK": "yes",
    }
    run(["borg", "init", "-e", "none", str(repo)], work, env)
    ingest = run(["borg", "create", "--compression", "lz4", f"{repo}::bench", "."], inputs, env)

    def read(out: Path) -> tuple[float, float]:
        out.mkdir()
        return run(["borg", "extract", f"{repo}::bench"], out, env)

    back = read_backs(work, "borg", read, lambda out: same_tree(inputs, out))
    return _result(folder_bytes(repo), ingest, back)


def compile_bytecode(source: Path | None) -> None:
    """Byte-compile the archive's modules first, as ``pip install`` does: with
    ``PYTHONDONTWRITEBYTECODE`` set (or a read-only tree) every CLI start would compile
    them again (~0.1-0.2 s CPU each)."""
    import imixs_archive

    folder = Path(imixs_archive.__file__).parent if source is None else source / "imixs_archive"
    compileall.compile_dir(folder, quiet=2)


def archive(inputs: Path, work: Path, source: Path | None = None) -> Result:
    """``source``: a ``src`` folder of other code of this archive to run instead (an A/B
    baseline: ``git archive <commit> src | tar -x -C <dir>``)."""
    store = work / "archive-store"
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    command = [sys.executable, "-m", "imixs_archive"]
    ingest = run([*command, "import", str(inputs), "--data-dir", str(store)], work, env)

    def read(out: Path) -> tuple[float, float]:
        return run(
            [*command, "backup", str(out), "--create", "--all-snapshots", "--data-dir", str(store)],
            work,
            env,
        )

    back = read_backs(work, "archive", read, lambda out: same_files(inputs, out), sync=False)
    return _result(folder_bytes(store), ingest, back)


def tools(
    source: Path | None, baseline: Path | None, round_number: int
) -> dict[str, Callable[[Path, Path], Result]]:
    """The peers, then the archive (and its baseline, alternating which goes first)."""
    ours: list[tuple[str, Callable[[Path, Path], Result]]] = [
        ("archive", lambda inputs, work: archive(inputs, work, source and source.resolve())),
    ]
    if baseline is None:
        return {"restic": restic, "borg": borg, **dict(ours)}
    ours += [
        ("baseline", lambda inputs, work: archive(inputs, work, baseline.resolve())),
    ]
    if round_number % 2:
        ours.reverse()
    return {"restic": restic, "borg": borg, **dict(ours)}


# --- the report -----------------------------------------------------------------------


def check_tools() -> None:
    missing = [tool for tool in ("restic", "borg") if shutil.which(tool) is None]
    if missing:
        sys.exit(
            f"missing on the PATH: {', '.join(missing)}; on Debian/Ubuntu install them with\n"
            "    apt-get install -y restic borgbackup"
        )


def versions() -> str:
    found = []
    for command in (["restic", "version"], ["borg", "--version"]):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        found.append(" ".join(done.stdout.split()[:2]))
    return ", ".join(found)


def report(rounds: list[dict[str, Result]]) -> None:
    for number, results in enumerate(rounds, 1):
        print(f"round {number}:")
        for name, result in results.items():
            print(
                f"  {name:8} stored {result.stored / MB:7.1f} MB   ingest {result.ingest:6.2f} s"
                f" (CPU {result.ingest_cpu:5.2f} s)   read-back {result.read_back:6.2f} s"
                f" (CPU {result.read_back_cpu:5.2f} s)"
                + (f", then sync {result.sync:.2f} s" if result.sync else "")
                + (f"; in memory {memory:.2f} s" if (memory := result.read_back_memory) else "")
            )
        ratios(results, "  ")
    if len(rounds) > 1:
        median = {
            name: Result(
                int(statistics.median(r[name].stored for r in rounds)),
                statistics.median(r[name].ingest for r in rounds),
                statistics.median(r[name].read_back for r in rounds),
                statistics.median(r[name].ingest_cpu for r in rounds),
                statistics.median(r[name].read_back_cpu for r in rounds),
                statistics.median(r[name].sync for r in rounds),
                statistics.median(r[name].read_back_memory for r in rounds),
            )
            for name in rounds[0]
        }
        print("medians (each tool's median time and size, then their ratios):")
        ratios(median, "  ")


def ratios(results: dict[str, Result], indent: str) -> None:
    for name in ("archive", "baseline"):
        if name in results:
            if "baseline" in results:
                print(f"{indent}{name}:")
            _ratios(results[name], results, indent)


def _ratios(ours: Result, results: dict[str, Result], indent: str) -> None:
    restic_, borg_ = results["restic"], results["borg"]
    measured = {
        "stored": ours.stored / restic_.stored,
        "ingest": ours.ingest / borg_.ingest,
        "read-back": ours.read_back / restic_.read_back,
    }
    against = {"stored": "restic", "ingest": "borg", "read-back": "restic"}
    for key, value in measured.items():
        verdict = "met" if value <= TARGETS[key] else "NOT met"
        print(
            f"{indent}{key:9} {value:5.2f} x {against[key]:6} "
            f"(target <= {TARGETS[key]:.2f}: {verdict})"
        )
    if restic_.sync:
        durable = ours.read_back / (restic_.read_back + restic_.sync)
        print(
            f"{indent}read-back {durable:5.2f} x restic + sync (the archive's backup is durable "
            "when it returns; restic's restore is once the os.sync() after it returns)"
        )
    if restic_.read_back_memory:
        memory = ours.read_back_memory / restic_.read_back_memory
        print(
            f"{indent}read-back {memory:5.2f} x restic, both into memory (the read path alone: "
            "no disk, so no durability to pay for)"
        )
    cpu = (ours.ingest_cpu / borg_.ingest_cpu, ours.read_back_cpu / restic_.read_back_cpu)
    print(
        f"{indent}CPU seconds (no target): ingest {cpu[0]:.2f} x borg, "
        f"read-back {cpu[1]:.2f} x restic"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=20)
    parser.add_argument("--scale", type=float, default=1.0, help="attachment sizes times this")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1, help="rounds (medians reported)")
    parser.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--memory-dir",
        type=Path,
        default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None,
        help="a folder in memory where every tool's read-back runs a second time (no disk "
        "in it for any of them; default: /dev/shm when there is one)",
    )
    parser.add_argument("--no-memory", action="store_true", help="no second read-back into memory")
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="run the archive with this src folder on PYTHONPATH (default: the installed one)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="also run the archive with this src folder on PYTHONPATH (same-run A/B; "
        "the two alternate which goes first)",
    )
    args = parser.parse_args()
    check_tools()
    if args.memory_dir is not None and not args.no_memory:
        MEMORY_DIR.append(args.memory_dir)
    compile_bytecode(args.source and args.source.resolve())
    if args.baseline is not None:
        compile_bytecode(args.baseline.resolve())
    work = Path(tempfile.mkdtemp(prefix="imixs-peers-", dir=args.dir))
    try:
        inputs = work / "in"
        inputs.mkdir()
        figures = generate(inputs, args.instances, args.scale, args.seed)
        print(
            f"workload: {args.instances} instances, {figures['snapshots']} snapshots, "
            f"{figures['xml'] / MB:.0f} MB of snapshot XML, attachments "
            f"{figures['attachments'] / MB:.0f} MB ({figures['distinct'] / MB:.0f} MB distinct)"
        )
        print(f"peers: {versions()}; load average before: {os.getloadavg()[0]:.1f}")
        rounds: list[dict[str, Result]] = []
        for _ in range(args.repeat):
            results: dict[str, Result] = {}
            for name, tool in tools(args.source, args.baseline, len(rounds)).items():
                folder = work / f"{name}-{len(rounds)}"
                folder.mkdir()
                results[name] = tool(inputs, folder)
                shutil.rmtree(folder)
            rounds.append(results)
        report(rounds)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept: {work}")


if __name__ == "__main__":
    main()
