"""Whole models on target vta through ``InferenceSession`` and the vta artifact: bit for bit
against the direct network path (``VtaNetwork.run``) and the integer reference, the artifact's
round trip, its validation, and the ``vtac compile``/``vtac run`` commands."""

import io
import json
import zipfile

import numpy as np
import pytest

from compiler.errors import ModelError
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.model.vta_program import plan_network
from runtime.artifact import MANIFEST, artifact_kind
from runtime.cli import main
from runtime.errors import ArtifactError, SessionError
from runtime.session import InferenceSession
from runtime.vta_artifact import load_vta_artifact, save_vta_artifact, vta_artifact_bytes
from runtime.vta_plan import VtaExecutor
from runtime.vta_session import VtaInferenceSession
from runtime.vta_target import compile_network

#: (model, image size) pairs of the round trip: the trained digits model and a small ResNet-18
MODELS = [("digits", None), ("resnet18", 32)]
CONFIGS = ["default", "vta-1x16x16"]


def _input(shape, seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_compiled: dict = {}


def _compiled_network(model, size, config):
    """The float graph's network compiled once per module run: (net, plan, feed)."""
    key = (model, size, config)
    if key not in _compiled:
        kwargs = {"image_size": size} if size else {}
        graph = from_onnx(load_zoo(model, **kwargs), name=model)
        x = _input(graph.inputs[0].type.shape)
        feed = {graph.inputs[0].name: x}
        net = compile_network(graph, config, calibration=feed)
        names = tuple(v.name for v in graph.outputs)
        _compiled[key] = (net, plan_network(net, names), feed)
    return _compiled[key]


@pytest.fixture(scope="module")
def digits_session():
    x = _input((1, 1, 28, 28))
    return InferenceSession("digits", target="vta", calibration=x), x


def test_session_on_vta_is_bit_exact_against_the_direct_path(digits_session):
    sess, x = digits_session
    assert isinstance(sess, VtaInferenceSession)
    assert [(i.name, i.shape, i.dtype) for i in sess.get_inputs()] == [
        ("data", (1, 1, 28, 28), "float32")
    ]
    (logits,) = sess.run(None, {"data": x})
    net, _, feed = _compiled_network("digits", None, "default")
    direct = net.run(feed)
    assert logits.tobytes() == direct.outputs[0].tobytes()
    assert logits.tobytes() == net.reference(feed)[0].tobytes()
    assert sess.last_run.total_cycles == direct.total_cycles
    assert [r.cycles for r in sess.last_run.layers] == [r.cycles for r in direct.layers]
    # the model's own output name, as onnxruntime and the cpu target give it
    assert (
        [o.name for o in sess.get_outputs()]
        == [o.name for o in InferenceSession("digits").get_outputs()]
        == ["logits"]
    )


def test_the_profile_names_each_groups_device(digits_session):
    sess, x = digits_session
    sess.run(["logits"], {"data": x})
    prof = sess.profile()
    devices = {g.device for g in prof.groups}
    assert devices == {"vta", "cpu", "copy"}
    vta = [g for g in prof.groups if g.device == "vta"]
    assert all(g.cycles and g.cycles > 0 and g.dram_bytes and g.limiter for g in vta)
    assert all(0 <= (g.utilization or 0) <= 1 for g in vta)
    assert prof.total_cycles == sess.last_run.total_cycles
    cpu = [g for g in prof.groups if g.device == "cpu"]
    assert cpu and all(g.time_us is not None and g.cycles is None for g in cpu)
    assert prof.groups[0].name == "data.quantize"
    data = prof.to_json()
    assert data["total_cycles"] == prof.total_cycles
    assert "limiter" in prof.table() and "copy" in prof.table()


def test_session_feeds_are_checked(digits_session):
    sess, _ = digits_session
    with pytest.raises(SessionError, match="input 'data' has shape"):
        sess.run(None, {"data": np.zeros((1, 1, 8, 8), np.float32)})
    with pytest.raises(SessionError, match="unknown output 'nope'"):
        sess.run(["nope"], {"data": np.zeros((1, 1, 28, 28), np.float32)})


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("model,size", MODELS, ids=["digits", "resnet18-32"])
def test_artifact_round_trip_gives_the_same_bytes_and_cycles(model, size, config, tmp_path):
    net, plan, feed = _compiled_network(model, size, config)
    direct = net.run(feed)
    path = tmp_path / "m.vtac"
    save_vta_artifact(plan, path)
    assert artifact_kind(path) == "vta"
    loaded = load_vta_artifact(path)
    # one program format for every target: kernels of kinds cpu, vta and copy
    assert loaded.target == "vta" and {k.target for k in loaded.kernels} <= {"cpu", "vta", "copy"}
    assert loaded.accel.config == plan.accel.config and loaded.kernels == plan.kernels
    # the host arena as planned: every tensor at its offset, the same bytes
    assert loaded.placements == plan.placements and loaded.memory == plan.memory
    again = VtaExecutor(loaded).run(feed)
    for a, b in zip(again.outputs, direct.outputs, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert [r.cycles for r in again.layers] == [r.cycles for r in direct.layers]
    assert [r.dram_bytes for r in again.layers] == [r.dram_bytes for r in direct.layers]
    assert again.to_json()["layers"] == direct.to_json()["layers"] or all(
        # host seconds differ from run to run; everything else is the same
        {k: v for k, v in a.items() if k != "host_seconds"}
        == {k: v for k, v in b.items() if k != "host_seconds"}
        for a, b in zip(again.to_json()["layers"], direct.to_json()["layers"], strict=True)
    )
    assert again.dram_image_bytes == direct.dram_image_bytes
    assert again.chained_inputs == direct.chained_inputs
    # the session runs the artifact without a target, as the compiled network
    sess = InferenceSession(path)
    assert isinstance(sess, VtaInferenceSession) and sess.config.name == config
    assert sess.memory == plan.memory and sess.memory.peak_bytes <= sess.memory.naive_bytes
    outs = sess.run(None, feed)
    assert outs[0].tobytes() == direct.outputs[0].tobytes()
    assert sess.profile().total_cycles == direct.total_cycles


def test_saving_is_atomic_and_keeps_no_temporary_file(tmp_path):
    _, plan, _ = _compiled_network("digits", None, "default")
    path = tmp_path / "d.vtac"
    path.write_bytes(b"old")
    save_vta_artifact(plan, path)
    assert artifact_kind(path) == "vta"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.vtac"]
    with pytest.raises(OSError):
        save_vta_artifact(plan, tmp_path / "no" / "such" / "dir.vtac")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.vtac"]


def test_the_images_zeroed_activations_are_deflated_and_the_rest_of_the_arrays_stored(tmp_path):
    """The DRAM image and the groups' program files hold zeroed activation regions: they are
    deflated (a real detector's artifact: 123 MiB stored, 5 MiB deflated); arrays that are
    mostly not zeros (weights, tables) are stored as they are; both load and run the same."""
    _, plan, feed = _compiled_network("resnet18", 32, "default")
    path = tmp_path / "r.vtac"
    save_vta_artifact(plan, path)
    deflated = 0
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            data = zf.read(info.filename)
            zeros = data.count(0) / max(len(data), 1)
            if not info.filename.endswith((".npy", ".npz")):
                assert info.compress_type == zipfile.ZIP_DEFLATED
            elif zeros >= 0.25:
                assert info.compress_type == zipfile.ZIP_DEFLATED, (info.filename, zeros)
                assert info.compress_size < info.file_size * (1 - zeros / 2)
                deflated += 1
            else:
                assert info.compress_type == zipfile.ZIP_STORED, (info.filename, zeros)
    assert deflated >= 8  # the program files of the groups with the largest activations
    again = VtaExecutor(load_vta_artifact(path)).run(feed)
    assert again.outputs[0].tobytes() == VtaExecutor(plan).run(feed).outputs[0].tobytes()


def _members(data):
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _pack(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)
    return buf.getvalue()


def _edit_manifest(data, edit):
    members = _members(data)
    manifest = json.loads(members[MANIFEST])
    edit(manifest)
    members[MANIFEST] = json.dumps(manifest).encode()
    return _pack(members)


def _first(manifest, kind):
    return next(s for s in manifest["steps"] if s["kind"] == kind)


@pytest.fixture(scope="module")
def digits_artifact():
    _, plan, _ = _compiled_network("digits", None, "default")
    return vta_artifact_bytes(plan)


def _symbol_out_of_image(m):
    _first(m, "vta")["symbols"]["out"]["offset"] = 1 << 30


def _insns_out_of_image(m):
    _first(m, "vta")["insn_count"] = 1 << 24


def _slot_shape(m):
    m["slots"][_first(m, "vta")["output"]]["shape"] = [1, 2, 3]


def _kernel_arg_dtype(m):
    _first(m, "cpu")["kernel"]["args"][0]["dtype"] = "float64"


def _kernel_arg_with_its_slot(m):
    """The first host kernel's input, its slot and the model input edited alike: consistent in
    the manifest, refuted by the record in the kernel's code."""
    step = _first(m, "cpu")
    m["slots"][step["inputs"][0]]["shape"] = [1, 1, 2, 2]
    m["inputs"][0]["shape"] = [1, 1, 2, 2]
    step["kernel"]["args"][0]["shape"] = [1, 1, 2, 2]


def _write_unknown_symbol(m):
    step = next(s for s in m["steps"] if s["kind"] == "vta" and s["writes"])
    step["writes"][0]["symbol"] = "nope"


def _packing(m):
    # a write copies a host group's packed result: a packing of its own is refused
    step = next(s for s in m["steps"] if s["kind"] == "vta" and s["writes"])
    step["writes"][0]["packing"] = "diagonal"


def _read_before_written(m):
    m["steps"] = m["steps"][1:]


def _step_kind(m):
    m["steps"][0]["kind"] = "gpu"


def _config(m):
    m["config"]["log_batch"] = "x"


def _missing_field(m):
    del _first(m, "vta")["insn_base"]


@pytest.mark.parametrize(
    "edit,message",
    [
        (_symbol_out_of_image, r"step \d+ \(conv1\): symbol 'out' at bytes .* outside the"),
        (_insns_out_of_image, r"step \d+ \(conv1\): 16777216 instructions at bytes"),
        (_slot_shape, r"field 'output': slot \d+ is int8\[1, 2, 3\], which symbol 'out'"),
        (_kernel_arg_dtype, r"step 0 \(data.quantize\): kernel argument .* is float64"),
        (
            _kernel_arg_with_its_slot,
            r"step 0 \(data.quantize\): kernel 'host_0': argument "
            r"'\w+' is float32\[1, 1, 2, 2\] \(read\) in the manifest, the compiled code records "
            r"'\w+' float32\[1, 1, \d+, \d+\] \(\d+ bytes, read\)",
        ),
        (_write_unknown_symbol, r"field 'writes': 'nope' is not a symbol"),
        (_packing, r"'data' has unknown field\(s\) 'packing'; a write has symbol, slot"),
        (_read_before_written, r"slot \d+ is read before any step writes it"),
        (_step_kind, r"step 0 \(data.quantize\): field 'kind' is 'gpu'"),
        (_config, r"manifest: field 'config'"),
        (_missing_field, r"step \d+ \(conv1\): no field 'insn_base'"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else "",
)
def test_a_tampered_manifest_is_refused_naming_the_field(digits_artifact, edit, message):
    bad = _edit_manifest(digits_artifact, edit)
    with pytest.raises(ArtifactError, match=message) as info:
        load_vta_artifact(bad)
    assert "\n" not in str(info.value)


def test_a_tampered_member_is_refused_naming_it(digits_artifact, tmp_path):
    members = _members(digits_artifact)
    flipped = dict(members)
    image = bytearray(members["dram.npy"])
    image[-1] ^= 1
    flipped["dram.npy"] = bytes(image)
    with pytest.raises(ArtifactError, match="member dram.npy is corrupted"):
        load_vta_artifact(_pack(flipped))
    program = next(n for n in members if n.startswith("programs/"))
    missing = {n: b for n, b in members.items() if n != program}
    with pytest.raises(ArtifactError, match=f"member {program} is missing"):
        load_vta_artifact(_pack(missing))
    extra = dict(members, **{"kernels/evil.ll": b"define void @x() { ret void }"})
    with pytest.raises(ArtifactError, match="member kernels/evil.ll is not in the manifest"):
        load_vta_artifact(_pack(extra))
    # one loader and one writer for every target: load_artifact reads an accelerator network
    # as the program the vta loader reads, save_artifact writes it back the same
    from runtime.artifact import load_artifact, save_artifact

    program = load_artifact(digits_artifact)
    assert (
        program.accel is not None and program.kernels == load_vta_artifact(digits_artifact).kernels
    )
    path = tmp_path / "again.vtac"
    save_artifact(program, path)
    assert artifact_kind(path) == "vta" and load_artifact(path).placements == program.placements


def test_the_program_files_are_isa_programs(digits_artifact, tmp_path):
    import isa

    members = _members(digits_artifact)
    name = next(n for n in members if n.startswith("programs/"))
    path = tmp_path / "p.npz"
    path.write_bytes(members[name])
    prog = isa.load_program(path)
    assert prog.config.name == "default" and "out" in prog.symbols
    quant = json.loads(members["quantization.json"])
    assert {q["op"] for q in quant} >= {"quantize", "requantize", "dequantize"}


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"config": "default"}, "config applies to target vta, not to 'cpu'"),
        ({"device": "rtl"}, "device applies to target vta, not to 'cpu'"),
        ({"calibration": np.zeros(1)}, "calibration applies to target vta"),
        ({"target": "vta", "tuning_log": "t.jsonl"}, "tuning log t.jsonl: no such file"),
        ({"target": "vta", "num_threads": 2}, "num_threads applies to the cpu and gpu"),
        ({"target": "vta", "device": "fpga"}, "device 'fpga': one of sim, rtl"),
        ({"target": "tpu"}, "unknown target 'tpu'"),
    ],
)
def test_session_options_that_do_not_apply_are_refused(kwargs, message):
    # a session's own refusals are SessionErrors; the build's (a tuning log) ModelErrors
    with pytest.raises(ModelError, match=message):
        InferenceSession("digits", **kwargs)


def test_an_artifact_refuses_compile_options(digits_artifact):
    with pytest.raises(SessionError, match="calibration applies when a model is compiled"):
        InferenceSession(digits_artifact, calibration=np.zeros((1, 1, 28, 28), np.float32))
    with pytest.raises(SessionError, match="compiled for 'default'"):
        InferenceSession(digits_artifact, config="vta-1x16x16")
    with pytest.raises(SessionError, match="image_size and batch apply to zoo models"):
        InferenceSession(digits_artifact, target="vta", image_size=32)
    with pytest.raises(SessionError, match="a tuning log applies when a model is compiled"):
        InferenceSession(digits_artifact, tuning_log="t.jsonl")


def test_vtac_compile_and_run_a_vta_artifact(tmp_path, capsys):
    x = _input((1, 1, 28, 28))
    calib = tmp_path / "calib.npy"
    np.save(calib, np.concatenate([x, x]))
    art = tmp_path / "d.vtac"
    assert main(["compile", "digits", "--target", "vta", "--calibrate", str(calib),
                 "-o", str(art)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "for vta (default)" in out and "accelerator groups" in out
    inp = tmp_path / "x.npy"
    np.save(inp, x)
    outs = tmp_path / "o.npz"
    assert main(["run", str(art), "--input", str(inp), "--json", "--output", str(outs)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["config"] == "default" and report["total_cycles"] > 0
    assert list(report["outputs"]) == ["logits"]
    # the same network compiled in the session gives the same bytes
    sess = InferenceSession("digits", target="vta", calibration=np.concatenate([x, x]))
    (logits,) = sess.run(None, {"data": x})
    assert np.load(outs)["logits"].tobytes() == logits.tobytes()
    assert report["total_cycles"] == sess.last_run.total_cycles
    assert main(["run", str(art), "--input", str(inp)]) == 0
    assert "accelerator cycles" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "digits", "--config", "default"], "--config applies to --target vta, not to cpu"),
        (["run", "digits", "--device", "rtl"], "--device applies to --target vta, not to cpu"),
        (["run", "digits", "--trace", "t.json"], "--trace applies to --target vta, not to cpu"),
        (["compile", "digits", "-o", "x.vtac", "--calibrate", "c.npy"],
         "--calibrate applies to --target vta, not to cpu"),
        (["run", "digits", "--target", "vta", "--tuning-log", "t.jsonl"],
         "tuning log t.jsonl: no such file"),
        (["run", "{art}", "--tuning-log", "t.jsonl"],
         "--tuning-log applies when a model is compiled"),
        (["compile", "digits", "--target", "vta", "-o", "x.vtac", "--threads", "2"],
         "--threads applies to --target cpu or gpu, not to vta"),
        (["run", "digits", "--target", "gpu", "--config", "default"],
         "--config applies to --target vta, not to gpu"),
        (["run", "{art}", "--calibrate", "c.npy"], "--calibrate applies when a model is compiled"),
        (["run", "{art}", "--target", "cpu"], "compiled for target 'vta', not 'cpu'"),
    ],
)  # fmt: skip
def test_vtac_refuses_options_that_do_not_apply(digits_artifact, tmp_path, capsys, argv, message):
    art = tmp_path / "d.vtac"
    art.write_bytes(digits_artifact)
    code = main([a.format(art=art) for a in argv])
    err = capsys.readouterr().err
    assert code == 1, err
    assert message in err and len(err.strip().splitlines()) == 1
