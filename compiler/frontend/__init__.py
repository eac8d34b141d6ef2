"""Model frontends: ONNX import and the built-in model zoo."""
