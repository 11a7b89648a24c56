"""The container files, checked without a Docker engine (none runs in CI; the image is not
built there): the Dockerfile runs as a user that is not root, declares its port and a
HEALTHCHECK on /readyz and starts ``serve``; the compose file starts the archive after a
healthy Cassandra."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[2]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continued lines joined."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def test_the_dockerfile_runs_serve_as_a_user_with_a_port_and_a_healthcheck() -> None:
    steps = instructions()
    words = [word for word, _ in steps]
    assert words[0] == "FROM"
    users = [(i, rest) for i, (word, rest) in enumerate(steps) if word == "USER"]
    assert users and users[-1][1] not in ("root", "0")
    last_run = max(i for i, (word, _) in enumerate(steps) if word == "RUN")
    assert users[-1][0] > last_run  # nothing runs as root after it
    assert ("EXPOSE", "8080") in steps
    (check,) = [rest for word, rest in steps if word == "HEALTHCHECK"]
    assert "/readyz" in check and "CMD" in check
    command = json.loads(check.split("CMD", 1)[1])
    compile(command[-1], "healthcheck", "exec")  # the probe is Python that parses
    assert json.loads(dict(steps)["CMD"]) == ["serve"]
    assert json.loads(dict(steps)["ENTRYPOINT"]) == ["imixs-archive"]


def test_the_compose_file_starts_the_archive_after_a_healthy_cassandra() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    archive = compose["services"]["archive"]
    assert archive["command"] == ["serve"] and "8080:8080" in archive["ports"]
    assert archive["depends_on"]["cassandra"]["condition"] == "service_healthy"
    assert archive["environment"]["ARCHIVE_CLUSTER_CONTACTPOINTS"] == "cassandra:9042"
    assert "healthcheck" in compose["services"]["cassandra"]


def test_every_archive_of_the_compose_file_keeps_its_data_folder_in_a_volume() -> None:
    """/data holds the ledger's signing key (and the embedded store, without Cassandra):
    recreating a container without a volume there lost it for good (issue 46, item 7)."""
    env = dict(
        pair.split("=", 1) for pair in dict(instructions())["ENV"].replace("\\", " ").split()
    )
    data = env["ARCHIVE_DATA_DIR"]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    archives = {
        name: service
        for name, service in compose["services"].items()
        if service.get("image", "").startswith("imixs-archive")
    }
    assert set(archives) == {"archive", "archive3"}
    kept = []
    for name, service in archives.items():
        mounts = dict(volume.split(":", 1) for volume in service.get("volumes", []))
        named = [source for source, target in mounts.items() if data.startswith(target)]
        assert named and named[0] in compose["volumes"], (name, mounts)
        kept.append(named[0])
    assert len(set(kept)) == len(kept)  # each its own: two ledgers, two keys
