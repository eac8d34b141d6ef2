"""The graph-level pass pipeline, on the loop level's mechanism.

Graph passes are plain functions ``Graph -> Graph`` held in the same named, immutable
:class:`~compiler.passes.pipeline.Pipeline` as the loop level and run by its runner with the
graph verifier and printer, under the same debug switches
(:class:`~compiler.passes.pipeline.PassOptions`): ``VTAC_VERIFY_IR=1`` runs the graph
verifier after every pass, ``VTAC_DUMP_IR=fuse_ops,plan_memory`` (or ``all``) prints the graph
after those passes, ``VTAC_DUMP_DIR`` writes ``NN_<pass>.txt`` files instead. Graph pass names
differ from loop pass names, so one ``VTAC_DUMP_IR`` list can name passes of both levels.

The default pipeline, read top to bottom:

1. ``fold_constants``: evaluate every node whose inputs are all constants;
   ``elementwise_before_interleave``: an elementwise operator (a per-channel bias, a batch
   norm, an activation) after an interleave (a depth-to-space, as a transposed convolution
   whose kernel equals its strides is imported) moves before it, next to its convolution;
2. ``fold_batch_norm``: fold batch norms into the preceding conv2d (or into a multiply/add);
   ``fold_bias_add``: a constant per-channel add after a conv2d or dense becomes its bias;
3. ``fold_pad``: fold an explicit zero spatial pad into the conv2d (or counting avg_pool2d)
   that reads it, so that no float pad stays between two integer operators after quantization;
   ``fold_affine``: a constant multiply or add next to a conv2d or dense layer (a per-tensor
   ``x * a + b`` as PP-LCNetV3 puts after its layers) folds into its weights and bias;
4. ``fold_hard_activations``: hard sigmoid / hard swish written out by the exporter
   (``x * clip(x + 3, 0, 6) / 6``) become the declared operators, one integer operator each
   after quantization; ``factor_residual_gate``: a gated residual ``x + x * g`` (a
   squeeze-excitation gate ``g`` per channel) becomes ``x * (g + 1)``, one elementwise operator
   over the tensor instead of two; ``conv_columns_to_rows``: a convolution over a column of
   width 1 (a 1-d convolution as tf2onnx writes it) becomes the same one over a row, which the
   packed schedules vectorize;
5. ``dense_to_matmul`` (the cpu target; ``dense_as_matmul=False`` leaves it out for the gpu):
   a dense layer by a constant weight with several rows, or a reduction the split-K dense does
   not take, becomes a matmul by the transposed weight; ``flatten_matmul_rows``: a matmul by
   a constant weight becomes a 2-D matmul over the flattened rows, its columns padded to whole
   register panels (the quantizer's ``matmul_to_dense`` replaces it before quantization);
6. ``eliminate_dead_nodes``: drop nodes no output depends on;
7. ``pad_channels``, ``pack_layout`` and ``fold_layout_constants`` (only when a target asks
   for a packed layout, ``block_c``): convolutions whose output channels fill no whole block
   padded with zero filters up to one (and the padding carried to the next convolution), then
   NCHW{n}n{c}c for the convolutions and the ops around them, weights and per-channel
   constants pre-packed by constant folding;
8. ``eliminate_dead_nodes_final``;
9. ``fuse_ops``: fused groups by TVM's pattern kinds;
10. ``plan_memory``: the static memory plan of the group outputs.

Example:
    >>> graph_pipeline().names()
    ['fold_constants', 'elementwise_before_interleave', 'fold_batch_norm', 'fold_bias_add', \
'fold_pad', 'fold_affine', 'fold_hard_activations', 'factor_residual_gate', \
'conv_columns_to_rows', 'dense_to_matmul', 'flatten_matmul_rows', 'eliminate_dead_nodes', \
'eliminate_dead_nodes_final', 'fuse_ops', 'plan_memory']
    >>> graph_pipeline(block_c=16).names()[12:15]
    ['pad_channels', 'pack_layout', 'fold_layout_constants']
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from compiler.errors import GraphError
from compiler.graph.ir import Graph
from compiler.graph.printer import to_text
from compiler.graph.verify import verify_graph
from compiler.passes.pipeline import Pass, PassOptions, Pipeline


def graph_pass(name: str, fn: Callable[[Graph], Graph]) -> Pass[Graph]:
    """A named graph pass (``Graph -> Graph``) for a pipeline the runner runs on graphs.

    Example:
        >>> from compiler.graph.passes import fuse_ops
        >>> graph_pass("fuse_ops", fuse_ops).name
        'fuse_ops'
    """
    return Pass(name, fn)


def graph_pipeline(
    block_c: int | None = None, block_n: int = 1, *, dense_as_matmul: bool = True
) -> Pipeline[Graph]:
    """The graph pipeline; ``block_c`` (with ``block_n``) asks for the packed
    ``NCHW{block_n}n{block_c}c`` layout, ``None`` keeps NCHW. ``dense_as_matmul``: the CPU's
    choice of a matmul for a dense layer of several rows (:func:`dense_to_matmul`; the gpu
    target keeps its dense schedule)."""
    from compiler.graph.memory import plan_memory
    from compiler.graph.passes import (
        conv_columns_to_rows,
        dense_to_matmul,
        elementwise_before_interleave,
        eliminate_dead_nodes,
        factor_residual_gate,
        flatten_matmul_rows,
        fold_affine,
        fold_batch_norm,
        fold_bias_add,
        fold_constants,
        fold_hard_activations,
        fold_pad,
        fuse_ops,
        pack_layout,
        pad_channels,
    )

    passes = [
        graph_pass("fold_constants", fold_constants),
        graph_pass("elementwise_before_interleave", elementwise_before_interleave),
        graph_pass("fold_batch_norm", fold_batch_norm),
        graph_pass("fold_bias_add", fold_bias_add),
        graph_pass("fold_pad", fold_pad),
        graph_pass("fold_affine", fold_affine),
        graph_pass("fold_hard_activations", fold_hard_activations),
        graph_pass("factor_residual_gate", factor_residual_gate),
        graph_pass("conv_columns_to_rows", conv_columns_to_rows),
    ]
    if dense_as_matmul:
        passes.append(graph_pass("dense_to_matmul", dense_to_matmul))
    passes += [
        graph_pass("flatten_matmul_rows", flatten_matmul_rows),
        graph_pass("eliminate_dead_nodes", eliminate_dead_nodes),
    ]
    if block_c is not None:
        if block_c < 1 or block_n < 1:
            raise GraphError(f"layout blocks must be >= 1, got block_c={block_c} block_n={block_n}")
        passes += [
            graph_pass("pad_channels", partial(pad_channels, block_c=block_c)),
            graph_pass("pack_layout", partial(pack_layout, block_c=block_c, block_n=block_n)),
            graph_pass("fold_layout_constants", fold_constants),
        ]
    passes += [
        graph_pass("eliminate_dead_nodes_final", eliminate_dead_nodes),
        graph_pass("fuse_ops", fuse_ops),
        graph_pass("plan_memory", plan_memory),
    ]
    return Pipeline(tuple(passes))


def run_pipeline(
    graph: Graph,
    pipeline: Pipeline[Graph] | None = None,
    options: PassOptions | None = None,
    *,
    stop_after: str | None = None,
) -> Graph:
    """Run ``pipeline`` (default :func:`graph_pipeline`) on ``graph`` with the loop level's
    runner (:meth:`Pipeline.run`), the graph verifier and printer, verifying and dumping per
    ``options``; ``stop_after`` ends the run after the pass of that name.

    Example:
        >>> from compiler.graph.ir import Node, TensorType, Var
        >>> x = Var("x", TensorType((1, 8), "float32"))
        >>> g = Graph.from_outputs([x], [Node("relu", (Node("exp", (x,)),))])
        >>> run_pipeline(g).groups[0].pattern.value
        'injective'
        >>> run_pipeline(g, stop_after="fold_constants").groups is None
        True
    """
    pipe = pipeline if pipeline is not None else graph_pipeline()
    if stop_after is not None:
        names = pipe.names()
        if stop_after not in names:
            raise GraphError(f"no graph pass named {stop_after!r}; passes: {', '.join(names)}")
        pipe = Pipeline(pipe.passes[: names.index(stop_after) + 1])
    return pipe.run(
        graph,
        options,
        verifier=verify_graph,
        printer=to_text,
        dump_prefix="graph_",
    )


PassFn = Callable[[Graph], Graph]

__all__ = ["PassFn", "graph_pass", "graph_pipeline", "run_pipeline"]
