"""Repo-level writers: what is published from the built directories.

The preview parquet (`preview`), the dataset card (`card`, with its prose in `templates/`), the
cua-lite export (`cua_lite*`), the LeRobot v3.0 export (`lerobot*`) and uploads to the Hugging
Face hub (`hub`). Each reads built directories and dataset_info.json files, never an adapter.

Modules here import the core, the source contract (`gui_assets.sources`, never a source's
folder) and the pipeline (its layout of units and frames); nothing above.
"""
