"""The compile cache (:mod:`compiler.cache`) and the group compile around it
(:mod:`compiler.model.group_compile`): a hit gives the program a compile gives, byte for byte; a
changed workload, weight, knob, config or compiler version misses; a corrupt entry is compiled
again and rewritten; ``jobs`` workers give the serial programs."""

import doctest
import importlib
import json
import os
import zipfile

import numpy as np
import pytest

import compiler.model.group_compile as group_compile
import isa
from compiler.cache import CompileCache, cache_root, fingerprint
from compiler.errors import ModelError
from compiler.graph import Constant, Graph, Node, TensorType, Var
from compiler.model.vta import compile_group
from compiler.partition import partition_graph
from compiler.quantize import quantize_graph
from runtime.cli import main
from runtime.vta_target import compile_network


def _graph(nudge: float = 0.0) -> Graph:
    """conv -> relu -> max pool -> conv: three kinds of group. ``nudge`` moves one weight of
    the first conv (a scale of every weight would quantize to the same int8 network)."""
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((1, 8, 8, 8), "float32", "NCHW"))
    w = rng.normal(size=(8, 8, 3, 3)).astype(np.float32)
    w[3, 2, 1, 1] += nudge
    w1 = Constant(w, name="w1")
    w2 = Constant(rng.normal(size=(8, 8, 1, 1)).astype(np.float32), name="w2")
    c1 = Node("conv2d", (x, w1), {"padding": (1, 1, 1, 1)}, name="c1")
    r = Node("relu", (c1,), {}, name="r")
    p = Node("max_pool2d", (r,), {"pool_size": (2, 2), "strides": (2, 2)}, name="p")
    c2 = Node("conv2d", (p, w2), {}, name="c2")
    return Graph.from_outputs([x], [c2])


FEED = {"x": np.random.default_rng(1).normal(size=(1, 8, 8, 8)).astype(np.float32)}


def _programs(layers) -> dict[str, bytes]:
    """Every group's program file and packed parameters, as bytes."""
    out = {}
    for name, layer in layers.items():
        arrays = layer.program.to_arrays()
        blob = b"".join(np.asarray(arrays[k]).tobytes() for k in sorted(arrays))
        blob += b"".join(np.ascontiguousarray(v).tobytes() for _, v in sorted(layer.params.items()))
        out[name] = blob
    return out


class Counting:
    """compile_group, counting the groups it compiles."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, group, cfg):
        self.names.append(group.name)
        return compile_group(group, cfg)


def _compile(cache, counter=None, graph=None, config="default", extra=None, jobs=1):
    """The groups of ``graph`` (quantized, partitioned) compiled through ``cache``."""
    cfg = isa.load_config(config)
    part = partition_graph(quantize_graph(graph or _graph(), [FEED]), cfg)
    return group_compile.compile_groups(
        part.groups, cfg, cache=cache, compile_one=counter, extra=extra, jobs=jobs
    )


def test_entry_round_trip_and_corruption(tmp_path):
    cache = CompileCache(tmp_path)
    key = fingerprint("k")
    assert cache.get(key) is None
    cache.put(key, b"payload")
    assert cache.get(key) == b"payload"
    (entry,) = [p for p in tmp_path.rglob("*.entry")]
    data = bytearray(entry.read_bytes())
    data[-1] ^= 1
    entry.write_bytes(bytes(data))
    assert cache.get(key) is None and not entry.exists()  # corrupt: removed, a miss
    entry.parent.mkdir(parents=True, exist_ok=True)
    entry.write_bytes(b"something else entirely")
    assert cache.get(key) is None
    cache.put(key, b"again")
    assert cache.get(key) == b"again"
    assert not list(tmp_path.rglob("*.tmp"))  # written through a renamed temporary file
    assert cache.info().entries == 1 and cache.clear() == 1 and cache.info().entries == 0


def test_unwritable_cache_is_a_miss_not_an_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = CompileCache(blocker / "vta")
    cache.put(fingerprint(1), b"x")
    assert cache.get(fingerprint(1)) is None


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("VTAC_CACHE_DIR", "off")
    assert cache_root() is None and CompileCache.from_env() is None
    monkeypatch.setenv("VTAC_CACHE_DIR", str(tmp_path))
    assert CompileCache.from_env().root == tmp_path / "vta"
    monkeypatch.delenv("VTAC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "vtac"


def test_fingerprint_tells_values_apart():
    assert fingerprint({"a": (1, 2)}) == fingerprint({"a": [1, 2]})
    assert fingerprint([1]) != fingerprint("[1]")
    assert fingerprint(np.zeros(4, np.int8)) != fingerprint(np.zeros((2, 2), np.int8))
    assert fingerprint(np.zeros(4, np.int8)) != fingerprint(np.zeros(4, np.uint8))
    with pytest.raises(TypeError, match="cannot fingerprint a object"):
        fingerprint(object())


def test_hit_gives_the_compiled_programs_byte_for_byte(tmp_path):
    cache = CompileCache(tmp_path)
    cold, warm = Counting(), Counting()
    first = _compile(cache, cold)
    assert cold.names == list(first) and len(first) >= 3
    second = _compile(cache, warm)
    assert warm.names == [] and cache.hits == len(first)
    assert _programs(second) == _programs(first) == _programs(_compile(None))
    # a network compiled from the cache runs bit for bit as its reference
    net = compile_network(_graph(), calibration=FEED, cache=cache)
    assert cache.hits == 2 * len(first)
    assert (net.run(FEED).outputs[0] == net.reference(FEED)[0]).all()


def test_a_changed_weight_misses_that_group(tmp_path):
    cache = CompileCache(tmp_path)
    first = _compile(cache)
    again = Counting()
    _compile(cache, again, graph=_graph(nudge=0.5))
    assert "c1" in again.names and len(again.names) < len(first)  # the pool is the same


def test_config_knob_and_version_changes_miss(tmp_path, monkeypatch):
    cache = CompileCache(tmp_path)
    first = _compile(cache)
    other_config = Counting()
    _compile(cache, other_config, config="vta-1x16x16")
    assert other_config.names == list(first)
    knobs = Counting()
    _compile(cache, knobs, extra=lambda g: {"tile_h": 2} if g.name == "c1" else None)
    assert knobs.names == ["c1"]
    monkeypatch.setattr(group_compile, "source_version", lambda *m: "another compiler")
    version = Counting()
    _compile(cache, version)
    assert version.names == list(first)


def test_a_corrupt_entry_is_compiled_again_and_rewritten(tmp_path):
    cache = CompileCache(tmp_path)
    first = _compile(cache)
    for entry in tmp_path.rglob("*.entry"):
        entry.write_bytes(entry.read_bytes()[:-7])  # torn writes
    again = Counting()
    second = _compile(cache, again)
    assert again.names == list(first)
    assert _programs(second) == _programs(first)
    hits = cache.hits
    assert _programs(_compile(cache, Counting())) == _programs(first)
    assert cache.hits == hits + len(first)  # the rewritten entries hit


def test_jobs_give_the_serial_programs(tmp_path):
    serial = _compile(None)
    assert _programs(_compile(None, jobs=2)) == _programs(serial)
    cache = CompileCache(tmp_path)
    net = compile_network(_graph(), calibration=FEED, jobs=2, cache=cache)
    assert _programs(net.layers) == _programs(serial)
    assert cache.misses == 1 + len(serial)  # the quantized graph and every group
    with pytest.raises(ModelError, match="--jobs 0"):
        compile_network(_graph(), calibration=FEED, jobs=0)


def test_compile_network_uses_the_environment_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VTAC_CACHE_DIR", str(tmp_path))
    compile_network(_graph(), calibration=FEED)
    entries = CompileCache(tmp_path / "vta").info().entries
    assert entries >= 3
    monkeypatch.setenv("VTAC_CACHE_DIR", "off")
    compile_network(_graph(nudge=3.0), calibration=FEED)
    assert CompileCache(tmp_path / "vta").info().entries == entries


def test_cli_cache_info_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VTAC_CACHE_DIR", str(tmp_path))
    compile_network(_graph(), calibration=FEED)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "vta") in out and "entries" in out
    assert main(["cache", "clear"]) == 0
    assert "removed" in capsys.readouterr().out
    assert CompileCache(tmp_path / "vta").info().entries == 0
    monkeypatch.setenv("VTAC_CACHE_DIR", "off")
    assert main(["cache", "info"]) == 0
    assert "off" in capsys.readouterr().out


def test_the_suite_never_writes_the_users_cache():
    root = cache_root()
    assert root is not None and "vtac-test-cache-" in os.fspath(root)


@pytest.mark.parametrize("name", ["compiler.cache", "compiler.model.group_compile"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_vtac_compile_jobs_and_no_cache_give_the_same_artifact(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VTAC_CACHE_DIR", str(tmp_path / "cache"))
    base = ["compile", "digits", "--target", "vta"]
    assert main([*base, "--no-cache", "-o", str(tmp_path / "a.vtac")]) == 0
    assert CompileCache(tmp_path / "cache" / "vta").info().entries == 0
    assert main([*base, "--jobs", "2", "-o", str(tmp_path / "b.vtac")]) == 0
    assert CompileCache(tmp_path / "cache" / "vta").info().entries > 0
    assert main([*base, "-o", str(tmp_path / "c.vtac")]) == 0  # from the cache
    capsys.readouterr()
    a, b, c = (_members(tmp_path / f"{n}.vtac") for n in "abc")
    assert a == b == c and "dram.npy" in a


def _members(path) -> dict[str, object]:
    """An artifact's members, the manifest parsed (the archive's timestamps and the compile
    time aside)."""
    with zipfile.ZipFile(path) as z:
        members: dict[str, object] = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest.pop("compile_seconds")
    members["manifest.json"] = manifest
    return members


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "digits", "--jobs", "2"], "--jobs applies to --target vta, not to cpu"),
        (["compile", "digits", "-o", "x.vtac", "--no-cache"],
         "--no-cache applies to --target vta, not to cpu"),
        (["run", "{art}", "--jobs", "2"], "--jobs applies when a model is compiled"),
        (["run", "{art}", "--no-cache"], "--no-cache applies when a model is compiled"),
    ],
)  # fmt: skip
def test_vtac_refuses_jobs_and_no_cache_where_nothing_compiles(tmp_path, capsys, argv, message):
    art = tmp_path / "d.vtac"
    if any("{art}" in a for a in argv):
        assert main(["compile", "digits", "--target", "vta", "-o", str(art)]) == 0
        capsys.readouterr()
    code = main([a.format(art=art) for a in argv])
    err = capsys.readouterr().err
    assert code == 1, err
    assert message in err and len(err.strip().splitlines()) == 1


def test_vtac_jobs_must_be_a_positive_number(capsys):
    assert main(["run", "digits", "--target", "vta", "--jobs", "0"]) == 2
    assert "--jobs 0: a number of processes" in capsys.readouterr().err


def test_the_quantized_graph_comes_from_the_cache(tmp_path, monkeypatch):
    import compiler.quantize

    cache = CompileCache(tmp_path)
    real = compiler.quantize.quantize_graph
    calls = []

    def counting(graph, batches, **kw):
        calls.append(kw["calibrator"])
        return real(graph, batches, **kw)

    monkeypatch.setattr(compiler.quantize, "quantize_graph", counting)
    first = compile_network(_graph(), calibration=FEED, cache=cache)
    again = compile_network(_graph(), calibration=FEED, cache=cache)
    assert calls == ["percentile"]
    assert [n.op for n in again.graph.nodes] == [n.op for n in first.graph.nodes]
    assert (again.run(FEED).outputs[0] == first.run(FEED).outputs[0]).all()
    other = {"x": FEED["x"] * 2}
    compile_network(_graph(), calibration=other, cache=cache)  # other calibration data
    compile_network(_graph(), calibration=FEED, calibrator="minmax", cache=cache)
    compile_network(_graph(nudge=0.5), calibration=FEED, cache=cache)  # another weight
    assert calls == ["percentile", "percentile", "minmax", "percentile"]


def test_spawned_workers_give_the_serial_programs(monkeypatch):
    # where fork is not offered (macOS, Windows), each group travels to its worker pickled
    serial = _compile(None)
    monkeypatch.setattr(group_compile.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert _programs(_compile(None, jobs=2)) == _programs(serial)


def test_progress_counts_the_accelerator_groups_being_compiled(tmp_path, capsys):
    from runtime.cli import main

    argv = ["compile", "digits", "--target", "vta", "--progress", "-o", str(tmp_path / "d.vtac")]
    assert main([*argv, "--no-cache"]) == 0
    err = capsys.readouterr().err
    assert "compiling digits" in err and "group" in err
    assert main(argv) == 0
    capsys.readouterr()
    assert main(argv) == 0  # every group from the cache: nothing to wait for, no bar
    assert "compiling digits" not in capsys.readouterr().err
