"""Every rule the validator judges, by its stable id, with the one line docs/format.md gives it."""

from __future__ import annotations

RULES: dict[str, str] = {
    # files of a directory
    "files.naming": "every .hdf5 file is `<directory>_NNNN.hdf5` or `<directory>_val_NNNN.hdf5`",
    "files.contiguous": "each series (main, `_val_`) is numbered from 0000 without a gap",
    "files.no_shards": "a directory holds at least one main shard",
    "files.unexpected": "a directory holds nothing but its shards and dataset_info.json",
    # one shard
    "shard.open": "h5py opens the shard, it has a /data group, and every demo in it reads",
    "shard.filters": "every dataset uses only built-in filters (gzip, shuffle, fletcher32, lzf)",
    "shard.empty": "a shard holds at least one demo",
    "data.attrs": "/data carries env_name, env_args, problem_info, num_demos, total, tag, "
    "gui_action_types, gui_param_names with their types",
    "data.json": "env_args and problem_info are JSON objects, gui_action_types and gui_param_names "
    "JSON lists",
    "data.problem_info": 'problem_info.language_instruction is "" (the instruction is per demo)',
    "data.action_types": "gui_action_types lists the fourteen action types in the format's order",
    "data.param_names": 'gui_param_names is ["x1", "y1", "x2", "y2"]',
    "data.counts": "num_demos and total equal the shard's demos and steps",
    "data.demo_numbering": "demos are demo_0 .. demo_{n-1}",
    # one demo
    "demo.attrs": "a demo carries language_instruction, num_samples, episode_id, source, directory, "
    "source_ref with their types",
    "demo.num_samples": "num_samples equals the demo's steps T",
    "demo.identity": "the demo's directory and source attrs name its directory and source",
    "demo.source_ref": "source_ref is a JSON object with repo_id, file, and row or member",
    "demo.platform": "a demo's platform is browser, desktop or mobile, the one its directory's build "
    "records for its source",
    "demo.source_ids": "a WebArena demo carries task_id and intent_template_id",
    "demo.datasets": "every required dataset is there with shape (T, ...) and dtype as the table says",
    "demo.optional": "step_thought, obs_stale (0/1) and obs/terminal_rgb (1, H, W, 3), where present, "
    "have their shapes and dtypes",
    "demo.actions.params": "actions[:, 0:4] equals action_params",
    "demo.actions.type": "actions[:, 4] equals action_type",
    "demo.actions.has_text": "actions[:, 5] is 1 exactly where action_text is non-empty",
    "demo.actions.n_masked": "actions[:, 6] counts the param slots whose mask is 0",
    "demo.action_type.range": "every action_type code indexes gui_action_types",
    "demo.action_mask.table": "a step's mask is its type's row of the mask table or all-zero; all-zero "
    "for a SCROLL where the build records direction-only scrolls (build.source.scroll_gestures false)",
    "demo.action_mask.masked_zero": "a masked param slot holds exactly 0",
    "demo.action_params.range": "an unmasked coordinate is finite and within [0, 1]",
    "demo.action_desc.form": "action_desc is a non-empty `verb(...)`",
    "demo.action_desc.coords": "the coordinates a pointer step's action_desc lists are its unmasked "
    "params to two decimals; an ungrounded one lists none",
    "demo.scroll.desc": "a SCROLL's action_desc names the view direction, the inverse of the gesture",
    "demo.dones": "dones is 1 on the last step and 0 before it",
    "demo.rewards": "rewards is 0 before the last step, 0 or 1 on it, and 1 iff the demo succeeded",
    "demo.progress": "states[:, 4] is t / T",
    "demo.cursor.aliases": "robot_states, obs/cursor_states and obs/gripper_states equal states[:, 0:2]",
    "demo.scroll_states": "obs/scroll_states equals states[:, 2:4]",
    "demo.joint_states": "obs/joint_states is all zeros",
    "demo.cursor.causal": "the cursor starts at (0.5, 0.5) and is where the previous action left the pointer",
    "demo.native_hw": "native_hw holds positive (height, width) pairs",
    "demo.eye_rect.size": "eye_rect spans 128 native pixels (the whole frame where it is smaller), "
    "within [0, 1]",
    "demo.eye_rect.centre": "eye_rect is centred on the cursor, up to clamping inside the frame",
    "demo.eye_in_hand.pixels": "where the frame is at native size, eye_in_hand_rgb is the frame's pixels "
    "under eye_rect",
    # dataset_info.json
    "info.read": "dataset_info.json exists and is a JSON object",
    "info.keys": "dataset_info.json has every required key (top level, build, upstream and its file "
    "entries, stats, shard entries)",
    "info.identity": "dataset_info.json's directory names its folder",
    "info.shards.listed": "every shard on disk is listed, main shards in shards and `_val_` ones in "
    "val_shards",
    "info.shards.present": "every listed shard is on disk",
    "info.shards.counts": "a shard entry's demos and steps equal the file's",
    "info.shards.bytes": "a shard entry's bytes equals the file's size",
    "info.shards.sha256": "a shard entry's sha256 equals the file's",
    "info.shards.frame_hw": "a shard entry's frame_hw, where present, is the size of every frame in it",
    "info.shards.cap": "a shard passes build.config.shard_cap_bytes by at most its last demo",
    "info.stats.counts": "stats.episodes_out and stats.steps equal the shards' demos and steps",
    "info.stats.action_type_counts": "stats.action_type_counts equals the shards' count per type",
    "info.stats.ungrounded_steps": "stats.ungrounded_steps lies between the all-zero-mask pointer steps "
    "other than TYPE and all of them (a direction-only source's SCROLLs are not ungrounded)",
    "info.stats.scroll_histogram": "stats.scroll_histogram counts the grounded SCROLL steps by view "
    "direction",
    "info.stats.target_rate": "stats.target_inside_eye_in_hand_rate is the share of grounded aimed steps "
    "whose (x1, y1) lies inside eye_rect",
    "info.holdout_rule": "an AgentNet directory records build.holdout_rule; `_val_` shards come with a "
    "recorded holdout_rule or split_rule",
    "info.heldout_ids": "heldout_ids (required for WebArena) lists exactly the demos' task_ids and "
    "intent_template_ids",
    "info.subsplits": "subsplits, where present, is {name: {episodes, steps}}: exactly the demos (and "
    "their steps) whose recorded subsplit attr names it, or no more than the directory holds where no "
    "attr is recorded; required where the build records a subsplit_attr",
    "split.disjoint": "no episode_id, and no AgentNet task_id, is in both the main and the `_val_` shards",
    # the rest of an output folder
    "out.card": "README.md's YAML header declares config `preview`, split `sample`, over preview/*.parquet",
    "preview.parquet": "preview/ holds at least one parquet file, and every *.parquet in it is parquet",
    "cua_lite.layout": "cua-lite parquet files sit at <platform>/<task_type>/<split>/<variant>.parquet",
    "cua_lite.images": "cua-lite images are named images/<sha256[:2]>/<sha256>.<ext> of their own bytes",
}
