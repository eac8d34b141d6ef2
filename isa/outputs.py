"""Output files written all or none: checked before any work, replaced atomically at the end.

A command that writes several files (a program, a DRAM image, a trace, a chart) reserves each
path first: the path is checked (its directory exists, it is not itself a directory, it can be
created there) and a temporary file is made beside it. The command writes the temporary files;
when it ends without an exception every one replaces its destination (``os.replace``), and when
it fails every temporary file is removed, so a failed command leaves no output behind, not even
a partial one. Files get the usual permissions (``0o666`` less the umask).

Example:
    >>> import os, tempfile
    >>> d = tempfile.mkdtemp()
    >>> with OutputFiles() as out:
    ...     tmp = out.reserve(os.path.join(d, "a.txt"))
    ...     _ = tmp.write_text("hello")
    >>> sorted(os.listdir(d))
    ['a.txt']
    >>> try:
    ...     with OutputFiles() as out:
    ...         _ = out.reserve(os.path.join(d, "b.txt")).write_text("partial")
    ...         raise RuntimeError("the command failed")
    ... except RuntimeError:
    ...     pass
    >>> sorted(os.listdir(d))
    ['a.txt']
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from types import TracebackType

from .errors import OutputError


def check_output_path(path: str | os.PathLike[str], what: str = "output") -> Path:
    """``path`` as a :class:`Path`, or :class:`OutputError` if a file cannot be written there.

    >>> check_output_path("/no/such/dir/x.npz")
    Traceback (most recent call last):
    ...
    isa.errors.OutputError: output /no/such/dir/x.npz: directory /no/such/dir does not exist
    """
    text = os.fspath(path)
    if not text:
        raise OutputError(f"{what}: empty file name")
    p = Path(text)
    if text.endswith(os.sep) or p.is_dir():
        raise OutputError(f"{what} {text}: is a directory; name a file")
    parent = p.parent
    if not parent.exists():
        raise OutputError(f"{what} {text}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{what} {text}: {parent} is not a directory")
    return p


class OutputFiles:
    """The output files of one command, committed together or not at all (see module doc)."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []

    def reserve(self, path: str | os.PathLike[str], what: str = "output") -> Path:
        """Check ``path`` and return the temporary file to write in its place.

        The temporary file sits in the same directory (so the final ``os.replace`` is atomic)
        and keeps the suffix, so writers that choose a format by suffix choose the same one.
        """
        final = check_output_path(path, what)
        for _, other in self._pending:
            if other.resolve() == final.resolve():
                raise OutputError(f"{what} {final}: named twice as an output")
        tmp = final.with_name(f".{final.name}.{secrets.token_hex(4)}.tmp{final.suffix}")
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)
        except OSError as e:
            raise OutputError(
                f"{what} {final}: cannot create a file there ({e.strerror})"
            ) from None
        os.close(fd)
        self._pending.append((tmp, final))
        return tmp

    def commit(self) -> None:
        """Move every temporary file onto its destination."""
        pending, self._pending = self._pending, []
        for i, (tmp, final) in enumerate(pending):
            try:
                os.replace(tmp, final)
            except OSError as e:
                for later, _ in pending[i:]:
                    _unlink(later)
                raise OutputError(f"output {final}: cannot write it ({e.strerror})") from None

    def discard(self) -> None:
        """Remove every temporary file; no destination is touched."""
        pending, self._pending = self._pending, []
        for tmp, _ in pending:
            _unlink(tmp)

    def __enter__(self) -> OutputFiles:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


__all__ = ["OutputFiles", "check_output_path"]
