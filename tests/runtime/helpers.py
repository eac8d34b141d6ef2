"""Helpers shared by the accelerator network tests."""

from typing import Any


def host_ops_but_folds(net: Any) -> list[str]:
    """The operators a compiled network leaves on the host, in order, without the channel
    folds (``im2col``) that the build's ``host_steps`` pass puts before a convolution with few
    input channels; each of those must feed a convolution on the accelerator."""
    part, users = net.partition, net.graph.users
    nodes = {n.name: n for n in net.graph.nodes}
    ops = []
    for p in part.host_nodes():
        if p.op != "im2col":
            ops.append(p.op)
            continue
        readers = users.get(id(nodes[p.node]), [])
        assert readers, p.node
        for reader in readers:
            assert reader.op == "conv2d", (p.node, reader.op)
            assert part.placement(reader.name).device == "vta", (p.node, reader.name)
    return ops
