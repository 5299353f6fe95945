"""Backfill every partition of every source with one command, through a running webserver.

    gui-assets backfill --url http://localhost:3000 [--source mind2web ...]

Open-source Dagster has no backfill CLI for assets, so this asks the webserver's GraphQL API for
the same thing the UI's "Materialize all" -> "Backfill" does: one asset backfill per source
over all its partitions, tagged `gui_assets/source=<name>` so the run queue's per-source limit
(dagster.yaml, deploy/dagster-postgres.yaml) keeps one build of each source running at a time.
The daemon (started by `dagster dev`, or the daemon deployment) runs the backfills.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from typing import Any

from gui_assets.sources.registry import SOURCES

SOURCE_TAG = "gui_assets/source"

_ASSETS = "query { assetNodes { assetKey { path } groupName isPartitioned } }"
_LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""


def graphql(
    url: str, query: str, variables: dict[str, Any] | None = None, timeout: float = 60
) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(f"{url.rstrip('/')}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        doc = json.loads(resp.read())
    if doc.get("errors"):
        raise RuntimeError(f"GraphQL error: {doc['errors'][0].get('message')}")
    return doc["data"]


def launch(url: str, sources: list[str]) -> dict[str, str]:
    """One backfill per source over all its partitions; returns {source: backfill id}."""
    nodes = graphql(url, _ASSETS)["assetNodes"]
    launched = {}
    for source in sources:
        keys = [n["assetKey"] for n in nodes if n["groupName"] == source and n["isPartitioned"]]
        if not keys:
            raise SystemExit(f"no partitioned assets in group {source!r} at {url}")
        params = {
            "assetSelection": keys,
            "allPartitions": True,
            "tags": [{"key": SOURCE_TAG, "value": source}],
            "title": f"{source}: every partition",
        }
        result = graphql(url, _LAUNCH, {"params": params})["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise SystemExit(f"{source}: {result['__typename']}: {result.get('message')}")
        launched[source] = result["backfillId"]
    return launched


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="gui-assets backfill", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--url", default="http://localhost:3000", help="the Dagster webserver")
    ap.add_argument(
        "--source", action="append", choices=[s.name for s in SOURCES], help="default: every source"
    )
    args = ap.parse_args(argv)
    for source, backfill in launch(args.url, args.source or [s.name for s in SOURCES]).items():
        print(f"{source}: backfill {backfill} ({args.url}/runs/b/{backfill})")


if __name__ == "__main__":
    sys.exit(main())
