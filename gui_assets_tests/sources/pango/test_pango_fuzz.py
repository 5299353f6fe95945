"""Damaged events documents (the bucket files the row-file fuzz in test_fuzz never touches):
one JSON value of a document deleted, retyped, NaN, huge, ... never raises, and what is lost is
counted, the other rows' episodes untouched."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_assets.sources.pango import demo as pango_mirror
from gui_assets.sources.pango.adapter import REPO_ID
from gui_assets.sources.pango.source import SPEC as PANGO
from gui_assets_tests.conftest import run_adapter
from gui_assets_tests.fuzz_damage import VALUE_DAMAGE, damage_tree

EXAMPLES = int(os.environ.get("GUI_ASSETS_FUZZ_EXAMPLES") or 40)
DOCS = [f"finalized/{rid}/actions_v3.json" for rid in pango_mirror.IDS[:2]]


def test_a_damaged_events_document_is_counted_never_raises(demo_mirror, tmp_path_factory):
    base_eps, base = run_adapter(PANGO, demo_mirror, "sample", tmp_path_factory.mktemp("base"))
    base_steps = {e.episode_id: len(e.steps) for e in base_eps}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not os.environ.get("GUI_ASSETS_FUZZ_EXAMPLES"),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(doc=st.sampled_from(DOCS), kind=st.sampled_from(VALUE_DAMAGE), seed=st.integers(0, 2**32 - 1))
    def case(doc: str, kind: str, seed: int) -> None:
        work = tmp_path_factory.mktemp("doc-fuzz")
        shutil.copytree(demo_mirror / REPO_ID, work / "m" / REPO_ID)
        path: Path = work / "m" / REPO_ID / doc
        damaged, how = damage_tree(json.loads(path.read_text()), kind, random.Random(seed))
        path.write_text(json.dumps(damaged), encoding="utf-8")
        eps, stats = run_adapter(PANGO, work / "m", "sample", work)
        steps = {e.episode_id: len(e.steps) for e in eps}
        rid = doc.split("/")[1]
        for eid, n in base_steps.items():  # rows other than the damaged one are as they were
            if rid not in eid:
                assert steps.get(eid) == n, (how, eid)
        if sum(steps.values()) < sum(base_steps.values()):
            assert stats.drops != base.drops or stats.episodes_in != base.episodes_in, how
        shutil.rmtree(work, ignore_errors=True)

    case()
