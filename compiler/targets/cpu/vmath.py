"""Vectorizable float32 math for the CPU target, written out in LLVM IR: ``exp`` and ``tanh``.

LLVM lowers ``llvm.exp`` on a vector to one libm call per lane, which no loop vectorizer can
widen: a sigmoid, a SiLU or a softmax then spends most of its time in scalar ``expf`` calls.
:func:`exp_f32` is an ``exp`` of plain arithmetic instead (Cephes' ``expf``: ``x = n ln 2 + r``
with ``|r| <= ln 2 / 2``, a degree-7 polynomial in ``r``, then ``2**n`` built in the exponent
field), which stays a vector of any width. The polynomial's Horner steps may be contracted into
FMAs (15% less time for a SiLU on an AMD EPYC core, 91 -> 77 us over 260k values); the range
reduction and the last steps are not: contracted too, the largest error grew to 1.01 ulp.

Accuracy: within 1 ulp of ``exp`` computed in float64, on every one of the 2**32 float32 inputs
(checked exhaustively, ``python -m tools.vmath_exhaustive``: at most 0.990 ulp, with the FMAs as
without; ``tanh`` 1.330), gradual underflow included (``2**n`` is applied as two factors
``2**(n//2)`` and ``2**(n - n//2)``, each a normal float); where the float64 result
rounds to ``+inf`` or ``0`` (above 88.72, below -103.97, the infinities) the kernel gives exactly
that, and a NaN comes back unchanged.

Example:
    >>> name, text, _ = exp_f32(8)
    >>> name, text.startswith("define internal <8 x float> @vtac.exp.v8f32")
    ('vtac.exp.v8f32', True)
"""

from __future__ import annotations

import numpy as np

from compiler.targets.cpu.llvm_types import float_literal, mangle

#: ``ln 2`` in two parts: ``LN2_HI`` has few enough bits that ``n * LN2_HI`` is exact.
LN2_HI = 0.693359375
LN2_LO = -2.12194440e-4
#: Cephes ``expf``'s polynomial for ``(exp(r) - 1 - r) / r**2``, highest power first.
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)  # fmt: skip
#: Inputs are held within these before ``n`` is taken (beyond them the result is 0 or +inf).
EXP_LO, EXP_HI = -104.0, 89.0


def _f(value: float) -> str:
    return float_literal(float(np.float32(value)))


def exp_f32(lanes: int) -> tuple[str, str, dict[str, str]]:
    """The name and LLVM IR definition of ``exp`` on ``lanes`` float32 lanes (1: a scalar),
    and the declarations it needs, by name (for the module's one table of declarations)."""
    fty = "float" if lanes == 1 else f"<{lanes} x float>"
    ity = "i32" if lanes == 1 else f"<{lanes} x i32>"
    bty = "i1" if lanes == 1 else f"<{lanes} x i1>"

    def fs(value: float) -> str:  # a float constant of the type, splat on a vector
        return _f(value) if lanes == 1 else f"splat (float {_f(value)})"

    def is_(value: int) -> str:
        return str(value) if lanes == 1 else f"splat (i32 {value})"

    name = f"vtac.exp.{mangle('float', lanes)}"
    rint = f"llvm.rint.{mangle('float', lanes)}"
    body = [
        f"  %below = fcmp olt {fty} %x, {fs(EXP_LO)}",
        f"  %x0 = select {bty} %below, {fty} {fs(EXP_LO)}, {fty} %x",
        f"  %above = fcmp ogt {fty} %x0, {fs(EXP_HI)}",
        f"  %xc = select {bty} %above, {fty} {fs(EXP_HI)}, {fty} %x0",
        f"  %t = fmul {fty} %xc, {fs(1.44269504088896341)}",
        f"  %nf = call {fty} @{rint}({fty} %t)",
        f"  %hi = fmul {fty} %nf, {fs(LN2_HI)}",
        f"  %r0 = fsub {fty} %xc, %hi",
        f"  %lo = fmul {fty} %nf, {fs(LN2_LO)}",
        f"  %r = fsub {fty} %r0, %lo",
        f"  %p0 = fmul contract {fty} %r, {fs(EXP_POLY[0])}",
    ]
    prev = "%p0"
    for k, c in enumerate(EXP_POLY[1:], 1):
        body.append(f"  %q{k} = fadd contract {fty} {prev}, {fs(c)}")
        if k < len(EXP_POLY) - 1:
            body.append(f"  %p{k} = fmul contract {fty} %q{k}, %r")
            prev = f"%p{k}"
    last = f"%q{len(EXP_POLY) - 1}"
    body += [
        f"  %r2 = fmul {fty} %r, %r",
        f"  %y0 = fmul {fty} {last}, %r2",
        f"  %y1 = fadd {fty} %y0, %r",
        f"  %y = fadd {fty} %y1, {fs(1.0)}",
        f"  %n = fptosi {fty} %nf to {ity}",
        f"  %n1 = ashr {ity} %n, {is_(1)}",
        f"  %n2 = sub {ity} %n, %n1",
        f"  %e1 = add {ity} %n1, {is_(127)}",
        f"  %e2 = add {ity} %n2, {is_(127)}",
        f"  %b1 = shl {ity} %e1, {is_(23)}",
        f"  %b2 = shl {ity} %e2, {is_(23)}",
        f"  %s1 = bitcast {ity} %b1 to {fty}",
        f"  %s2 = bitcast {ity} %b2 to {fty}",
        f"  %z1 = fmul {fty} %y, %s1",
        f"  %z = fmul {fty} %z1, %s2",
        f"  %nan = fcmp uno {fty} %x, %x",
        f"  %out = select {bty} %nan, {fty} %x, {fty} %z",
        f"  ret {fty} %out",
    ]
    text = "\n".join(
        [
            f"define internal {fty} @{name}({fty} %x) alwaysinline nounwind {{",
            *body,
            "}",
        ]
    )
    return name, text, {rint: f"declare {fty} @{rint}({fty})"}


#: Cephes ``tanhf``'s polynomial for ``(tanh(x) - x) / x**3`` in ``x**2`` below
#: :data:`TANH_SMALL`, highest power first.
TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
             -3.33332819422e-1)  # fmt: skip
#: Below this magnitude ``tanh`` is the polynomial; from it, ``1 - 2 / (exp(2|x|) + 1)``.
TANH_SMALL = 0.625


def tanh_f32(lanes: int) -> tuple[str, str, dict[str, str]]:
    """The name and LLVM IR definition of ``tanh`` on ``lanes`` float32 lanes (Cephes'
    ``tanhf``: an odd polynomial below :data:`TANH_SMALL`, else ``1 - 2 / (exp(2|x|) + 1)``
    through :func:`exp_f32`, then ``x``'s sign), and the declarations and definitions it needs:
    a vector of plain arithmetic, where libm's ``tanhf`` is one call per lane. Both branches
    are computed and one selected per lane; ``exp`` saturates to ``+inf`` beyond 44.4, so the
    result is exactly ``+-1`` there, and a NaN comes back as a NaN."""
    fty = "float" if lanes == 1 else f"<{lanes} x float>"
    bty = "i1" if lanes == 1 else f"<{lanes} x i1>"

    def fs(value: float) -> str:
        return _f(value) if lanes == 1 else f"splat (float {_f(value)})"

    exp_name, exp_text, exp_needs = exp_f32(lanes)
    fabs, copysign = (f"llvm.{f}.{mangle('float', lanes)}" for f in ("fabs", "copysign"))
    name = f"vtac.tanh.{mangle('float', lanes)}"
    body = [
        f"  %a = call {fty} @{fabs}({fty} %x)",
        f"  %z = fmul {fty} %x, %x",
        f"  %p0 = fmul {fty} %z, {fs(TANH_POLY[0])}",
    ]
    prev = "%p0"
    for k, c in enumerate(TANH_POLY[1:], 1):
        body += [f"  %q{k} = fadd {fty} {prev}, {fs(c)}", f"  %p{k} = fmul {fty} %q{k}, %z"]
        prev = f"%p{k}"
    body += [
        f"  %xp = fmul {fty} {prev}, %x",
        f"  %small = fadd {fty} %xp, %x",
        f"  %a2 = fmul {fty} %a, {fs(2.0)}",
        f"  %e = call {fty} @{exp_name}({fty} %a2)",
        f"  %e1 = fadd {fty} %e, {fs(1.0)}",
        f"  %r = fdiv {fty} {fs(2.0)}, %e1",
        f"  %big = fsub {fty} {fs(1.0)}, %r",
        f"  %is_small = fcmp olt {fty} %a, {fs(TANH_SMALL)}",
        f"  %y = select {bty} %is_small, {fty} %small, {fty} %big",
        # x's sign (the big branch computed tanh(|x|); tanh(-0) is -0)
        f"  %out = call {fty} @{copysign}({fty} %y, {fty} %x)",
        f"  ret {fty} %out",
    ]
    text = "\n".join(
        [f"define internal {fty} @{name}({fty} %x) alwaysinline nounwind {{", *body, "}"]
    )
    needs = {
        **exp_needs,
        exp_name: exp_text,
        fabs: f"declare {fty} @{fabs}({fty})",
        copysign: f"declare {fty} @{copysign}({fty}, {fty})",
    }
    return name, text, needs


__all__ = ["exp_f32", "tanh_f32"]
