"""Fuzzing the program file: mutated bytes, mutated JSON keys, mutated arrays.

Every mutated file either runs (``vtac sim``, ``vtac disasm``) or is refused with one line naming
the fault: never a traceback, a hang, or figures built on a file that should have been refused.
"""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import assert_clean, example_program, run_vtac, zip_with_flags

FUZZ = settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def base_arrays() -> dict[str, np.ndarray]:
    return example_program().to_arrays()


def _save(arrays: dict[str, np.ndarray], path) -> str:
    np.savez(path, **arrays)
    return str(path)


def _check_file(path: str) -> None:
    for argv in (["sim", path, "--json"], ["disasm", path], ["sim", path, "--max-cycles", "5000"]):
        out = run_vtac(argv)
        assert_clean(out)
        if out.code == 0 and "--json" in argv:
            json.loads(out.out)  # strict JSON: no NaN, no Infinity


# ---- mutated bytes ------------------------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_mutated_bytes(tmp_path_factory, base_arrays, data):
    raw = bytearray(io.BytesIO(_archive(base_arrays)).getvalue())
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    path = tmp_path_factory.mktemp("bytes") / "p.npz"
    path.write_bytes(bytes(raw))
    _check_file(str(path))


@pytest.mark.parametrize(("flags", "method"), [(1, None), (0, 99)], ids=["encrypted", "method"])
def test_members_flagged_encrypted_or_of_unknown_compression_are_refused(
    tmp_path, base_arrays, flags, method
):
    """zipfile raises RuntimeError and NotImplementedError for these: refused in one line."""
    path = tmp_path / "p.npz"
    path.write_bytes(zip_with_flags(_archive(base_arrays), flags, method))
    for argv in (["sim", str(path)], ["disasm", str(path)]):
        out = run_vtac(argv)
        assert_clean(out)
        assert out.code == 1 and "not a readable" in out.err, out.err


def _archive(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


# ---- mutated JSON ---------------------------------------------------------------------------
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, -1, 1, 2**31, 2**63, 2**64, 1e308, 0.5, "", "int8", "V0", "O", "U3"])
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
RAW_JSON = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "[" * 200 + "]" * 200, "{", "", "null", "1e999", '"x"']
)


@FUZZ
@given(data=st.data())
def test_mutated_config_json(tmp_path_factory, base_arrays, data):
    cfg = json.loads(str(base_arrays["config"]))
    key = data.draw(st.sampled_from(sorted(cfg) + ["unknown_knob"]))
    if data.draw(st.booleans()):
        text = json.dumps(cfg).replace(json.dumps(cfg.get(key, 0)), data.draw(RAW_JSON), 1)
    else:
        cfg[key] = data.draw(JSON_VALUES)
        text = json.dumps(cfg)
    arrays = dict(base_arrays, config=np.array(text))
    _check_file(_save(arrays, tmp_path_factory.mktemp("cfg") / "p.npz"))


@FUZZ
@given(data=st.data())
def test_mutated_symbols_json(tmp_path_factory, base_arrays, data):
    syms = json.loads(str(base_arrays["symbols"]))
    name = data.draw(st.sampled_from(sorted(syms)))
    key = data.draw(st.sampled_from(["offset", "dtype", "shape", "role", "layout", "extra"]))
    value = data.draw(
        JSON_VALUES
        | st.lists(st.integers(-3, 2**40), max_size=4)
        | st.sampled_from(["int8,int8", "datetime64", "S0", "bool", "complex64", "<f2", "|V4"])
    )
    if data.draw(st.booleans()):
        syms[name][key] = value
    else:
        syms[data.draw(st.sampled_from(["a b", "x;y", "#", "", "@z", "ok"]))] = syms[name]
    arrays = dict(base_arrays, symbols=np.array(json.dumps(syms)))
    _check_file(_save(arrays, tmp_path_factory.mktemp("sym") / "p.npz"))


# ---- mutated arrays -------------------------------------------------------------------------
ARRAYS = st.sampled_from(
    [
        np.array(5),
        np.array(-16),
        np.array(2**62, np.int64),
        np.array(np.iinfo(np.uint64).max, np.uint64),
        np.array(1.5),
        np.array("vta-program"),
        np.array(b"bytes"),
        np.zeros(3, np.uint8),
        np.zeros((2, 2), np.uint8),
        np.zeros(16, np.int8),
        np.zeros(0, np.uint8),
        np.array([1, 2], np.int64),
        np.array(True),
    ]
)


@FUZZ
@given(data=st.data())
def test_mutated_arrays(tmp_path_factory, base_arrays, data):
    arrays = dict(base_arrays)
    key = data.draw(st.sampled_from(sorted(arrays)))
    action = data.draw(st.sampled_from(["replace", "drop", "extra"]))
    if action == "replace":
        arrays[key] = data.draw(ARRAYS)
    elif action == "drop":
        del arrays[key]
    else:
        arrays["extra"] = data.draw(ARRAYS)
    _check_file(_save(arrays, tmp_path_factory.mktemp("arr") / "p.npz"))


# ---- files that are not program archives -------------------------------------------------------
def test_not_archives(tmp_path):
    np.save(tmp_path / "plain.npy", np.arange(4))
    (tmp_path / "plain.npy").rename(tmp_path / "plain.npz")
    with zipfile.ZipFile(tmp_path / "text.npz", "w") as z:
        z.writestr("a.txt", "hello")
        z.writestr("format.npy", "not an array")
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "dir.npz").mkdir()
    np.savez(tmp_path / "objects.npz", format=np.array([{"a": 1}], dtype=object))
    for name in ("plain", "text", "empty", "dir", "objects"):
        path = str(tmp_path / f"{name}.npz")
        for argv in (["sim", path], ["disasm", path]):
            out = run_vtac(argv)
            assert_clean(out)
            assert out.code == 1, (argv, out.err)


# ---- mutated instruction streams ------------------------------------------------------------
@FUZZ
@given(data=st.data())
def test_mutated_instruction_words(tmp_path_factory, base_arrays, data):
    arrays = dict(base_arrays)
    dram = arrays["dram"].copy()
    base, count = int(arrays["insn_base"]), int(arrays["insn_count"])
    for _ in range(data.draw(st.integers(1, 4))):
        at = base + data.draw(st.integers(0, 16 * count - 1))
        dram[at] ^= 1 << data.draw(st.integers(0, 7))
    arrays["dram"] = dram
    _check_file(_save(arrays, tmp_path_factory.mktemp("insn") / "p.npz"))
