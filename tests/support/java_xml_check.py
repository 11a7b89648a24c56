"""Builds and runs ``tests/java/xml-check``: the real Imixs XML classes on Java 17.

Maven resolves ``imixs-workflow-core`` and a JAXB runtime from Maven Central and compiles
the one class; the result (``target/classes``, ``target/classpath.txt``) is kept and reused
while ``pom.xml`` and the Java sources are unchanged (a hash in ``target/build.key``), and
Maven keeps the jars in its local repository. A first build takes about half a minute.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).parents[1] / "java" / "xml-check"
TARGET = PROJECT / "target"
MAIN_CLASS = "org.imixs.archive.check.XmlCheck"
JDK_CANDIDATES = (
    "/usr/lib/jvm/java-17-openjdk-amd64",
    "/usr/lib/jvm/java-17-openjdk-arm64",
    "/usr/lib/jvm/java-17-openjdk",
    "/usr/lib/jvm/temurin-17-jdk-amd64",
)
# A run lasts a few seconds: the quick compiler alone and one GC thread halve its CPU (and
# its time on 2 cores) against the default tiered compilation and parallel GC threads; what
# the classes do is the same.
SHORT_RUN_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class Unavailable(Exception):
    """No Maven or no Java 17 JDK on this machine (the reason is the message)."""


@dataclass(frozen=True)
class JavaXmlCheck:
    java: Path
    classpath: str

    def run(self, in_dir: Path, out_dir: Path, count: int, seed: int) -> None:
        """Java reads every ``in_dir/*.xml`` and writes ``count`` documents of its own (see
        ``XmlCheck.java`` for the files it leaves in ``out_dir``)."""
        command = [
            str(self.java),
            *SHORT_RUN_FLAGS,
            "-Duser.timezone=UTC",
            "-Dfile.encoding=UTF-8",
            "-cp",
            self.classpath,
            MAIN_CLASS,
            str(in_dir),
            str(out_dir),
            str(count),
            str(seed),
        ]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"XmlCheck failed ({done.returncode}):\n{done.stderr[-4000:]}")


def find_jdk17() -> Path:
    """The home of a Java 17 JDK: ``JAVA17_HOME``, else a usual install path."""
    candidates = [os.environ.get("JAVA17_HOME", ""), *JDK_CANDIDATES]
    for home in candidates:
        if home and (Path(home) / "bin" / "javac").exists():
            return Path(home)
    raise Unavailable("no Java 17 JDK (set JAVA17_HOME, or install openjdk-17-jdk)")


def _build_key() -> str:
    digest = hashlib.sha256()
    for path in sorted([PROJECT / "pom.xml", *PROJECT.glob("src/**/*.java")]):
        digest.update(path.relative_to(PROJECT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _is_built(key: str) -> bool:
    key_file = TARGET / "build.key"
    classpath = TARGET / "classpath.txt"
    if not (key_file.exists() and classpath.exists()) or key_file.read_text() != key:
        return False
    jars = classpath.read_text().strip().split(os.pathsep)
    return all(Path(jar).exists() for jar in jars)


def build() -> JavaXmlCheck:
    """The built check, building it first when needed (``Unavailable`` without mvn/JDK)."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) is not installed")
    jdk = find_jdk17()
    TARGET.mkdir(exist_ok=True)
    key = _build_key()
    with (TARGET / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several test processes: one builds, the rest wait
        if not _is_built(key):
            _maven(mvn, jdk)
            (TARGET / "build.key").write_text(key)
    classpath = os.pathsep.join(
        [str(TARGET / "classes"), (TARGET / "classpath.txt").read_text().strip()]
    )
    return JavaXmlCheck(jdk / "bin" / "java", classpath)


def _maven(mvn: str, jdk: Path) -> None:
    env = dict(
        os.environ, JAVA_HOME=str(jdk), PATH=f"{jdk / 'bin'}{os.pathsep}{os.environ['PATH']}"
    )
    # A short build: the client compiler and the serial collector take half of Maven's CPU
    # away (idle machine: 3.9 s of user CPU to 1.8 s), which the suite's other workers use.
    env.setdefault("MAVEN_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(PROJECT / "pom.xml"),
        "compile",
        "dependency:build-classpath",
        f"-Dmdep.outputFile={TARGET / 'classpath.txt'}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise RuntimeError(
            f"building {PROJECT} with Maven failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
        )
