"""The built-in model zoo: ONNX models usable by name, without any file.

* ``resnet18``, ``resnet34``, ``resnet50``: torchvision's ResNet topologies (BasicBlock for 18/34,
  Bottleneck with the stride on the 3x3 convolution for 50), built with ``onnx.helper``, with
  He-initialised weights drawn from a seed and BatchNormalization left unfolded with non-trivial
  running statistics. No trained ImageNet weights exist offline, so these are for pipeline checks
  (shapes, operators, bit-exactness, cycles), never accuracy claims.
* ``digits``: a small residual CNN trained on 4,000 real MNIST digits by
  ``python -m compiler.frontend.models.train_digits``; :func:`digits_test` returns its held-out
  split for accuracy checks.

:func:`wheel_models` lists the model-zoo topologies that the ``onnx`` wheel ships among its backend
test data (real graphs whose weights are all ``ConstantOfShape``): importer coverage only.

Every model has one float32 input named ``data`` (NCHW) and one output named ``logits``; opset 13,
IR version 10 (onnxruntime refuses newer IR versions).

Example:
    >>> zoo_names()
    ('resnet18', 'resnet34', 'resnet50', 'digits')
    >>> model = load_zoo("resnet18", image_size=32, batch=2)
    >>> [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    [2, 3, 32, 32]
    >>> sorted({n.op_type for n in model.graph.node})
    ['Add', 'BatchNormalization', 'Conv', 'Flatten', 'Gemm', 'GlobalAveragePool', 'MaxPool', 'Relu']
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import FrontendError

OPSET = 13
IR_VERSION = 10
INPUT_NAME = "data"
OUTPUT_NAME = "logits"
BN_EPSILON = 1e-5

DIGITS_MODEL_FILE = "digits.onnx"
DIGITS_TEST_FILE = "digits_test.npz"
DIGITS_IMAGE_SIZE = 28


@dataclass(frozen=True)
class _ResNetSpec:
    block: str  # "basic" (two 3x3 convolutions) or "bottleneck" (1x1, 3x3, 1x1)
    layers: tuple[int, int, int, int]  # residual blocks per stage

    @property
    def expansion(self) -> int:
        return 4 if self.block == "bottleneck" else 1


_RESNETS = {
    "resnet18": _ResNetSpec("basic", (2, 2, 2, 2)),
    "resnet34": _ResNetSpec("basic", (3, 4, 6, 3)),
    "resnet50": _ResNetSpec("bottleneck", (3, 4, 6, 3)),
}
_NUM_CLASSES = 1000


def zoo_names() -> tuple[str, ...]:
    """The names :func:`load_zoo` accepts.

    Example:
        >>> "resnet50" in zoo_names()
        True
    """
    return (*_RESNETS, "digits")


def load_zoo(
    name: str, *, image_size: int | None = None, batch: int = 1, seed: int = 0
) -> onnx.ModelProto:
    """Build (or, for ``digits``, load) the zoo model ``name`` as an ONNX model.

    ``image_size`` is the height and width of the input: 224 by default for the ResNets (any
    positive size works; the network ends with a global average pool), and only 28 for ``digits``.
    ``batch`` fixes the batch dimension of the input and the output. ``seed`` draws the random
    weights of the ResNets; the same seed gives identical weights. The trained ``digits`` weights
    do not depend on it.

    Raises ``FrontendError`` (a ``CompilerError``) naming the known models for an unknown name,
    and naming the argument for a size, batch or seed that is not a positive integer (seed:
    non-negative).

    Example:
        >>> m = load_zoo("digits", batch=4)
        >>> [d.dim_value for d in m.graph.output[0].type.tensor_type.shape.dim]
        [4, 10]
        >>> load_zoo("resnet101")
        Traceback (most recent call last):
        ...
        compiler.errors.FrontendError: unknown zoo model 'resnet101'; known: resnet18, ...
    """
    batch = _positive_int("batch", batch)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise FrontendError(f"load_zoo: seed must be a non-negative integer, got {seed!r}")
    if name == "digits":
        if image_size is not None and image_size != DIGITS_IMAGE_SIZE:
            raise FrontendError(
                f"load_zoo('digits'): image_size must be {DIGITS_IMAGE_SIZE} "
                f"(the network was trained on 28x28 digits), got {image_size!r}"
            )
        return _load_digits(batch)
    spec = _RESNETS.get(name)
    if spec is None:
        raise FrontendError(f"unknown zoo model {name!r}; known: {', '.join(zoo_names())}")
    size = 224 if image_size is None else _positive_int("image_size", image_size)
    return _build_resnet(name, spec, image_size=size, batch=batch, seed=int(seed))


def digits_test() -> tuple[np.ndarray, np.ndarray]:
    """The held-out split of the ``digits`` model: ``(images, labels)``.

    ``images`` is float32 of shape ``(N, 1, 28, 28)``, ready for the model's ``data`` input: the
    MNIST pixel values (0..255) divided by 255, so ``images * 255`` gives them back exactly.
    ``labels`` is int64 of shape ``(N,)``, the digits 0..9. None of these images was trained on.

    Example:
        >>> images, labels = digits_test()
        >>> images.shape, images.dtype, labels.shape, labels.dtype
        ((1000, 1, 28, 28), dtype('float32'), (1000,), dtype('int64'))
        >>> sorted(set(labels.tolist())) == list(range(10))
        True
    """
    path = resources.files(__package__).joinpath("models", DIGITS_TEST_FILE)
    with resources.as_file(path) as file, np.load(file) as split:
        raw, labels = split["images"], split["labels"]
    images = (raw.astype(np.float32) / np.float32(255.0))[:, None, :, :]
    return images, labels.astype(np.int64)


def wheel_models() -> dict[str, Path]:
    """The model-zoo topologies shipped by the installed ``onnx`` wheel, by name.

    These are ``onnx/backend/test/data/light/light_<name>.onnx``: real ResNet-50, SqueezeNet,
    DenseNet-121, Inception v1/v2, ShuffleNet, VGG-19, ZFNet and AlexNet graphs (opset <= 9) whose
    weights are all ``ConstantOfShape``: for import coverage, not accuracy. An ``onnx`` package
    without this test data gives an empty dict.

    Example:
        >>> models = wheel_models()
        >>> {"resnet50", "squeezenet", "vgg19"} <= set(models)
        True
        >>> models["squeezenet"].name
        'light_squeezenet.onnx'
    """
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    return {path.stem.removeprefix("light_"): path for path in sorted(light.glob("light_*.onnx"))}


def _positive_int(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value <= 0:
        raise FrontendError(f"load_zoo: {what} must be a positive integer, got {value!r}")
    return int(value)


def _load_digits(batch: int) -> onnx.ModelProto:
    path = resources.files(__package__).joinpath("models", DIGITS_MODEL_FILE)
    with resources.as_file(path) as file:
        model = onnx.load(file)
    # The graph is batch-agnostic (Flatten keeps axis 0), so only the interface shapes change.
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = batch
    return model


class _ResNetBuilder:
    """Accumulates the nodes and seeded initializers of one ResNet graph, torchvision names."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def _param(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv(self, name: str, x: str, cin: int, cout: int, kernel: int, stride: int) -> str:
        # torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu"), no bias.
        std = np.sqrt(2.0 / (cout * kernel * kernel))
        w = self.rng.standard_normal((cout, cin, kernel, kernel), dtype=np.float32) * std
        pad = kernel // 2
        self.nodes.append(
            helper.make_node(
                "Conv",
                [x, self._param(f"{name}.weight", w)],
                [name],
                name=name,
                kernel_shape=[kernel, kernel],
                strides=[stride, stride],
                pads=[pad, pad, pad, pad],
                dilations=[1, 1],
                group=1,
            )
        )
        return name

    def batch_norm(self, name: str, x: str, channels: int, gamma_range: tuple[float, float]) -> str:
        # Running statistics far from (0, 1) and a scale far from 1, so that folding them into the
        # convolution is a visible transformation that a wrong fold cannot pass.
        rng = self.rng
        scale = rng.uniform(*gamma_range, size=channels)
        bias = rng.normal(0.0, 0.1, size=channels)
        mean = rng.normal(0.0, 0.1, size=channels)
        var = rng.uniform(0.5, 1.5, size=channels)
        inputs = [
            x,
            self._param(f"{name}.weight", scale),
            self._param(f"{name}.bias", bias),
            self._param(f"{name}.running_mean", mean),
            self._param(f"{name}.running_var", var),
        ]
        self.nodes.append(
            helper.make_node("BatchNormalization", inputs, [name], name=name, epsilon=BN_EPSILON)
        )
        return name

    def relu(self, name: str, x: str) -> str:
        self.nodes.append(helper.make_node("Relu", [x], [name], name=name))
        return name

    def add(self, name: str, a: str, b: str) -> str:
        self.nodes.append(helper.make_node("Add", [a, b], [name], name=name))
        return name

    def conv_bn(
        self,
        name: str,
        x: str,
        cin: int,
        cout: int,
        kernel: int,
        stride: int,
        bn: str,
        gamma_range: tuple[float, float] = (0.5, 1.5),
    ) -> str:
        y = self.conv(name, x, cin, cout, kernel, stride)
        return self.batch_norm(bn, y, cout, gamma_range)


# The last BatchNormalization of each residual branch gets a small scale: the seeded counterpart
# of torchvision's zero_init_residual, which keeps activations from growing block after block.
_RESIDUAL_GAMMA = (0.1, 0.3)


def _basic_block(b: _ResNetBuilder, prefix: str, x: str, cin: int, planes: int, stride: int) -> str:
    y = b.conv_bn(f"{prefix}.conv1", x, cin, planes, 3, stride, f"{prefix}.bn1")
    y = b.relu(f"{prefix}.relu1", y)
    y = b.conv_bn(f"{prefix}.conv2", y, planes, planes, 3, 1, f"{prefix}.bn2", _RESIDUAL_GAMMA)
    shortcut = _shortcut(b, prefix, x, cin, planes, stride)
    return b.relu(f"{prefix}.relu2", b.add(f"{prefix}.add", y, shortcut))


def _bottleneck(b: _ResNetBuilder, prefix: str, x: str, cin: int, planes: int, stride: int) -> str:
    cout = planes * 4
    y = b.conv_bn(f"{prefix}.conv1", x, cin, planes, 1, 1, f"{prefix}.bn1")
    y = b.relu(f"{prefix}.relu1", y)
    y = b.conv_bn(f"{prefix}.conv2", y, planes, planes, 3, stride, f"{prefix}.bn2")
    y = b.relu(f"{prefix}.relu2", y)
    y = b.conv_bn(f"{prefix}.conv3", y, planes, cout, 1, 1, f"{prefix}.bn3", _RESIDUAL_GAMMA)
    shortcut = _shortcut(b, prefix, x, cin, cout, stride)
    return b.relu(f"{prefix}.relu3", b.add(f"{prefix}.add", y, shortcut))


def _shortcut(b: _ResNetBuilder, prefix: str, x: str, cin: int, cout: int, stride: int) -> str:
    if stride == 1 and cin == cout:
        return x
    return b.conv_bn(f"{prefix}.downsample.0", x, cin, cout, 1, stride, f"{prefix}.downsample.1")


def _build_resnet(
    name: str, spec: _ResNetSpec, *, image_size: int, batch: int, seed: int
) -> onnx.ModelProto:
    b = _ResNetBuilder(seed)
    x = b.conv_bn("conv1", INPUT_NAME, 3, 64, 7, 2, "bn1")
    x = b.relu("relu", x)
    b.nodes.append(
        helper.make_node(
            "MaxPool",
            [x],
            ["maxpool"],
            name="maxpool",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
        )
    )
    x = "maxpool"
    block = _bottleneck if spec.block == "bottleneck" else _basic_block
    channels = 64
    for stage, (planes, blocks) in enumerate(zip((64, 128, 256, 512), spec.layers, strict=True)):
        for index in range(blocks):
            stride = 2 if stage > 0 and index == 0 else 1
            x = block(b, f"layer{stage + 1}.{index}", x, channels, planes, stride)
            channels = planes * spec.expansion
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["avgpool"], name="avgpool"))
    b.nodes.append(helper.make_node("Flatten", ["avgpool"], ["flatten"], name="flatten", axis=1))
    # torchvision's nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    bound = 1.0 / np.sqrt(channels)
    fc_w = b.rng.uniform(-bound, bound, size=(_NUM_CLASSES, channels))
    fc_b = b.rng.uniform(-bound, bound, size=_NUM_CLASSES)
    gemm_inputs = ["flatten", b._param("fc.weight", fc_w), b._param("fc.bias", fc_b)]
    b.nodes.append(helper.make_node("Gemm", gemm_inputs, [OUTPUT_NAME], name="fc", transB=1))
    graph = helper.make_graph(
        b.nodes,
        name,
        [
            helper.make_tensor_value_info(
                INPUT_NAME, TensorProto.FLOAT, [batch, 3, image_size, image_size]
            )
        ],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [batch, _NUM_CLASSES])],
        initializer=b.initializers,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="vtac.zoo",
        doc_string=f"{name}: torchvision topology, random weights of seed {seed}, BN unfolded",
    )
