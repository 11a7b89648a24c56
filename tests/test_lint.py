"""The project's own code passes its linters and the type checker (as configured in
pyproject.toml), so CI enforces what the conventions promise."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CODE = ["."]  # what the README's lint command lints, Markdown code blocks included


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize(
    "command",
    [["ruff", "check", *CODE], ["ruff", "format", "--check", *CODE], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_is_clean(command: list[str]) -> None:
    tool = BIN / command[0]
    if not tool.exists():
        pytest.skip(f"{command[0]} is not installed in this environment (pip install -e '.[test]')")
    done = run(str(tool), *command[1:])
    assert done.returncode == 0, done.stdout + done.stderr
