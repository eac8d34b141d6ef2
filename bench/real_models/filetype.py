"""Magika's inputs and labels: real files read as its package reads them, and the content type
each file's name says it has.

Magika (v3.3) reads at most ``block_size`` bytes from each end of a file, strips whitespace from
the start of the first block and from the end of the last, and feeds the first ``beg_size`` and
the last ``end_size`` of those bytes as integers 0..255, padded with ``padding_token`` (256)
where a file is shorter: one ``int32`` row of ``beg_size + end_size``. Its output is a
probability per label of ``target_labels_space``. The settings come from the model's
``config`` file (``magika.config.json``, from the same wheel).

The files are real ones: this repository's own (Python, Markdown, Verilog, notebooks, JSON,
TOML, a Makefile, text) and the model folder's (photos, rendered text, ONNX files, JSON), at
most ``per_type`` of each file name suffix, so that Python does not drown the rest.

Example:
    >>> sorted(EXTENSIONS)[:4]
    ['.c', '.cfg', '.csv', '.html']
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from bench.real_models import ROOT, RealModel, folder

#: A file name's suffix -> the Magika label a file of that kind has.
EXTENSIONS = {
    ".py": "python",
    ".md": "markdown",
    ".json": "json",
    ".toml": "toml",
    ".v": "verilog",
    ".vh": "verilog",
    ".sh": "shell",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".png": "png",
    ".jpg": "jpeg",
    ".ipynb": "ipynb",
    ".txt": "txt",
    ".c": "c",
    ".cfg": "ini",
    ".ini": "ini",
    ".csv": "csv",
    ".html": "html",
    ".onnx": "onnx",
    ".npz": "npz",
    "Makefile": "makefile",
}


def settings(model: RealModel) -> dict[str, Any]:
    """The model's feature settings and labels (its ``config`` file)."""
    if model.config is None:
        raise ValueError(f"{model.name}: the manifest names no config file")
    return json.loads(model.config.read_text())


def labels(model: RealModel) -> list[str]:
    return list(settings(model)["target_labels_space"])


def features(model: RealModel, data: bytes, cfg: dict[str, Any] | None = None) -> np.ndarray:
    """One file's input row (``int32``, ``beg_size + end_size``), as Magika extracts it.

    Example (a short file: whitespace stripped from its start for the first half and from its
    end for the second, each half padded on its far side):
        >>> cfg = {"block_size": 8, "beg_size": 5, "end_size": 5, "padding_token": 256}
        >>> features(None, b"  abc\\n", cfg).tolist()
        [97, 98, 99, 10, 256, 32, 32, 97, 98, 99]
    """
    cfg = cfg or settings(model)
    block, beg_size, end_size = cfg["block_size"], cfg["beg_size"], cfg["end_size"]
    row = np.full(beg_size + end_size, cfg["padding_token"], np.int32)
    head = data[:block].lstrip()[:beg_size]
    tail = data[-block:].rstrip()[-end_size:] if data else b""
    row[: len(head)] = np.frombuffer(head, np.uint8)
    if tail:
        row[beg_size + end_size - len(tail) :] = np.frombuffer(tail, np.uint8)
    return row


def read(model: RealModel, path: Path) -> np.ndarray:
    """A file's input row (:func:`features`), reading only its first and last blocks."""
    cfg = settings(model)
    block = cfg["block_size"]
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        head = f.read(block)
        if size <= block:
            return features(model, head, cfg)
        f.seek(size - block)
        tail = f.read(block)
    # features() takes the head from the first block and the tail from the last
    return features(model, head + tail, cfg)


def _working_tree() -> list[Path]:
    try:
        tracked = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        return [ROOT / p for p in tracked]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: walk it
        return [
            p
            for p in ROOT.rglob("*")
            if not any(
                part.startswith(".") or part == "build" for part in p.parts[len(ROOT.parts) :]
            )
        ]


def tree_at(rev: str) -> Path | None:
    """This repository's tracked files as of commit ``rev``, unpacked once into
    ``.repo/<rev>`` of the model folder (None where git cannot read the commit)."""
    dest = folder() / ".repo" / rev
    if dest.is_dir():
        return dest
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    part = dest.with_name(f"{rev}.{os.getpid()}.part")
    shutil.rmtree(part, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(part, filter="data")
    try:
        part.rename(dest)  # whole or not at all; another process may have made it first
    except OSError:
        shutil.rmtree(part, ignore_errors=True)
    return dest if dest.is_dir() else None


def expected(path: Path) -> str | None:
    """The label a file's name says it has, or None."""
    return EXTENSIONS.get(path.name) or EXTENSIONS.get(path.suffix)


def _suffix(path: Path) -> str:
    return path.name if path.name in EXTENSIONS else path.suffix or path.name


#: The commit whose tracked files the tests read: the files at a fixed commit, so that their
#: sample (and what the int8 model makes of it) does not move with every later commit that
#: adds or edits a file. Over ten other seeded samples of the working tree the int8 and fp32
#: models agreed on 89% to 100% of the files (docs/real_models.md).
PINNED = "82f2ea0b22dffd5a1f426ee5161fabb4cc8164f5"


def files(
    per_type: int, seed: int, skip: set[Path] | None = None, rev: str | None = None
) -> list[Path]:
    """Real files (see the module docstring): a seeded choice of at most ``per_type`` of each
    suffix, those of ``skip`` left out, sorted by name. ``rev``: this repository's files as of
    that commit (unpacked once under the model folder, :func:`tree_at`) instead of the working
    tree's; where the commit cannot be read (no git history) the working tree's, with a
    warning."""
    repo: list[Path] | None = None
    top = ROOT
    if rev is not None:
        tree = tree_at(rev)
        if tree is None:
            warnings.warn(
                f"commit {rev[:12]} is not in this checkout's history: sampling the working "
                "tree's files instead (the sample then changes as the tree does)",
                stacklevel=2,
            )
        else:
            repo, top = [p for p in tree.rglob("*") if p.is_file()], tree
    if repo is None:
        repo = _working_tree()
    root = folder()  # its own files, not the download cache (.wheels)
    models = [p for p in root.rglob("*") if not p.relative_to(root).parts[0].startswith(".")]
    # ordered by where they lie in the repository or the model folder, not by absolute path:
    # the same sample wherever the checkout is
    place = {p: (0, p.relative_to(top).as_posix()) for p in repo}
    place.update({p: (1, p.relative_to(root).as_posix()) for p in models})
    by_type: dict[str, list[Path]] = {}
    for p in sorted(place, key=place.__getitem__):
        if p.is_file() and p.stat().st_size >= 8 and p not in (skip or set()):
            by_type.setdefault(_suffix(p), []).append(p)
    rng = np.random.default_rng(seed)
    chosen: list[Path] = []
    for kind in sorted(by_type):
        paths = by_type[kind]
        picks = rng.permutation(len(paths))[:per_type]
        chosen += [paths[k] for k in sorted(picks)]
    return sorted(chosen, key=place.__getitem__)
