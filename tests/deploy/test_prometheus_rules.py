"""``deploy/prometheus``: the alerting rules are valid (``promtool check rules``), fire as
their unit tests say (``promtool test rules``), and name only metrics ``serve`` exposes.
promtool comes with Debian's prometheus package (``.ci/run`` installs it)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from support.metric_names import DEPLOY, families

RULES = DEPLOY / "prometheus" / "imixs-archive-rules.yml"
TESTS = DEPLOY / "prometheus" / "imixs-archive-rules.test.yml"


def _promtool(*args: str) -> str:
    tool = shutil.which("promtool")
    if tool is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; .ci/run has it)")
    done = subprocess.run(
        [tool, *args], capture_output=True, text=True, cwd=RULES.parent, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_are_valid() -> None:
    assert "SUCCESS: 20 rules found" in _promtool("check", "rules", RULES.name)


def test_the_rules_fire_as_their_unit_tests_say() -> None:
    assert "SUCCESS" in _promtool("test", "rules", TESTS.name)


def test_the_rules_name_only_metrics_serve_exposes(exposed: set[str]) -> None:
    named = families(RULES.read_text())
    assert named and named <= exposed, sorted(named - exposed)
