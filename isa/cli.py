"""``vtac asm``, ``vtac disasm`` and ``vtac generate``: the ISA's command-line tools."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("asm", help="assemble the text form into a program file")
    p.add_argument("source", help="assembly text file (docs/assembly.md)")
    p.add_argument("-o", "--output", required=True, help="program file to write (.npz)")
    p.add_argument("--config", help="hardware config (preset or JSON file) if .config is absent")
    p.add_argument(
        "--check",
        action="store_true",
        help="refuse instructions the ISA's stream validator rejects (faults any run would hit)",
    )
    p.set_defaults(run=_asm)

    p = sub.add_parser("disasm", help="print a program file in the assembler's text form")
    p.add_argument("program", help="program file (.npz)")
    p.add_argument("-o", "--output", help="write the text here instead of standard output")
    p.add_argument(
        "--insns-only", action="store_true", help="only the numbered instructions, no data"
    )
    p.set_defaults(run=_disasm)

    p = sub.add_parser(
        "generate", help="regenerate the RTL parameter header and docs/isa.md from isa/"
    )
    p.add_argument(
        "--root",
        help="project root (default: the current directory, which must be a checkout); a named "
        "folder outside a checkout receives its own hw/ and docs/ copies",
    )
    p.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    p.set_defaults(run=_generate)


def _asm(args: argparse.Namespace) -> int:
    from .asm import MAX_SOURCE_BYTES, assemble
    from .config import load_config
    from .errors import AsmError
    from .outputs import check_output_path

    src = Path(args.source)
    check_output_path(args.output, "program file")
    try:
        size = src.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise AsmError(
                f"{src}: {size} bytes, more than the {MAX_SOURCE_BYTES} a source may have"
            )
        data = src.read_bytes()
    except OSError as e:
        raise AsmError(f"cannot read {src}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise AsmError(
            f"byte {e.start} is not UTF-8 text (0x{data[e.start]:02x})", line=line, source=str(src)
        ) from None
    cfg = load_config(args.config) if args.config else None
    prog = assemble(text, source=str(src), config=cfg, check=args.check)
    prog.save(args.output)
    print(
        f"{args.output}: {prog.insn_count} instructions, {prog.dram.size} bytes of DRAM, "
        f"{len(prog.symbols)} symbols, config {prog.config.name}"
    )
    return 0


def _disasm(args: argparse.Namespace) -> int:
    from .asm import disassemble
    from .outputs import OutputFiles, check_output_path
    from .program import load_program

    if args.output:
        check_output_path(args.output, "--output")
    text = disassemble(load_program(args.program), insns_only=args.insns_only)
    if args.output:
        with OutputFiles() as out:
            out.reserve(args.output, "--output").write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from .errors import OutputError
    from .gen import generated_files, write_generated

    # Only the implicit root must be a checkout: `vtac generate` typed in some other folder
    # would otherwise scatter hw/ and docs/ there. A named --root is the user's choice (the RTL
    # header and the ISA document for use outside the project), so it may be any folder.
    root = Path(args.root if args.root is not None else ".")
    if args.root is None and (not (root / "hw").is_dir() or not (root / "docs").is_dir()):
        raise OutputError(
            "the current directory is not a checkout of this project (the generated files go to "
            "its hw/ and docs/ directories); run it there, or name a folder with --root"
        )
    if args.check:
        stale = [
            p
            for p, text in generated_files(root).items()
            if not p.exists() or p.read_text() != text.rstrip("\n") + "\n"
        ]
        again = "vtac generate" + (f" --root {shlex.quote(args.root)}" if args.root else "")
        for p in stale:
            print(f"stale: {p} (run `{again}`)")
        return 1 if stale else 0
    try:
        changed = write_generated(root)
    except OSError as e:  # a file where a folder must be, no permission, a full disk
        raise OutputError(
            f"--root {root}: cannot write {e.filename or 'a generated file'}: {e.strerror or e}"
        ) from None
    for p in changed:
        print(f"wrote {p}")
    if not changed:
        print("generated files are up to date")
    return 0
