"""Two different OpenCL devices in one operation raise ValueError (the standard's advice).

This machine has one real OpenCL device; the PyPI PoCL (installed by scripts/install.sh
outside site-packages) is a second one, loaded in a subprocess through OCL_ICD_VENDORS, or
Oclgrind where that PoCL does not work on this CPU (_support.second_driver says which).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ._support import TWO_DEVICES, run_python, second_driver, two_devices_env

# A, B: the machine's own OpenCL device and the second driver's (TWO_DEVICES)
CODE = r"""
import numpy as np, hostarray as ha
a, b = ha.ones(4, device=A), ha.ones(4, device=B)
calls = {"np.add": lambda: np.add(a, b), "operator +": lambda: a + b,
         "ha.add": lambda: ha.add(a, b), "ha.concat": lambda: ha.concat([a, b]),
         "ha.where": lambda: ha.where(a > 0, a, b)}
for name, call in calls.items():
    try:
        call()
    except ValueError as e:
        print("refused", name, "|", e)
    else:
        raise SystemExit(f"{name} mixed {A} and {B} without an error")
# the host mixes with either device: compute follows data
print("host+device on", (ha.ones(4) + a).device, "A is", A)
"""


@pytest.mark.device
def test_two_devices_in_one_call_raise(tmp_path: Path) -> None:
    r = run_python(TWO_DEVICES + CODE, env=two_devices_env(tmp_path))
    assert r.returncode == 0, _why(r)
    refused = [ln for ln in r.stdout.splitlines() if ln.startswith("refused")]
    assert len(refused) == 5, _why(r)
    on = next(ln.split() for ln in r.stdout.splitlines() if ln.startswith("host+device on"))
    assert on[2] == on[-1], _why(r)  # on A's device


def _why(r: subprocess.CompletedProcess[str]) -> str:
    return f"second device: {second_driver()}\n{r.stdout[-2000:]}{r.stderr[-2000:]}"


# the slow read runs on A, the machine's own device (Oclgrind as B would take minutes)
WRITE_WAITS_CODE = r"""
import numpy as np, hostarray as ha
slow = ha.Program('''
__kernel void slow_copy(__global const float *x, __global float *out, const int spin) {
    int i = get_global_id(0);
    float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    out[i] = x[i] + (acc > 1e30f ? 1.0f : 0.0f);
}''', device=A)
pb = ha.Program('''
__kernel void set(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }''',
                device=B)
for variant in ("read-write arg", "write-only arg", "raw cl_buffer rw", "host wrote first"):
    x = ha.asarray(np.arange(64, dtype=np.float32), device=A, copy=True)
    if variant == "host wrote first":
        x[0] = 0.0  # the launch on A also publishes
    out = ha.zeros(64, dtype=ha.float32, device=A)
    expected = np.asarray(x, copy=True)
    slow.slow_copy(64, x, out, SPIN)        # reads x on A for a while
    xb = x.to_device(B)
    if variant == "read-write arg":
        pb.set(64, xb, 1.0)                 # must wait for A's read of x
    elif variant == "write-only arg":
        pb.set(64, ha.write(xb), 1.0)
    else:
        import pyopencl as cl
        from hostarray import hostptr
        with hostptr.cl_buffer(xb, B, "rw") as buf:
            cl.enqueue_fill_buffer(hostptr.queue(B), buf, np.float32(1.0), 0, 256)
    got = np.asarray(out, copy=True)
    print(variant, "ok" if np.array_equal(got, expected) else f"RACE {got[:4]}")
    assert np.array_equal(np.asarray(x, copy=True), np.ones(64, np.float32)), variant
print("waits", ha.stats().waits)
"""


@pytest.mark.device
@pytest.mark.parametrize("link", ["auto", "copied"])
@pytest.mark.link_fixed
def test_write_on_one_device_waits_for_a_read_on_another(tmp_path: Path, link: str) -> None:
    # issue 10 class 4: a launch on B that writes x must wait for A's launch still reading x
    code = TWO_DEVICES + WRITE_WAITS_CODE.replace("SPIN", "3_000_000")
    r = run_python(code, env={**two_devices_env(tmp_path), "HOSTARRAY_LINK": link}, timeout=300)
    assert r.returncode == 0, _why(r)
    lines = r.stdout.splitlines()
    assert [ln for ln in lines if ln.endswith(" ok")] == [
        "read-write arg ok", "write-only arg ok", "raw cl_buffer rw ok", "host wrote first ok"
    ], _why(r)
    waits = int(next(ln for ln in lines if ln.startswith("waits")).split()[1])
    assert waits >= 4, _why(r)  # each write on B waited for A


BLOCK_CODE = r"""
import numpy as np, pyopencl as cl
import hostarray as ha
from hostarray import hostptr
print("B is", B)
SRC = "__kernel void addv(__global float *y, const float v) { y[get_global_id(0)] += v; }"
PA, PB = ha.Program(SRC, device=A), ha.Program(SRC, device=B)
n = 256
x = ha.zeros(n, dtype=ha.float32, device=A)
xb = x.to_device(B)
with hostptr.cl_buffer(xb, B, "rw") as buf:
    raw = cl.Program(hostptr.queue(B).context, SRC).build()
    raw.addv(hostptr.queue(B), (n,), None, buf, np.float32(10.0))  # the block: +10
    before = ha.stats()
    try:
        PA.addv(n, x, 1.0)  # a write on A to the block's bytes: it would be lost at the end
        print("launched on A")
    except hostptr.InUse as e:
        print("refused", e.device, e.byte_range, ha.stats() == before)
    y = ha.zeros(n, dtype=ha.float32, device=A)
    prg_copy = ha.Program("__kernel void cp(__global const float *s, __global float *d)"
                          "{ d[get_global_id(0)] = s[get_global_id(0)]; }", device=A)
    prg_copy.cp(n, x, y)  # a read on A: the bytes as the block began
    print("read on A", float(y[0]))
    PB.addv(n, xb, 1.0)  # on the block's own device: ordered by its queue
print("after", float(x[0]))
"""


@pytest.mark.device
@pytest.mark.parametrize("link", ["auto", "copied"])
@pytest.mark.link_fixed
def test_a_write_on_another_device_under_an_open_raw_block_is_refused(tmp_path: Path,
                                                                     link: str) -> None:
    # the block's writes land when it ends, over its whole range: a launch on another
    # device writing those bytes meanwhile was lost silently (10 instead of 11)
    r = run_python(TWO_DEVICES + BLOCK_CODE,
                   env={**two_devices_env(tmp_path), "HOSTARRAY_LINK": link}, timeout=300)
    assert r.returncode == 0, _why(r)
    lines = r.stdout.splitlines()
    b = next(ln.split()[-1] for ln in lines if ln.startswith("B is"))
    assert f"refused {b} (0, 1024) True" in lines, _why(r)
    assert "after 11.0" in lines, _why(r)
    # a read elsewhere sees the bytes as the block began where B has its own copy; on a
    # shared link B's raw kernel works on the host bytes, unordered with the read
    reads = {"copied": ["read on A 0.0"], "auto": ["read on A 0.0", "read on A 10.0"]}[link]
    assert any(ln in lines for ln in reads), _why(r)
