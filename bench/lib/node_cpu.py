"""The CPU a Cassandra node running on this machine has used, read from ``/proc``: read
around a timed part, it is what the node spent on that work."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def node_cpu() -> float:
    """CPU seconds (user and system) of the local node's process; 0 when no node runs
    here (a remote host)."""
    try:
        found = subprocess.run(
            ["pgrep", "-f", "CassandraDaemon"], capture_output=True, text=True, check=False
        ).stdout.split()
        fields = Path(f"/proc/{found[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except (IndexError, OSError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
