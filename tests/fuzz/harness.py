"""Run ``vtac`` in-process and check the contract every fuzz case keeps: exit 0, or a non-zero
exit with exactly one line on standard error, ``vtac <command>: error: ...`` (or ``...:
interrupted``), and never a traceback or an internal error.

Example:
    >>> out = run_vtac(["sim", "no-such-file.npz"])
    >>> out.code, out.err.startswith("vtac sim: error: no-such-file.npz")
    (1, True)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from isa.asm import assemble
from runtime.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "isa" / "examples"


@dataclasses.dataclass
class Outcome:
    argv: list[str]
    code: int
    out: str
    err: str


def run_vtac(argv: Sequence[str]) -> Outcome:
    """``vtac argv`` in this process, with standard output and error captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse: --help, or a usage error
            code = e.code if isinstance(e.code, int) else 1
    return Outcome(list(argv), int(code), out.getvalue(), err.getvalue())


def assert_clean(o: Outcome) -> None:
    """The contract of every command on every input (see the module docstring)."""
    assert "Traceback" not in o.err, f"{o.argv}: traceback\n{o.err}"
    assert "internal error" not in o.err, f"{o.argv}: {o.err}"
    if o.code == 0:
        return
    lines = o.err.splitlines()
    assert len(lines) == 1, f"{o.argv}: exit {o.code} with stderr {o.err!r}"
    head = re.match(r"vtac(?: ([\w-]+))?: (?:error: |interrupted)", lines[0])
    assert head, f"{o.argv}: {lines[0]!r}"
    assert head.group(1) is None or head.group(1) in o.argv, f"{o.argv}: {lines[0]!r}"


def example_program(name: str = "matmul16"):
    """An example program of isa/examples, assembled."""
    path = EXAMPLES / f"{name}.vasm"
    return assemble(path.read_text(), source=str(path))


def zip_with_flags(data: bytes, flags: int, method: int | None = None) -> bytes:
    """The zip archive ``data`` with every member's general purpose flags set to ``flags``
    (bit 0: encrypted) and, when given, its compression method to ``method``, in the local and
    the central headers: what a damaged or foreign archive may say."""
    raw = bytearray(data)
    for sig, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.find(sig)
        while at >= 0:
            raw[at + flag_at : at + flag_at + 2] = flags.to_bytes(2, "little")
            if method is not None:
                raw[at + flag_at + 2 : at + flag_at + 4] = method.to_bytes(2, "little")
            at = raw.find(sig, at + 4)
    return bytes(raw)


#: An artifact's manifest (parsed JSON) and its other members by name.
Manifest = dict
Members = dict[str, bytes]


def read_artifact(path: Path) -> tuple[Manifest, Members]:
    """The manifest and the other members of the artifact archive at ``path``."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return json.loads(members.pop("manifest.json")), members


def write_artifact(path: Path, manifest: Manifest, members: Members) -> None:
    """The archive of ``manifest`` and ``members``, every checksum recomputed (as the artifact
    writers compute them: SHA-256 of each member but the manifest), so that only the loader's
    validation can catch a mutation."""
    manifest["checksums"] = {n: hashlib.sha256(b).hexdigest() for n, b in members.items()}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for n, b in members.items():
            zf.writestr(n, b)


def npy_bytes(arr: np.ndarray) -> bytes:
    """``arr`` as the bytes of an ``.npy`` file (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()
