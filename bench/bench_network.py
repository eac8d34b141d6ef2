"""Whole networks on the accelerator (``--target vta``): digits accuracy and ResNet-18 cycles.

* digits: the trained network quantized to int8 (percentile calibration on 1,000 training
  images, never the held-out split; multiplier requantization), compiled once for the config
  at ``--batch`` and run on the simulator over the 1,000 held-out images (accelerator groups on
  the simulator, the rest on the host). Reports fp32 and int8 top-1, the mean cosine between the
  fp32 and int8 logit vectors, the top-1 agreement, and checks every batch's logits against the
  quantized graph's integer reference (bit for bit).
* resnet18: the zoo's ResNet-18 (random seeded weights, calibrated on its own seeded input) at
  ``--image-size`` on ``--resnet-config``: the per-layer table, the sum of accelerator cycles
  over the 20 convolutions (the first included) against VTA's published 7,729,601 (its first
  convolution on the CPU), the whole network's accelerator cycles, and the compute floor of the
  20 convolutions: the GEMM, reset and ALU micro-ops their programs issue on the compute
  module (counted by the simulator) times ``gemm_ii`` / ``alu_ii``, which no schedule of the
  same operators and epilogues can go below.

    python -m bench.bench_network [--config default] [--batch 100] [--skip-resnet]
        [--resnet-config vta-1x16x16] [--image-size 224] [--requant multiplier|shift]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

VTA_RESNET18_CONV_CYCLES = 7_729_601


def _digits(config: str, batch: int) -> dict:
    from bench.bench_quant import calibration_images, cosine
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import digits_test, load_zoo
    from compiler.graph import evaluate
    from runtime.vta_target import compile_network

    images, labels = digits_test()
    if len(images) % batch:
        raise SystemExit(f"--batch {batch} must divide the {len(images)} held-out images")
    graph = from_onnx(load_zoo("digits", batch=batch))
    name = graph.inputs[0].name
    cal = calibration_images(len(images), images)
    feeds = [{name: cal[k : k + batch]} for k in range(0, len(cal), batch)]
    t0 = time.perf_counter()
    net = compile_network(graph, config, calibration=feeds)
    compile_s = time.perf_counter() - t0
    fp32, int8, mismatched, cycles = [], [], 0, 0
    t0 = time.perf_counter()
    for k in range(0, len(images), batch):
        feed = {name: images[k : k + batch]}
        run = net.run(feed)
        mismatched += int(not np.array_equal(run.outputs[0], net.reference(feed)[0]))
        cycles += run.total_cycles
        int8.append(run.outputs[0])
        fp32.append(evaluate(graph, feed)[0])
    run_s = time.perf_counter() - t0
    a, b = np.concatenate(fp32), np.concatenate(int8)
    return {
        "config": config,
        "images": len(images),
        "calibration_images": len(cal),
        "fp32_top1": float((a.argmax(1) == labels).mean()),
        "int8_top1": float((b.argmax(1) == labels).mean()),
        "logit_cosine": round(cosine(a, b), 6),
        "top1_agreement": float((a.argmax(1) == b.argmax(1)).mean()),
        "batches_not_bit_exact": mismatched,
        "accelerator_cycles_per_image": cycles / len(images),
        "compile_s": round(compile_s, 2),
        "run_s": round(run_s, 2),
    }


def _resnet(config: str, image_size: int, requant: str) -> tuple[dict, str]:
    from compiler.frontend.onnx_import import from_onnx
    from compiler.frontend.zoo import load_zoo
    from runtime.vta_target import compile_network

    graph = from_onnx(load_zoo("resnet18", batch=1, image_size=image_size))
    x = np.random.default_rng(0).standard_normal(graph.inputs[0].type.shape).astype(np.float32)
    feed = {graph.inputs[0].name: x}
    t0 = time.perf_counter()
    net = compile_network(graph, config, calibration=feed, requant=requant)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run = net.run(feed)
    run_s = time.perf_counter() - t0
    exact = bool(np.array_equal(run.outputs[0], net.reference(feed)[0]))
    convs = [r for r in run.layers if r.device == "vta" and r.ops.startswith("conv2d")]
    below = [
        f"{r.name} ({r.alu_roofline_fraction:.1%}, {r.limiter})"
        for r in run.layers
        if r.device == "vta" and r.alu_roofline_fraction < 0.9
    ]
    floor = _compute_floor(net, [r.name for r in convs])
    doc = {
        "config": config,
        "image_size": image_size,
        "requant": requant,
        "conv_layers": len(convs),
        "conv_cycles": sum(r.cycles for r in convs),
        "vta_published_conv_cycles": VTA_RESNET18_CONV_CYCLES,
        "conv_compute_floor": floor,
        "total_cycles": run.total_cycles,
        "bit_exact": exact,
        "below_90pct_of_alu_roofline": below,
        "compile_s": round(compile_s, 2),
        "run_s": round(run_s, 2),
        "layers": [r.to_json() for r in run.layers],
    }
    return doc, run.table()


def _compute_floor(net, names: list[str]) -> dict[str, int]:
    """The compute module's own work in the named layers' programs, summed: GEMM micro-ops
    (``gemm_ii`` each), reset micro-ops (``gemm_ii``) and ALU micro-ops (``alu_ii``), counted
    by the simulator over each layer's program run alone.

    The compute module runs GEMM and ALU instructions one after the other (docs/timing.md §2),
    so a layer can take no fewer cycles than this. Every schedule of a layer issues the same
    micro-ops (one reset and the reduction's GEMM micro-ops per accumulator entry, the
    epilogue's ALU micro-ops per entry): tiles and threads only group them into instructions
    and overlap the DMAs with them. The floor holds for every schedule of these programs'
    operator and epilogue.
    """
    import vta_sim

    cfg = net.config
    gemm = reset = alu = 0
    for name in names:
        res = vta_sim.simulate(net.layers[name].program, trace=False)
        gemm += res.gemm_uops
        reset += res.gemm_reset_uops
        alu += res.alu_uops
    cycles = (gemm + reset) * cfg.gemm_ii + alu * cfg.alu_ii
    return {"gemm_uops": gemm, "reset_uops": reset, "alu_uops": alu, "cycles": cycles}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_network", description=__doc__)
    p.add_argument("--config", default="default", help="config of the digits run")
    p.add_argument("--batch", type=int, default=100, help="digits batch compiled once")
    p.add_argument("--skip-digits", action="store_true")
    p.add_argument("--skip-resnet", action="store_true")
    p.add_argument("--resnet-config", default="vta-1x16x16")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument(
        "--requant", choices=["multiplier", "shift"], default="multiplier",
        help="ResNet-18's requantization (docs/quantization.md): shift is 4 ALU instructions",
    )  # fmt: skip
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    doc: dict = {}
    ok = True
    if not args.skip_digits:
        d = _digits(args.config, args.batch)
        doc["digits"] = d
        print(
            f"digits on {d['config']}: {d['images']} held-out images, fp32 top-1 "
            f"{d['fp32_top1']:.2%}, int8 on the accelerator {d['int8_top1']:.2%} (drop "
            f"{d['fp32_top1'] - d['int8_top1']:+.2%}), logit cosine {d['logit_cosine']:.5f}, "
            f"agreement {d['top1_agreement']:.1%}, {d['accelerator_cycles_per_image']:.0f} "
            f"accelerator cycles/image; batches not bit-exact: {d['batches_not_bit_exact']}; "
            f"compile {d['compile_s']} s, run {d['run_s']} s",
            flush=True,
        )
        ok &= d["batches_not_bit_exact"] == 0 and d["fp32_top1"] - d["int8_top1"] <= 0.01
    if not args.skip_resnet:
        r, table = _resnet(args.resnet_config, args.image_size, args.requant)
        doc["resnet18"] = r
        print(table)
        print(
            f"resnet18 {r['image_size']}x{r['image_size']} on {r['config']} ({r['requant']}): "
            f"{r['conv_layers']} conv layers {r['conv_cycles']} cycles (VTA published "
            f"{VTA_RESNET18_CONV_CYCLES}, first conv on its CPU: ratio "
            f"{r['conv_cycles'] / VTA_RESNET18_CONV_CYCLES:.3f}); whole network "
            f"{r['total_cycles']} accelerator cycles; bit-exact {r['bit_exact']}; below 90% "
            f"of the ALU-aware roofline: {', '.join(r['below_90pct_of_alu_roofline']) or 'none'}"
            f"; compile {r['compile_s']} s, run {r['run_s']} s"
        )
        f = r["conv_compute_floor"]
        cfg_ii = f"gemm_ii, alu_ii of {r['config']}"
        print(
            f"compute floor of the {r['conv_layers']} conv layers (the compute module's own "
            f"micro-ops, {cfg_ii}): {f['gemm_uops']} GEMM + {f['reset_uops']} reset + "
            f"{f['alu_uops']} ALU micro-ops = {f['cycles']} cycles, no schedule goes below; "
            f"the measured {r['conv_cycles']} cycles are {r['conv_cycles'] / f['cycles']:.3f}x "
            f"the floor, and the floor is {f['cycles'] / VTA_RESNET18_CONV_CYCLES:.3f}x VTA's "
            f"published {VTA_RESNET18_CONV_CYCLES}"
        )
        ok &= r["bit_exact"]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, allow_nan=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
