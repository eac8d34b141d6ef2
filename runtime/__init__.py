"""The driver layer: runs compiled artifacts and whole graphs on their devices (the simulator, the
RTL, the CPU) and holds the ``vtac`` command line. It is the one package that wires the compiler
to the simulator and the RTL; ``compiler``, ``vta_sim`` and ``hw`` never import each other.
"""
