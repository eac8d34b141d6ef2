"""Ctrl-C that cannot be lost: a sticky interrupt request with a forced exit behind it.

Python turns SIGINT into a ``KeyboardInterrupt`` at the next bytecode of the main thread. That
exception can be lost: a library may swallow it while it imports or compiles (a broad
``except BaseException``), or the main thread may be waiting on a worker that holds a lock the
exit path needs. A command line tool must stop at any moment all the same, so the command
installs :func:`install`'s handler, which

* records the request (:func:`requested` stays true, so every long loop that asks, such as the
  simulator's wait for its event loop, stops at its next check even if the first exception was
  swallowed),
* raises ``KeyboardInterrupt`` as Python's own handler does (the graceful path: output files
  are discarded, the command prints ``interrupted`` and exits 130),
* and arms a watchdog: if the process is still alive ``grace_s`` seconds later, or on a second
  Ctrl-C, it writes ``<name>: interrupted`` (unless the command already did, :func:`reported`)
  and exits 130 at once.

Example:
    >>> clear(); requested()
    False
    >>> request(); requested()
    True
    >>> try:
    ...     check()
    ... except KeyboardInterrupt:
    ...     print("stopped")
    stopped
    >>> clear()
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

_REQUESTED = threading.Event()
_REPORTED = threading.Event()
_FORCE_CODE = 130


def requested() -> bool:
    """True once an interrupt was asked for (until :func:`clear`)."""
    return _REQUESTED.is_set()


def request() -> None:
    """Record an interrupt request (the handler does this; tests may too)."""
    _REQUESTED.set()


def clear() -> None:
    _REQUESTED.clear()
    _REPORTED.clear()


def reported() -> None:
    """Say that the command already printed its ``interrupted`` line (the watchdog then exits
    without printing it twice)."""
    _REPORTED.set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if an interrupt was asked for: call it in long loops."""
    if _REQUESTED.is_set():
        raise KeyboardInterrupt


def _force_exit(name: str) -> None:
    try:
        if not _REPORTED.is_set():
            sys.stderr.write(f"{name}: interrupted\n")
            sys.stderr.flush()
    finally:
        os._exit(_FORCE_CODE)


def install(name: str, grace_s: float = 10.0) -> Callable[[], None]:
    """Install the SIGINT handler described above for the command ``name``; returns a function
    that restores the previous handler. Outside the main thread it installs nothing."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    clear()
    armed: list[threading.Timer] = []

    def handler(signum: int, frame: Any) -> None:
        if armed:  # a second Ctrl-C: the user does not want to wait
            _force_exit(name)
        request()
        timer = threading.Timer(grace_s, _force_exit, args=(name,))
        timer.daemon = True
        armed.append(timer)
        timer.start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)

    def restore() -> None:
        # After an interrupt the watchdog stays armed: if the exit itself hangs (a worker
        # thread holding a lock that an exit handler needs), it still ends the process.
        signal.signal(signal.SIGINT, previous)
        if not _REQUESTED.is_set():
            clear()

    return restore


__all__ = ["check", "clear", "install", "request", "requested"]
