"""The sources: one folder per upstream dataset, and what every source shares.

A source's folder holds `source.py` (its declaration, `SPEC`: repo, partitions, split rule,
options), `adapter.py` (one upstream unit into GuiEpisode IR, counting every drop by reason),
`demo.py` (a small mirror in the real upstream layout, so everything runs offline) and whatever
only that source needs. `registry.py` finds the folders; nothing else names a source. The shared
part is the source contract (`spec`), adapter assembly (`assembly`), reading a mirror or the hub
(`mirror`, `remote`), archives (`archives`) and the demo mirror's generation (`demo_mirror`,
`demo_render`).

Modules here import the core and the shared part of this folder; a source's folder never
imports another source's folder.
"""
