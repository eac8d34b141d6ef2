"""A persistent compile cache: compiled results on disk, keyed by everything that determines
them and by the compiler's own source, so that compiling the same model again costs a lookup.

Where: ``$VTAC_CACHE_DIR`` (default ``$XDG_CACHE_HOME/vtac`` or ``~/.cache/vtac``);
``VTAC_CACHE_DIR=off`` (or ``0``, ``none``, empty) disables it. The accelerator's entries live
in its ``vta/`` folder (the CPU backend's machine code in ``llvm/``,
:mod:`compiler.targets.cpu.jit`).

An entry is one file named after the SHA-256 of its key: a magic line, the key, the SHA-256 of
the payload and the payload. It is written to a temporary file in the same folder and renamed,
so a reader never sees half an entry, and two processes writing the same key race harmlessly.
An entry whose magic, key or checksum does not match (a torn disk, a hand edit, another
format) is removed and reported as a miss: the caller compiles again and rewrites it. The
cache only ever costs time: a folder that cannot be read or written is a miss, never an error.

Keys: :func:`fingerprint` hashes nested plain values (dicts, sequences, numbers, strings,
enums, dataclasses and numpy arrays, the latter by dtype, shape and bytes) canonically;
:func:`source_version` hashes the source files of the modules that produce a result, so any
change to the compiler makes every older entry a miss (nothing is ever read across versions).

Example:
    >>> import tempfile
    >>> cache = CompileCache(Path(tempfile.mkdtemp()))
    >>> key = fingerprint({"shape": (1, 16), "weights": np.arange(4, dtype=np.int8)})
    >>> cache.get(key) is None
    True
    >>> cache.put(key, b"program")
    >>> cache.get(key), cache.info().entries
    (b'program', 1)
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib.util
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

#: The first bytes of every entry; a change of the entry layout changes it.
MAGIC = b"vtac-cache 1\n"
_OFF = ("", "0", "off", "none")


def cache_root() -> Path | None:
    """The cache's root folder from the environment, or None when ``VTAC_CACHE_DIR`` turns it
    off."""
    raw = os.environ.get("VTAC_CACHE_DIR")
    if raw is not None and raw.strip().lower() in _OFF:
        return None
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vtac"


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: entries and their bytes."""

    path: Path
    entries: int
    nbytes: int


class CompileCache:
    """Entries under one folder (``root``), by key (:func:`fingerprint`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    @classmethod
    def from_env(cls, folder: str = "vta") -> CompileCache | None:
        """The cache in ``folder`` of :func:`cache_root`, or None when it is turned off."""
        root = cache_root()
        return None if root is None else cls(root / folder)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.entry"

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (absent, unreadable, or corrupt: a corrupt
        entry is removed so the next :meth:`put` rewrites it)."""
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        head = MAGIC + key.encode() + b"\n"
        digest = data[len(head) : len(head) + 32]
        payload = data[len(head) + 32 :]
        if not data.startswith(head) or hashlib.sha256(payload).digest() != digest:
            try:
                path.unlink()
            except OSError:
                pass
            self.misses += 1
            return None
        self.hits += 1
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key`` atomically (temporary file, then rename)."""
        path = self._path(key)
        entry = MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(entry)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass  # an unwritable cache only costs compile time

    def _entries(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [p for p in self.root.glob("*/*") if p.is_file()]

    def info(self) -> CacheInfo:
        """The folder, its entries and their bytes."""
        files = self._entries()
        return CacheInfo(self.root, len(files), sum(p.stat().st_size for p in files))

    def clear(self) -> int:
        """Remove every entry (and leftover temporary file); returns how many files went."""
        n = 0
        for p in self._entries():
            try:
                p.unlink()
                n += 1
            except OSError:
                pass
        return n


def _canon(value: Any, h: Any) -> None:
    """Feed ``value`` to the hash ``h`` with its type, so that no two values collide by
    spelling (the list ``[1]`` and the string ``"[1]"`` differ)."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, enum.Enum):
        h.update(f"enum:{type(value).__qualname__}.{value.name};".encode())
    elif isinstance(value, np.ndarray | np.generic):
        arr = np.ascontiguousarray(value)
        h.update(f"array:{arr.dtype.str}:{arr.shape};".encode())
        h.update(arr.tobytes())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"dataclass:{type(value).__qualname__}(".encode())
        for f in dataclasses.fields(value):
            h.update(f"{f.name}=".encode())
            _canon(getattr(value, f.name), h)
        h.update(b")")
    elif isinstance(value, Mapping):
        h.update(b"map{")
        for k in sorted(value, key=repr):
            _canon(k, h)
            _canon(value[k], h)
        h.update(b"}")
    elif isinstance(value, Sequence):
        h.update(f"seq{len(value)}[".encode())
        for v in value:
            _canon(v, h)
        h.update(b"]")
    else:
        raise TypeError(f"compile cache key: cannot fingerprint a {type(value).__name__}")


def fingerprint(*parts: Any) -> str:
    """The SHA-256 (hex) of ``parts`` in a canonical encoding.

    Example:
        >>> fingerprint({"a": 1, "b": (2, 3)}) == fingerprint({"b": [2, 3], "a": 1})
        True
        >>> fingerprint(np.zeros(2, np.int8)) == fingerprint(np.zeros(2, np.int16))
        False
    """
    h = hashlib.sha256()
    for p in parts:
        _canon(p, h)
    return h.hexdigest()


@cache
def source_version(*modules: str) -> str:
    """The SHA-256 of the source of ``modules`` (a package: every ``.py`` file below it), so a
    compiler change of any kind makes a different key.

    Example:
        >>> len(source_version("compiler.cache"))
        64
    """
    h = hashlib.sha256()
    for name in modules:
        h.update(name.encode() + b"\0")
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"compile cache version: no module {name!r}")
        origin = Path(spec.origin)
        files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
        for f in files:
            h.update(str(f.relative_to(origin.parent)).encode() + b"\0")
            h.update(f.read_bytes())
    return h.hexdigest()


__all__ = ["CacheInfo", "CompileCache", "cache_root", "fingerprint", "source_version"]
