"""The layout's import rules (shared ARCHITECTURE.md): which package may import which, no two
packages importing each other, the compiler never importing the simulator, and no module of
``runtime`` reaching into another module's private names."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("vtac", "isa", "vta_sim", "compiler", "hw", "runtime")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, imported module, names)`` of every import in ``path``, relative ones resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append((node.lineno, target, [a.name for a in node.names]))
    return found


def _sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _package_edges() -> dict[str, dict[str, str]]:
    """package -> {imported package: where (file:line of the first such import)}."""
    edges: dict[str, dict[str, str]] = defaultdict(dict)
    for pkg in PACKAGES:
        for path in _sources(pkg):
            for line, target, _ in _imports(path):
                top = target.split(".")[0]
                if top in PACKAGES and top != pkg:
                    edges[pkg].setdefault(top, f"{path.relative_to(ROOT)}:{line}")
    return edges


def test_no_two_packages_import_each_other():
    edges = _package_edges()
    cycles = [
        f"{a} -> {b} ({edges[a][b]}) and {b} -> {a} ({edges[b][a]})"
        for a in PACKAGES
        for b in edges[a]
        if a < b and a in edges.get(b, {})
    ]
    assert not cycles, cycles


def test_the_compiler_never_imports_the_simulator_or_the_runtime():
    edges = _package_edges()
    wrong = {p: w for p, w in edges["compiler"].items() if p in ("vta_sim", "runtime", "hw")}
    assert not wrong, wrong
    assert set(edges["isa"]) == set(), edges["isa"]


def test_runtime_modules_use_only_public_names_of_other_modules():
    private = []
    for path in _sources("runtime"):
        me = _module_name(path)
        for line, target, names in _imports(path):
            for name in names:
                if name.startswith("_") and not name.startswith("__") and target != me:
                    private.append(f"{path.relative_to(ROOT)}:{line} imports {target}.{name}")
    assert not private, private


#: The steps of a whole-model build: the runtime reaches them only through ``compiler.model``
#: (one build for every target), never by calling them itself.
BUILD_STEPS = {
    "compiler.quantize": {"quantize_graph"},
    "compiler.partition": {"partition_graph"},
    "compiler.partition.partition": {"partition_graph"},
    "compiler.targets.vta.link": {"plan_network_dram"},
    "compiler.targets.vta.ops": {"compile_group"},
    "compiler.model.host_groups": {"compile_host_groups"},
    "compiler.model.group_compile": {"compile_groups", "quantize_cached"},
}


def test_the_runtime_builds_models_only_through_compiler_model():
    wrong = []
    for path in _sources("runtime"):
        for line, target, names in _imports(path):
            for name in set(names) & BUILD_STEPS.get(target, set()):
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}.{name}")
    assert not wrong, wrong


def test_the_runtime_holds_no_model_build_module():
    """The modules of the whole-model build live in ``compiler.model``; none is back in
    ``runtime`` under its old name."""
    old = ("graph_compile", "host_groups", "group_compile", "vta_tuning", "program")
    back = [name for name in old if (ROOT / "runtime" / f"{name}.py").exists()]
    assert not back, back
