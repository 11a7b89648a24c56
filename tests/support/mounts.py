"""A shell script run in a mount namespace of its own (``unshare -m``), where it may mount a
small or read-only file system without touching the machine's: for the store on a full disk
or a read-only mount. Needs root (or unprivileged user namespaces); tests skip without."""

from __future__ import annotations

import functools
import shutil
import subprocess

import pytest


@functools.cache
def _can_mount() -> str:
    """'' when a mount namespace can mount a tmpfs here, else why not."""
    if shutil.which("unshare") is None:
        return "no unshare command"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
        capture_output=True,
        text=True,
        check=False,
    )
    return "" if probe.returncode == 0 else f"cannot mount in a namespace: {probe.stderr.strip()}"


def run_mounted(script: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``script`` (sh) in a mount namespace of its own; skips the test where mounting is
    not allowed."""
    why = _can_mount()
    if why:
        pytest.skip(why)
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
