"""vtac compiler: tensor expressions, schedules, loop IR, passes and targets.

Subpackages (import what you need; importing ``compiler`` itself loads nothing heavy):

* ``compiler.te`` - tensor expression language; ``compiler.topi`` - operators on it;
* ``compiler.schedule`` - schedules in the TVM vocabulary, recorded and replayable;
* ``compiler.lower`` / ``compiler.passes`` - loop IR construction and the pass pipeline;
* ``compiler.ir`` / ``compiler.arith`` - IR nodes, printer, simplifier, index analysis;
* ``compiler.targets`` - code generation (``cpu``), ``compiler.build`` - lower + build.
"""
