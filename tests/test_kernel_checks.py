"""Kernel launches: arguments checked before anything moves, memory let go after, failures
reported once (issue 10).

* element types against the kernel's declared pointer types, local memory against the
  device's, work-group sizes against the kernel's and the device's limits: a refused launch
  raises ``hostptr.BadLaunch`` naming the limit, and changes nothing (values, device
  buffers, ``ha.stats()``);
* a kernel does not keep its last arguments: an array's memory goes as soon as the user
  drops it (after ``hostptr.free_buffer``), without another launch;
* ``LaunchFailed`` names the kernel, the failed command's own status and the device as
  ``str(device)``, and is raised once per launch, by ``launch.wait()`` or a host access;
* ``launch.wait()`` on an unfinished launch counts a wait.

The cases that would abort the process if the check were missing (PoCL asserts on local
memory over the limit) run in a subprocess.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import hostarray as ha
from hostarray import hostptr

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[1]

SRC = r"""
typedef float real_t;
struct pair { float a; int b; };
__kernel void f32(__global float *x) { x[get_global_id(0)] += 1; }
__kernel void f64(__global double *x) { x[get_global_id(0)] += 1; }
__kernel void i32(__global int *x) { x[get_global_id(0)] += 1; }
__kernel void u32(__global uint *x) { x[get_global_id(0)] += 1; }
__kernel void u8(__global uchar *x) { x[get_global_id(0)] |= 1; }
__kernel void i64(__global long *x) { x[get_global_id(0)] += 1; }
__kernel void vec4(__global float4 *x) { x[get_global_id(0)] += (float4)(1); }
__kernel void vec2(__global float2 *x) { x[get_global_id(0)].x += 1; }
__kernel void typedefd(__global real_t *x) { x[get_global_id(0)] += 1; }
__kernel void structs(__global struct pair *p) { p[get_global_id(0)].b += 1; }
__kernel void untyped(__global void *p) { ((__global uchar *)p)[get_global_id(0)] |= 1; }
__kernel void axpy(const float a, __global const float *x, __global float *y) {
    int i = get_global_id(0); y[i] += a * x[i];
}
__kernel void consts(__constant float *c, __global float *out) {
    out[get_global_id(0)] = c[get_global_id(0)];
}
__kernel void scratch(__global float *x, __local float *t) {
    int l = get_local_id(0); t[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] = t[get_local_size(0) - 1 - l];
}
__kernel void two_locals(__global float *x, __local uchar *a, __local uchar *b) {
    a[0] = 1; b[0] = 2; barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] += a[0] + b[0];
}
__kernel void twod(__global float *x) { x[get_global_id(1) * get_global_size(0)
                                         + get_global_id(0)] += 1; }
__kernel __attribute__((reqd_work_group_size(4, 1, 1)))
void fixed_group(__global float *x) { x[get_global_id(0)] = get_local_size(0); }
__kernel __attribute__((reqd_work_group_size(4, 4, 1)))
void fixed_group_2d(__global float *x) { x[get_global_id(0)] = get_local_size(0); }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void spin_add(__global float *x, const float v, const int spin) {
    int i = get_global_id(0); float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f);
}
"""


@pytest.fixture(scope="module")
def prg(cl_device: ha.Device):
    return ha.Program(SRC, device=cl_device)


def host_newest(n: int, dtype: Any, dev: ha.Device, attached: bool = True) -> ha.HostPtrArray:
    """An array whose newest bytes are on the host: a launch would publish it first.

    ``attached``: it already has a device buffer (a launch ran on it, then the host wrote)."""
    x = ha.asarray((np.arange(n) % 7).astype(dtype), device=dev, copy=True)
    if attached:
        hostptr.attach(x, dev)
        hostptr.publish_host_writes(x, dev)
        x[0] = 5  # the host is newest again
    return x


def refused(call: Any, victims: list[ha.HostPtrArray], says: list[str]) -> hostptr.BadLaunch:
    """``call()`` raises BadLaunch saying each of ``says``, and changes nothing."""
    before = [(np.array(v._a, copy=True), dict(v._s.buffers)) for v in victims]
    ha.reset_stats()
    with pytest.raises(hostptr.BadLaunch) as info:
        call()
    stats = ha.stats()
    assert (stats.publishes, stats.acquires, stats.bytes_published, stats.bytes_acquired,
            stats.launches, stats.waits) == (0, 0, 0, 0, 0, 0), \
        f"a refused launch synchronised: {stats}"
    for v, (data, buffers) in zip(victims, before):
        assert dict(v._s.buffers) == buffers, "a refused launch changed device buffers"
        np.testing.assert_array_equal(v._a, data)  # the host bytes, read without syncing
    msg = str(info.value)
    assert msg == hostptr.error_message(info.value)
    for s in says:
        assert s in msg, f"{s!r} not in {msg!r}"
    return info.value


# -- B: element types --------------------------------------------------------------------------

@pytest.mark.parametrize(("kernel", "dtype", "says"), [
    ("f32", np.float64, ["'x' is float*", "holds float64", "ha.astype(x, ha.float32)",
                         "declare it double*"]),
    ("f64", np.float32, ["'x' is double*", "holds float32", "ha.astype(x, ha.float64)",
                         "declare it float*"]),
    ("f32", np.int32, ["'x' is float*", "holds int32", "4-byte float", "declare it int*"]),
    ("i32", np.float32, ["'x' is int*", "holds float32", "ha.astype(x, ha.int32)"]),
    ("i32", np.int64, ["'x' is int*", "holds int64", "declare it long*"]),
    ("i64", np.int32, ["'x' is long*", "holds int32", "ha.astype(x, ha.int64)"]),
    ("u8", np.int16, ["'x' is uchar*", "holds int16", "ha.astype(x, ha.uint8)"]),
    ("vec4", np.float64, ["'x' is float4*", "holds float64", "4-byte float"]),
    ("vec2", np.complex128, ["'x' is float2*", "holds complex128", "declare it double2*"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_wrong_element_type_is_refused_before_anything_moves(prg, cl_device, kernel, dtype,
                                                             says) -> None:
    for attached in (False, True):
        x = host_newest(64, dtype, cl_device, attached)
        e = refused(lambda x=x: getattr(prg, kernel)(16, x), [x], says)
        assert (e.argument, e.dtype) == ("x", np.dtype(dtype))
        assert e.declared == getattr(prg, kernel)._pointee[0][0]


def test_a_bad_second_argument_leaves_the_first_unpublished(prg, cl_device) -> None:
    x = host_newest(64, np.float32, cl_device)
    y = host_newest(64, np.float64, cl_device)
    refused(lambda: prg.axpy(64, 2.0, x, y), [x, y], ["'y' is float*", "holds float64"])
    # wrapped arguments are checked the same way
    refused(lambda: prg.axpy(64, 2.0, ha.read(y), ha.write(x)), [x, y],
            ["'x' is float*", "holds float64"])
    refused(lambda: prg.consts(64, y, x), [x, y], ["'c' is float*", "holds float64"])


def test_non_native_byte_order_is_refused(prg, cl_device) -> None:
    a = np.arange(64, dtype=">f4")
    x = ha.asarray(a, device=cl_device, copy=True)
    if x.dtype.byteorder == "=" or x._a.dtype.isnative:
        pytest.skip("hostarray converts to native byte order on the way in")
    refused(lambda: prg.f32(64, x), [x], ["non-native byte order"])


@pytest.mark.parametrize(("kernel", "dtype"), [
    ("i32", np.uint32), ("u32", np.int32),              # signedness of the same size
    ("u8", np.int8), ("u8", np.bool_),                  # bytes and bools
    ("vec4", np.float32), ("vec2", np.complex64),       # vectors: the base type counts
    ("f32", np.complex64),                              # interleaved re, im
    ("typedefd", np.float64), ("typedefd", np.int8),    # a typedef: not checked
    ("structs", np.int64), ("untyped", np.uint8),       # a struct, void*: not checked
])
def test_compatible_element_types_are_accepted(prg, cl_device, kernel, dtype) -> None:
    x = ha.asarray(np.zeros(64, dtype=dtype), device=cl_device, copy=True)
    getattr(prg, kernel)(4, x).wait()
    assert ha.stats().launches == 1


def test_element_types_the_kernel_declares(prg) -> None:
    declared = {name: prg.__getattr__(name)._pointee[0][0]
                for name in ("f32", "f64", "u32", "u8", "vec4", "typedefd", "structs")}
    assert declared == {"f32": "float*", "f64": "double*", "u32": "uint*", "u8": "uchar*",
                        "vec4": "float4*", "typedefd": "real_t*",
                        "structs": "struct pair*"}


# -- B: work-group sizes -----------------------------------------------------------------------

def _limits(dev: ha.Device, kernel: Any) -> tuple[int, tuple[int, ...]]:
    d = dev._cl_device
    wg = kernel._cl.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, d)
    return min(int(wg), int(d.max_work_group_size)), tuple(int(v) for v in
                                                            d.max_work_item_sizes)


def test_local_size_above_the_work_group_limit_is_refused(prg, cl_device) -> None:
    group, _ = _limits(cl_device, prg.f32)
    n = 2 * group
    x = host_newest(n, np.float32, cl_device)
    e = refused(lambda: prg.f32(n, x, local_size=n), [x],
                [f"at most {group}", "local_size"])
    assert (e.limit, e.requested) == (group, n)


def test_local_size_above_a_dimension_limit_is_refused(prg, cl_device) -> None:
    _, items = _limits(cl_device, prg.twod)
    big = items[1] + 1
    x = host_newest(big, np.float32, cl_device)
    e = refused(lambda: prg.twod((1, big), x, local_size=(1, big)), [x],
                [f"at most {items[1]} there", "dimension 1", "smaller local_size"])
    assert (e.limit, e.requested) == (items[1], big)


def test_work_group_product_above_the_limit_is_refused(prg, cl_device) -> None:
    group, items = _limits(cl_device, prg.twod)
    a = min(items[0], group)
    if items[1] < 2 or a * 2 <= group:
        pytest.skip("this device's per-dimension limits already bound the product")
    x = host_newest(a * 2, np.float32, cl_device)
    e = refused(lambda: prg.twod((a, 2), x, local_size=(a, 2)), [x],
                [f"work-groups of {a * 2} work-items", f"at most {group}"])
    assert e.limit == group


def test_required_work_group_size_is_checked_and_used(prg, cl_device) -> None:
    x = host_newest(16, np.float32, cl_device)
    refused(lambda: prg.fixed_group(16, x, local_size=8), [x],
            ["(4, 1, 1)", "reqd_work_group_size", "local_size=(4,)"])
    refused(lambda: prg.fixed_group_2d(16, x), [x], ["(4, 4, 1)", "over 2 dimensions"])
    prg.fixed_group(16, x)  # no local size: the one the kernel requires
    assert np.array(x, copy=True).tolist() == [4.0] * 16
    prg.fixed_group(16, x, local_size=4)


def test_a_local_size_within_the_limits_runs(prg, cl_device) -> None:
    group, _ = _limits(cl_device, prg.scratch)
    ls = min(group, 64)
    x = ha.asarray(np.arange(2 * ls, dtype=np.float32), device=cl_device, copy=True)
    prg.scratch(2 * ls, x, cl.LocalMemory(4 * ls), local_size=ls)
    want = np.concatenate([np.arange(ls)[::-1], np.arange(ls, 2 * ls)[::-1]])
    assert np.array(x, copy=True).tolist() == want.tolist()


# -- B: local memory ---------------------------------------------------------------------------

def test_empty_local_memory_is_refused(prg, cl_device) -> None:
    x = host_newest(16, np.float32, cl_device)
    refused(lambda: prg.scratch(16, x, cl.LocalMemory(0)), [x], ["'t'", "nbytes >= 1"])


LOCAL_SCRIPT = r"""
import json, sys, numpy as np, pyopencl as cl, hostarray as ha
from hostarray import hostptr
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
limit = int(dev._cl_device.local_mem_size)
case = sys.argv[1]
src = '''
__kernel void scratch(__global float *x, __local float *t) {
    t[get_local_id(0)] = x[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE);
    x[get_global_id(0)] = t[0] + 1;
}
__kernel void two_locals(__global float *x, __local uchar *a, __local uchar *b) {
    a[0] = 1; b[0] = 2; barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] += a[0] + b[0];
}
__kernel void big_static(__global float *x) {
    __local float t[NFLOATS]; t[get_local_id(0)] = 1; barrier(CLK_LOCAL_MEM_FENCE);
    x[get_global_id(0)] = t[0] + t[NFLOATS - 1];
}'''.replace("NFLOATS", str(limit // 4 + 1024))
try:
    prg = ha.Program(src, device=dev)
except hostptr.BuildFailed as e:  # a driver may refuse the big __local array at build time
    prg = ha.Program(src.split("__kernel void big_static")[0], device=dev)
    if case == "static":
        print("RESULT", json.dumps({"skip": "build refused the __local array"}))
        sys.exit(0)
x = ha.asarray(np.arange(64, dtype=np.float32), device=dev, copy=True)
hostptr.attach(x, dev); x[0] = 5.0  # the next launch would publish
before = np.array(x._a, copy=True)
ha.reset_stats()
calls = {
    "over": lambda: prg.scratch(64, x, cl.LocalMemory(limit + 4), local_size=4),
    "sum": lambda: prg.two_locals(64, x, cl.LocalMemory(limit // 2 + 8),
                                  cl.LocalMemory(limit // 2), local_size=4),
    "static": lambda: prg.big_static(64, x, local_size=4),
    # what the kernel reports it uses itself counts too (NVIDIA reports a byte here)
    "exact": lambda: prg.scratch(64, x, cl.LocalMemory(limit - prg.scratch._static_local),
                                 local_size=4),
    "half": lambda: prg.two_locals(64, x, cl.LocalMemory(limit // 4),
                                   cl.LocalMemory(limit // 4), local_size=4),
}
out = {"limit": limit}
try:
    calls[case]().wait()
    out["ran"] = True
except hostptr.BadLaunch as e:
    out.update(error=type(e).__name__, message=str(e), e_limit=getattr(e, "limit", None),
               requested=getattr(e, "requested", None))
s = ha.stats()
out["stats"] = [s.publishes, s.acquires, s.bytes_published, s.launches]
out["unchanged"] = bool((x._a == before).all())
print("RESULT", json.dumps(out))
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full.get("PYTHONPATH")]))
    full.update(env or {})
    r = subprocess.run([sys.executable, "-c", code, *args], env=full, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"exit {r.returncode} (134: the driver aborted): {r.stderr[-3000:]}"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, f"no result: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return json.loads(line[7:])


@pytest.mark.parametrize("case", ["over", "sum", "static"])
def test_local_memory_above_the_device_limit_is_refused(cl_device, case) -> None:
    out = _run(LOCAL_SCRIPT, case)
    if "skip" in out:
        pytest.skip(out["skip"])
    limit = out["limit"]
    assert out.get("error") == "BadLaunch", out
    assert f"{cl_device} has {limit} bytes of local memory" in out["message"], out
    assert "CL_DEVICE_LOCAL_MEM_SIZE" in out["message"], out
    assert out["e_limit"] == limit and out["requested"] > limit, out
    assert out["stats"] == [0, 0, 0, 0], out
    assert out["unchanged"], out


def test_local_memory_within_the_device_limit_runs(cl_device) -> None:
    out = _run(LOCAL_SCRIPT, "half")
    assert out.get("ran"), out
    assert out["stats"][3] == 1, out
    # up to the limit the device reports: not refused by hostarray's check.  A driver may
    # still refuse (NVIDIA's H200 reports 49152 bytes and refuses 49151 with
    # CL_OUT_OF_RESOURCES: it keeps some for itself); that comes back as the driver's refusal
    out = _run(LOCAL_SCRIPT, "exact")
    assert out.get("ran") or (out.get("e_limit") is None and
                              "the driver refused the launch" in out["message"]), out


# -- A: memory let go as soon as the array is dropped ------------------------------------------

RSS_SCRIPT = r"""
import gc, json, numpy as np, pyopencl as cl, hostarray as ha
from hostarray import hostptr
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
prg = ha.Program('''
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}''', device=dev)

def rss():
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmRSS"))

def buffers():
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, cl.Buffer))

small = ha.zeros(16, dtype=ha.float32, device=dev)
prg.add(16, small, 1.0).wait()
gc.collect()
rss0, buf0 = rss(), buffers()
n = 32 * 2**20  # 128 MiB of float32
# host memory written on the host (resident): ha.zeros on a device may now be filled by the
# device itself, leaving the host pages untouched (not resident) on a discrete GPU
x = ha.asarray(np.ones(n, dtype=np.float32), device=dev, copy=True)
y = ha.asarray(np.ones(n, dtype=np.float32), device=dev, copy=True)
prg.add(n, x, 1.0)
prg.copy(n, x, y[: n // 2])  # a sub-buffer too
np.asarray(y[:4], copy=True)
rss1, buf1 = rss(), buffers()
for a in (x, y):
    hostptr.free_buffer(a, dev)
del x, y, a
gc.collect()
rss2, buf2 = rss(), buffers()
print("RESULT", json.dumps({"rss": [rss0, rss1, rss2], "buffers": [buf0, buf1, buf2],
                            "link": dev.link}))
"""


@pytest.mark.parametrize("link", ["auto", "copied"])
def test_memory_goes_when_the_array_is_dropped_without_another_launch(cl_device, link) -> None:
    out = _run(RSS_SCRIPT, env={"HOSTARRAY_LINK": link})
    rss0, rss1, rss2 = out["rss"]
    buf0, buf1, buf2 = out["buffers"]
    mib = 2**20
    assert rss1 - rss0 >= 200 * mib, out  # two 128 MiB arrays were resident
    assert rss2 - rss0 < 32 * mib, f"memory kept after free_buffer + del: {out}"
    assert buf1 > buf0 and buf2 <= buf0, f"cl.Buffer objects kept: {out}"


def test_the_kernel_names_no_buffer_after_a_launch(prg, cl_device) -> None:
    x = ha.zeros(1024, dtype=ha.float32, device=cl_device)
    y = ha.zeros(1024, dtype=ha.float32, device=cl_device)
    prg.axpy(1024, 1.0, x, y).wait()
    assert not hasattr(prg.axpy, "_last_args")
    gc.collect()
    before = sum(1 for o in gc.get_objects() if isinstance(o, cl.Buffer))
    hostptr.free_buffer(x, cl_device)
    hostptr.free_buffer(y, cl_device)
    gc.collect()
    after = sum(1 for o in gc.get_objects() if isinstance(o, cl.Buffer))
    assert after == before - 2
    # the kernel's buffer arguments were unset: the next launch sets them again
    prg.axpy(1024, 2.0, ha.ones(1024, dtype=ha.float32, device=cl_device), y)
    assert np.array(y, copy=True).tolist() == [2.0] * 1024


# -- D: a launch the device fails --------------------------------------------------------------

_KEEP: list[Any] = []


def failing_launch(prg: ha.Program, *arrays: ha.HostPtrArray) -> ha.Launch:
    """``add`` on each array (one launch each for a single array, else ``axpy``) behind a
    user event then set to CL_OUT_OF_RESOURCES: the driver fails the launch (see
    tests/reliability/test_bad_input.py)."""
    dev = prg.device
    for a in arrays:
        prg.add(a.shape[0], a, 0.0)  # published now: nothing below blocks behind the gate
    q = hostptr.queue(dev)
    gate = cl.UserEvent(q.context)
    marker = cl.enqueue_marker(q, wait_for=[gate])
    if len(arrays) == 1:
        launch = prg.add(arrays[0].shape[0], arrays[0], 1.0)
    else:
        launch = prg.axpy(arrays[0].shape[0], 1.0, ha.readwrite(arrays[0]), arrays[1])
    gate.set_status(-5)
    _KEEP.append((gate, marker))  # PoCL aborts if these die while it fails the queue
    return launch


def _check_failure(e: hostptr.LaunchFailed, launch: ha.Launch, dev: ha.Device) -> None:
    assert e.kernel == launch.kernel
    assert e.status < 0 and e.status == int(launch.event.command_execution_status)
    assert str(e.device) == str(dev)
    assert str(e).startswith(f"kernel {launch.kernel!r} failed on {dev} (OpenCL status "
                             f"{e.status}")


def test_failure_met_by_a_host_read_is_raised_once(prg, cl_device) -> None:
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    launch = failing_launch(prg, x)
    with pytest.raises(hostptr.LaunchFailed) as info:
        np.array(x, copy=True)
    _check_failure(info.value, launch, cl_device)
    launch.wait()  # reported already: not again
    np.testing.assert_array_equal(np.array(x, copy=True), np.arange(64))
    launch.wait()


def test_failure_met_by_wait_is_raised_once(prg, cl_device) -> None:
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    launch = failing_launch(prg, x)
    with pytest.raises(hostptr.LaunchFailed) as info:
        launch.wait()
    _check_failure(info.value, launch, cl_device)
    launch.wait()  # not again
    np.testing.assert_array_equal(np.array(x, copy=True), np.arange(64))  # nor here
    prg.add(64, x, 2.0)
    np.testing.assert_array_equal(np.array(x, copy=True), np.arange(64) + 2)


def test_wait_and_host_access_name_the_failure_the_same_way(prg, cl_device) -> None:
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    y = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    first, second = failing_launch(prg, x), failing_launch(prg, y)
    with pytest.raises(hostptr.LaunchFailed) as by_wait:
        first.wait()
    with pytest.raises(hostptr.LaunchFailed) as by_read:
        y[3] = 1.0  # a host write waits for the launch and meets the failure
    assert second.event.command_execution_status == first.event.command_execution_status
    assert str(by_wait.value) == str(by_read.value)
    assert (by_wait.value.device, by_wait.value.kernel) == \
        (by_read.value.device, by_read.value.kernel)


def test_failure_of_a_launch_on_two_arrays_is_raised_once(prg, cl_device) -> None:
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    y = ha.zeros(64, dtype=ha.float32, device=cl_device)
    launch = failing_launch(prg, x, y)
    with pytest.raises(hostptr.LaunchFailed) as info:
        hostptr.free_buffer(y, cl_device)  # waits for the launch first
    _check_failure(info.value, launch, cl_device)
    assert launch.kernel == "axpy"
    np.array(x, copy=True)  # the same launch: reported already
    launch.wait()
    prg.add(64, x, 1.0)  # both arrays work again
    prg.add(64, y, 1.0)
    np.testing.assert_array_equal(np.array(x, copy=True), np.arange(64) + 1)
    np.testing.assert_array_equal(np.array(y, copy=True), np.ones(64))


def test_message_names_what_the_status_means() -> None:
    e = hostptr.LaunchFailed("opencl:0:0", -5, kernel="add")
    assert str(e).startswith("kernel 'add' failed on opencl:0:0 (OpenCL status -5: "
                             "CL_OUT_OF_RESOURCES")
    assert "(OpenCL status -77)" in str(hostptr.LaunchFailed("opencl:0:0", -77))
    import pickle
    again = pickle.loads(pickle.dumps(e))
    assert (again.kernel, again.status, str(again)) == ("add", -5, str(e))


# -- C: Launch.wait() counts a wait --------------------------------------------------------------

def test_waiting_for_an_unfinished_launch_counts_a_wait(prg, cl_device) -> None:
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    prg.add(64, x, 0.0).wait()
    ha.reset_stats()
    launch = prg.spin_add(64, x, 1.0, np.int32(3_000_000))
    assert not launch.done
    launch.wait()
    assert ha.stats().waits == 1
    launch.wait()  # finished: no wait
    assert ha.stats().waits == 1
    assert np.array(x, copy=True).tolist() == [1.0] * 64
    assert ha.stats().waits == 1  # the read found the launch finished


# -- E: a launch that reads and writes an array says so to the storage -------------------------

def test_read_write_arguments_prepare_a_device_write(prg, cl_device, monkeypatch) -> None:
    from hostarray._storage import Storage

    calls: list[tuple[int, bool]] = []
    real = Storage.prepare_device_read

    def spy(self, key, lo, hi, writes=False):
        calls.append((id(self), writes))
        return real(self, key, lo, hi, writes=writes)

    monkeypatch.setattr(Storage, "prepare_device_read", spy)
    x = ha.ones(64, dtype=ha.float32, device=cl_device)
    y = ha.ones(64, dtype=ha.float32, device=cl_device)
    prg.axpy(64, 1.0, x, y)
    assert sorted(calls) == sorted([(id(x._s), False), (id(y._s), True)])


# -- F: the launch path's shortcuts (issue 12) answer as the full checks do --------------------

@pytest.mark.parametrize(("size", "says"), [
    (0, "must be positive ints"), (-1, "must be positive ints"), (16.0, "must be positive ints"),
    ((), "must be positive ints"), ((16, 0), "must be positive ints"),
    ((4, 2, 1, 2), "take 1 to 3"), (2**64, "size_t"), ((2**64, 1), "size_t"),
], ids=repr)
def test_global_sizes_outside_the_shortcut_are_still_refused(prg, cl_device, size, says) -> None:
    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.f32(16, x).wait()  # the same kernel, launched once through the shortcut
    refused(lambda: prg.f32(size, x), [x], [says])


def test_global_sizes_the_shortcut_takes(prg, cl_device) -> None:
    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    for size in (16, (16,), np.int64(16), (np.int32(16),), [16], True):
        prg.f32(size, x)
    prg.twod((4, 4), x)
    expected = np.full(16, 6.0, np.float32)
    expected[0] += 1  # the global size True is 1 (an int), as before
    np.testing.assert_array_equal(np.array(x, copy=True), expected)


def test_the_offset_remembered_for_an_argument_is_that_views_own(prg, cl_device) -> None:
    unit = max(1, cl_device.alignment // 4)  # floats per sub-buffer alignment
    n = 8 * unit
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    want = np.zeros(n, np.float32)
    first = x[:unit]
    for lo, hi, view in ((0, unit, first), (unit, 3 * unit, None), (0, unit, first),
                         (2 * unit, n, None), (0, n, x), (unit, 3 * unit, None)):
        v = x[lo:hi] if view is None else view
        prg.f32(hi - lo, v)
        want[lo:hi] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)
    if unit > 1:  # a view off the alignment is refused after aligned ones ran there
        with pytest.raises(hostptr.Refused, match="multiple of"):
            prg.f32(unit, x[1:unit + 1])
    # another array at the same argument position is looked at afresh, and back again
    y = ha.zeros(n, dtype=ha.float32, device=cl_device)
    prg.f32(n, y)
    prg.f32(n, x)
    want += 1
    np.testing.assert_array_equal(np.array(x, copy=True), want)
    np.testing.assert_array_equal(np.array(y, copy=True), np.ones(n, np.float32))


def test_a_launch_after_a_raw_view_escaped_sees_its_writes(prg, cl_device) -> None:
    """The shortcut for data already on the device must not skip what a raw view wrote."""
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    prg.f32(64, x)
    prg.f32(64, x)  # the device alone holds x now: the next launch takes the shortcut
    raw = np.asarray(x)  # a raw view: it may write behind hostarray's back
    raw[3] = 100.0
    prg.f32(64, x)
    prg.f32(64, x)
    del raw
    got = np.array(x, copy=True)
    assert got[3] == 102.0 and got[0] == 4.0, got[:5]


# -- a launch that passes the same arrays again skips their checks (Kernel._repeat) --------

def test_repeated_launches_check_what_changed(prg: ha.Program, cl_device: ha.Device) -> None:
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device, copy=True)
    y = ha.zeros(8, dtype=ha.float32, device=cl_device)
    for _ in range(3):  # the second and third launch reuse the first one's checks
        prg.axpy(8, 2.0, x, y)
    np.testing.assert_array_equal(np.asarray(y), 6 * np.arange(8, dtype=np.float32))
    # a scalar is converted (and refused) on every launch
    with pytest.raises(hostptr.BadLaunch):
        prg.axpy(8, "two", x, y)
    # another array at the written position is checked again: a read-only one is refused
    ro = ha.broadcast_to(ha.asarray(np.ones(1, dtype=np.float32), device=cl_device), (8,))
    with pytest.raises(hostptr.BadLaunch):
        prg.axpy(8, 1.0, x, ro)
    # ... and so is a wrong element type, after a good launch with the same kernel
    prg.axpy(8, 1.0, x, y)
    with pytest.raises(hostptr.BadLaunch):
        prg.axpy(8, 1.0, x, ha.zeros(8, dtype=ha.int32, device=cl_device))
    # the buffer given back: the launch attaches it again, and the values stay right
    hostptr.free_buffer(y, cl_device)
    prg.axpy(8, 1.0, x, y)
    np.testing.assert_array_equal(np.asarray(y), 8 * np.arange(8, dtype=np.float32))


def test_a_repeated_launch_keeps_no_array_alive(prg: ha.Program, cl_device: ha.Device) -> None:
    import weakref

    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.f32(16, x)
    prg.f32(16, x).wait()
    ref = weakref.ref(x)
    del x
    gc.collect()
    assert ref() is None, "the kernel's memory of its last arguments kept the array alive"
    # a new array at the same position (maybe at the dead one's address) is checked anew
    z = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.f32(16, z)
    assert np.asarray(z).tolist() == [1.0] * 16


def test_a_launch_that_publishes_does_not_wait_for_the_queue(prg: ha.Program,
                                                              cl_device: ha.Device) -> None:
    """A launch returns at once even where its argument is host-newest and must be
    published first, behind work the queue has not reached (here: a marker held by a user
    event); the publish (a map and an unmap on the shared and mapped links) is queued."""
    import threading

    q = hostptr.queue(cl_device)
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device, copy=True)
    prg.add(64, x, 0.0).wait()  # attached (the link's probes are done), then
    x[3] = 100.0  # host-newest: the launch publishes it
    gate = cl.UserEvent(q.context)
    marker = cl.enqueue_marker(q, wait_for=[gate])
    returned = threading.Event()

    def launch() -> None:
        prg.add(64, x, 1.0)
        returned.set()

    t = threading.Thread(target=launch, daemon=True)
    t.start()
    try:
        assert returned.wait(20), "the launch waited for the queue to reach its publish"
    finally:
        gate.set_status(cl.command_execution_status.COMPLETE)
        t.join(20)
        _KEEP.append((gate, marker))
    expected = np.arange(64, dtype=np.float32) + 1
    expected[3] = 101.0
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_a_repeated_launch_after_install_checks_the_new_memory(prg: ha.Program,
                                                                cl_device: ha.Device) -> None:
    """hostptr.install gives an array new memory: the launch after it checks that memory
    (found by the adversarial review: the remembered offset and flags were reused)."""
    n = 256
    x = ha.zeros(n, dtype=ha.float32)
    prg.f32(n, x).wait()  # checked: remembered at offset 0 of its own memory
    assert hostptr.free_buffer(x, cl_device)
    k = max(64, cl_device.alignment // 4)  # a sub-buffer origin on this device
    other = ha.zeros(k + n, dtype=ha.float32)
    hostptr.install(x, cl_device, np.asarray(other)[k:k + n])  # 4k bytes into other
    prg.f32(n, x).wait()
    expected = np.zeros(k + n, np.float32)
    expected[k:k + n] = 1
    np.testing.assert_array_equal(np.asarray(other), expected)
    # read-only memory installed: the same launch is refused, and nothing is written
    y = ha.zeros(64, dtype=ha.float32)
    prg.f32(64, y).wait()
    assert hostptr.free_buffer(y, cl_device)
    ro = np.zeros(64, dtype=np.float32)
    ro.flags.writeable = False
    hostptr.install(y, cl_device, ro)
    with pytest.raises(hostptr.BadLaunch):
        prg.f32(64, y)
    assert not ro.any()


def test_device_compute_after_install_uses_the_new_memory(cl_device: ha.Device) -> None:
    """An array's byte span is cached for the device path; install forgets it."""
    old = ha.set_device_compute_threshold(0)
    try:
        n = 256
        prg = ha.Program("__kernel void t(__global float *x) { x[get_global_id(0)] += 0; }",
                         device=cl_device)
        x = ha.asarray(np.zeros(n, dtype=np.float32), device=cl_device, copy=True)
        prg.t(n, x)  # device-newest: an operation may run on the device
        y = x + 1.0  # (off a shared link the span of x, offset 0, is now known)
        assert hostptr.free_buffer(x, cl_device)
        # the new memory starts one sub-buffer alignment unit in (H200: 512 bytes)
        k = max(64, cl_device.alignment // 4)
        other = ha.asarray(np.arange(k + n, dtype=np.float32))
        hostptr.install(x, cl_device, np.asarray(other)[k:k + n])
        prg.t(k + n, other)  # the whole memory device-newest, the old span's bytes too
        y = x * 2.0
        np.testing.assert_array_equal(np.asarray(y),
                                      2 * np.arange(k, k + n, dtype=np.float32))
    finally:
        ha.set_device_compute_threshold(old)


def test_every_argument_refusal_names_the_argument(prg, cl_device) -> None:
    # e.argument was None for these, though the message named the argument
    f = ha.zeros(8, dtype=ha.float32, device=cl_device)
    ro = ha.asarray(np.frombuffer(bytes(32), dtype=np.float32), device=cl_device)
    cases = [(lambda: prg.add(8, f, f), "v"),                      # an array for a scalar
             (lambda: prg.add(8, np.zeros(8, np.float32), 1.0), "x"),  # numpy for a pointer
             (lambda: prg.add(8, ro, 1.0), "x"),                   # read-only, written
             (lambda: prg.scratch(8, f, 5), "t"),                  # __local without LocalMemory
             (lambda: prg.add(8, None, 1.0), "x")]
    for call, name in cases:
        with pytest.raises(hostptr.BadLaunch) as e:
            call()
        assert e.value.argument == name, (name, str(e.value))


def test_none_where_the_remembered_array_died_is_refused_typed(prg, cl_device) -> None:
    # the repeated-launch memo compared the argument with a dead array's weak reference
    # (None) and took None for that array: an AttributeError instead of BadLaunch
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    prg.add(8, x, 1.0)
    del x
    gc.collect()
    with pytest.raises(hostptr.BadLaunch, match="pass a HostPtrArray") as e:
        prg.add(8, None, 1.0)
    assert e.value.argument == "x"
