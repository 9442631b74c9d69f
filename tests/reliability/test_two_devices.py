"""Two different OpenCL devices in one operation raise ValueError (the standard's advice).

This machine has one real OpenCL device; the PyPI PoCL (installed by scripts/install.sh
outside site-packages) is a second one, loaded in a subprocess through OCL_ICD_VENDORS.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import driver_library, extra_drivers, run_python, system_icd_libraries, vendors_dir

CODE = r"""
import numpy as np, hostarray as ha
devs = [d for d in ha.devices() if d.framework == "opencl"]
assert len(devs) >= 2, devs
a, b = ha.ones(4, device=devs[0]), ha.ones(4, device=devs[1])
calls = {"np.add": lambda: np.add(a, b), "operator +": lambda: a + b,
         "ha.add": lambda: ha.add(a, b), "ha.concat": lambda: ha.concat([a, b]),
         "ha.where": lambda: ha.where(a > 0, a, b)}
for name, call in calls.items():
    try:
        call()
    except ValueError as e:
        print("refused", name, "|", e)
    else:
        raise SystemExit(f"{name} mixed {devs[0]} and {devs[1]} without an error")
# the host mixes with either device: compute follows data
print("host+device on", (ha.ones(4) + a).device)
"""


@pytest.mark.device
def test_two_devices_in_one_call_raise(tmp_path: Path) -> None:
    extra = extra_drivers()
    if extra is None:
        pytest.skip("set HOSTARRAY_OCL_EXTRA to a folder with pocl-binary-distribution")
    libs = system_icd_libraries() + [driver_library(extra, "pocl")]
    r = run_python(CODE, env={"OCL_ICD_VENDORS": str(vendors_dir(tmp_path, libs))})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    refused = [ln for ln in r.stdout.splitlines() if ln.startswith("refused")]
    assert len(refused) == 5, r.stdout
    assert "host+device on opencl:0:0" in r.stdout
