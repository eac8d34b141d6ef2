"""ONNX LSTM (a CRNN text recognizer's recurrence), GRU (both ``linear_before_reset``) and RNN
against onnxruntime: every direction, with and without biases and initial states, any subset of
the outputs, batch-first layout (against onnx's reference evaluator: onnxruntime refuses it),
and the attributes that are refused by name before any work."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler.errors import FrontendError
from compiler.frontend.onnx_import import from_onnx
from compiler.graph import evaluate
from tests.compiler.frontend.backends import TARGETS, check_on_target
from tests.compiler.frontend.helpers import make_model

SEQ, BATCH, FEAT, HIDDEN = 4, 2, 3, 5


GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnn_model(
    kind: str = "LSTM",
    direction: str = "forward",
    *,
    bias: bool = True,
    initial: bool = False,
    seq_lens: int | None = None,
    outputs: tuple[str, ...] | None = None,
    layout: int = 0,
    seed: int = 0,
    **attrs: object,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One ``kind`` node with random weights (scaled so the gates do not saturate) and its
    feeds; ``outputs`` default to all of the operator's."""
    if outputs is None:
        outputs = ("y", "y_h", "y_c") if kind == "LSTM" else ("y", "y_h")
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    gh = GATES[kind] * HIDDEN
    inits = {
        "w": rng.normal(0, 0.4, (dirs, gh, FEAT)).astype(np.float32),
        "r": rng.normal(0, 0.4, (dirs, gh, HIDDEN)).astype(np.float32),
    }
    names = ["x", "w", "r", "", "", "", ""][: 7 if kind == "LSTM" else 6]
    if bias:
        inits["b"] = rng.normal(0, 0.4, (dirs, 2 * gh)).astype(np.float32)
        names[3] = "b"
    if seq_lens is not None:
        inits["lens"] = np.full(BATCH, seq_lens, np.int32)
        names[4] = "lens"
    xs = (BATCH, SEQ, FEAT) if layout else (SEQ, BATCH, FEAT)
    states = (BATCH, dirs, HIDDEN) if layout else (dirs, BATCH, HIDDEN)
    feeds = {"x": rng.normal(size=xs).astype(np.float32)}
    if initial:
        feeds["h0"] = rng.normal(0, 0.5, states).astype(np.float32)
        names[5] = "h0"
        if kind == "LSTM":
            feeds["c0"] = rng.normal(0, 0.5, states).astype(np.float32)
            names[6] = "c0"
    while not names[-1]:
        names.pop()
    node = helper.make_node(
        kind, names, list(outputs), hidden_size=HIDDEN, direction=direction, layout=layout,
        **attrs,
    )  # fmt: skip
    return make_model([node], feeds, [o for o in outputs if o], inits, opset=14), feeds


CASES = {
    "forward": {},
    "reverse": {"direction": "reverse"},
    "bidirectional": {"direction": "bidirectional"},
    "no-bias": {"bias": False},
    "initial-states": {"direction": "bidirectional", "initial": True},
    "full-sequence-lengths": {"seq_lens": SEQ},
    "last-state-only": {"outputs": ("", "y_h")},
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", CASES)
def test_lstm_matches_onnxruntime(case, target):
    model, feeds = rnn_model(**CASES[case])  # type: ignore[arg-type]
    check_on_target(model, feeds, target)


GRU_CASES = {
    "forward": {},
    "linear-before-reset": {"linear_before_reset": 1},
    "bidirectional-initial": {"direction": "bidirectional", "initial": True},
    "reverse-linear-before-reset-initial": {
        "direction": "reverse",
        "initial": True,
        "linear_before_reset": 1,
    },
    "no-bias": {"bias": False, "linear_before_reset": 1},
    "last-state-only": {"outputs": ("", "y_h")},
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", GRU_CASES)
def test_gru_matches_onnxruntime(case, target):
    model, feeds = rnn_model("GRU", **GRU_CASES[case])  # type: ignore[arg-type]
    check_on_target(model, feeds, target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", [{}, {"direction": "bidirectional", "initial": True}], ids=str)
def test_rnn_matches_onnxruntime(case, target):
    model, feeds = rnn_model("RNN", **case)  # type: ignore[arg-type]
    check_on_target(model, feeds, target)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_batch_first_layout_matches_the_onnx_reference(kind):
    from onnx.reference import ReferenceEvaluator

    model, feeds = rnn_model(kind, "bidirectional", initial=True, layout=1)
    expected = ReferenceEvaluator(model).run(None, feeds)
    got = evaluate(from_onnx(model), feeds)
    states = 2 if kind == "LSTM" else 1
    assert [g.shape for g in got] == [(BATCH, SEQ, 2, HIDDEN)] + [(BATCH, 2, HIDDEN)] * states
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"clip": 3.0}, "clip"),
        ({"input_forget": 1}, "input_forget"),
        ({"activations": ["Sigmoid", "Relu", "Tanh"]}, r"activations \['Sigmoid', 'Relu'"),
    ],
)
def test_unsupported_lstm_attributes_are_named(kwargs, reason):
    model, _ = rnn_model(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(FrontendError, match=rf"\(LSTM, ai.onnx opset 14\): {reason}"):
        from_onnx(model)


def test_peepholes_and_short_sequences_are_refused():
    model, _ = rnn_model()
    node = model.graph.node[0]
    node.input.extend(["", "", "", "p"])
    model.graph.initializer.append(
        onnx.numpy_helper.from_array(np.zeros((1, 3 * HIDDEN), np.float32), "p")
    )
    with pytest.raises(FrontendError, match=r"peepholes \(input P\)"):
        from_onnx(model)
    model, _ = rnn_model(seq_lens=SEQ - 1)
    with pytest.raises(FrontendError, match=r"sequence_lens \[3, 3\] differ from the sequence "
                       "length 4; only full-length sequences"):  # fmt: skip
        from_onnx(model)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_every_step_reads_one_recurrent_weight_per_direction(kind):
    # a constant per step was a copy of R per step in the compiled model (ddddocr's CRNN: 62
    # copies of two 4 MB weights, 292 MB of constants for a 52 MB model)
    model, _ = rnn_model(kind, "bidirectional")
    graph = from_onnx(model)
    recurrent = [
        n.inputs[1]
        for n in graph.nodes
        if n.op == "dense" and n.inputs[1].name.endswith((".R", ".R_zr", ".R_h"))
    ]
    assert len(recurrent) == 2 * (SEQ - 1) * (2 if kind == "GRU" else 1)  # no state at t0
    per_direction = {"LSTM": 1, "GRU": 2, "RNN": 1}[kind]  # GRU: R of z and r, R of h
    assert len({id(v) for v in recurrent}) == 2 * per_direction
