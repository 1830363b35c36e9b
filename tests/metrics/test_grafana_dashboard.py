"""docs/grafana-dashboard.json queries only what the Prometheus export serves: its instruments (with the
histogram suffixes), grouped and filtered by their labels."""

import json
import re

from metrics.aggregates import INSTRUMENTS
from tests.conftest import PROJECT_DIR

DASHBOARD = PROJECT_DIR / "docs" / "grafana-dashboard.json"


def expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_query_names_an_exported_instrument_and_its_labels():
    exported = {}
    for instrument in INSTRUMENTS:  # as the scrape spells them (dots as underscores)
        names = [instrument.prometheus_name]
        if instrument.kind == "histogram":
            names = [f"{instrument.prometheus_name}_{suffix}" for suffix in ("bucket", "sum", "count")]
        for name in names:
            labels = set(instrument.prometheus_labels)
            exported[name] = labels | ({"le"} if name.endswith("_bucket") else set())

    queries = expressions()

    assert len(queries) == 16
    for query in queries:
        metrics = re.findall(r"\b(mcp_[a-z_]+)\{", query)
        assert metrics, query
        for metric in metrics:
            assert metric in exported, (metric, query)
            grouped = {
                label.strip() for group in re.findall(r"by \(([^)]*)\)", query) for label in group.split(",")
            }
            filtered = set(re.findall(r'([a-z_]+)=~?"', query))
            assert grouped | filtered <= exported[metric], (query, exported[metric])
