"""``vtac cache info|clear``: the compile cache of accelerator programs (:mod:`compiler.cache`)
and of the CPU backend's machine code, where they are and how much they hold, or emptied.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> add_parser(p.add_subparsers())
    >>> p.parse_args(["cache", "info"]).action
    'info'
"""

from __future__ import annotations

import argparse
from typing import Any

#: The cache's folders under its root: what each holds.
FOLDERS = (("vta", "accelerator programs"), ("llvm", "CPU machine code"))


def add_parser(subparsers: Any) -> None:
    """Register ``cache``."""
    p = subparsers.add_parser(
        "cache",
        help="show or empty the compile cache ($VTAC_CACHE_DIR)",
        description="The compile cache keeps compiled accelerator groups and CPU machine code "
        "between runs, in $VTAC_CACHE_DIR (default: $XDG_CACHE_HOME/vtac or ~/.cache/vtac; "
        "VTAC_CACHE_DIR=off turns it off). `info` shows its folders, entries and bytes; "
        "`clear` removes every entry.",
    )
    p.add_argument("action", choices=["info", "clear"], help="info or clear")
    p.set_defaults(run=_cache)


def _folders() -> list[tuple[str, Any]]:
    """(what, CompileCache) of each folder. The CPU backend's folder is the root itself when
    ``VTAC_CACHE_DIR`` is given (``compiler.targets.cpu.jit``), ``llvm/`` under the default."""
    from compiler.cache import CompileCache, cache_root
    from compiler.targets.cpu.jit import cache_dir

    root = cache_root()
    assert root is not None
    out: list[tuple[str, Any]] = [("accelerator programs", CompileCache(root / "vta"))]
    llvm = cache_dir()
    if llvm is not None:
        out.append(("CPU machine code", _Objects(llvm)))
    return out


class _Objects:
    """The CPU backend's object files (``vtac_*.o`` directly in its folder)."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def _files(self) -> list[Any]:
        return sorted(self.root.glob("vtac_*.o")) if self.root.is_dir() else []

    def info(self) -> Any:
        from compiler.cache import CacheInfo

        files = self._files()
        return CacheInfo(self.root, len(files), sum(p.stat().st_size for p in files))

    def clear(self) -> int:
        n = 0
        for p in self._files():
            p.unlink(missing_ok=True)
            n += 1
        return n


def _cache(args: argparse.Namespace) -> int:
    from compiler.cache import cache_root

    if cache_root() is None:
        print("the compile cache is off (VTAC_CACHE_DIR=off)")
        return 0
    for what, cache in _folders():
        if args.action == "clear":
            print(f"{what}: removed {cache.clear()} entries from {cache.root}")
        else:
            info = cache.info()
            print(f"{what}: {info.entries} entries, {info.nbytes / 2**20:.2f} MiB in {info.path}")
    return 0
