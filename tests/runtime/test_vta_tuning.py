"""Tuning whole networks on the accelerator: the tasks of a model's quantized groups, tuned
records applied per group (same bits as the heuristic's network), groups falling back with
their reason, the artifact keeping each group's knobs, and the CLI."""

import numpy as np
import pytest

from compiler.errors import ModelError
from compiler.frontend.onnx_import import from_onnx
from compiler.frontend.zoo import load_zoo
from compiler.model.tuning import extract_network_tasks, load_network_tuning
from compiler.tune import conv2d_task
from compiler.tune.measure import MeasureResult
from compiler.tune.records import Record, RecordLog
from runtime.cli import main
from runtime.session import InferenceSession

CFG = "vta-1x16x16"


def test_resnet18_gives_its_quantized_groups_with_epilogue_keys():
    found = extract_network_tasks(from_onnx(load_zoo("resnet18", image_size=32)), CFG)
    assert found.skipped == []
    tasks = {t.name: t for t in found.tasks}
    # 20 convolutions and the classifier: 16 distinct groups
    assert len(found.tasks) == 16 and sum(t.weight for t in found.tasks) == 21
    assert all("_q" in t.key and t.epilogue and t.hw == CFG for t in found.tasks)
    # the first layer runs over folded channels: its task has the folded shapes
    assert tasks["conv1"].sizes["k"] == 1 and tasks["conv1"].sizes["in_c"] > 3
    # a block's second convolution ends in the residual add: another epilogue, another key
    conv1, conv2 = tasks["layer1.0.conv1"], tasks["layer1.0.conv2"]
    assert conv1.shape == conv2.shape and conv1.weight == conv2.weight == 2
    assert conv2.residual and "ADD:r" in conv2.epilogue and conv1.key != conv2.key
    assert tasks["fc"].kind == "dense" and not tasks["fc"].residual


@pytest.fixture(scope="module")
def digits_log(tmp_path_factory):
    """A log for digits on vta-1x16x16 with a non-default record for every group but
    block1.conv1 and fc; and knobs block1.conv1's layer cannot take."""
    found = extract_network_tasks(from_onnx(load_zoo("digits")), CFG)
    tasks = {t.name: t for t in found.tasks}
    records = []
    chosen = {}
    for name, task in tasks.items():
        if name in ("block1.conv1", "fc"):
            continue
        default = task.default_config().index
        other = next(int(i) for i in task.space().valid_indices()[::-1] if int(i) != default)
        records.append(Record(task, task.space().config(other), MeasureResult(100.0)))
        chosen[name] = task.knobs(other)
    log = tmp_path_factory.mktemp("vtatune") / "digits.jsonl"
    RecordLog(log).append(records)
    # a point of a larger layer's space: tiles that do not divide block1.conv1's 14 rows
    big = conv2d_task(56, 56, 64, 64, 3, 1, 1, hw=CFG, epilogue=tasks["block1.conv1"].epilogue)
    bad = next(c for c in map(big.space().config, big.space().valid_indices()) if c["tile_h"] == 8)
    return log, chosen, tasks["block1.conv1"], bad


def test_tuned_records_give_their_knobs_and_the_same_bits(digits_log, tmp_path):
    from compiler.model.vta_program import accel_kernels

    log, chosen, _, _ = digits_log
    x = np.random.default_rng(3).standard_normal((1, 1, 28, 28)).astype(np.float32)
    plain = InferenceSession("digits", target="vta", config=CFG)
    tuned = InferenceSession("digits", target="vta", config=CFG, tuning_log=log)
    assert sorted(g for g, _ in tuned.tuning.used) == sorted(chosen)
    reasons = dict(tuned.tuning.fell_back)
    assert set(reasons) == {"block1.conv1", "fc"}
    assert reasons["fc"].startswith("no record for vta/vta-1x16x16/dense/")
    knobs = {k.name: s.record.knobs for k, s in accel_kernels(tuned.program)}
    for name, k in chosen.items():
        assert knobs[name] == k.describe()
    assert any(knobs[n] != s.record.knobs for k, s in accel_kernels(plain.program) for n in chosen
               if k.name == n)  # fmt: skip
    (a,) = tuned.run(None, {"data": x})
    (b,) = plain.run(None, {"data": x})
    assert a.tobytes() == b.tobytes()
    # the artifact keeps each group's knobs; running it needs no log
    art = tmp_path / "d.vtac"
    tuned.save(art)
    again = InferenceSession(art)
    assert {k.name: s.record.knobs for k, s in accel_kernels(again.program)} == knobs
    (c,) = again.run(None, {"data": x})
    assert c.tobytes() == a.tobytes()


def test_a_record_whose_knobs_fail_falls_back_with_the_reason(digits_log):
    from runtime.vta_session import compile_plan

    _, _, target, big_config = digits_log
    rec = Record(target, big_config, MeasureResult(50.0))  # tiles of another layer's space
    tuning = load_network_tuning([rec], CFG)
    compile_plan("digits", CFG, tuning=tuning)
    reasons = dict(tuning.fell_back)
    assert "block1.conv1" not in dict(tuning.used)
    assert reasons["block1.conv1"].startswith("the record's knobs fail to compile: conv2d group "
                                              "block1.conv1: tile_h=8 must divide")  # fmt: skip
    assert "heuristic knobs for block1.conv1: the record's knobs fail" in tuning.report()


def test_logs_of_other_targets_or_configs(tmp_path):
    from compiler.tune.task import cpu_task

    cpu = tmp_path / "cpu.jsonl"
    t = cpu_task("dense", batch=1, in_features=8, out_features=4)
    RecordLog(cpu).append([Record(t, t.default_config(), MeasureResult(1e-6))])
    with pytest.raises(ModelError, match="records are for target cpu, not vta"):
        load_network_tuning(cpu, CFG)
    other = tmp_path / "default.jsonl"
    layer = conv2d_task(8, 8, 16, 16, 3, 1, 1, hw="default")
    RecordLog(other).append([Record(layer, layer.default_config(), MeasureResult(9.0))])
    tuning = load_network_tuning(other, CFG)
    assert tuning.best == {}
    assert "1 for vta/default: records of another target or config do not match" in "\n".join(
        tuning.unmatched
    )
    tuning = load_network_tuning(other, "default")
    assert "records of single template layers" in tuning.unmatched[0]


def test_vtac_tune_and_run_a_model_on_vta(tmp_path, capsys):
    log = tmp_path / "t.jsonl"
    assert main(["tune", "digits", "--target", "vta", "--config", CFG, "--trials", "1",
                 "--tuner", "random", "--no-progress", "--log", str(log)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "digits: 7 tasks from 7 accelerator groups" in out
    assert "best " in out and "tile_co=" in out and "oc_nthread=" in out
    assert main(["run", "digits", "--target", "vta", "--config", CFG, "--tuning-log", str(log),
                 "--quiet"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "vtac run: tuned knobs (7 groups): conv1, block1.conv1" in err
    art = tmp_path / "d.vtac"
    assert main(["compile", "digits", "--target", "vta", "--config", CFG, "--tuning-log",
                 str(log), "-o", str(art)]) == 0  # fmt: skip
    assert "vtac compile: tuned knobs (7 groups)" in capsys.readouterr().err


def test_what_each_group_took_is_the_same_from_workers_and_from_the_cache(digits_log):
    # knobs are chosen before any compile and a failed record's reason travels with the
    # compiled layer, so worker processes and cache hits report what a serial compile reports
    from runtime.vta_session import compile_plan

    log, _, target, big_config = digits_log
    rec = Record(target, big_config, MeasureResult(50.0))
    reports = []
    # serial, two workers, into the compile cache, from it
    for jobs, cache in ((1, False), (2, False), (1, True), (1, True)):
        tuning = load_network_tuning([rec], CFG)
        compile_plan("digits", CFG, tuning=tuning, jobs=jobs, cache=cache)
        reports.append(tuning.report())
    assert len(set(reports)) == 1
    assert "heuristic knobs for block1.conv1: the record's knobs fail to compile" in reports[0]


def test_a_log_tuned_with_the_compiles_requantization_covers_its_groups(tmp_path, capsys):
    # --requant vta gives other epilogues (one immediate shift): tasks extracted with it are
    # the ones a --requant vta compile looks up
    log = tmp_path / "t.jsonl"
    assert (
        main(
            [
                "tune",
                "digits",
                "--target",
                "vta",
                "--config",
                CFG,
                "--requant",
                "vta",
                "--trials",
                "1",
                "--tuner",
                "random",
                "--no-progress",
                "--log",
                str(log),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["run", "digits", "--target", "vta", "--config", CFG, "--requant", "vta",
                 "--tuning-log", str(log), "--quiet"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "tuned knobs (7 groups)" in err and "heuristic knobs for" not in err
    assert main(["tune", "conv2d", "--requant", "vta", "--log", str(tmp_path / "c.jsonl")]) != 0
    assert "--requant applies to tuning a model with --target vta" in capsys.readouterr().err


def test_tuning_an_operator_refuses_the_calibrator(tmp_path, capsys):
    # the calibrator decides a model's quantized groups; an operator task has none to decide
    argv = ["tune", "conv2d", "--calibrator", "kl", "--log", str(tmp_path / "c.jsonl")]
    assert main(argv) != 0
    assert "--calibrator applies to tuning a model with --target vta" in capsys.readouterr().err
