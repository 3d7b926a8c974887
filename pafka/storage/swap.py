"""Swapping a clean's new segment in for the segments it replaces, safe against a crash anywhere.

A clean of a group of segments ``[B, ...]`` writes the new segment beside them as
``B.log.cleaned``, ``B.index.cleaned`` and ``B.timeindex.cleaned`` and syncs them. Then it
commits with a manifest, ``B.swap``, written atomically and synced with its directory: the
inode (and size) of every file it replaces and of every new file. The swap itself renames each
replaced file to ``.deleted`` and each ``.cleaned`` file to its final name; the ``.deleted``
files and then the manifest are removed once the renames are synced.

Files are recognised by inode, never by name alone, so recovery (:func:`recover_swaps`, run
before anything else looks at a log directory) always knows what each name holds:

* no manifest: the clean did not commit; its ``.cleaned`` files are removed as strays and the
  old segments are untouched;
* a manifest, some new file gone from its ``.cleaned`` name: the swap had begun (a later
  truncation may even have removed the new segment since); it is completed;
* a manifest, no new file in place yet, and every replaced file still there (under its own
  name or ``.deleted``): the swap is completed too;
* a manifest whose replaced files are no longer all there (the log was truncated, or
  retention or DeleteRecords removed a segment, after the clean read it): the clean is
  abandoned, every ``.deleted`` file goes back to its name.

Either way the log ends up holding the old segments or the new one, never a mix, never a gap.
The manifest is JSON; a damaged one (it is written atomically, so only a damaged disk makes
one) abandons the clean, unless the renames had reached the new files, which are then kept.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pafka.storage import layout

log = logging.getLogger(__name__)

MANIFEST_VERSION = 1

FileId = tuple[int, int]  # (inode, size)


@dataclass(frozen=True)
class SwapManifest:
    base_offset: int
    cleaned: tuple[FileId, FileId, FileId]  # log, index, time index
    replaced: dict[int, tuple[FileId | None, FileId | None, FileId | None]]  # by base offset

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": MANIFEST_VERSION,
                "base_offset": self.base_offset,
                "cleaned": [list(f) for f in self.cleaned],
                "replaced": {
                    str(base): [None if f is None else list(f) for f in files]
                    for base, files in self.replaced.items()
                },
            }
        )

    @classmethod
    def from_json(cls, text: str) -> SwapManifest:
        raw = json.loads(text)
        if raw.get("version") != MANIFEST_VERSION:
            raise ValueError(f"unknown swap manifest version {raw.get('version')!r}")

        def file_id(value: object) -> FileId | None:
            if value is None:
                return None
            if not (isinstance(value, list) and len(value) == 2):
                raise ValueError(f"bad file id {value!r}")
            return int(value[0]), int(value[1])

        cleaned = tuple(file_id(f) for f in raw["cleaned"])
        if len(cleaned) != 3 or any(f is None for f in cleaned):
            raise ValueError("a swap manifest names three new files")
        replaced = {}
        for base, files in raw["replaced"].items():
            ids = tuple(file_id(f) for f in files)
            if len(ids) != 3:
                raise ValueError("a replaced segment has three files")
            replaced[int(base)] = ids
        return cls(int(raw["base_offset"]), cleaned, replaced)  # type: ignore[arg-type]


def file_id(path: Path) -> FileId | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size


def _holds(path: Path, wanted: FileId | None) -> bool:
    """Whether ``path`` names the file ``wanted`` (same inode; size checked for old files)."""
    found = file_id(path)
    return found is not None and wanted is not None and found[0] == wanted[0]


def sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(directory: Path, manifest: SwapManifest) -> Path:
    """Write the manifest atomically and durably: from here on the swap will happen."""
    path = layout.swap_manifest(directory, manifest.base_offset)
    tmp = layout.with_suffix(path, layout.TEMP_SUFFIX)
    with open(tmp, "w") as f:
        f.write(manifest.to_json())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    sync_directory(directory)
    return path


def still_valid(directory: Path, manifest: SwapManifest) -> bool:
    """Every replaced file is still the one the clean read (same inode and size)."""
    for base, files in manifest.replaced.items():
        for path, wanted in zip(layout.segment_files(directory, base), files, strict=True):
            if wanted is not None and file_id(path) != wanted:
                return False
    return True


def apply(
    directory: Path, manifest: SwapManifest, between: Callable[[], None] | None = None
) -> None:
    """The renames of a swap (or what remains of them): replaced files to ``.deleted``, new
    files to their names (``between`` runs in between: a test's crash point). Not synced;
    :func:`finish` syncs and removes the leftovers."""
    for base, files in manifest.replaced.items():
        for path, wanted in zip(layout.segment_files(directory, base), files, strict=True):
            if _holds(path, wanted):
                os.rename(path, layout.with_suffix(path, layout.DELETED_SUFFIX))
    if between is not None:
        between()
    cleaned = layout.cleaned_files(directory, manifest.base_offset)
    finals = layout.segment_files(directory, manifest.base_offset)
    for source, target, wanted in zip(cleaned, finals, manifest.cleaned, strict=True):
        if _holds(source, wanted):
            os.replace(source, target)


def finish(directory: Path, manifest: SwapManifest) -> None:
    """After :func:`apply`: make the renames durable, then remove the old files and the
    manifest."""
    sync_directory(directory)
    for base, files in manifest.replaced.items():
        for path, wanted in zip(layout.segment_files(directory, base), files, strict=True):
            deleted = layout.with_suffix(path, layout.DELETED_SUFFIX)
            if _holds(deleted, wanted):
                deleted.unlink()
    layout.swap_manifest(directory, manifest.base_offset).unlink(missing_ok=True)
    sync_directory(directory)


def abandon(directory: Path, base_offset: int) -> None:
    """Give up a clean: the manifest first (so recovery never acts on it), then new files."""
    manifest = layout.swap_manifest(directory, base_offset)
    if manifest.exists():
        manifest.unlink()
        sync_directory(directory)
    for path in layout.cleaned_files(directory, base_offset):
        path.unlink(missing_ok=True)


def _settle_unreadable(directory: Path, base_offset: int) -> None:
    """A damaged manifest: which segments it replaced is unknown, so the names decide. A new
    file under its final name beside the old one's ``.deleted`` means the renames had reached
    the new files: the rest of them are done and the old files go as strays. Before that,
    every ``.deleted`` file whose name is free goes back (the group's, whichever segments it
    held; another manifest's swap, recovered next, redoes its own renames)."""
    finals = layout.segment_files(directory, base_offset)
    cleaned = layout.cleaned_files(directory, base_offset)
    deleted = [layout.with_suffix(p, layout.DELETED_SUFFIX) for p in finals]
    if any(f.exists() and d.exists() for f, d in zip(finals, deleted, strict=True)):
        log.error("completing the swap of segment %d in %s", base_offset, directory)
        for source, target in zip(cleaned, finals, strict=True):
            if source.exists() and not target.exists():
                os.rename(source, target)
        abandon(directory, base_offset)
        return
    log.error("abandoning the clean of segment %d in %s", base_offset, directory)
    for path in directory.iterdir():
        if path.name.endswith(layout.DELETED_SUFFIX):
            original = path.with_name(path.name.removesuffix(layout.DELETED_SUFFIX))
            if not original.exists():
                os.rename(path, original)
    abandon(directory, base_offset)


def _restore(directory: Path, manifest: SwapManifest, base_offset: int) -> None:
    """Undo a swap that had not begun: every ``.deleted`` file of the group back in place."""
    for base in manifest.replaced:
        for path in layout.segment_files(directory, base):
            deleted = layout.with_suffix(path, layout.DELETED_SUFFIX)
            if deleted.exists() and not path.exists():
                os.rename(deleted, path)
    abandon(directory, base_offset)


def recover_swaps(directory: Path) -> None:
    """Complete or abandon every swap a crash interrupted (see the module docstring)."""
    for path in layout.swap_manifests(directory):
        base = int(path.name.split(".")[0])
        try:
            manifest = SwapManifest.from_json(path.read_text())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("unreadable swap manifest %s: %s", path, exc)
            _settle_unreadable(directory, base)
            continue
        cleaned = layout.cleaned_files(directory, base)
        # A new file leaves its .cleaned name only by the swap's rename: one that left has
        # begun the swap, whatever happened to the log after it.
        begun = not all(_holds(p, w) for p, w in zip(cleaned, manifest.cleaned, strict=True))
        if begun or _all_replaced_present(directory, manifest):
            log.info("completing the interrupted swap of segment %d in %s", base, directory)
            apply(directory, manifest)
            finish(directory, manifest)
        else:
            log.warning("abandoning a clean of %s: its segments changed after it", directory)
            _restore(directory, manifest, base)


def _all_replaced_present(directory: Path, manifest: SwapManifest) -> bool:
    for base, files in manifest.replaced.items():
        for path, wanted in zip(layout.segment_files(directory, base), files, strict=True):
            if wanted is None:
                continue
            deleted = layout.with_suffix(path, layout.DELETED_SUFFIX)
            if file_id(path) != wanted and file_id(deleted) != wanted:
                return False
    return True
