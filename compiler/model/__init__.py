"""Whole-model builds: from a graph to one compiled model per target.

* :mod:`compiler.model.cpu` - the cpu and gpu build: graph passes, fused groups, one kernel per
  group over one memory plan, as a :class:`compiler.model.program.Program`;
* :mod:`compiler.model.vta` - the accelerator build: int8 quantization, partition, one program
  per accelerator group (:mod:`compiler.model.group_compile`: parallel, cached; with a tuning
  log's knobs, :mod:`compiler.model.tuning`), one DRAM image, and the host groups between them
  compiled for the CPU (:mod:`compiler.model.host_groups`);
* :mod:`compiler.model.calibration` - the calibration data a quantized build reads.

Nothing here runs a model on a device: the runtime loads, runs and reports.
"""
