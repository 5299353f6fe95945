"""Uploads of built files to the dataset repo: the Hugging Face hub, or `<out>/hub/` laid out as the
repo would be (GUI_ASSETS_HUB_REPO unset).

`upload()` asks the target what it already holds and sends only files it does not hold with
the same content, in batches small enough to survive a dropped connection; a failed batch is
retried with backoff (a bounded number of times), and a rerun after a failure sends only what
is still missing: that is the resume. Content is compared by sha256 (LFS files on the hub) or
by git blob sha1 (small files the hub stores in git). The token goes to HfApi and nowhere else.

The files that describe the others (dataset_info.json, a LeRobot dataset's meta/info.json) are
committed last, in a commit of their own: a description reaches the repo only after every file
it names has landed, and an upload cut short never commits it (the rerun sends what is missing,
then the description). huggingface_hub's `upload_large_folder` is not used: it commits files as
they land (a reader would see a description beside half its shards) and wants the repo's layout
as one local folder, which the build's output is not.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from gui_assets.core.atomic import atomic_path, sha256_files
from gui_assets.core.layout import DATASET_INFO, DatasetInfo, built_directories
from gui_assets.sources.mirror import HashCache

BATCH_BYTES = 2 * 1000**3  # a commit of at most ~2 GB: four 500 MB shards
BATCH_FILES = 100
DESCRIPTORS = (DATASET_INFO, "meta/info.json")


def is_descriptor(repo_path: str) -> bool:
    return any(repo_path == d or repo_path.endswith("/" + d) for d in DESCRIPTORS)


class UploadError(Exception):
    """An upload that kept failing after its retries; the message names the batch, never the token."""


def git_blob_sha1(path: Path) -> str:
    h = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class Target(Protocol):
    name: str
    remote: bool  # a dataset repo on the hub (demo data never goes there)

    def held_infos(self) -> list[DatasetInfo]:
        """The dataset_info.json of every directory the repo already holds (local targets)."""
        ...

    def identical(self, repo_path: str, local: Path) -> bool:
        """The target already holds exactly this file (the same inode), known without reading it."""
        ...

    def holds(self, paths: set[str]) -> dict[str, tuple[str, str]]:
        """repo path -> (kind, digest) of those of `paths` the repo holds; kind 'sha256' or 'git-sha1'."""
        ...

    def send(self, batch: list[tuple[str, Path]], message: str) -> None: ...


def _same(local: Path, sha256: str, held: tuple[str, str] | None) -> bool:
    if held is None:
        return False
    kind, digest = held
    return (sha256 if kind == "sha256" else git_blob_sha1(local)) == digest


FICLONE = 0x40049409  # Linux ioctl: share the source's extents (btrfs, xfs): a copy that costs nothing


def place(local: Path, final: Path) -> str:
    """Put `local`'s bytes at `final` atomically, as cheaply as the file system allows: a hard
    link (same file system), else a reflink, else a copy. Returns which."""
    with atomic_path(final) as tmp:
        try:
            os.link(local, tmp)
            return "link"
        except OSError:
            pass
        with open(local, "rb") as src, open(tmp, "wb") as dst:
            try:
                fcntl.ioctl(dst.fileno(), FICLONE, src.fileno())
                return "reflink"
            except OSError:
                shutil.copyfileobj(src, dst, 1 << 20)
                return "copy"


@dataclass
class LocalHubTarget:
    """A folder laid out exactly as the dataset repo: `<root>/<path in repo>`. Files are hard
    links to the build's own (or reflinks, or copies across file systems): a shard's bytes are
    never written twice. The target never changes a file in place, and neither does the build
    (it replaces files by rename), so a link stays a faithful copy."""

    root: Path
    name: str = "local"
    fail_after: int | None = None  # tests: files sent before a simulated dropped connection
    _sent: int = field(default=0, repr=False)
    remote: bool = False
    hash_cache: Path | None = None  # where target files' sha256 are kept by size and mtime
    placed: Counter[str] = field(default_factory=Counter, repr=False)  # link / reflink / copy

    def identical(self, repo_path: str, local: Path) -> bool:
        """The target's file IS the local one (a hard link made earlier): nothing to compare."""
        target = self.root / repo_path
        return target.is_file() and os.path.samefile(target, local)

    def held_infos(self) -> list[DatasetInfo]:
        return built_directories(self.root)  # laid out as the repo: a folder per directory

    def holds(self, paths: set[str]) -> dict[str, tuple[str, str]]:
        # Only the paths asked about: the folder may hold the whole dataset.
        cache = HashCache(self.hash_cache)
        held = {
            p: ("sha256", cache.sha256(self.root / p)) for p in sorted(paths) if (self.root / p).is_file()
        }
        cache.save()
        return held

    def send(self, batch: list[tuple[str, Path]], message: str) -> None:
        for repo_path, local in batch:
            if self.fail_after is not None and self._sent >= self.fail_after:
                raise ConnectionResetError(f"connection dropped while sending {repo_path}")
            self.placed[place(local, self.root / repo_path)] += 1
            self._sent += 1


class HfHubTarget:
    """The dataset repo on the hub (created if missing). Each batch is one commit."""

    def __init__(self, repo_id: str, token: str | None, endpoint: str | None = None, api: Any = None) -> None:
        from huggingface_hub import HfApi

        self.repo_id = repo_id
        self.name = f"hub:{repo_id}"
        self.remote = True
        self.api = api or HfApi(token=token, endpoint=endpoint)
        self._created = False

    def held_infos(self) -> list[DatasetInfo]:
        return []  # demo data is refused outright for a hub repo, so nothing can mix there

    def identical(self, repo_path: str, local: Path) -> bool:
        return False

    def holds(self, paths: set[str]) -> dict[str, tuple[str, str]]:
        from huggingface_hub.errors import RepositoryNotFoundError

        try:
            entries = self.api.list_repo_tree(self.repo_id, repo_type="dataset", recursive=True)
            out = {}
            for e in entries:
                if e.path not in paths:
                    continue
                lfs = getattr(e, "lfs", None)
                if lfs is not None:
                    out[e.path] = ("sha256", lfs.sha256)
                elif getattr(e, "blob_id", None):
                    out[e.path] = ("git-sha1", e.blob_id)
            return out
        except RepositoryNotFoundError:
            return {}

    def send(self, batch: list[tuple[str, Path]], message: str) -> None:
        from huggingface_hub import CommitOperationAdd

        if not self._created:
            self.api.create_repo(self.repo_id, repo_type="dataset", exist_ok=True)
            self._created = True
        ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(local)) for p, local in batch]
        self.api.create_commit(self.repo_id, repo_type="dataset", operations=ops, commit_message=message)


@dataclass
class UploadResult:
    target: str
    uploaded: list[str]
    skipped: list[str]
    batches: int
    retries: int
    digests: dict[str, str]  # repo path -> sha256 of the local file, computed once

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "uploaded": len(self.uploaded),
            "skipped": len(self.skipped),
            "batches": self.batches,
            "retries": self.retries,
        }


def refuse_demo(infos: list[DatasetInfo], target: Target) -> None:
    """Demo data stays demo data: a build from the generated demo mirror is never uploaded to a
    dataset repo, and no upload mixes demo and real directories. Raises UploadError saying what
    to set; sends nothing."""
    demo = sorted(i.directory for i in infos if i.demo)
    if demo and target.remote:
        raise UploadError(
            f"refusing to upload {', '.join(demo)} to {target.name}: built from the generated demo "
            "mirror (GUI_ASSETS_MIRROR was not set). Set GUI_ASSETS_MIRROR to a real mirror, or "
            "GUI_ASSETS_SOURCE=hub, rebuild, then upload; or unset GUI_ASSETS_HUB_REPO to keep the demo "
            "in <out>/hub/."
        )
    everything = {i.directory: i.demo for i in target.held_infos()} | {i.directory: i.demo for i in infos}
    if len(set(everything.values())) > 1:
        kinds = {d: "demo" if v else "real" for d, v in sorted(everything.items())}
        raise UploadError(
            f"refusing to upload to {target.name}: demo and real directories would mix ({kinds}); "
            "rebuild everything from one mirror, or upload to an empty target"
        )


def _batches(files: list[tuple[str, Path]]) -> Iterable[list[tuple[str, Path]]]:
    """Commits of at most BATCH_BYTES / BATCH_FILES: the data first, then the descriptors alone."""
    batch: list[tuple[str, Path]] = []
    size = 0
    ordered = sorted(files, key=lambda item: (is_descriptor(item[0]), item[0]))
    for item in ordered:
        n = item[1].stat().st_size
        first_descriptor = is_descriptor(item[0]) and not any(is_descriptor(p) for p, _ in batch)
        if batch and (size + n > BATCH_BYTES or len(batch) >= BATCH_FILES or first_descriptor):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += n
    if batch:
        yield batch


def _retryable(e: BaseException) -> bool:
    """A transient failure, here or anywhere down its chain of causes: huggingface_hub, once its
    own retries are spent, raises a RuntimeError whose cause is the dropped connection."""
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if _transient(cause):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _transient(e: BaseException) -> bool:
    try:
        import httpx2
        from huggingface_hub.errors import HfHubHTTPError
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency
        return isinstance(e, OSError)
    if isinstance(e, HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        return status is None or status in (408, 429) or status >= 500
    return isinstance(e, OSError | httpx2.TransportError)


def upload(
    files: list[tuple[str, Path]],
    target: Target,
    message: str,
    *,
    retries: int = 4,
    backoff: float = 2.0,
    log: logging.Logger | Any = None,
    sleep: Callable[[float], None] = time.sleep,
    known: dict[str, str] | None = None,
) -> UploadResult:
    """Send `(path in repo, local file)` pairs the target does not hold with the same content.

    `known`: sha256 of local files already recorded (dataset_info.json's shard hashes), used
    instead of reading the file again; a file the target holds as the very same file is skipped
    without any hash."""
    known = known or {}
    unknown = [(p, local) for p, local in files if not known.get(p)]  # each file read at most once
    digests = {p: known[p] for p, _ in files if known.get(p)}
    digests.update(zip((p for p, _ in unknown), sha256_files([local for _, local in unknown]), strict=True))
    rest = [(p, local) for p, local in files if not target.identical(p, local)]
    held = target.holds({p for p, _ in rest}) if rest else {}
    todo = [(p, local) for p, local in sorted(rest) if not _same(local, digests[p], held.get(p))]
    skipped = sorted(p for p, _ in files if p not in {q for q, _ in todo})
    done: list[str] = []
    used = batches = 0
    for batch in _batches(todo):
        batches += 1
        for attempt in range(retries + 1):
            try:
                target.send(batch, f"{message} ({len(batch)} files)")
                break
            except Exception as e:  # classified just below: retried, or raised with the batch named
                if not _retryable(e) or attempt == retries:
                    raise UploadError(
                        f"upload to {target.name} failed on a batch of {len(batch)} files "
                        f"({batch[0][0]} ...) after {attempt + 1} attempts: {type(e).__name__}: {e}"
                    ) from None
                used += 1
                if log is not None:
                    log.warning(
                        f"upload batch to {target.name} failed ({type(e).__name__}); retry {attempt + 1}"
                    )
                sleep(backoff * 2**attempt)
                now = target.holds({p for p, _ in batch})  # a batch cut short may have landed in part
                batch = [(p, local) for p, local in batch if not _same(local, digests[p], now.get(p))]
                if not batch:
                    break
        done += [p for p, _ in batch]
    return UploadResult(target.name, done, skipped, batches, used, digests)


def recorded_digests(info: DatasetInfo, folder: Path) -> dict[str, str]:
    """sha256 of a directory's shards as dataset_info.json records them, for the shards that are
    still what it describes: the same size, and not written after dataset_info.json itself."""
    written = (folder / DATASET_INFO).stat().st_mtime
    known = {}
    for entry in info.shards + info.val_shards:
        path = folder / entry.file
        with contextlib.suppress(OSError):
            st = path.stat()
            if st.st_size == entry.bytes and st.st_mtime <= written:
                known[f"{info.directory}/{entry.file}"] = entry.sha256
    return known
