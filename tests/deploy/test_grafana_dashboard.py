"""``deploy/grafana``: the dashboard is Grafana JSON whose every panel queries metrics
``serve`` exposes."""

from __future__ import annotations

import json
import re

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


def test_the_dashboard_is_provisioned_from_a_file_and_chooses_instances() -> None:
    """A dashboard provisioned from a file gets no import dialog: ``__inputs`` stay
    unresolved and every panel said "data source ${DS_PROMETHEUS} not found" (issue 46,
    item 7). Every variable a panel uses is one of the dashboard's own, and every metric a
    panel queries is filtered by the instances chosen."""
    text = DASHBOARD.read_text()
    dashboard = json.loads(text)
    assert "__inputs" not in dashboard
    variables = {item["name"]: item for item in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    instance = variables["instance"]
    assert instance["includeAll"] and instance["multi"]
    assert "label_values(imixs_archive_store_up, instance)" in instance["definition"]
    used = set(re.findall(r"\$\{?([A-Za-z_]+)", text)) - {"__all"}
    assert used <= set(variables), sorted(used - set(variables))
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            selectors = re.findall(r"\bimixs_archive_[a-z0-9_]+(\{[^}]*\})?", target["expr"])
            assert selectors, target["expr"]
            for labels in selectors:
                assert 'instance=~"$instance"' in labels, (panel["title"], target["expr"])
