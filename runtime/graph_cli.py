"""``vtac graph MODEL [--after PASS] [--dot FILE]``: print a model's graph at any pipeline stage.

MODEL is an ONNX file or a zoo name (``resnet18``, ``resnet34``, ``resnet50``, ``digits``;
``--image-size`` and ``--batch`` size the zoo's ResNets). Without ``--after`` the whole graph
pipeline runs and the fused graph with its memory plan is printed; ``--after import`` prints
the graph as imported, ``--after PASS`` after that pass (``--list-passes`` names them).
``--block-c C`` asks for the packed ``NCHW{n}n{C}c`` layout (the CPU's is 16). ``--dot FILE``
writes the same graph for Graphviz.

Example:
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="vtac").add_subparsers()
    >>> add_parser(sub)
    >>> args = sub.choices["graph"].parse_args(["resnet18", "--after", "fuse_ops"])
    >>> args.model, args.after, args.block_c
    ('resnet18', 'fuse_ops', None)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from runtime.inputs import add_input_shape_option


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def add_parser(subparsers: Any) -> None:
    """Register ``graph``."""
    p = subparsers.add_parser(
        "graph",
        help="print a model's graph after the graph passes (fused groups, memory plan)",
        description="Import an ONNX model (a file or a zoo name), run the graph pipeline up to "
        "a pass and print the graph; --dot writes it for Graphviz.",
    )
    p.add_argument("model", nargs="?", help="an ONNX file or a zoo model name")
    p.add_argument(
        "--after",
        metavar="PASS",
        default=None,
        help="stop after this pass ('import' for the imported graph; default: all)",
    )
    p.add_argument("--dot", metavar="FILE", type=Path, help="also write the graph as Graphviz")
    p.add_argument(
        "--block-c",
        type=_positive,
        default=None,
        help="pack activations to NCHW{n}n{C}c with this channel block",
    )
    p.add_argument("--block-n", type=_positive, default=1, help="batch block of the packing")
    p.add_argument(
        "--image-size",
        type=_positive,
        default=None,
        help="input height and width of a zoo ResNet (default 224)",
    )
    p.add_argument("--batch", type=_positive, default=1, help="batch of a zoo model")
    add_input_shape_option(p)
    p.add_argument("--list-passes", action="store_true", help="list the pass names and exit")
    p.add_argument(
        "--target", choices=["vta"], default=None,
        help="vta: quantize, partition and print where every node runs and the rule that decided",
    )  # fmt: skip
    p.add_argument("--config", default=None, help="accelerator config of --target vta")
    p.add_argument("--progress", action="store_true",
                   help="--target vta: a bar of the groups' compiles (default: when stderr is a "
                   "terminal)")  # fmt: skip
    from runtime.model_cli import add_calibrator_option, add_fp32_threshold_option

    add_calibrator_option(p, "--target vta")
    add_fp32_threshold_option(p)
    p.set_defaults(run=run)


def load(
    model: str,
    image_size: int | None = None,
    batch: int = 1,
    input_shapes: dict[str, tuple[int, ...]] | None = None,
) -> Any:
    """The graph of ``model``: an ONNX file, or a zoo name (``compiler.frontend.zoo``)."""
    from compiler.errors import FrontendError
    from compiler.frontend.onnx_import import from_onnx

    path = Path(model)
    if path.exists():
        if image_size is not None:
            raise FrontendError("--image-size applies to zoo models only")
        return from_onnx(path, input_shapes=input_shapes)
    from compiler.frontend.zoo import load_zoo, zoo_names

    if model not in zoo_names():
        raise FrontendError(
            f"{model}: no such file, and not a zoo model ({', '.join(zoo_names())})"
        )
    kwargs: dict[str, Any] = {"batch": batch}
    if image_size is not None:
        kwargs["image_size"] = image_size
    return from_onnx(load_zoo(model, **kwargs), name=model, input_shapes=input_shapes)


def run(args: argparse.Namespace) -> int:
    from compiler.errors import GraphError
    from compiler.graph import graph_pipeline, run_pipeline, to_dot, to_text

    if getattr(args, "target", None) == "vta" and args.model is not None:
        from runtime.vta_cli import graph_command

        return graph_command(args)
    if getattr(args, "fp32_threshold", None) is not None:
        raise GraphError("--fp32-threshold applies to --target vta (the quantized partition)")
    if getattr(args, "calibrator", None) is not None:
        raise GraphError("--calibrator applies to --target vta (the quantized partition)")
    if getattr(args, "progress", False):
        raise GraphError("--progress applies to --target vta (its groups' compiles)")
    pipeline = graph_pipeline(block_c=args.block_c, block_n=args.block_n)
    names = ["import", *pipeline.names()]
    if args.list_passes:
        print("\n".join(names))
        return 0
    if args.model is None:
        raise GraphError("give a MODEL (an ONNX file or a zoo name)")
    if args.after is not None and args.after not in names:
        hint = " (layout passes run only with --block-c)" if args.block_c is None else ""
        raise GraphError(f"no graph pass named {args.after!r}; passes: {', '.join(names)}{hint}")
    graph = load(args.model, args.image_size, args.batch, dict(args.input_shape) or None)
    if args.after != "import":
        graph = run_pipeline(graph, pipeline, stop_after=args.after)
    sys.stdout.write(to_text(graph))
    if args.dot is not None:
        try:
            args.dot.write_text(to_dot(graph))
        except OSError as e:
            raise GraphError(f"cannot write {args.dot}: {e.strerror}") from None
    return 0
