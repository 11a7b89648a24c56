"""``deploy/grafana``: the dashboard is Grafana JSON whose every panel queries metrics
``serve`` exposes."""

from __future__ import annotations

import json

from support.metric_names import DEPLOY, families

DASHBOARD = DEPLOY / "grafana" / "imixs-archive-dashboard.json"


def test_every_metric_the_dashboard_names_is_exposed(exposed: set[str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "imixs-archive" and dashboard["panels"]
    named: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            found = families(target["expr"])
            assert found, (panel["title"], target["expr"])
            named |= found
    assert named <= exposed, sorted(named - exposed)
    assert {"imixs_archive_store_up", "imixs_archive_sync_event_lag_seconds"} <= named
