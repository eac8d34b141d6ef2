"""Testbenches: Verilog wrappers (the DRAM model, the co-verification top) and cocotb tests.

The cocotb modules run inside the simulator, launched by :mod:`hw.sim`; they are not pytest
modules. Each has a TB class owning clock, reset, drivers and monitors, a model built from
``isa``'s reference semantics, a checker, and knobs for back-pressure and idle cycles.
"""
