"""Whole networks on the accelerator (``--target vta``): digits accuracy and ResNet-18 cycles.

* digits: the trained network quantized to int8 (percentile calibration on 1,000 training
  images, never the held-out split; multiplier requantization), compiled once for the config
  at ``--batch`` and run on the simulator over the 1,000 held-out images (accelerator groups on
  the simulator, the rest on the host). Reports fp32 and int8 top-1, the mean cosine between the
  fp32 and int8 logit vectors, the top-1 agreement, and checks every batch's logits against the
  quantized graph's integer reference (bit for bit).
* resnet18: the zoo's ResNet-18 (random seeded weights, calibrated on its own seeded input) at
  ``--image-size`` on ``--resnet-config``: the per-layer table and three rows, each against its
  compute floor: (a) as VTA ran it, the 19 convolutions after the first (which VTA left on its
  CPU) quantized with VTA's own scheme (``requant="vta"``: power-of-two activation scales, one
  power-of-two weight scale per tensor, so each epilogue is ``ADD bias``, an immediate ``SHR``,
  ``MAX``, ``MIN``), the bias and residual fused, against VTA's published 7,729,601 cycles;
  (b) all 20 convolutions; (c) the whole network's accelerator groups. Rows (b) and (c) use
  ``--requant``; row (a) always uses ``vta`` (a second build when ``--requant`` is another).
  A floor is, per layer, the longer of the compute module's own work (the GEMM, reset and ALU
  micro-ops its program issues times their intervals: ``gemm_ii``; ``alu_ii`` for a tensor
  operand, ``alu_imm_ii`` for an immediate; plus the beats of the acc/acc8 tensors that the
  compute module loads itself, each byte once) and the DRAM port's (every byte the layer
  loads or stores, once), summed over the row's layers: no schedule of the same operators and
  epilogues can go below it (``_compute_floor``). The ratio to the micro-ops alone is printed
  too.

    python -m bench.bench_network [--config default] [--batch 100] [--skip-resnet]
        [--resnet-config vta-1x16x16] [--image-size 224] [--requant multiplier|shift|vta]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from isa import load_config

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
    accel = [r for r in run.layers if r.device == "vta"]
    convs = [r for r in accel if r.ops.startswith("conv2d")]
    below = [
        f"{r.name} ({r.alu_roofline_fraction:.1%}, {r.limiter})"
        for r in accel
        if r.alu_roofline_fraction < 0.9
    ]
    doc = {
        "config": config,
        "image_size": image_size,
        "requant": requant,
        "conv_layers": len(convs),
        "first_conv": convs[0].name,
        "first_conv_cycles": convs[0].cycles,
        "vta_as_ran_cycles": sum(r.cycles for r in convs[1:]),
        **_floor_keys("vta_as_ran_cycles", net, [r.name for r in convs[1:]]),
        "conv_cycles": sum(r.cycles for r in convs),
        **_floor_keys("conv_cycles", net, [r.name for r in convs]),
        "total_cycles": run.total_cycles,
        **_floor_keys("total_cycles", net, [r.name for r in accel]),
        "vta_published_conv_cycles": VTA_RESNET18_CONV_CYCLES,
        "bit_exact": exact,
        "below_90pct_of_alu_roofline": below,
        "compile_s": round(compile_s, 2),
        "run_s": round(run_s, 2),
        "layers": [r.to_json() for r in run.layers],
    }
    return doc, run.table()


def _compute_floor(net, names: list[str]) -> dict[str, int]:
    """The floor of the named layers: per layer the longer of two lower bounds, summed (the
    layers run one after another).

    * The compute module: its GEMM and reset micro-ops (``gemm_ii`` each), ALU micro-ops with a
      tensor operand (``alu_ii``) and with an immediate (``alu_imm_ii``), counted from the
      program's instruction stream, plus the beats of its own loads (the ``acc`` and ``acc8``
      tensors: a bias, a residual, a pool's input), each distinct byte once
      (:meth:`isa.Program.dram_footprint`). The compute module runs these one after the other
      (docs/timing.md §2-§4). Every schedule of a layer issues the same micro-ops (one reset and
      the reduction's GEMM micro-ops per accumulator entry, the epilogue's ALU micro-ops per
      entry; tiles and threads only group them into instructions and overlap the DMAs with
      them) and loads every byte of those tensors at least once.
    * The DRAM port: every distinct byte of the layer's loads (but micro-ops, whose bytes
      depend on the schedule) and stores, at ``bus_bytes`` a beat.

    Latencies, padding and waits are left out, so no schedule of these programs' operators and
    epilogues goes below it. ``uop_cycles`` is the micro-ops' part alone (the floor before the
    loads were counted).
    """
    cfg = net.config
    keys = ("gemm_uops", "reset_uops", "alu_uops", "alu_imm_uops", "compute_load_beats")
    total = dict.fromkeys((*keys, "uop_cycles", "port_bound_layers", "cycles"), 0)
    for name in names:
        program = net.layers[name].program
        n = program.uop_counts()
        fp = program.dram_footprint()
        own = -(-(fp["acc"] + fp["acc8"]) // cfg.bus_bytes)
        port = -(-sum(b for k, b in fp.items() if k != "uop") // cfg.bus_bytes)
        uops = (n["gemm"] + n["reset"]) * cfg.gemm_ii + n["alu"] * cfg.alu_ii
        uops += n["alu_imm"] * cfg.alu_imm_ii
        for key, v in zip(keys, (n["gemm"], n["reset"], n["alu"], n["alu_imm"], own), strict=True):
            total[key] += v
        total["uop_cycles"] += uops
        total["port_bound_layers"] += int(port > uops + own)
        total["cycles"] += max(uops + own, port)
    return total


def _floor_keys(key: str, net, names: list[str]) -> dict:
    """``{key}_floor`` (cycles) and ``{key}_floor_uops`` (the micro-op counts) of ``names``."""
    f = _compute_floor(net, names)
    return {f"{key}_floor": f["cycles"], f"{key}_floor_uops": f}


def _row(label: str, r: dict, key: str) -> str:
    cycles, f = r[key], r[f"{key}_floor_uops"]
    port = (
        f" ({f['port_bound_layers']} layer(s) bound by the port)" if f["port_bound_layers"] else ""
    )
    return (
        f"  {label}: {cycles} cycles; floor {f['cycles']}{port}: {f['gemm_uops']} GEMM + "
        f"{f['reset_uops']} reset + {f['alu_uops']} ALU tensor-operand + {f['alu_imm_uops']} "
        f"ALU immediate micro-ops ({f['uop_cycles']} cycles) and {f['compute_load_beats']} beats "
        f"of the compute module's acc/acc8 loads; {cycles / f['cycles']:.3f}x the floor "
        f"({cycles / f['uop_cycles']:.3f}x the micro-ops alone)"
    )


def _report(r: dict, vta: dict, table: str) -> None:
    """Print the per-layer table and the three rows (``vta`` is the run of VTA's scheme)."""
    print(table)
    print(
        f"resnet18 {r['image_size']}x{r['image_size']} on {r['config']} "
        f"(gemm_ii {r['gemm_ii']}, alu_ii {r['alu_ii']}, alu_imm_ii {r['alu_imm_ii']}); "
        f"bit-exact {r['bit_exact'] and vta['bit_exact']}; below 90% of the ALU-aware "
        f"roofline: {', '.join(r['below_90pct_of_alu_roofline']) or 'none'}; compile "
        f"{r['compile_s']} s, run {r['run_s']} s"
    )
    a = vta["vta_as_ran_cycles"]
    print(
        _row(
            f"(a) as VTA ran it (VTA's quantization, {vta['conv_layers'] - 1} convolutions, "
            f"{vta['first_conv']} on the host)",
            vta,
            "vta_as_ran_cycles",
        )
        + f"; VTA published {VTA_RESNET18_CONV_CYCLES}: ratio {a / VTA_RESNET18_CONV_CYCLES:.3f}"
    )
    print(_row(f"(b) all {r['conv_layers']} convolutions ({r['requant']})", r, "conv_cycles"))
    print(_row(f"(c) whole network ({r['requant']})", r, "total_cycles"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_network", description=__doc__)
    p.add_argument("--config", default="default", help="config of the digits run")
    p.add_argument("--batch", type=int, default=100, help="digits batch compiled once")
    p.add_argument("--skip-digits", action="store_true")
    p.add_argument("--skip-resnet", action="store_true")
    p.add_argument("--resnet-config", default="vta-1x16x16")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument(
        "--requant", choices=["multiplier", "shift", "vta"], default="multiplier",
        help="ResNet-18's requantization in rows (b) and (c) (docs/quantization.md): shift and "
        "vta are 4 ALU instructions, vta with one shift per layer (an immediate)",
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
        vta = r if args.requant == "vta" else _resnet(args.resnet_config, args.image_size,
                                                      "vta")[0]  # fmt: skip
        cfg = load_config(args.resnet_config)
        r |= {"gemm_ii": cfg.gemm_ii, "alu_ii": cfg.alu_ii, "alu_imm_ii": cfg.alu_imm_ii}
        if vta is not r:
            for k in (
                "vta_as_ran_cycles",
                "vta_as_ran_cycles_floor",
                "vta_as_ran_cycles_floor_uops",
            ):
                r[k] = vta[k]
            r["vta_as_ran_bit_exact"] = vta["bit_exact"]
        doc["resnet18"] = r
        _report(r, vta, table)
        ok &= r["bit_exact"] and vta["bit_exact"]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, allow_nan=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
