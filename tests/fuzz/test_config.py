"""Fuzzing the config: random knob values either load and run a program, or are refused with a
ConfigError naming the knob; never an overflow, an allocation failure or a NaN figure."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import isa
import vta_sim
from isa import ConfigError

BASE = isa.load_config("default").to_dict()
KNOB_VALUES = st.one_of(
    st.integers(-4, 70),
    st.sampled_from([2**k for k in (7, 8, 10, 12, 13, 16, 17, 20, 27, 28, 31, 40, 62, 63, 64)]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([True, None, "8", [8], {"v": 8}]),
)


@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(st.sampled_from(sorted(BASE)), KNOB_VALUES, min_size=1, max_size=3))
def test_random_knobs(changes):
    knobs = BASE | changes
    try:
        cfg = isa.HwConfig.from_dict(knobs)
    except ConfigError as e:
        assert str(e).startswith("config") and "\n" not in str(e), str(e)
        return
    insns = [
        isa.Gemm(reset=True, uop_begin=0, uop_end=1, iter_out=3, iter_in=2),
        isa.Alu(uop_begin=0, uop_end=1, iter_out=2, use_imm=True, imm=3),
        isa.Finish(),
    ]
    result = vta_sim.simulate(isa.Program.build(cfg, insns), trace=False)
    assert result.cycles > 0 and math.isfinite(result.time_us)
    json.loads(result.to_json())
