"""int8 quantization of graphs: calibration, the quantization pass and its integer operators.

A float graph (after constant and batch-norm folding) becomes an int8 graph whose integer part
is exactly what the accelerator computes: int8 activations with one symmetric scale per tensor,
int8 weights with one scale per output channel, int32 bias (corrected on the calibration data)
and accumulation, and requantizations made only of the ALU's operations (add, shift, min, max,
16-bit multiply). The numpy reference executor evaluates it in pure integer arithmetic; floats
appear only at the ``quantize`` of the inputs and the ``dequantize`` of the outputs (and around
operators that have no integer form). ``docs/quantization.md`` gives the exact semantics and the
ALU sequence of every step.

Example:
    >>> import numpy as np
    >>> from compiler.graph import Constant, Graph, Node, TensorType, Var, evaluate
    >>> x = Var("x", TensorType((4, 8), "float32"))
    >>> w = Constant(np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32), name="w")
    >>> g = Graph.from_outputs([x], [Node("dense", (x, w), name="fc")])
    >>> feed = {"x": np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)}
    >>> q = quantize_graph(g, feed, calibrator="minmax")
    >>> [n.op for n in q.nodes], integer_violations(q)
    (['quantize', 'dense', 'requantize', 'dequantize'], [])
    >>> bool(np.abs(evaluate(q, feed)[0] - evaluate(g, feed)[0]).max() < 0.1)
    True

Modules: :mod:`~compiler.quantize.calibrate` (calibrators), :mod:`~compiler.quantize.requant`
(ALU-executable requantization and its exact semantics), :mod:`~compiler.quantize.ops` (the
int8 operators and their reference evaluation), :mod:`~compiler.quantize.realize` (the pass),
:mod:`~compiler.quantize.sensitivity` (each node's own int8 error, and the fp32 fallback),
:mod:`~compiler.quantize.bias_correction` (each layer's mean per channel brought back to the
float layer's).
"""

from compiler.quantize import ops
from compiler.quantize.calibrate import (
    CALIBRATORS,
    AbsHistogram,
    EntropyCalibrator,
    MinMaxCalibrator,
    MseCalibrator,
    PercentileCalibrator,
    calibrate,
    get_calibrator,
)
from compiler.quantize.realize import (
    activation_scales,
    integer_violations,
    prepare_graph,
    quantize_graph,
    quantize_pipeline,
    realize,
)
from compiler.quantize.requant import (
    AluStep,
    QuantizeError,
    RequantParams,
    add_alu_program,
    alu_program,
    choose_add,
    choose_requant,
    requantize_int,
)
from compiler.quantize.sensitivity import (
    AUTO,
    DEFAULT_SENSITIVITY,
    INT8_COSINE_TARGET,
    Fp32Fallback,
    QuantizedGraph,
    fp32_fallbacks,
    parse_sensitivity,
    sensitivity_thresholds,
)

__all__ = [
    "AUTO",
    "CALIBRATORS",
    "DEFAULT_SENSITIVITY",
    "INT8_COSINE_TARGET",
    "AbsHistogram",
    "AluStep",
    "EntropyCalibrator",
    "MseCalibrator",
    "Fp32Fallback",
    "MinMaxCalibrator",
    "PercentileCalibrator",
    "QuantizeError",
    "QuantizedGraph",
    "RequantParams",
    "activation_scales",
    "add_alu_program",
    "alu_program",
    "calibrate",
    "fp32_fallbacks",
    "choose_add",
    "choose_requant",
    "get_calibrator",
    "integer_violations",
    "ops",
    "parse_sensitivity",
    "sensitivity_thresholds",
    "prepare_graph",
    "quantize_graph",
    "quantize_pipeline",
    "realize",
    "requantize_int",
]
