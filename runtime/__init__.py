"""The driver layer: runs compiled artifacts and whole graphs on their devices (the simulator, the
RTL, the CPU) and holds the ``vtac`` command line. It is the one package that wires the compiler
to the simulator and the RTL; ``compiler``, ``vta_sim`` and ``hw`` never import each other.
"""


def __getattr__(name: str):  # noqa: ANN202 - lazy, so `vtac --help` imports nothing heavy
    if name == "InferenceSession":
        from runtime.session import InferenceSession

        return InferenceSession
    raise AttributeError(f"module 'runtime' has no attribute {name!r}")
