"""A ticking bar of the elapsed time on stderr, for work that counts no steps: a simulation
(``vtac sim``), an RTL build or run (``vtac rtl``), one kernel on numba's CUDA simulator.

Example:
    >>> with elapsed("nothing to show", False):
    ...     pass
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def elapsed(what: str, show: bool | None = None) -> Iterator[None]:
    """A ticking bar of the elapsed time on stderr while the block runs: on a terminal when
    ``show`` is None, always when True, never when False."""
    import sys
    import threading

    if show is None:
        show = sys.stderr.isatty()
    if not show:
        yield
        return
    from tqdm import tqdm

    bar = tqdm(desc=what, bar_format="{desc}: {elapsed}", file=sys.stderr, leave=False)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(1.0):
            bar.refresh()

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        bar.close()


__all__ = ["elapsed"]
