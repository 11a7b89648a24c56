"""Numbers for people: sizes and durations, the same in the CLI and the web UI."""

from __future__ import annotations

from typing import Protocol


def human_bytes(count: float) -> str:
    """``512 B``, ``1.5 KiB``, ``3.2 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"


def human_duration(seconds: float) -> str:
    """``2d 3h``, ``3h 12m``, ``12m 30s``, ``42s``."""
    whole = round(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def human_period(seconds: float) -> str:
    """A period as settings give it: ``30 days``, ``1 day``, ``2h 30m``, ``300ms``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    days, rest = divmod(round(seconds), 86_400)
    return f"{days} day{'s' if days != 1 else ''}" if days and not rest else human_duration(seconds)


def human_age(seconds: float) -> str:
    """How long ago, for people: ``12 s ago``, ``5 min ago``, ``3 h ago``, ``12 days ago``,
    ``4 months ago``, ``2 years ago`` (a time ahead: ``in 5 min``)."""
    ahead = seconds < 0
    whole = abs(round(seconds))
    if whole < 120:
        text = f"{whole} s"
    elif whole < 7200:
        text = f"{whole // 60} min"
    elif whole < 2 * 86_400:
        text = f"{whole // 3600} h"
    elif whole < 61 * 86_400:
        text = f"{whole // 86_400} days"
    elif whole < 730 * 86_400:
        text = f"{whole // (30 * 86_400)} months"
    else:
        text = f"{whole // (365 * 86_400)} years"
    return f"in {text}" if ahead else f"{text} ago"


class _Unused(Protocol):
    unused_files: int
    unused_pieces: int

    @property
    def reclaimable_bytes(self) -> int: ...


def unused_words(counts: _Unused) -> str:
    """What collections free, in the words ``verify``, ``gc`` and ``stats`` share."""
    return (
        f"{counts.unused_files} files and {counts.unused_pieces} pieces unused, "
        f"{human_bytes(counts.reclaimable_bytes)} reclaimable by gc"
    )
