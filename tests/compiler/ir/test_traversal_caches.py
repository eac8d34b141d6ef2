"""The traversal machinery's shortcuts give what a plain walk gives: the child-field layout,
the per-node variable and buffer sets, ``substitute``'s cached refolding of untouched
subtrees, ``replace_buffers``' pruning and ``Node.replace``."""

from __future__ import annotations

import math

import pytest

from compiler.ir import Buffer, IntImm, Var, op
from compiler.ir import expr as E
from compiler.ir import stmt as S
from compiler.ir.functor import (
    buffer_set,
    buffers_used,
    map_children,
    replace_buffers,
    rewrite,
    substitute,
    used_vars,
    uses_var,
    var_set,
    visit,
)
from compiler.ir.node import Node, child_fields, field_names


def _walk_children(n: Node) -> list[Node]:
    """Children by looking at every field (what the layout may skip)."""
    out: list[Node] = []
    for name in field_names(type(n)):
        value = getattr(n, name)
        if isinstance(value, Node):
            out.append(value)
        elif isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, Node))
    return out


def _program() -> tuple[S.Stmt, Buffer, Buffer, Var, Var]:
    A = Buffer("A", (16,), "int32")
    B = Buffer("B", (16,), "int32")
    i, j = Var("i"), Var("j")
    load = E.BufferLoad(A, (i * 4 + j,))
    inner = S.For(
        j, IntImm(0), IntImm(4), S.ForKind.SERIAL, S.BufferStore(B, load + 1, (i * 4 + j,))
    )
    cond = S.If(i < 3, inner, S.Evaluate(E.Call(E.CallOp("f"), (i, IntImm(2)), E.int32)))
    body = S.Allocate(B, S.seq(cond, S.BufferStore(A, E.Add(i, IntImm(0)), (i,))))
    return S.For(i, IntImm(0), IntImm(4), S.ForKind.SERIAL, body), A, B, i, j


def test_children_match_a_walk_of_every_field():
    nest, *_ = _program()
    seen: list[Node] = []
    visit(nest, lambda n: seen.append(n))
    assert len(seen) > 20
    for n in seen:
        assert n.children() == _walk_children(n), type(n).__name__
    assert [name for name, _, _ in child_fields(E.Add)] == ["a", "b"]
    assert child_fields(E.IntImm) == () and child_fields(Var) == ()


def test_variable_and_buffer_sets_match_a_walk():
    nest, A, B, i, j = _program()
    assert var_set(nest) == {i, j} and used_vars(nest) == {i, j}
    assert var_set(nest) is var_set(nest)  # kept on the node
    assert uses_var(nest.body, j) and not uses_var(IntImm(3) + 1, i)
    assert buffer_set(nest) == {A, B} == buffers_used(nest)
    assert buffer_set(nest.body.body.stmts[1]) == {A}


def test_substitute_refolds_untouched_subtrees_as_a_full_rewrite_does():
    nest, A, B, i, j = _program()
    k = Var("k")

    def reference(node: Node, mapping: dict[Var, E.Expr]) -> Node:
        from compiler.ir.functor import _refold

        def post(n: Node) -> Node | None:
            if isinstance(n, Var):
                return mapping.get(n)
            return _refold(n, op)

        return rewrite(node, post)

    for mapping in ({j: IntImm(2)}, {i: k * 2}, {k: IntImm(1)}, {i: IntImm(0), j: IntImm(1)}):
        assert substitute(nest, mapping) == reference(nest, mapping)
    # the untouched store's `i + 0` is refolded even though i is not replaced there
    out = substitute(nest, {j: IntImm(0)})
    assert out.body.body.stmts[1].value == i


def test_replace_buffers_rebuilds_only_what_holds_the_buffer():
    nest, A, B, i, j = _program()
    C = Buffer("C", (16,), "int32")
    out = replace_buffers(nest, {B: C})
    assert buffer_set(out) == {A, C}
    store_a = nest.body.body.stmts[1]
    assert out.body.body.stmts[1] is store_a  # held no B: the same object
    assert replace_buffers(nest, {Buffer("D", (1,), "int32"): C}) is nest


def test_map_children_keeps_the_node_when_nothing_changes():
    i = Var("i")
    e = E.Call(E.CallOp("f"), (i, i + 1), E.int32)
    assert map_children(e, lambda n: n) is e
    j = Var("j")
    out = map_children(e, lambda n: j if n is i else n)
    assert out.args == (j, i + 1)


def test_replace_names_an_unknown_field():
    i = Var("i")
    assert (i + 1).replace(b=IntImm(2)) == i + 2
    with pytest.raises(TypeError, match="no field 'c'"):
        (i + 1).replace(c=IntImm(2))


def test_float_constants_compare_bit_for_bit():
    assert E.FloatImm(0.0) == E.FloatImm(0.0)
    assert E.FloatImm(0.0) != E.FloatImm(-0.0)
    assert E.FloatImm(math.nan) == E.FloatImm(math.nan)
    assert E.FloatImm(1.0) != E.FloatImm(1.0, "float64")
    assert hash(E.FloatImm(2.5)) == hash(E.FloatImm(2.5))


def test_derived_sets_are_not_pickled():
    import pickle

    nest, A, B, i, j = _program()
    var_set(nest)
    buffer_set(nest)
    substitute(nest, {j: IntImm(0)})
    copy = pickle.loads(pickle.dumps(nest))
    assert copy == nest
    assert not {"_vars", "_buffers", "_refolded"} & set(copy.__dict__)


def test_hashes_are_not_pickled():
    """A hash kept on a node (or a dtype) is this process's: strings hash differently in
    another one, so an unpickled node that kept it would be equal to a fresh node but hash
    apart from it (dictionary lookups would miss it)."""
    import pickle
    import subprocess
    import sys

    from compiler.ir.dtype import as_dtype

    i = Var("i")
    e = (i * 4 + 3) < 7
    hash(e), e.a.dtype  # noqa: B018 - kept on the nodes
    data = pickle.dumps(e)
    assert not {"_hash", "_dtype"} & set(pickle.loads(data).__dict__)
    assert pickle.loads(pickle.dumps(as_dtype("int32"))) == as_dtype("int32")
    code = (
        "import pickle, sys\n"
        "from compiler.ir import expr as E\n"
        "from compiler.ir.dtype import as_dtype\n"
        "e = pickle.loads(sys.stdin.buffer.read())\n"
        "fresh = E.LT(E.Add(E.Mul(e.a.a.a, e.a.a.b), e.a.b), e.b)\n"
        "assert e == fresh and hash(e) == hash(fresh), 'stale hash'\n"
        "assert hash(e.a.dtype) == hash(as_dtype('int32'))\n"
    )
    for seed in ("1", "2"):
        env = {**__import__("os").environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", code], input=data, env=env,
                              capture_output=True)  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()[-500:]


def test_direct_constructor_is_the_dataclass_one():
    """The node constructor that stores fields straight into the instance takes the same
    arguments, defaults and default factories, and runs ``__post_init__``."""
    assert IntImm(300, "int8").value == 44  # wrapped by __post_init__
    assert IntImm(value=5).dtype == E.int32
    a, b = Var("a"), Var("a")
    assert a.uid != b.uid and a != b  # a fresh uid from the factory each time
    assert Var("c", E.int32, uid=a.uid) == Var("c", "int32", uid=a.uid)
    with pytest.raises(TypeError):
        E.Add(a)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        E.Add(a, b, a)  # type: ignore[call-arg]
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name = "x"  # type: ignore[misc]
