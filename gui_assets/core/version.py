"""The codebase version recorded in dataset_info.json (build.gui_assets_version).

Bump it with any change that alters the bytes of a shard or of dataset_info.json.
"""

GUI_ASSETS_VERSION = "0.1.0"
