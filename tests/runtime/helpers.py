"""Helpers shared by the accelerator network tests."""

from typing import Any


def host_ops_but_group_feeds(net: Any) -> list[str]:
    """The operators a compiled network leaves on the host, in order, without those that only
    feed an accelerator group: the channel folds (``im2col``) that the build's ``host_steps``
    pass puts before a convolution with few input channels, each of which must feed a
    convolution on the accelerator, and the ``pack`` nodes of the ``pack`` pass, each of which
    must be read by ``unpack`` nodes of accelerator groups, and its ``unpack`` nodes, each of
    which must read a group's store back."""
    part, users = net.partition, net.graph.users
    nodes = {n.name: n for n in net.graph.nodes}
    ops = []
    for p in part.host_nodes():
        if p.op == "unpack":
            # the host's read-back of a group's output: it reads the group's store
            (store,) = nodes[p.node].inputs
            assert store.op == "pack" and part.placement(store.name).device == "vta", p.node
            continue
        if p.op not in ("im2col", "pack"):
            ops.append(p.op)
            continue
        readers = users.get(id(nodes[p.node]), [])
        assert readers, p.node
        for reader in readers:
            if p.op == "im2col" and reader.op == "pack":
                continue  # the pack is checked as a host node of its own
            want = "conv2d" if p.op == "im2col" else "unpack"
            assert reader.op == want, (p.node, reader.op)
            assert part.placement(reader.name).device == "vta", (p.node, reader.name)
    return ops
