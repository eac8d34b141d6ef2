"""The parts of compiler/ and runtime/ that are mypy clean stay clean.

Imported modules outside the checked set are analysed but their errors are not reported
(``--follow-imports=silent``), so this guards exactly the files listed here; the rest of
compiler/ joins the list as it is cleaned up. A ``# type: ignore`` that no longer silences
anything is an error too (``--warn-unused-ignores``), so ignores do not outlive their reason.
"""

import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

#: Whole packages (directories) that are clean.
CLEAN_PACKAGES = (
    "compiler/arith",
    "compiler/frontend",
    "compiler/graph",
    "compiler/quantize",
    "compiler/strategy",
    "compiler/targets/gpu",
    "compiler/topi/cpu",
    "compiler/topi/gpu",
)

#: Single modules that are clean (in packages that are not clean as a whole yet).
CLEAN_MODULES = (
    "compiler/__init__.py",
    "compiler/errors.py",
    "compiler/ir/__init__.py",
    "compiler/ir/analysis.py",
    "compiler/ir/dtype.py",
    "compiler/ir/expr.py",
    "compiler/ir/functor.py",
    "compiler/ir/node.py",
    "compiler/ir/op.py",
    "compiler/ir/pragma.py",
    "compiler/ir/printer.py",
    "compiler/targets/__init__.py",
    "compiler/targets/base.py",
)

#: Directories whose top-level modules are clean except the ones named (checked module by
#: module, so a new module there is checked too; subpackages are listed above).
CLEAN_EXCEPT = {
    "compiler/topi": (),
    "compiler/targets/cpu": ("target.py",),
    "runtime": ("cli.py", "layer_cli.py", "measure.py", "tune_cli.py", "vta_target.py"),
}


MYPY_FLAGS = ("--follow-imports=silent", "--warn-unused-ignores")


def _targets() -> list[str]:
    paths = list(CLEAN_PACKAGES) + list(CLEAN_MODULES)
    for folder, excluded in CLEAN_EXCEPT.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            if path.name not in excluded:
                paths.append(f"{folder}/{path.name}")
    return paths


def test_clean_parts_of_compiler_and_runtime_stay_mypy_clean():
    if shutil.which("mypy") is None and not (ROOT / ".venv" / "bin" / "mypy").exists():
        pytest.skip("mypy is not installed (it comes with the dev extra)")
    targets = _targets()
    missing = [p for p in targets if not (ROOT / p).exists()]
    assert not missing, f"listed as clean but not in the tree: {missing}"
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *MYPY_FLAGS, *targets],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
