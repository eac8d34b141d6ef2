"""Model frontends: ONNX import and the built-in model zoo.

* :mod:`compiler.frontend.onnx_import`: ``from_onnx(model_or_path) -> compiler.graph.Graph``
  (opsets 9-20; unsupported or malformed models refused with every fault named);
* :mod:`compiler.frontend.zoo`: ``zoo_names()``, ``load_zoo(name) -> onnx.ModelProto`` and the
  onnx wheel's model-zoo files (``wheel_models()``).

Example:
    >>> from compiler.frontend.onnx_import import from_onnx
    >>> from compiler.frontend.zoo import load_zoo
    >>> from_onnx(load_zoo("resnet18", image_size=32)).outputs[0].type.shape
    (1, 1000)
"""
