"""``import vtac``: the public face, with the names the README uses."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import vtac


def test_docstring_example():
    assert doctest.testmod(vtac).failed == 0


def test_public_names_resolve_to_the_packages_that_own_them():
    import isa
    import runtime.session
    import vta_sim

    assert vtac.InferenceSession is runtime.session.InferenceSession
    assert vtac.load_config is isa.load_config and vtac.simulate is vta_sim.simulate
    assert set(vtac.__all__) <= set(dir(vtac))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        vtac.nothing  # noqa: B018


def test_compile_writes_an_artifact_that_runs_the_same(tmp_path):
    path = tmp_path / "digits.vtac"
    sess = vtac.compile("digits", path)
    x = np.random.default_rng(0).random(sess.get_inputs()[0].shape, np.float32)
    (a,) = sess.run(None, {sess.get_inputs()[0].name: x})
    (b,) = vtac.InferenceSession(path).run(None, {sess.get_inputs()[0].name: x})
    np.testing.assert_array_equal(a, b)
