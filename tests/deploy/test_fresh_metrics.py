"""A fresh ``serve`` (an empty store, nothing configured, nothing run yet) exposes a sample
of every metric the alerting rules and the dashboard name, at its first scrape: a series
that appears only at its first event shows "no data" on a panel, and an alert never sees
its 0 (issue 46, item 6). The names are read from the deploy files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from deploy.test_grafana_dashboard import DASHBOARD
from deploy.test_prometheus_rules import RULES
from support.metric_names import families
from web.live import serve_process


def _named() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    return families(RULES.read_text()) | families("\n".join(exprs))


def test_a_fresh_serve_exposes_every_metric_the_rules_and_the_dashboard_name(
    tmp_path: Path,
) -> None:
    process, url = serve_process({"ARCHIVE_DATA_DIR": str(tmp_path / "store")})
    try:
        text = httpx.get(f"{url}/metrics", timeout=30).text
    finally:
        process.terminate()
        process.communicate(timeout=60)
    samples = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    named = _named()
    assert len(named) > 30
    assert named <= families(samples), sorted(named - families(samples))
    # Prometheus gives every series of a target the labels job and instance: one the
    # service exposes itself is renamed exported_job (honor_labels off), and a rule or
    # panel matching job="backup" never matches (imixs_archive_job_failed had one)
    labels = set(re.findall(r'[{,]([a-z_]+)="', samples))
    assert labels and not labels & {"job", "instance"}, sorted(labels)
