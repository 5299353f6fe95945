"""LIBERO's batched training loop on our shards: robomimic's SequenceDataset built with the arguments
LIBERO's `libero/lifelong/datasets.py:get_dataset` passes, under a torch DataLoader, one shard at a time
and every directory at once (as LIBERO's Multitask algo concatenates its task datasets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import pytest

# torch is a pinned dev dependency; robomimic is installed by the README's test command (with
# --no-deps, since its dataset path imports none of its declared dependencies).
import robomimic.utils.obs_utils as ObsUtils
import torch
import torch.utils.data as torch_data
from robomimic.utils.dataset import SequenceDataset

from gui_assets.core.config import BuildConfig
from gui_assets.core.ir import ACTION_TYPE_NAMES
from gui_assets.core.layout import DatasetInfo
from gui_assets.pipeline.chain import RawSettings, build_directory
from gui_assets.sources.registry import SOURCES
from gui_assets.sources.spec import SourceSpec

# libero/configs/data/default.yaml: data.obs.modality, seq_len, frame_stack and img_h x img_w.
OBS_MODALITY: dict[str, list[str]] = {
    "rgb": ["agentview_rgb", "eye_in_hand_rgb"],
    "depth": [],
    "low_dim": ["gripper_states", "joint_states"],
}
OBS_KEYS = [k for keys in OBS_MODALITY.values() for k in keys]
RGB_KEYS = OBS_MODALITY["rgb"]
LOW_DIM_WIDTH = {"gripper_states": 2, "joint_states": 7}
SEQ_LEN = 10
LIBERO_HW = (128, 128)
EYE_HW = (128, 128)
ACTION_WIDTH = 7
# LIBERO trains with batch_size 32 and num_workers 4 at 128x128; native frames are up to 1280 wide and
# 1080 tall here, so batches stay small, and workers stay at 0 (one process: errors surface as they are).
BATCH = 4
MIXED_BATCH = 16

DIRECTORIES = [(spec, key) for spec in SOURCES for key in spec.partition_keys]
DIRECTORY_IDS = [f"{spec.name}-{key}" for spec, key in DIRECTORIES]

Build = tuple[Path, dict[str, DatasetInfo]]


def build_all(out: Path, mirror: Path, config: BuildConfig) -> Build:
    """Every partition of every source built from the demo mirror under `config`."""
    infos = {
        f"{spec.name}-{key}": build_directory(spec, key, out, RawSettings("mirror", mirror), config)
        for spec, key in DIRECTORIES
    }
    return out, infos


@pytest.fixture(scope="session")
def native_build(every_demo: Path) -> Build:
    """Every demo partition at the default config (the session's shared build, read only):
    agentview frames at native resolution."""
    infos = {
        f"{spec.name}-{key}": DatasetInfo.read(every_demo / spec.directory(key) / "dataset_info.json")
        for spec, key in DIRECTORIES
    }
    return every_demo, infos


@pytest.fixture(scope="session")
def resized_build(tmp_path_factory: pytest.TempPathFactory, demo_mirror: Path) -> Build:
    """All 12 demo partitions with every agentview frame resized to LIBERO's 128x128."""
    config = BuildConfig(agentview_hw=LIBERO_HW)
    return build_all(tmp_path_factory.mktemp("libero_resized"), demo_mirror, config)


@pytest.fixture(scope="module", autouse=True)
def obs_utils() -> None:
    """robomimic's global obs registry, initialised as LIBERO's get_dataset does for its first task."""
    ObsUtils.initialize_obs_utils_with_obs_specs({"obs": OBS_MODALITY})


def shard_paths(out: Path, info: DatasetInfo) -> list[Path]:
    """Every shard of a directory, main and holdout."""
    return [out / info.directory / s.file for s in [*info.shards, *info.val_shards]]


def shape_meta(path: Path) -> dict[str, Any]:
    """What LIBERO sizes its encoders from, read as robomimic's get_shape_metadata_from_dataset reads
    it (that module imports torchvision, which we do not install): the first demo's action width and
    each obs key's shape after robomimic's processing (rgb: C, H, W)."""
    with h5py.File(path, "r") as f:
        demo = f["data"][next(iter(f["data"]))]
        raw = {k: demo["obs"][k].shape[1:] for k in OBS_KEYS}
        ac_dim = demo["actions"].shape[1]
    modality = ObsUtils.OBS_KEYS_TO_MODALITIES
    shapes = {k: tuple(ObsUtils.get_processed_shape(modality[k], shape)) for k, shape in raw.items()}
    return {"ac_dim": ac_dim, "all_shapes": shapes}


def sequence_dataset(path: Path) -> Any:
    """robomimic's SequenceDataset over one shard with exactly the arguments LIBERO's get_dataset passes."""
    return SequenceDataset(
        hdf5_path=str(path),
        obs_keys=OBS_KEYS,
        dataset_keys=["actions"],
        load_next_obs=False,
        frame_stack=1,
        seq_length=SEQ_LEN,
        pad_frame_stack=True,
        pad_seq_length=True,  # every step starts a sequence; the tail repeats the last step
        get_pad_mask=False,
        goal_mode=None,
        hdf5_cache_mode="low_dim",  # low-dim keys and actions in memory, frames read per item
        hdf5_use_swmr=False,
        hdf5_normalize_obs=None,
        filter_by_attribute=None,
    )


class TaskDataset(torch_data.Dataset):
    """LIBERO's SequenceVLDataset: a sequence dataset whose items also carry their task's embedding
    (here a one-hot of the directory, so a batch says which directories it mixes)."""

    def __init__(self, sequences: Any, task: int, tasks: int) -> None:
        self.sequences = sequences
        self.task_emb = torch.nn.functional.one_hot(torch.tensor(task), tasks).float()

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item = self.sequences[i]
        item["task_emb"] = self.task_emb
        return item


def loader(dataset: Any, batch_size: int) -> Any:
    """LIBERO's training DataLoader (RandomSampler), seeded, in this process."""
    sampler = torch_data.RandomSampler(dataset, generator=torch.Generator().manual_seed(0))
    return torch_data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=0)


def demo_steps(path: Path) -> int:
    """Steps in a shard, summed over its demos."""
    with h5py.File(path, "r") as f:
        return sum(int(f["data"][d].attrs["num_samples"]) for d in f["data"])


def check_batch(batch: dict[str, Any], meta: dict[str, Any], hw: tuple[int, int]) -> int:
    """A batch has LIBERO's keys, shapes and dtypes, agentview frames of `hw`, and processes (uint8
    HWC -> float CHW in [0, 1], what LIBERO's policy receives) to the shapes in `meta`; its size."""
    obs = batch["obs"]
    n = batch["actions"].shape[0]
    assert set(obs) == set(OBS_KEYS) and n > 0
    assert obs["agentview_rgb"].shape == (n, SEQ_LEN, *hw, 3)
    assert obs["eye_in_hand_rgb"].shape == (n, SEQ_LEN, *EYE_HW, 3)
    for k in RGB_KEYS:
        assert obs[k].dtype == torch.uint8
    for k, width in LOW_DIM_WIDTH.items():
        assert obs[k].dtype == torch.float32 and obs[k].shape == (n, SEQ_LEN, width)
    actions = batch["actions"]
    assert actions.dtype == torch.float32 and actions.shape == (n, SEQ_LEN, meta["ac_dim"])
    assert meta["ac_dim"] == ACTION_WIDTH and bool(torch.isfinite(actions).all())
    codes = actions[..., 4]
    assert bool((codes == codes.round()).all()) and codes.min() >= 0 and codes.max() < len(ACTION_TYPE_NAMES)
    # One step of each sequence keeps the float copy small at native resolution.
    processed = ObsUtils.process_obs_dict({k: v[:, :1] for k, v in obs.items()})
    for k in OBS_KEYS:
        assert tuple(processed[k].shape[2:]) == meta["all_shapes"][k], k
    for k in RGB_KEYS:
        assert processed[k].dtype == torch.float32 and processed[k].min() >= 0 and processed[k].max() <= 1
    return n


@pytest.mark.parametrize(("spec", "key"), DIRECTORIES, ids=DIRECTORY_IDS)
def test_every_shard_batches_in_the_libero_loader(native_build: Build, spec: SourceSpec, key: str) -> None:
    """Each shard, loaded as LIBERO loads a task file, batches a full epoch: one sample per step."""
    out, infos = native_build
    paths = shard_paths(out, infos[f"{spec.name}-{key}"])
    assert paths
    for path in paths:
        meta = shape_meta(path)
        hw = meta["all_shapes"]["agentview_rgb"][1:]
        dataset = sequence_dataset(path)
        try:
            assert len(dataset) == dataset.total_num_sequences == demo_steps(path)
            drawn = sum(check_batch(batch, meta, hw) for batch in loader(dataset, BATCH))
        finally:
            dataset.close_and_delete_hdf5_handle()
        assert drawn == len(dataset), path.name


def test_every_directory_batches_in_one_loader_once_agentview_hw_is_set(resized_build: Build) -> None:
    """With agentview_hw=(128, 128), all shards of every directory concatenate into one mixing loader."""
    out, infos = resized_build
    names = sorted(infos)
    parts: list[Any] = []
    for task, name in enumerate(names):
        for path in shard_paths(out, infos[name]):
            parts.append(TaskDataset(sequence_dataset(path), task, len(names)))
    meta = shape_meta(shard_paths(out, infos[names[0]])[0])  # LIBERO reads it off the first task
    assert meta["all_shapes"]["agentview_rgb"] == (3, *LIBERO_HW)
    concat = torch_data.ConcatDataset(parts)
    seen: set[int] = set()
    batches = mixed = drawn = 0
    try:
        for batch in loader(concat, MIXED_BATCH):
            drawn += check_batch(batch, meta, LIBERO_HW)
            tasks = set(batch["task_emb"].argmax(dim=1).tolist())
            seen |= tasks
            batches += 1
            mixed += len(tasks) > 1 or len(batch["actions"]) == 1
    finally:
        for part in parts:
            part.sequences.close_and_delete_hdf5_handle()
    assert drawn == len(concat) == sum(demo_steps(p) for name in names for p in shard_paths(out, infos[name]))
    assert seen == set(range(len(names))) and len(names) == sum(len(s.partition_keys) for s in SOURCES)
    assert batches > 1 and mixed == batches  # every batch of more than one sample mixes directories
