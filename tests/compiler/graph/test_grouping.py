"""The shared grouping walk (compiler.graph.passes.grouping) under small policies."""

from compiler.graph.ir import Graph, Node, PatternKind, TensorType, Var
from compiler.graph.ops import get_op
from compiler.graph.passes.grouping import Grown, Walk, grow_groups

X = Var("x", TensorType((1, 4), "float32"))


def _names(groups):
    return [[n.name for n in g.nodes] for g in groups]


class Chains:
    """Joins a producer's group while that producer has no other reader; ``refuse`` names
    nodes that never join, ``alone`` nodes that begin no group; one anchor (a non-injective
    node) per group, groups with an anchor preferred."""

    def __init__(self, graph, refuse=(), alone=()):
        self.users = graph.users
        self.refuse, self.alone = set(refuse), set(alone)

    def starts(self, node):
        return node.name not in self.alone

    def is_anchor(self, node):
        return get_op(node.op).pattern is not PatternKind.INJECTIVE

    def may_fuse(self, group, node, walk):
        if node.name in self.refuse or node.name in self.alone:
            return False
        if self.is_anchor(node) and group.anchor is not None:
            return False
        readers = self.users.get(id(group.tail), [])
        return all(r is node for r in readers) and any(v is group.tail for v in node.inputs)

    def rank(self, group):
        return 0 if group.anchor is not None else 1


def test_a_chain_is_one_group_and_a_refusing_predicate_cuts_it():
    a = Node("relu", (X,), name="a")
    b = Node("exp", (a,), name="b")
    c = Node("relu", (b,), name="c")
    g = Graph.from_outputs([X], [c])
    assert _names(grow_groups(g.nodes, Chains(g))) == [["a", "b", "c"]]
    assert _names(grow_groups(g.nodes, Chains(g, refuse={"b"}))) == [["a"], ["b", "c"]]
    # a node that begins no group is in none, and cuts the chain
    groups = grow_groups(g.nodes, Chains(g, alone={"b"}))
    assert _names(groups) == [["a"], ["c"]]
    assert [gr.index for gr in groups] == [0, 1] and [gr.first for gr in groups] == [0, 2]


def test_the_first_reduction_is_the_anchor_and_a_second_begins_a_group():
    a = Node("relu", (X,), name="a")
    s1 = Node("softmax", (a,), {"axis": 1}, name="s1")
    b = Node("relu", (s1,), name="b")
    s2 = Node("softmax", (b,), {"axis": 1}, name="s2")
    g = Graph.from_outputs([X], [s2])
    groups = grow_groups(g.nodes, Chains(g))
    assert _names(groups) == [["a", "s1", "b"], ["s2"]]
    assert [gr.anchor.name for gr in groups] == ["s1", "s2"]
    assert groups[0].tail is b and (groups[0].first, groups[0].last) == (0, 2)


def test_a_branch_stops_fusion_and_the_preferred_producer_takes_the_join():
    a = Node("relu", (X,), name="a")
    b = Node("exp", (a,), name="b")  # a has two readers: neither joins it
    c = Node("softmax", (a,), {"axis": 1}, name="c")
    d = Node("add", (b, c), name="d")  # both producer groups qualify: c's has an anchor
    g = Graph.from_outputs([X], [d])
    groups = grow_groups(g.nodes, Chains(g))
    assert _names(groups) == [["a"], ["b"], ["c", "d"]]
    assert groups[2].anchor is c and groups[1].anchor is None


def test_a_tie_goes_to_the_first_input_and_the_previous_node_is_a_candidate():
    a = Node("relu", (X,), name="a")
    b = Node("exp", (X,), name="b")
    c = Node("add", (a, b), name="c")
    g = Graph.from_outputs([X], [c])
    assert _names(grow_groups(g.nodes, Chains(g))) == [["a", "c"], ["b"]]

    seen: list[list[str]] = []

    class Consecutive:
        """Runs of consecutive nodes, whatever their edges."""

        def starts(self, node):
            return True

        def is_anchor(self, node):
            return False

        def may_fuse(self, group: Grown, node: Node, walk: Walk) -> bool:
            seen.append([n.name for n in group.nodes])
            return group.last == walk.position - 1

        def rank(self, group):
            return 0

    d = Node("relu", (X,), name="d")
    e = Node("exp", (X,), name="e")
    g2 = Graph((X,), (d, e), (d, e))
    assert _names(grow_groups(g2.nodes, Consecutive())) == [["d", "e"]]
    assert seen == [["d"]]  # e does not read d: d's group is offered as the node before e


def test_the_walk_says_where_each_value_is_computed():
    a = Node("relu", (X,), name="a")
    b = Node("exp", (X,), name="b")
    c = Node("add", (b, a), name="c")
    g = Graph((X,), (a, b, c), (c,))
    asked = {}

    class Probe:
        def starts(self, node):
            return node.name != "b"

        def is_anchor(self, node):
            return True

        def may_fuse(self, group, node, walk):
            if node is not c:
                return False
            asked["group_of_b"] = walk.group_of(b)
            asked["group_of_a"] = walk.group_of(a).index
            asked["group_of_x"] = walk.group_of(X)
            asked["position"] = (walk.position, walk.position_of(b))
            return True

        def rank(self, group):
            return 0

    groups = grow_groups(g.nodes, Probe())
    assert _names(groups) == [["a", "c"]] and groups[0].anchor is a
    assert asked == {
        "group_of_b": None,
        "group_of_a": 0,
        "group_of_x": None,
        "position": (2, 1),
    }
