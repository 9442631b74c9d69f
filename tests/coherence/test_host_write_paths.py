"""Every way numpy writes a HostPtrArray is a host write transaction.

Three failures of one mechanism (issue 10), each tested on the real device and
against a plain numpy model (run on the shared link and again with
``HOSTARRAY_LINK=copied``, where a missing publish or acquire is a wrong value):

* a whole-array write that raises, or whose value is read late (a list of views
  of the written array), must not lose the device's data;
* numpy writes through parameters other than ``out=`` (``np.clip(x, 0, 1, x)``,
  ``np.copyto(dst=x, ...)``, ``np.nan_to_num(x, copy=False)`` ...) are recorded:
  the next kernel sees them, and they wait for kernels still reading ``x``;
* a write takes its storage's lock before its inputs are read, so a kernel
  launched by another thread can't slip in between (no lost update).

Also: a write whose value's ``__array__`` reads another array, while another thread
launches on both, does not deadlock; a broadcast or sliding-window view as big as its
storage is no whole overwrite; a write numpy refuses moves nothing, and text is parsed
as numpy parses it.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import hostarray as ha
from hostarray import _interop
from hostarray._introspect import state
from tests._threads import run_in_threads

pytestmark = pytest.mark.device

SRC = r"""
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void filli(__global int *x, const int v) { x[get_global_id(0)] = v; }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void two(__global float *a, __global float *b) {
    int i = get_global_id(0); a[i] += 1.0f; b[i] += 1.0f; }
__kernel void setv(__global float *x) { int i = get_global_id(0); x[i] = 100.0f + i; }
__kernel void fill_bytes(__global uchar *x, const uchar v) { x[get_global_id(0)] = v; }
__kernel void copy_bytes(__global const uchar *src, __global uchar *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
__kernel void spin(__global const float *src, __global float *dst, const int iters) {
    int i = get_global_id(0); float acc = src[i];
    for (int k = 0; k < iters; ++k) acc = acc * 0.5f + 1.0f;   /* stays finite */
    dst[i] = acc + src[i];  /* src read again at the end: a host write must wait */
}
"""
JOIN_TIMEOUT = 120.0  # seconds; a thread still alive after it is a deadlock
STRESS_S = 1.5  # seconds of each randomized race (the deterministic tests do the real work)


@pytest.fixture(scope="module")
def prg(cl_device: ha.Device) -> ha.Program:
    return ha.Program(SRC, device=cl_device)


def _bytes(x: ha.HostPtrArray) -> ha.HostPtrArray:
    """``x``'s bytes as a 1-D uint8 view of the same storage (for the byte kernels)."""
    return x.reshape(-1).view(np.uint8)


def device_sees(prg: ha.Program, x: ha.HostPtrArray) -> np.ndarray:
    """What a kernel reading ``x`` sees (copied by a kernel into a fresh array)."""
    d = ha.empty(x.shape, dtype=x.dtype, device=x.device)
    prg.copy_bytes(x.nbytes, _bytes(x), ha.write(_bytes(d)))
    return np.array(d, copy=True)


def scribble(prg: ha.Program, x: ha.HostPtrArray, byte: int = 0x55) -> None:
    """A kernel writes every byte of ``x``: the device holds the newest data."""
    prg.fill_bytes(x.nbytes, ha.write(_bytes(x)), byte)


def device_newest(prg: ha.Program, dev: ha.Device, init: np.ndarray) -> ha.HostPtrArray:
    """A float32 array holding ``init + 1``, written last by a kernel.

    The test arrays copy their numpy data (``copy=True``): an adopted numpy array
    the test still holds would count as escaped (every launch waits and acquires)."""
    x = ha.asarray(init.astype(np.float32), device=dev, copy=True)
    prg.add(x.size, x, 1.0)
    assert state(x).host_stale
    return x


run_threads = functools.partial(run_in_threads, timeout=JOIN_TIMEOUT)


# -- 1. a whole write that raises, or reads its value late ------------------------------------

@pytest.mark.parametrize("value", ["a", b"zz", object(), [1.0, 2.0]],
                         ids=["str", "bytes", "object", "list"])
def test_fill_that_raises_keeps_the_device_data(prg, cl_device, value) -> None:
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    prg.fill(4, x, 7.0)
    with pytest.raises((ValueError, TypeError)):
        x.fill(value)
    with pytest.raises((ValueError, TypeError)):
        np.zeros(4, np.float32).fill(value)  # the model raises the same way
    assert x.tolist() == [7.0] * 4
    np.testing.assert_array_equal(device_sees(prg, x), [7.0] * 4)


def test_fill_with_a_value_skips_the_acquire(prg, cl_device) -> None:
    x = ha.zeros(4096, dtype=ha.float32, device=cl_device)
    prg.fill(4096, x, 7.0)
    ha.reset_stats()
    x.fill(3)
    assert ha.stats().acquires == 0  # the old contents are dead: nothing read back
    np.testing.assert_array_equal(device_sees(prg, x), np.full(4096, 3.0))
    assert ha.stats().publishes == 1


def test_fill_with_a_view_of_itself_reads_the_device_data(prg, cl_device) -> None:
    x = ha.asarray(np.arange(4, dtype=np.float32), device=cl_device, copy=True)
    prg.add(4, x, 10.0)  # [10, 11, 12, 13] on the device
    x.fill(x[1:2].reshape(()))
    assert x.tolist() == [11.0] * 4
    np.testing.assert_array_equal(device_sees(prg, x), [11.0] * 4)


@pytest.mark.parametrize("case", [
    "float_input_to_int_out", "float_input_casting_no", "same_array_bad_cast",
    "reduce_wrong_out_shape", "accumulate_bad_keyword", "outer_wrong_out_shape",
    "two_outputs_bad_cast",
])
def test_ufunc_out_that_raises_keeps_the_device_data(prg, cl_device, case) -> None:
    y = ha.zeros(4, dtype=ha.int32, device=cl_device)
    prg.filli(4, y, 7)
    f = ha.zeros(4, dtype=ha.float32, device=cl_device)
    prg.fill(4, f, 7.0)
    calls: dict[str, Callable[[], Any]] = {
        "float_input_to_int_out": lambda: np.add(np.ones(4), 1, out=y),
        "float_input_casting_no": lambda: np.add(np.ones(4), 1, out=f, casting="no"),
        "same_array_bad_cast": lambda: np.add(y, 1.5, out=y),
        "reduce_wrong_out_shape": lambda: np.add.reduce(np.ones((3, 5)), axis=0, out=y),
        "accumulate_bad_keyword": lambda: np.add.accumulate(np.ones(4), out=y, casting="x"),
        "outer_wrong_out_shape": lambda: np.add.outer(np.ones(2), np.ones(2), out=f),
        "two_outputs_bad_cast": lambda: np.divmod(np.ones(4), 2.0, out=(y, f)),
    }
    ha.reset_stats()
    with pytest.raises((TypeError, ValueError)):  # casting errors, bad shapes, bad keywords
        calls[case]()
    if case != "same_array_bad_cast":
        assert ha.stats().acquires == 0  # a whole overwrite: nothing was read back
    assert y.tolist() == [7] * 4 and f.tolist() == [7.0] * 4
    np.testing.assert_array_equal(device_sees(prg, y), [7] * 4)
    np.testing.assert_array_equal(device_sees(prg, f), [7.0] * 4)


class _LateView:
    """An array-like numpy reads only while the write runs (``__array__``)."""

    def __init__(self, x: ha.HostPtrArray) -> None:
        self.x = x

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.x, copy=True)[::-1]


@pytest.mark.parametrize("case", [
    "list_of_rows", "tuple_of_rows", "nested_rows", "list_times_column",
    "array_like_object", "sum_of_list_out", "stack_out", "concatenate_out",
    "copyto_list", "where_list",
])
def test_whole_write_whose_value_reads_the_array_late(prg, cl_device, case) -> None:
    init = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = ha.asarray(init, device=cl_device, copy=True)
    r0, r1 = y[0], y[1]  # views taken before the kernel writes y
    prg.add(6, y, 1.0)
    a = init + 1  # the model
    m0, m1 = a[0], a[1]
    calls: dict[str, Callable[[Any, Any, Any], Any]] = {
        "list_of_rows": lambda o, p, q: np.add([q, p], 0, out=o),
        "tuple_of_rows": lambda o, p, q: np.add((q, p), 0, out=o),
        "nested_rows": lambda o, p, q: np.add([[q[0], q[1], q[2]], p], 0, out=o),
        "list_times_column": lambda o, p, q: np.multiply([q, p], [[1], [2]], out=o),
        "array_like_object": lambda o, p, q: np.add(
            _LateView(o) if isinstance(o, ha.HostPtrArray) else np.array(o)[::-1], 0, out=o),
        "sum_of_list_out": lambda o, p, q: np.sum([[q, p], [p, p]], axis=0, out=o),
        "stack_out": lambda o, p, q: np.stack([q, p], out=o),
        "concatenate_out": lambda o, p, q: np.concatenate([q[None], p[None]], out=o),
        "copyto_list": lambda o, p, q: np.copyto(o, [q, p]),
        "where_list": lambda o, p, q: np.add([q, p], 100, out=o, where=[True, False, True]),
    }
    calls[case](a, m0, m1)
    calls[case](y, r0, r1)
    np.testing.assert_array_equal(np.array(y, copy=True), a)
    np.testing.assert_array_equal(device_sees(prg, y), a)


# -- 2. numpy writes through any parameter ----------------------------------------------------

N = 8
INIT = np.array([-1.5, 0.25, np.nan, 0.75, 3.0, -0.5, np.inf, 0.5], np.float32)
# Each case: (x, M, A) -> call, on numpy arrays (the model) and on HostPtrArrays alike.
# x (8,) is written; M (3, 8) and A (8, 8) are read.
WRITES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "clip_positional_out": lambda x, M, A: np.clip(x, 0, 1, x),
    "clip_method_positional_out": lambda x, M, A: x.clip(0, 1, x),
    "clip_out_keyword": lambda x, M, A: np.clip(x, 0, 1, out=x),
    "clip_where": lambda x, M, A: np.clip(M[0], 0, 1, out=x, where=M[1] > 0.5),
    "cumsum_positional_out": lambda x, M, A: np.cumsum(M[0], 0, None, x),
    "cumsum_method_positional_out": lambda x, M, A: M[1].cumsum(0, None, x),
    "cumsum_of_itself": lambda x, M, A: np.cumsum(x, 0, None, x),
    "dot_positional_out": lambda x, M, A: np.dot(A, M[0], x),
    "dot_method_positional_out": lambda x, M, A: A.dot(M[1], x),
    "matmul_positional_out": lambda x, M, A: np.matmul(A, M[0], x),
    "sum_positional_out": lambda x, M, A: np.sum(M, 0, None, x),
    "mean_method_positional_out": lambda x, M, A: M.mean(0, None, x),
    "max_positional_out": lambda x, M, A: np.max(M, 0, x),
    "round_positional_out": lambda x, M, A: np.round(M[0], 1, x),
    "round_method_positional_out": lambda x, M, A: x.round(0, x),
    "take_positional_out": lambda x, M, A: np.take(M[2], [7, 0, 5, 1, 1, 2, 6, 3], 0, x),
    "einsum_out": lambda x, M, A: np.einsum("ij->j", M, out=x),
    "negative_positional_out": lambda x, M, A: np.negative(x, x),
    "reduce_positional_out": lambda x, M, A: np.add.reduce(M, 0, None, x),
    "accumulate_of_itself": lambda x, M, A: np.maximum.accumulate(x, out=x),
    "copyto_dst_keyword": lambda x, M, A: np.copyto(dst=x, src=M[0]),
    "copyto_positional": lambda x, M, A: np.copyto(x, M[1]),
    "copyto_where": lambda x, M, A: np.copyto(x, M[2], where=M[0] > 0.5),
    "nan_to_num_copy_false": lambda x, M, A: np.nan_to_num(x, copy=False),
    "nan_to_num_positional_flag": lambda x, M, A: np.nan_to_num(x, False, 5.0, 6.0, -6.0),
    "put": lambda x, M, A: np.put(x, [0, 2], [9.0, 8.0]),
    "put_keywords": lambda x, M, A: np.put(a=x, ind=[1], v=[4.0]),
    "place": lambda x, M, A: np.place(x, M[0] > 0.5, [1.0, 2.0]),
    "putmask": lambda x, M, A: np.putmask(x, M[1] > 0.5, M[2]),
    "put_along_axis": lambda x, M, A: np.put_along_axis(x, np.array([3, 1]), 5.0, axis=0),
    "fill_diagonal": lambda x, M, A: np.fill_diagonal(A, 2.0),
    "median_overwrite_input": lambda x, M, A: np.median(x, overwrite_input=True),
    "ufunc_at": lambda x, M, A: np.add.at(x, [0, 0, 3], 1.0),
    "sort_method": lambda x, M, A: x.sort(),
    "fill_method": lambda x, M, A: x.fill(2.5),
}


def _inputs(rng_seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(rng_seed)
    M = rng.random((3, N)).astype(np.float32)
    A = rng.random((N, N)).astype(np.float32)
    return INIT.copy(), M, A


@pytest.mark.parametrize("case", sorted(WRITES))
def test_write_is_seen_by_the_next_kernel(prg, cl_device, case) -> None:
    x0, M0, A0 = _inputs()
    if case == "median_overwrite_input":
        x0 = np.nan_to_num(x0, posinf=9.0)  # a median over NaN gives NaN: no reordering
    x = device_newest(prg, cl_device, x0)
    A = device_newest(prg, cl_device, A0)
    M = ha.asarray(M0, device=cl_device, copy=True)
    model = {"x": x0 + 1, "M": M0.copy(), "A": A0 + 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = WRITES[case](model["x"], model["M"], model["A"])
        got = WRITES[case](x, M, A)
    if isinstance(want, np.ndarray) and want is model["x"]:
        assert got is x  # an out= result is the HostPtrArray passed
    for name, arr in (("x", x), ("A", A)):
        np.testing.assert_array_equal(np.array(arr, copy=True), model[name],
                                      err_msg=f"{case}: host values of {name}")
        np.testing.assert_array_equal(device_sees(prg, arr), model[name],
                                      err_msg=f"{case}: a kernel reads stale {name}")


# The cases whose write must wait for a kernel still reading x (all of them write x).
WAITING = ["clip_positional_out", "clip_method_positional_out", "cumsum_of_itself",
           "dot_positional_out", "copyto_positional", "nan_to_num_copy_false", "put",
           "putmask", "round_method_positional_out", "ufunc_at", "sort_method",
           "fill_method", "median_overwrite_input", "negative_positional_out"]


@pytest.mark.parametrize("case", WAITING)
def test_write_waits_for_a_kernel_still_reading(prg, cl_device, case) -> None:
    n = 4 * N
    big = np.resize(np.nan_to_num(INIT, posinf=4.0), n).astype(np.float32)
    x = ha.asarray(big, device=cl_device, copy=True)
    xs = x[:N]  # the cases write the first N elements, a view of x
    _, M0, A0 = _inputs()
    M = ha.asarray(M0, device=cl_device, copy=True)
    A = ha.asarray(A0, device=cl_device, copy=True)
    dst = ha.zeros(n, dtype=ha.float32, device=cl_device)
    iters = 5_000_000  # about 0.2 s on a 2-core PoCL: the write comes while it runs
    expect = np.float32(2.0) + big
    assert not x._s.escaped
    ha.reset_stats()
    prg.spin(n, ha.read(x), ha.write(dst), iters)  # x only read: the host stays current
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if case == "median_overwrite_input":
            np.median(x, overwrite_input=True)
        else:
            WRITES[case](xs, M, A)
    assert ha.stats().waits >= 1, "the write did not wait for the kernel reading x"
    # the kernel saw the old contents of x everywhere (acc converges to 2: dst = 2 + x)
    np.testing.assert_array_equal(np.array(dst, copy=True), expect)


def _dispatched_numpy_functions() -> dict[str, Any]:
    """Every public numpy function that dispatches through ``__array_function__``."""
    import numpy.fft  # noqa: F401  (numpy imports some submodules lazily)
    import numpy.lib.recfunctions  # noqa: F401
    import numpy.linalg  # noqa: F401
    import numpy.ma  # noqa: F401

    kind = type(np.clip)
    found: dict[int, tuple[str, Any]] = {}
    for mod_name, mod in sorted(sys.modules.items()):
        if not (mod_name == "numpy" or mod_name.startswith("numpy.")) or mod is None:
            continue
        for name, f in list(vars(mod).items()):
            if isinstance(f, kind) and not name.startswith("_"):
                found.setdefault(id(f), (f"{mod_name}.{name}", f))
    return dict(found.values())


def test_every_numpy_output_parameter_is_recorded_as_written(cl_device) -> None:
    """For every numpy function with an ``out``/``dst``/``output`` parameter, a
    HostPtrArray passed there (by keyword, and by position where the parameter
    takes one) is among the arguments hostarray records as written."""
    funcs = _dispatched_numpy_functions()
    checked = []
    for qual, f in funcs.items():
        params = list(inspect.signature(f).parameters.values())
        for i, p in enumerate(params):
            if p.name not in ("out", "dst", "output"):
                continue
            x = ha.zeros(3, device=cl_device)
            if p.kind is not p.POSITIONAL_ONLY:
                assert _interop.written_arguments(f, (), {p.name: x}) == [x], (qual, p.name)
                tup = (x, np.zeros(3))  # out=(a, b) of functions with several results
                assert _interop.written_arguments(f, (), {p.name: tup}) == [x], qual
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                args = (None,) * i + (x,)
                assert _interop.written_arguments(f, args, {}) == [x], (qual, p.name)
            checked.append(qual)
    assert len(checked) >= 60, checked  # numpy 2.4: 71 functions
    assert {"numpy.clip", "numpy.dot", "numpy.copyto", "numpy.cumsum", "numpy.einsum",
            "numpy.lib.recfunctions.recursive_fill_fields"} <= set(checked)


def test_in_place_functions_and_flags_are_recorded_as_written(cl_device) -> None:
    x = ha.zeros(4, device=cl_device)
    w = _interop.written_arguments
    for f, name in ((np.copyto, "dst"), (np.put, "a"), (np.place, "arr"), (np.putmask, "a"),
                    (np.fill_diagonal, "a"), (np.put_along_axis, "arr")):
        assert w(f, (x, None, None), {}) == [x], f
        if inspect.signature(f).parameters[name].kind is not inspect.Parameter.POSITIONAL_ONLY:
            assert w(f, (), {name: x}) == [x], f
    assert w(np.nan_to_num, (x,), {"copy": False}) == [x]
    assert w(np.nan_to_num, (x, False), {}) == [x]
    assert w(np.nan_to_num, (x,), {}) == [] and w(np.nan_to_num, (x, True), {}) == []
    for f in (np.median, np.percentile, np.quantile, np.nanmedian, np.nanpercentile,
              np.nanquantile):
        assert x in w(f, (x,), {"overwrite_input": True}), f
        assert w(f, (x,), {}) == [] and w(f, (x,), {"overwrite_input": False}) == [], f
    # reads are not writes
    for f, args in ((np.sum, (x,)), (np.concatenate, ([x, x],)), (np.reshape, (x, (2, 2))),
                    (np.astype, (x, np.float32)), (np.where, (x, x, x))):
        assert w(f, args, {"copy": False} if f is np.astype else {}) == [], f


# numpy calls that take their array inputs in these shapes; the first that numpy accepts
# (without and with out=) is used for each function.
def _patterns(a: np.ndarray, b: np.ndarray) -> list[tuple[Any, ...]]:
    ci = np.array([0, 1, 0, 1])
    return [(a,), (a, b), (a, 0.5), (a, 1), (a, 0.2, 0.8), ([a, a],), ([a, b.T],),
            ([a, b],), ("ij->j", a), ([True, False, True], a), (a, [0, 2]),
            (ci, [a[0], a[1]])]


def _to_ha(v: Any, dev: ha.Device) -> Any:
    if isinstance(v, np.ndarray):
        return ha.asarray(v, device=dev, copy=True)
    if isinstance(v, list):
        return [_to_ha(i, dev) for i in v]
    return v


def test_every_numpy_out_function_writes_a_device_newest_out(prg, cl_device) -> None:
    """Each numpy function with an ``out`` parameter that takes one of a few simple
    argument shapes is called with a device-newest HostPtrArray ``out`` (a kernel
    wrote it last), by keyword and by position: the result is numpy's, and the next
    kernel sees it."""
    a = np.linspace(0.1, 1.2, 12).reshape(3, 4)
    b = np.linspace(-1, 1, 12).reshape(4, 3)
    ran: list[str] = []
    for qual, f in sorted(_dispatched_numpy_functions().items()):
        params = inspect.signature(f).parameters
        if "out" not in params:
            continue
        for args in _patterns(a, b):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    want = np.asarray(f(*args))
                    o = np.empty_like(want)
                    if f(*args, out=o) is not o or not np.array_equal(o, want, equal_nan=True):
                        continue
            except Exception:
                continue
            break
        else:
            continue
        names = list(params)
        out_pos = names.index("out")
        ways = {"keyword": lambda f, args, out: f(*args, out=out)}
        if params["out"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and all(
                params[n].default is not inspect.Parameter.empty
                for n in names[len(args):out_pos]):
            pad = [params[n].default for n in names[len(args):out_pos]]
            ways["position"] = lambda f, args, out, pad=pad: f(*args, *pad, out)
        for way, call in ways.items():
            try:  # numpy itself must accept the call this way
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    o = np.empty_like(want)
                    if call(f, args, o) is not o or not np.array_equal(o, want, equal_nan=True):
                        continue
            except Exception:
                continue
            out = ha.empty(want.shape, dtype=want.dtype, device=cl_device)
            scribble(prg, out)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = call(f, _to_ha(list(args), cl_device), out)
            assert r is out, (qual, way)
            np.testing.assert_array_equal(np.array(out, copy=True), want, err_msg=qual)
            np.testing.assert_array_equal(device_sees(prg, out), want,
                                          err_msg=f"{qual} ({way}): stale on the device")
            ran.append(f"{qual} ({way})")
    assert len(ran) >= 60, ran  # numpy 2.4: 119 calls of 61 functions
    for must in ("numpy.clip", "numpy.cumsum", "numpy.dot", "numpy.sum", "numpy.take",
                 "numpy.fft.fft"):
        assert f"{must} (position)" in ran, (must, ran)
    assert "numpy.einsum (keyword)" in ran, ran


# ndarray methods with an ``out`` parameter, called as numpy's ndarray methods are (out
# by position): (method, arguments before out, out's shape, out's dtype).  Not any/all:
# numpy's own ndarray.any(0, out) takes the out array for a dtype and raises.
METHOD_OUTS = [
    ("sum", (0, None), (4,), np.float64), ("prod", (1, None), (3,), np.float64),
    ("mean", (0, None), (4,), np.float64), ("std", (0, None), (4,), np.float64),
    ("var", (1, None), (3,), np.float64), ("min", (0,), (4,), np.float64),
    ("max", (1,), (3,), np.float64), ("argmin", (0,), (4,), np.intp),
    ("argmax", (1,), (3,), np.intp), ("cumsum", (1, None), (3, 4), np.float64),
    ("cumprod", (0, None), (3, 4), np.float64), ("clip", (0.3, 0.8), (3, 4), np.float64),
    ("round", (1,), (3, 4), np.float64), ("take", ([2, 0], 1), (3, 2), np.float64),
    ("trace", (0, 0, 1, None), (), np.float64),
    ("compress", ([True, False, True], 0), (2, 4), np.float64),
]


@pytest.mark.parametrize("name, before, shape, dtype", METHOD_OUTS,
                         ids=[m[0] for m in METHOD_OUTS])
def test_ndarray_methods_write_a_positional_out(prg, cl_device, name, before, shape,
                                                 dtype) -> None:
    a = np.linspace(0.05, 1.15, 12).reshape(3, 4)
    want = np.empty(shape, dtype)
    getattr(a, name)(*before, want)
    m = ha.asarray(a, device=cl_device, copy=True)
    out = ha.empty(shape, dtype=dtype, device=cl_device)
    scribble(prg, out)
    assert getattr(m, name)(*before, out) is out
    np.testing.assert_array_equal(np.array(out, copy=True), want)
    np.testing.assert_array_equal(device_sees(prg, out), want)


def test_numpy_out_arrays_come_back_as_numpy(cl_device) -> None:
    x = ha.asarray(np.arange(4.0), device=cl_device, copy=True)
    o = np.zeros(4)
    assert np.clip(x, 1, 2, o) is o and o.tolist() == [1, 1, 2, 2]
    o2 = np.zeros(4)
    assert np.cumsum(x, 0, None, o2) is o2 and o2.tolist() == [0, 1, 3, 6]


def test_compress_method_matches_numpy(cl_device) -> None:
    a = np.arange(8.0).reshape(2, 4)
    x = ha.asarray(a, device=cl_device, copy=True)
    cond = [True, False, True, True]
    np.testing.assert_array_equal(np.array(x.compress(cond, axis=1), copy=True),
                                  a.compress(cond, axis=1))
    np.testing.assert_array_equal(np.array(x.compress([False, True]), copy=True),
                                  a.compress([False, True]))


# -- 3. writes and kernels from two threads -----------------------------------------------------

ROUNDS = 300
TRIALS = 8  # the old read-then-lock race lost updates in most trials of 300
THREAD_WRITES: dict[str, Callable[[ha.HostPtrArray, Any], Any]] = {
    # each adds 1 to x, reading x inside the call
    "ufunc_out_keyword": lambda x, one: np.add(x, 1, out=x),
    "ufunc_out_positional": lambda x, one: np.add(x, one, x),
    "ufunc_at": lambda x, one: np.add.at(x, slice(None), 1),
    "ufunc_reduce_positional_out": lambda x, one: np.add.reduce([x, one], 0, None, x),
    "sum_of_list_out_keyword": lambda x, one: np.sum([x, one], axis=0, out=x),
    "sum_of_list_positional_out": lambda x, one: np.sum([x, one], 0, None, x),
    "einsum_out": lambda x, one: np.einsum("ij->j", [x, one], out=x),
    "in_place_operator": lambda x, one: x.__iadd__(1),  # the control: right before too
}


@pytest.mark.parametrize("case", sorted(THREAD_WRITES))
def test_host_writes_racing_kernels_lose_no_update(prg, cl_device, case) -> None:
    """One thread adds 1 with numpy ROUNDS times, another with a kernel: 2 * ROUNDS."""
    n = 4096
    write = THREAD_WRITES[case]
    for _trial in range(TRIALS):
        x = ha.zeros(n, dtype=ha.float32, device=cl_device)
        one = ha.ones(n, dtype=ha.float32, device=cl_device)

        def host(x=x, one=one) -> None:
            for _ in range(ROUNDS):
                write(x, one)

        def device(x=x) -> None:
            for _ in range(ROUNDS):
                prg.add(n, x, 1.0)

        run_threads([host, device])
        np.testing.assert_array_equal(np.array(x, copy=True), np.full(n, 2.0 * ROUNDS))
        np.testing.assert_array_equal(device_sees(prg, x), np.full(n, 2.0 * ROUNDS))


CROSSED: dict[str, Callable[[ha.HostPtrArray, ha.HostPtrArray], Any]] = {
    "ufunc_out": lambda dst, src: np.add(src, 0, out=dst),
    "ufunc_positional_out": lambda dst, src: np.multiply(src, 1, dst),
    "copyto": lambda dst, src: np.copyto(dst, src),
    "sum_of_list_positional_out": lambda dst, src: np.sum([src, dst], 0, None, dst),
    "fill_with_a_view": lambda dst, src: dst.fill(src[3:4].reshape(())),
    "setitem_whole": lambda dst, src: dst.__setitem__(Ellipsis, src),
    "setitem_part": lambda dst, src: dst.__setitem__(slice(1, None), src[:-1]),
    "iadd": lambda dst, src: dst.__iadd__(src),
    "isub_view": lambda dst, src: dst.__isub__(src[::-1]),
}


@pytest.mark.parametrize("case", sorted(CROSSED))
def test_crossed_writes_from_two_threads_do_not_deadlock(prg, cl_device, case) -> None:
    """Each round a kernel writes x and y (both device-newest), then thread A writes
    x from y while thread B writes y from x.  Reading the other array's stale data
    inside the write takes its lock: all locks are taken in one global order (taking
    the written array's lock first and the other's on the read deadlocks here)."""
    n = 1024
    x = ha.full(n, 0.0, dtype=ha.float32, device=cl_device)
    y = ha.full(n, 0.0, dtype=ha.float32, device=cl_device)
    op = CROSSED[case]
    rounds = 400
    start = threading.Barrier(3)

    def writer(dst: ha.HostPtrArray, src: ha.HostPtrArray) -> Callable[[], None]:
        def run() -> None:
            for _ in range(rounds):
                start.wait(JOIN_TIMEOUT)
                op(dst, src)
        return run

    def kernels() -> None:
        for _ in range(rounds):
            prg.add(n, x, 0.0)
            prg.add(n, y, 0.0)
            start.wait(JOIN_TIMEOUT)  # a broken barrier (a hung writer) raises here

    run_threads([writer(x, y), writer(y, x), kernels], switch=1e-6)
    assert np.array(x, copy=True).tolist() == [0.0] * n
    assert np.array(y, copy=True).tolist() == [0.0] * n


# -- whole-array host writes that raise keep the device's data -------------------------------------

def device_sevens(prg, n=4):
    x = ha.zeros(n, dtype=ha.float32, device=prg.device)
    prg.fill(n, x, 7.0)
    return x


@pytest.mark.parametrize("write", [
    lambda x: x.__setitem__(Ellipsis, np.ones(3, np.float32)),        # broadcast error
    lambda x: x.__setitem__(slice(None), np.ones((2, 4), np.float32)),
    lambda x: x.__setitem__((), np.ones(3, np.float32)),
    lambda x: x.__setitem__(Ellipsis, "seven"),                        # conversion error
    lambda x: x.__setitem__(Ellipsis, object()),
    lambda x: x.__setitem__(Ellipsis, ha.ones(5, dtype=ha.float32)),
], ids=["ellipsis-shape", "slice-shape", "empty-tuple-shape", "str", "object", "hostptr-shape"])
def test_whole_write_that_raises_keeps_the_device_data(prg, write) -> None:
    x = device_sevens(prg)
    with pytest.raises((ValueError, TypeError)):
        write(x)
    assert x.tolist() == [7.0] * 4
    prg.add(4, x, 1.0)  # the device copy was not replaced either
    assert x.tolist() == [8.0] * 4


def test_zero_d_slice_write_raises_and_keeps_data(prg) -> None:
    x = ha.zeros((), dtype=ha.float32, device=prg.device)
    prg.fill(1, x, 7.0)
    with pytest.raises(IndexError):
        x[:] = 1.0
    assert float(x) == 7.0


@pytest.mark.parametrize("key", [Ellipsis, slice(None), (slice(None),)], ids=str)
def test_whole_write_of_a_list_reading_the_array_itself(prg, key) -> None:
    # the rows are views read by numpy during the write: the acquire must not be skipped
    y = ha.zeros((4, 2), dtype=ha.float32, device=prg.device)
    model = np.zeros((4, 2), np.float32)
    rows, mrows = [y[i] for i in range(4)], [model[i] for i in range(4)]  # views, taken early
    prg.add(8, y, 1.0)
    y[1:] = 5.0  # a partial write
    prg.add(8, y, 1.0)  # newest on the device only
    model += 1
    model[1:] = 5.0
    model += 1
    y[key] = rows[::-1]
    model[key] = mrows[::-1]
    assert y.tolist() == model.tolist()


def test_whole_write_of_an_evaluated_value_skips_the_acquire(prg) -> None:
    x = device_sevens(prg, 1024)
    ha.reset_stats()
    x[...] = np.arange(1024, dtype=np.float32)
    x[:] = 3.0
    assert ha.stats().acquires == 0  # nothing about the old contents was read
    assert x.tolist() == [3.0] * 1024


def test_in_place_operator_that_raises_keeps_the_data(prg) -> None:
    x = device_sevens(prg)
    with pytest.raises((ValueError, TypeError)):
        x += np.ones(3, np.float32)
    with pytest.raises(TypeError):
        x <<= 1  # float has no shift
    assert x.tolist() == [7.0] * 4
    prg.add(4, x, 1.0)
    assert x.tolist() == [8.0] * 4


def test_partial_write_that_raises_after_writing_keeps_what_numpy_keeps(prg) -> None:
    # a partial write acquires first; whatever numpy wrote before raising stays, as in numpy
    x = device_sevens(prg, 4)
    model = np.full(4, 7.0, np.float32)
    for target in (x, model):
        with pytest.raises(ValueError):
            target[1:3] = np.ones(3, np.float32)
    assert x.tolist() == model.tolist()
    prg.add(4, x, 1.0)  # the device sees the host's bytes
    assert x.tolist() == (model + 1).tolist()


# -- a write value whose __array__ reads another array, racing a launch on both --------------------

def host_copy(x: Any) -> np.ndarray:
    return np.array(x, copy=True)


N1 = 64


class ReadsLate:
    """A write value whose ``__array__`` reads ``src`` (another array), first running ``before``.

    numpy calls ``__array__`` during the write; hostarray must run it before taking the written
    array's lock, or a launch on both arrays (locks in one global order) deadlocks with it."""

    def __init__(self, src: Any, before: Callable[[], None],
                 post: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.src, self.before, self.post = src, before, post
        self.fired = False

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if not self.fired:
            self.fired = True
            self.before()
        a = np.array(self.src, copy=True)
        if self.post is not None:
            a = self.post(a)
        return a if dtype is None else a.astype(dtype)


# (name, write(dst, value), which part of the source the value reads, post-processing)
WRITES_FROM_CALLBACK: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any], Any], Any]] = [
    ("setitem", lambda d, v: d.__setitem__(Ellipsis, v), lambda s: s, None),
    ("setitem_slice", lambda d, v: d.__setitem__(slice(None), v), lambda s: s, None),
    ("setitem_part", lambda d, v: d.__setitem__(slice(0, 8), v), lambda s: s[:8], None),
    ("copyto", lambda d, v: np.copyto(d, v), lambda s: s, None),
    ("ufunc_out", lambda d, v: np.add(v, 0.0, out=d), lambda s: s, None),
    ("ufunc_out_where", lambda d, v: np.add(d, 1.0, out=d, where=v), lambda s: s,
     lambda a: a > 40.0),
    ("reduce_out_where", lambda d, v: np.add.reduce(np.ones((2, N1), np.float32), axis=0,
                                                    out=d, where=v), lambda s: s,
     lambda a: a > 40.0),
    ("clip_out", lambda d, v: np.clip(d, v, 1e9, out=d), lambda s: s, None),
    ("put", lambda d, v: np.put(d, np.arange(4), v), lambda s: s[:4], None),
    ("ufunc_at", lambda d, v: np.add.at(d, np.arange(4), v), lambda s: s[:4], None),
    ("putmask", lambda d, v: np.putmask(d, np.arange(N1) % 3 == 0, v), lambda s: s, None),
    ("list_of_callbacks", lambda d, v: d.reshape(2, N1 // 2).__setitem__(Ellipsis, [v, v]),
     lambda s: s[:N1 // 2], None),
    ("tuple_of_callbacks", lambda d, v: d.reshape(2, N1 // 2).__setitem__(Ellipsis, (v, v)),
     lambda s: s[:N1 // 2], None),
]


@pytest.mark.parametrize("write,read,post", [w[1:] for w in WRITES_FROM_CALLBACK],
                         ids=[w[0] for w in WRITES_FROM_CALLBACK])
def test_write_value_callback_reading_another_array_does_not_deadlock_a_launch(
        prg, cl_device, write, read, post) -> None:
    """Bug 1 (t39/t40): ``x[...] = obj`` (and copyto, ufunc out=/where=, clip out=, put, values
    in a list) where ``obj.__array__`` reads ``y``, while another thread launches on (y, x).

    Deterministic: the callback starts the launch in another thread and waits for it, then
    reads the other array.  Had the write taken its array's lock before running the callback,
    the launch (which locks both arrays) could not finish, and with the locks taken in the other
    order reading the source would deadlock.  Both write directions run, so one of them has
    the deadlocking lock order whatever it is."""
    a = ha.asarray(np.arange(N1, dtype=np.float32), device=cl_device, copy=True)
    b = ha.asarray(np.arange(N1, dtype=np.float32) * 2 + 1, device=cl_device, copy=True)
    ma, mb = host_copy(a), host_copy(b)
    for dst, src, mdst, msrc in ((a, b, ma, mb), (b, a, mb, ma)):
        # the numpy model: the launch runs inside the callback, then the source is read
        write(mdst, ReadsLate(read(msrc), lambda: (np.add(ma, 1, out=ma),
                                                   np.add(mb, 1, out=mb)), post))
        launched = threading.Event()
        seen: list[bool] = []

        def launch(launched=launched) -> None:
            prg.two(N1, a, b)
            launched.set()

        def before(launched=launched, seen=seen, launch=launch) -> None:
            threading.Thread(target=launch, daemon=True).start()
            # the launch must not need the lock of the array being written
            seen.append(launched.wait(2.0))

        def host_write(dst=dst, src=src, before=before) -> None:
            write(dst, ReadsLate(read(src), before, post))

        run_threads([host_write])
        assert seen == [True], "the launch started by the value's callback was blocked"
        np.testing.assert_array_equal(host_copy(a), ma)
        np.testing.assert_array_equal(host_copy(b), mb)
    np.testing.assert_array_equal(device_sees(prg, a), ma)
    np.testing.assert_array_equal(device_sees(prg, b), mb)


class ReadsY:
    """The reviewer's value: ``__array__`` reads another array (t39)."""

    def __init__(self, y: Any) -> None:
        self.y = y

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.y, dtype=dtype, copy=True)


class ReadsYMask(ReadsY):
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.y, copy=True) >= 0


@pytest.mark.parametrize("write", [
    lambda x, y: x.__setitem__(Ellipsis, ReadsY(y)),
    lambda x, y: np.copyto(x, ReadsY(y)),
    lambda x, y: np.add(x, 1.0, out=x, where=ReadsYMask(y)),
], ids=["setitem", "copyto", "ufunc_where"])
def test_callback_write_racing_launches_on_both_arrays(prg, cl_device, write) -> None:
    """Bug 1 (t39/t40), the reviewer's race as it was found: one thread writes x from a value
    whose ``__array__`` reads y, another launches on (y, x), with a tiny switch interval.
    No deadlock, and y (written only by the launches) counts every launch."""
    n, rounds = 256, 100
    end = time.monotonic() + STRESS_S
    while time.monotonic() < end:
        y = ha.zeros(n, dtype=ha.float32, device=cl_device)
        x = ha.zeros(n, dtype=ha.float32, device=cl_device)

        def writer(x=x, y=y) -> None:
            for _ in range(rounds):
                write(x, y)

        def launcher(x=x, y=y) -> None:
            for _ in range(rounds):
                prg.two(n, y, x)

        run_threads([writer, launcher], switch=1e-6)
        np.testing.assert_array_equal(host_copy(y), np.full(n, rounds, np.float32))


# -- writing a broadcast / sliding-window view as big as its storage -------------------------------

N2 = 8
OVERLAPPING_VIEWS = {
    "sliding_window(x[:5],2)": lambda a: sliding_window_view(a[:5], 2, writeable=True),
    "sliding_window(x[:5],4)": lambda a: sliding_window_view(a[:5], 4, writeable=True),
    "broadcast(x[:1])": lambda a: np.broadcast_arrays(a[:1], np.zeros(N2, np.float32))[0],
    "broadcast(x[2:3])": lambda a: np.broadcast_arrays(a[2:3], np.zeros(N2, np.float32))[0],
    "broadcast(2d row)": lambda a: np.broadcast_arrays(a.reshape(2, 4)[:1],
                                                       np.zeros((2, 4), np.float32))[0],
}
VIEW_WRITES = {
    "v[...]=": lambda v: v.__setitem__(Ellipsis, -1.0),
    "v[:]=": lambda v: v.__setitem__(slice(None), -1.0),
    "v.fill": lambda v: v.fill(-1.0),
    "np.copyto": lambda v: np.copyto(v, -1.0),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("how", list(VIEW_WRITES.values()), ids=list(VIEW_WRITES))
@pytest.mark.parametrize("make", list(OVERLAPPING_VIEWS.values()), ids=list(OVERLAPPING_VIEWS))
def test_write_of_an_overlapping_view_as_big_as_its_storage_keeps_kernel_writes(
        prg, cl_device, make, how) -> None:
    """Bug 2 (t33): a broadcast or sliding-window view whose nbytes equals its storage's is not
    a whole overwrite: writing it must keep the kernel's values in the elements it doesn't
    cover (the copied link lost them)."""
    x = ha.zeros(N2, dtype=ha.float32, device=cl_device)
    v = make(x)  # taken before the kernel writes x
    assert isinstance(v, ha.HostPtrArray) and v.nbytes == x.nbytes
    prg.setv(N2, x)  # the device holds the newest bytes
    how(v)
    m = np.arange(N2, dtype=np.float32) + 100
    how(make(m))
    assert not np.array_equal(m, np.full(N2, -1.0, np.float32))  # the view is not everything
    np.testing.assert_array_equal(host_copy(x), m)
    np.testing.assert_array_equal(device_sees(prg, x), m)


def test_write_of_a_zero_stride_view_keeps_kernel_writes(prg, cl_device) -> None:
    """Bug 2 (t33): ``as_strided`` with a zero stride, as big as the array, written whole."""
    x = ha.zeros(N2, dtype=ha.float32, device=cl_device)
    v = as_strided(x[3:], shape=(N2,), strides=(0,))
    prg.setv(N2, x)
    v[...] = -1.0
    m = np.arange(N2, dtype=np.float32) + 100
    m[3] = -1.0
    np.testing.assert_array_equal(host_copy(x), m)
    np.testing.assert_array_equal(device_sees(prg, x), m)


# -- writes numpy refuses, and text numpy parses ---------------------------------------------------

@pytest.mark.parametrize("refused", [
    lambda x: ha.reshape(x, (7, 7)), lambda x: ha.reshape(x, (7, 7), copy=True),
    lambda x: x.__setitem__(0, "abc"), lambda x: x.__setitem__(slice(0, 2), b"x1")])
def test_a_refused_reshape_or_text_write_moves_nothing(prg, cl_device, refused) -> None:
    # both acquired the data a kernel left on the device before numpy refused the call
    x = ha.zeros(256, dtype=ha.float32, device=cl_device)
    prg.add(x.shape, x, np.float32(3))
    before = ha.stats()
    with pytest.raises(ValueError):
        refused(x)
    after = ha.stats()
    assert (after.acquires, after.publishes) == (before.acquires, before.publishes)
    np.testing.assert_array_equal(np.asarray(x), np.full(256, 3, np.float32))


def test_text_written_into_a_device_array_is_numpys_parse(prg, cl_device) -> None:
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    prg.add(x.shape, x, np.float32(3))
    x[0], x[1] = "7", b"1e3"
    expected = np.full(4, 3, np.float32)
    expected[0], expected[1] = "7", b"1e3"
    np.testing.assert_array_equal(np.asarray(x), expected)
