"""Every metric the service exposes is in docs/web.md's Metrics section (store_up was not)."""

from __future__ import annotations

import re
from pathlib import Path

from imixs_archive.web import health, metrics

ROOT = Path(__file__).resolve().parents[2]


def _section() -> str:
    text = (ROOT / "docs" / "web.md").read_text(encoding="utf-8")
    return text.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]


def test_every_gauge_and_metric_is_documented() -> None:
    gauges = set(re.findall(r'yield \(\s*"([a-z_]+)"', Path(health.__file__).read_text()))
    gauges |= {name for _item, name, _help in health.SYNC_GAUGES}
    registry = metrics.Metrics().registry
    made = {family.name.removeprefix(f"{metrics.PREFIX}_") for family in registry.collect()}
    assert {"store_up", "sync_count", "http_requests"} <= gauges | made
    section = _section()
    documented = set(re.findall(r"`([a-z_]+)(?:\{[^`]*\})?`", section))
    missing = sorted(
        name
        for name in gauges | made
        if name not in documented and f"{name}_total" not in documented
    )
    assert not missing, f"not in docs/web.md's Metrics: {missing}"
