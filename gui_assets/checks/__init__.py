"""The card's promises as pure functions returning a verdict, and who hears when one breaks.

`invariants` judges a built directory (the pre-action frame, the causal eye-in-hand crop, masks
that never invent coordinates, leak-free splits, scroll directions), mostly by calling the
validator's own rules, each returning a `verdict.Verdict`; `integrity` and `lerobot_verify`
judge shards and the LeRobot export; `charts` draws the figures a check shows; `alerts` sends
a failed check to people.

Modules here import the core, the source contract, the pipeline, the publish writers and the
validator; never Dagster (the Dagster checks in `gui_assets.defs` call these).
"""
