# Over 700 lines: one measurement per part of hostarray bench; reporting is _bench_report.py.
"""``hostarray bench``: what hostarray costs and saves on one device, measured.

Each measurement runs hostarray side by side with what a pyopencl user
would write instead, in the same process, on the same device and queue:

* ``attach`` -- making host data usable by a kernel: hostarray's attach
  (lazy ``to_device``, eager ``hostptr.of_numpy``) against
  ``cl.Buffer(COPY_HOST_PTR)`` and ``pyopencl.array.to_device``, each alone
  and followed by a first kernel that reads the data.
* ``roundtrip`` -- host write, kernel, host read, against explicit
  ``enqueue_copy`` both ways and ``pyopencl.array`` ``set``/``get``.
* ``sync`` -- publish and acquire of N bytes against ``enqueue_copy`` from
  pinned and from pageable host memory (the copy bandwidth the device
  reaches), and a second host read with nothing launched in between.
* ``laziness`` -- a Jacobi solver that checks its residual on the host
  every few iterations: bytes and time of hostarray's lazy policy, of an
  eager "sync after every launch" policy and of a hand-written pyopencl
  program that moves only what the data dependencies require.
* ``checks`` -- correctness of every alternative, the map flags a publish
  uses and whether a publish ever reads device data back.

Times are medians of several runs after a warm-up; byte counts come from
:func:`hostarray.stats`, never from timings.  Progress goes to stderr, one
line a step with the step's number, the count and an estimate of the time
left.  :mod:`hostarray._bench_report` turns a result into text:
:func:`format_tables` writes lines of at most 100 characters, each table
followed by a legend of its columns; :func:`format_csv` one long-form CSV;
:func:`format_json`; :func:`plot`.  Sizes are read as written
(:func:`parse_size`): ``GB`` is 10**9 bytes, ``GiB`` 2**30.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ._bench_report import (
    CSV_COLUMNS,
    WIDTH,
    GiB,
    KiB,
    MiB,
    check_outputs,
    format_csv,
    format_json,
    format_size,
    format_tables,
    parse_size,
    plot,
    print_tables,
)
from .errors import PerformanceWarning

__all__ = ["run_bench", "parse_size", "format_size", "format_tables", "format_csv",
           "format_json", "check_outputs", "measure_attach", "measure_roundtrip",
           "measure_sync", "measure_laziness", "run_checks", "collect", "print_tables", "plot",
           "KERNELS", "WIDTH", "CSV_COLUMNS", "KiB", "MiB", "GiB"]

KERNELS = r"""
__kernel void axpb(__global float *x, const float a, const float b) {
    size_t i = get_global_id(0);
    x[i] = a * x[i] + b;
}
__kernel void fill(__global float *x, const float v) {
    x[get_global_id(0)] = v;
}
__kernel void touch(__global const float *x, __global float *out) {
    if (get_global_id(0) == 0) out[0] = x[0];
}
__kernel void jacobi(__global const float *u, __global const float *f, __global float *unew,
                     const ulong n) {
    size_t i = get_global_id(0);
    unew[i] = (i == 0 || i == n - 1) ? 0.0f : 0.5f * (u[i - 1] + u[i + 1] + f[i]);
}
__kernel void residual(__global const float *u, __global const float *f,
                       __global float *partial, const ulong n) {
    size_t g = get_global_id(0), stride = get_global_size(0);
    float s = 0.0f;
    for (size_t i = g; i < n; i += stride) {
        float r = (i == 0 || i == n - 1) ? 0.0f : f[i] - (2.0f * u[i] - u[i - 1] - u[i + 1]);
        s += r * r;
    }
    partial[g] = s;
}
"""


def _sizes(lo: int, hi: int, step: int = 4) -> list[int]:
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= step
    return out


def _progress(msg: str) -> None:
    from ._text import wrap

    print("\n".join(wrap(f"[bench] {msg}", " " * 10)), file=sys.stderr, flush=True)


def _about(seconds: float) -> str:
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    return f"about {round(seconds / 60)} min left"


class _Steps:
    """The steps of one :func:`collect` run: each says its number, the count, and the time
    left, estimated from the time the steps before it took and the weights of the steps
    still to come (a weight grows with the bytes a step measures)."""

    def __init__(self, weights: list[float]) -> None:
        self.weights = weights
        self.done = 0
        self.t0 = 0.0

    def next(self, what: str) -> None:
        i, now = self.done, time.perf_counter()
        if i == 1:
            self.t0 = now
        # The first step pays once for what every later one reuses (the kernels' builds, the
        # device's probes): it says nothing of the rest ("about 13 min left" for a run of
        # seconds).  The estimate starts once a step after it was timed.
        before, left = sum(self.weights[1:i]), sum(self.weights[i:])
        note = ""
        if i >= 2 and before > 0:
            note = f" ({_about((now - self.t0) / before * left)})"
        self.done += 1
        _progress(f"step {min(self.done, len(self.weights))}/{len(self.weights)}: {what}{note}")


_STEPS: list[_Steps] = []  # the run under way (collect's), innermost last


def _step(what: str) -> None:
    """Say that the next step starts: numbered within a :func:`collect` run."""
    if _STEPS:
        _STEPS[-1].next(what)
    else:
        _progress(what)


# the relative cost of one size of each part: per byte, and as bytes what a size costs
# whatever its bytes (buffer creation, the medians' fixed costs); from runs on the CPU
# device here, where the solver's 20 iterations of 4 policies cost 10 times a round trip
_COST = {"checks": (0.25, 0), "attach": (1.0, 4 * MiB), "roundtrip": (1.0, MiB),
         "sync": (1.0, 4 * MiB), "laziness": (10.0, MiB)}


def _weight(part: str, nbytes: int) -> float:
    per_byte, base = _COST[part]
    return per_byte * (nbytes + base)


def _median(fn: Callable[[Any], Any], repeat: int, setup: Callable[[], Any] | None = None,
            teardown: Callable[[Any], Any] | None = None, warmup: int = 1) -> float:
    """Median seconds of ``fn(setup())`` over ``repeat`` runs after ``warmup``;
    ``teardown(result)`` runs untimed after each."""
    times = []
    for i in range(warmup + repeat):
        state = setup() if setup is not None else None
        t0 = time.perf_counter()
        r = fn(state)
        t1 = time.perf_counter()
        if teardown is not None:
            teardown(r)
        del r
        if i >= warmup:
            times.append(t1 - t0)
    return statistics.median(times)


def _host_mem_override() -> int:
    """``HOSTARRAY_BENCH_HOST_MEM`` in bytes (0 when unset); RuntimeError if malformed."""
    try:
        return parse_size(os.environ.get("HOSTARRAY_BENCH_HOST_MEM") or "0")
    except ValueError as e:
        raise RuntimeError(f"HOSTARRAY_BENCH_HOST_MEM: {e}") from None


def _fits(nbytes: int, dev: Any, copies: int) -> str | None:
    """Why ``copies`` arrays of ``nbytes`` don't fit (host memory, device limit), or None."""
    if nbytes > dev.max_alloc:
        return f"above the device's largest allocation ({format_size(dev.max_alloc)})"
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None
    # Machines whose memory grows on use report too little: let the user say.
    avail = max(avail, _host_mem_override())
    if copies * nbytes > 0.8 * avail:
        return f"needs ~{format_size(copies * nbytes)} of host memory, {format_size(avail)} free"
    return None


class _Env:
    """The device, its queue and context, the programs (hostarray's and raw)."""

    def __init__(self, dev: Any) -> None:
        import pyopencl as cl

        import hostarray as ha

        self.cl = cl
        self.ha = ha
        self.dev = dev
        self.queue = ha.hostptr.queue(dev)
        self.ctx = dev.runtime.context
        self.prg = ha.Program(KERNELS, device=dev)
        from .backends.opencl import quiet_build

        raw = quiet_build(self.ctx, KERNELS)  # (NVIDIA's remarks: no CompilerWarning on stderr)
        # One cl.Kernel per name, reused: what a careful pyopencl user writes.
        self.raw = {k: cl.Kernel(raw, k) for k in ("axpb", "fill", "touch", "jacobi", "residual")}
        self.out1 = ha.zeros(1, dtype=ha.float32, device=dev)
        self.out1_raw = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4)

    def finish(self) -> None:
        self.queue.finish()


def _per_size(env: _Env, sizes: list[int], copies: int, one: Callable[[int], dict[str, Any]],
              label: Callable[[int], str]) -> list[dict[str, Any]]:
    """``one(nbytes)`` for each size that fits ``copies`` arrays, a step each (named by
    ``label(nbytes)``); skipped rows say why."""
    rows = []
    for nbytes in sizes:
        why = _fits(nbytes, env.dev, copies)
        if why:
            _step(f"{label(nbytes)}: skipped, {why}")
            rows.append({"size": nbytes, "skipped": why})
        else:
            _step(label(nbytes))
            rows.append(one(nbytes))
    return rows


def _src(n_floats: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n_floats, dtype=np.float32)


def _aligned(n_floats: int) -> np.ndarray:
    from ._storage import aligned_empty

    return aligned_empty(4 * n_floats).view(np.float32)


# -- attach ---------------------------------------------------------------------------------

def measure_attach(env: _Env, sizes: list[int], repeat: int = 5) -> list[dict[str, Any]]:
    """Time making ``sizes`` bytes of host data usable by a kernel, per method.

    Methods: ``ha to_device (lazy)``, ``ha of_numpy`` (buffer created),
    ``ha of_numpy + kernel`` (and a first kernel reading it, finished),
    ``cl.Buffer COPY_HOST_PTR`` (+ kernel), ``cla.to_device`` (+ kernel).
    """
    # adopting the user's array and keeping it is what this measures: no PerformanceWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        return _measure_attach(env, sizes, repeat)


def _measure_attach(env: _Env, sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    ha, cl, dev, q = env.ha, env.cl, env.dev, env.queue
    mf = cl.mem_flags
    def one(nbytes: int) -> dict[str, Any]:
        n = nbytes // 4
        host = _aligned(n)
        host[:] = _src(n)
        hx = ha.asarray(host)  # on the host: to_device only re-labels the same memory
        times: dict[str, float] = {}

        times["ha to_device (lazy)"] = _median(lambda _: hx.to_device(dev), repeat * 4)

        def of_numpy(_: Any) -> Any:
            return ha.hostptr.of_numpy(dev, host)

        def of_numpy_used(_: Any) -> Any:
            x = ha.hostptr.of_numpy(dev, host)
            env.prg.touch(1, x, ha.write(env.out1)).wait()
            return x

        def copy_buffer(_: Any) -> Any:
            return cl.Buffer(env.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)

        def copy_buffer_used(_: Any) -> Any:
            b = cl.Buffer(env.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
            env.raw["touch"](q, (1,), None, b, env.out1_raw).wait()
            return b

        def cla_to_device(_: Any) -> Any:
            import pyopencl.array as cla
            return cla.to_device(q, host)

        def cla_to_device_used(_: Any) -> Any:
            import pyopencl.array as cla
            d = cla.to_device(q, host)
            env.raw["touch"](q, (1,), None, d.data, env.out1_raw).wait()  # type: ignore[arg-type]
            return d

        def free(obj: Any) -> None:
            # One buffer over the host memory at a time: a driver that pins
            # pages may refuse a second registration of the same range.
            if isinstance(obj, ha.HostPtrArray):
                ha.hostptr.free_buffer(obj, dev)
            elif isinstance(obj, cl.Buffer):
                obj.release()
            else:
                obj.data.release()

        for name, fn in (("ha of_numpy", of_numpy), ("cl.Buffer COPY_HOST_PTR", copy_buffer),
                         ("cla.to_device", cla_to_device),
                         ("ha of_numpy + kernel", of_numpy_used),
                         ("cl.Buffer COPY_HOST_PTR + kernel", copy_buffer_used),
                         ("cla.to_device + kernel", cla_to_device_used)):
            times[name] = _median(fn, repeat, teardown=free)
            gc.collect()
        gc.collect()
        return {"size": nbytes, "times": times}

    return _per_size(env, sizes, 3, one, lambda n: f"attach {format_size(n)}")


# -- round trip -------------------------------------------------------------------------------

def measure_roundtrip(env: _Env, sizes: list[int], repeat: int = 5) -> list[dict[str, Any]]:
    """Time host write -> kernel ``x = 2x + 1`` -> host read, per method.

    Every method does the same host work: overwrite the whole array from a
    source array, then read the result.  ``ha`` moves data through its
    publish/acquire; ``cl enqueue_copy`` copies a numpy array to a plain
    device buffer and back; ``cla set/get`` uses ``pyopencl.array``.
    """
    ha, cl, dev, q = env.ha, env.cl, env.dev, env.queue
    def one(nbytes: int) -> dict[str, Any]:
        n = nbytes // 4
        src = _src(n, 1)
        expect_last = np.float32(2) * src[-1] + np.float32(1)
        times: dict[str, float] = {}
        correct: dict[str, bool] = {}

        x = ha.empty(n, dtype=ha.float32, device=dev)

        def ha_trip(_: Any) -> float:
            x[...] = src
            env.prg.axpb(n, x, 2.0, 1.0)
            h = np.asarray(x)
            return float(h[-1])

        ha.reset_stats()
        times["ha"] = _median(ha_trip, repeat)
        s = ha.stats()
        correct["ha"] = bool(np.array_equal(np.asarray(x), 2 * src + 1))
        counters = {"publishes": s.publishes, "acquires": s.acquires,
                    "bytes_moved": s.bytes_moved, "runs": repeat + 1}
        x = None  # free the memory before the next method
        gc.collect()

        h = _aligned(n)
        buf = cl.Buffer(env.ctx, cl.mem_flags.READ_WRITE, nbytes)

        def cl_trip(_: Any) -> float:
            h[...] = src
            cl.enqueue_copy(q, buf, h)
            env.raw["axpb"](q, (n,), None, buf, np.float32(2), np.float32(1))
            cl.enqueue_copy(q, h, buf)
            return float(h[-1])

        times["cl enqueue_copy"] = _median(cl_trip, repeat)
        correct["cl enqueue_copy"] = bool(h[-1] == expect_last
                                          and np.array_equal(h, 2 * src + 1))
        buf.release()
        buf = None

        import pyopencl.array as cla
        d = cla.empty(q, n, np.float32)

        def cla_trip(_: Any) -> float:
            d.set(src)
            env.raw["axpb"](q, (n,), None, d.data,  # type: ignore[arg-type]
                            np.float32(2), np.float32(1))
            d.get(ary=h)
            return float(h[-1])

        times["cla set/get"] = _median(cla_trip, repeat)
        correct["cla set/get"] = bool(np.array_equal(h, 2 * src + 1))
        d = h = None  # type: ignore[assignment]
        gc.collect()
        return {"size": nbytes, "times": times, "correct": correct, "ha_stats": counters}

    return _per_size(env, sizes, 5, one, lambda n: f"roundtrip {format_size(n)}")


# -- sync bandwidth and the second read ------------------------------------------------------------

def measure_sync(env: _Env, sizes: list[int], repeat: int = 5) -> list[dict[str, Any]]:
    """Publish and acquire of N bytes against the device's copy bandwidth.

    ``copy pinned`` copies between a mapped ``CL_MEM_ALLOC_HOST_PTR`` buffer
    (page-locked host memory) and a device buffer; ``copy pageable`` from
    ordinary numpy memory.  ``fraction`` is (pinned H->D + pinned D->H) over
    (publish + acquire).  ``second read`` is a host read right after an
    acquire, with nothing launched in between: it must move nothing.
    """
    ha, cl, dev, q = env.ha, env.cl, env.dev, env.queue
    mf = cl.mem_flags
    def one(nbytes: int) -> dict[str, Any]:
        n = nbytes // 4
        times: dict[str, float] = {}
        dbuf = cl.Buffer(env.ctx, mf.READ_WRITE, nbytes)
        pin = cl.Buffer(env.ctx, mf.READ_WRITE | mf.ALLOC_HOST_PTR, nbytes)
        pinned, _ = cl.enqueue_map_buffer(q, pin, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                          (nbytes,), np.uint8, is_blocking=True)
        pinned[:] = 1
        pageable = _aligned(n).view(np.uint8)
        pageable[:] = 1

        def h2d(src: np.ndarray) -> Callable[[Any], None]:
            return lambda _: cl.enqueue_copy(q, dbuf, src, is_blocking=True)

        def d2h(dst: np.ndarray) -> Callable[[Any], None]:
            return lambda _: cl.enqueue_copy(q, dst, dbuf, is_blocking=True)

        times["copy pinned H->D"] = _median(h2d(pinned), repeat)
        times["copy pinned D->H"] = _median(d2h(pinned), repeat)
        times["copy pageable H->D"] = _median(h2d(pageable), repeat)
        times["copy pageable D->H"] = _median(d2h(pageable), repeat)
        pinned.base.release(q).wait()
        pinned = pageable = None  # type: ignore[assignment]
        pin.release()
        dbuf.release()
        gc.collect()

        x = ha.empty(n, dtype=ha.float32, device=dev)
        x[...] = 1.0
        env.prg.fill(n, ha.write(x), 2.0)  # creates the buffer outside the timings
        _ = x[-1]

        def publish(_: Any) -> None:
            ha.hostptr.publish_host_writes(x, dev)
            q.finish()

        ha.reset_stats()
        times["publish"] = _median(publish, repeat)
        pub = ha.stats()

        def after_kernel() -> None:
            env.prg.fill(1, ha.write(x), 3.0).wait()  # the device now holds the newest x

        def acquire(_: Any) -> None:
            ha.hostptr.acquire_device_writes(x, dev)

        ha.reset_stats()
        times["acquire"] = _median(acquire, repeat, setup=after_kernel)
        acq = ha.stats()

        # The second read: nothing launched since the acquire above.
        ha.hostptr.acquire_device_writes(x, dev)
        ha.reset_stats()
        times["second acquire_device_writes"] = _median(acquire, repeat * 20, warmup=5)
        times["second read x[-1]"] = _median(lambda _: x[-1], repeat * 20, warmup=5)
        second = ha.stats()
        link = ha.hostptr.host_link(x, dev).kind
        gc.collect()
        ratio = ((times["copy pinned H->D"] + times["copy pinned D->H"])
                 / (times["publish"] + times["acquire"]))
        return {
            "size": nbytes, "times": times, "link": link,
            "bandwidth_GBps": {k: nbytes / t / 1e9 for k, t in times.items()
                               if not k.startswith("second")},
            "fraction_of_pinned": ratio,
            "publish_bytes_per_run": pub.bytes_published / max(1, pub.publishes),
            "acquire_bytes_per_run": acq.bytes_acquired / max(1, acq.acquires),
            "acquires_per_run": acq.acquires / (repeat + 1),
            "second_read_bytes": second.bytes_moved,
            "second_read_syncs": second.publishes + second.acquires,
        }

    return _per_size(env, sizes, 4, one, lambda n: f"sync {format_size(n)}")


# -- laziness: an iterative solver that checks its residual on the host -------------------

@contextlib.contextmanager
def forced_link(dev: Any, kind: str | None) -> Iterator[None]:
    """Buffers created inside use ``kind`` (as ``HOSTARRAY_LINK`` would), then the
    device's own link again.  ``None`` changes nothing."""
    rt = dev.runtime
    own = rt.link
    if kind is None or kind == own:
        yield
        return
    rt._link = kind
    try:
        yield
    finally:
        rt._link = own


def _jacobi_rhs(n: int) -> np.ndarray:
    return (np.sin(np.linspace(0.0, 8 * np.pi, n, dtype=np.float32)) * 1e-3).astype(np.float32)


def measure_laziness(env: _Env, sizes: list[int], iterations: int = 20, check_every: int = 5,
                     repeat: int = 3, link: str | None = None) -> list[dict[str, Any]]:
    """Bytes moved and time of a Jacobi solver under three synchronisation policies.

    The host sets ``u`` and ``f``; each iteration launches ``jacobi`` (reads
    ``u``, ``f``; writes ``unew``) and swaps; every ``check_every`` iterations a
    ``residual`` kernel writes partial sums that the host adds up; at the end
    the host reads ``u``.

    * ``ha lazy``: hostarray decides (kernels' ``const`` arguments, ``ha.write``);
      the arrays were attached before (as after an earlier solve).
    * ``ha lazy + attach``: the same, attaching (creating the device buffers
      over host memory: pinning on a discrete GPU) inside the timing.
    * ``ha eager``: the same, plus ``publish_host_writes`` of every argument
      before each launch and ``acquire_device_writes`` of every argument after
      it -- the "sync after every launch" policy.
    * ``cl minimal``: raw pyopencl, copying by hand exactly what the data
      dependencies require: ``u`` and ``f`` in once, the partial sums out at
      each check, ``u`` out at the end.  Its bytes are the minimum.

    ``link`` forces the link kind of the buffers (``"copied"`` makes bytes move
    on a CPU device, where the shared link moves none).
    """
    ha, cl, dev, q = env.ha, env.cl, env.dev, env.queue
    groups = 4096
    def one(nbytes: int) -> dict[str, Any]:
        from ._array import wrap

        n = nbytes // 4
        g = min(groups, n)
        # The data already lives in page-aligned host memory, as in a program built on
        # hostarray; every run starts again from u = 0 (reset outside the timings).
        u0, unew0, f0, part0 = _aligned(n), _aligned(n), _aligned(n), _aligned(g)
        f0[:] = _jacobi_rhs(n)
        unew0[:] = 0
        part0[:] = 0
        checks = iterations // check_every
        minimum = 3 * nbytes + checks * g * 4
        result: dict[str, Any] = {"size": nbytes, "iterations": iterations,
                                  "check_every": check_every, "partial_bytes": g * 4,
                                  "minimum_bytes": minimum, "policies": {}}
        finals: dict[str, np.ndarray] = {}

        def reset() -> None:
            u0[:] = 0

        def attached() -> tuple[Any, ...]:
            reset()
            with forced_link(dev, link):
                # hostarray's own memory (wrap: owned, not adopted user memory that the
                # bench still holds, which would make every launch eager)
                arrays = tuple(wrap(a, dev) for a in (u0, unew0, f0, part0))
                for a in arrays:  # attached now, so eager publishes from the start
                    ha.hostptr.attach(a, dev)
            return arrays

        def run_ha(eager: bool, arrays: tuple[Any, ...] | None
                   ) -> tuple[np.ndarray, list[float], Any]:
            if arrays is None:
                arrays = attached()
            u, unew, f, part = arrays
            res = []


            def launch(kernel: Any, size: int, *args: Any) -> None:
                # the eager policy: sync every array argument both ways around each launch
                arrs = [getattr(a, "array", a) for a in args
                        if isinstance(getattr(a, "array", a), ha.HostPtrArray)]
                if eager:
                    for a in arrs:
                        ha.hostptr.publish_host_writes(a, dev)
                kernel(size, *args)
                if eager:
                    for a in arrs:
                        ha.hostptr.acquire_device_writes(a, dev)

            for it in range(1, iterations + 1):
                launch(env.prg.jacobi, n, u, f, ha.write(unew), n)
                u, unew = unew, u
                if it % check_every == 0:
                    launch(env.prg.residual, g, u, f, ha.write(part), n)
                    res.append(float(np.asarray(part).sum(dtype=np.float64)))
            return np.asarray(u), res, arrays

        def run_cl(_: Any) -> tuple[np.ndarray, list[float], Any]:
            mf = cl.mem_flags
            u = cl.Buffer(env.ctx, mf.READ_WRITE, nbytes)
            unew = cl.Buffer(env.ctx, mf.READ_WRITE, nbytes)
            f = cl.Buffer(env.ctx, mf.READ_ONLY, nbytes)
            part = cl.Buffer(env.ctx, mf.WRITE_ONLY, g * 4)
            cl.enqueue_copy(q, u, u0, is_blocking=False)
            cl.enqueue_copy(q, f, f0, is_blocking=False)
            res = []
            for it in range(1, iterations + 1):
                env.raw["jacobi"](q, (n,), None, u, f, unew, np.uint64(n))
                u, unew = unew, u
                if it % check_every == 0:
                    env.raw["residual"](q, (g,), None, u, f, part, np.uint64(n))
                    cl.enqueue_copy(q, part0, part)
                    res.append(float(part0.sum(dtype=np.float64)))
            cl.enqueue_copy(q, unew0, u)  # the result, into host memory
            return unew0, res, (u, unew, f, part)

        def free(r: tuple[Any, Any, Any]) -> None:
            # Buffers go before the next run attaches the same host memory again.
            for a in r[2]:
                if isinstance(a, ha.HostPtrArray):
                    ha.hostptr.free_buffer(a, dev)
                else:
                    a.release()

        policies: list[tuple[str, Callable[[Any], Any], Callable[[], Any]]] = [
            ("ha lazy", lambda a: run_ha(False, a), attached),
            ("ha eager", lambda a: run_ha(True, a), attached),
            ("ha lazy + attach", lambda _: run_ha(False, None), reset),
            ("cl minimal", run_cl, reset)]
        for name, fn, setup in policies:
            state = setup()
            ha.reset_stats()
            r = fn(state)  # warm-up, and the counters of one run
            s = ha.stats()
            finals[name] = r[0].copy()
            res = r[1]
            free(r)
            del r, state
            t = _median(fn, repeat, setup=setup, teardown=free, warmup=0)
            p: dict[str, Any] = {"median_s": t, "residuals": res}
            if name.startswith("ha"):
                p.update(publishes=s.publishes, acquires=s.acquires,
                         bytes_moved=s.bytes_moved, launches=s.launches)
            else:
                p.update(bytes_moved=minimum)
            result["policies"][name] = p
            gc.collect()
        result["link"] = link or dev.link
        ref = finals["cl minimal"]
        result["agree"] = {k: bool(np.array_equal(v, ref)) for k, v in finals.items()}
        return result

    def label(n: int) -> str:
        return (f"laziness {format_size(n)}{', link ' + link if link else ''} "
                f"({iterations} iterations, residual every {check_every})")

    return _per_size(env, sizes, 8, one, label)


# -- checks --------------------------------------------------------------------------------------

def run_checks(env: _Env, nbytes: int = 4 * MiB) -> dict[str, Any]:
    """Correctness of the measured paths and how publishes map memory.

    * ``publish_map_flags``: the map flags of every ``enqueue_map_buffer``
      a publish made (expected: only ``WRITE_INVALIDATE_REGION``).
    * ``publish_keeps_host_bytes``: the device holds newer data, the host
      overwrites the whole array and a kernel reads it: the kernel must see
      the host's bytes (a publish that read device data back first would
      overwrite them on a mapped link).
    """
    ha, cl, dev = env.ha, env.cl, env.dev
    n = nbytes // 4
    out: dict[str, Any] = {"link": dev.link}
    seen: list[int] = []
    real_map = cl.enqueue_map_buffer

    def spy(queue: Any, buf: Any, flags: int, *args: Any, **kw: Any) -> Any:
        seen.append(int(flags))
        return real_map(queue, buf, flags, *args, **kw)

    x = ha.empty(n, dtype=ha.float32, device=dev)
    x[...] = 1.0
    env.prg.fill(n, ha.write(x), 2.0)  # the device holds 2, the host's 1 is stale
    x[...] = 3.0  # a whole overwrite: the stale device data is dead, nothing acquired
    ha.reset_stats()
    cl.enqueue_map_buffer = spy  # type: ignore[attr-defined]
    try:
        env.prg.axpb(n, x, 1.0, 1.0)  # publishes x, then x = x + 1 on the device
        env.finish()
    finally:
        cl.enqueue_map_buffer = real_map  # type: ignore[attr-defined]
    s = ha.stats()
    inv = int(cl.map_flags.WRITE_INVALIDATE_REGION)
    names = {int(cl.map_flags.READ): "READ", int(cl.map_flags.WRITE): "WRITE", inv:
             "WRITE_INVALIDATE_REGION"}
    out["publish_map_flags"] = sorted({names.get(f, str(f)) for f in seen})
    out["publish_acquired_bytes"] = s.bytes_acquired
    out["publish_keeps_host_bytes"] = bool(np.all(np.asarray(x) == 4.0))
    out["publish_ok"] = bool(out["publish_keeps_host_bytes"] and s.bytes_acquired == 0
                             and s.acquires == 0
                             and all(f == inv for f in seen))
    del x
    gc.collect()
    return out


# -- running, printing, plotting ---------------------------------------------------------------

def _pick_device(spec: str | None) -> Any:
    import hostarray as ha

    from ._devices import environment_device, environment_prefix

    first = next((d for d in ha.devices() if d.framework == "opencl"), None)
    # (a wrong HOSTARRAY_DEVICE: the error names the variable)
    d = ha.device(spec) if spec is not None else environment_device()
    if d is not None:
        if d.framework != "opencl":  # (it said "no working OpenCL device" beside a working one)
            there = (f"pass --device {first} (the OpenCL device here)" if first is not None
                     else "there is none here: see `hostarray devices`")
            raise RuntimeError(f"{environment_prefix(spec)}{d} is the host; the bench measures "
                               f"an OpenCL device: {there}")
        return d
    return first


def collect(device: str | None = None, max_size: int = 64 * MiB, repeat: int = 5,
            parts: tuple[str, ...] = ("checks", "attach", "roundtrip", "sync", "laziness"),
            laziness_link: str | None = "auto", min_size: int | None = None) -> dict[str, Any]:
    """Run the measurements named in ``parts`` and return them as one dict.

    ``laziness_link="auto"`` runs the solver on the device's own link and,
    where that link moves no bytes (shared), once more on a copied link so
    the bytes show.

    Examples
    --------
    >>> from hostarray.bench import collect
    >>> r = collect(max_size=1 << 20, repeat=1, parts=("checks",))   # doctest: +SKIP
    >>> r["checks"]["publish_ok"]                                     # doctest: +SKIP
    True
    """
    import pyopencl as cl

    import hostarray as ha

    _host_mem_override()  # a malformed value stops the run before it starts
    dev = _pick_device(device)
    if dev is None:
        from ._devices import why_no_opencl

        raise RuntimeError(f"no working OpenCL device: {why_no_opencl()}")
    env = _Env(dev)
    result: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "device": {"spec": str(dev), "name": dev.name, "type": dev.type, "link": dev.link,
                   "alignment": dev.alignment, "max_alloc": dev.max_alloc,
                   "platform": dev._cl_device.platform.name.strip(),
                   "driver": dev._cl_device.driver_version},
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "pyopencl": cl.VERSION_TEXT, "hostarray": ha.__version__,
                 "machine": platform.machine(), "cpus": os.cpu_count()},
        "max_size": max_size, "repeat": repeat,
    }
    from ._text import shorten

    _progress(f"device {dev} ({shorten(dev.name, 40)}), link {dev.link}, sizes up to "
              f"{format_size(max_size)}, medians of {repeat}")
    lo = min_size
    # the plan first, so that each step can say how many there are and the time left
    attach = _sizes(lo or 4 * KiB, max_size)
    big = _sizes(lo or MiB, max_size) if max_size >= MiB else [max_size]
    top = max_size
    if "laziness" in parts and "CPU" in dev.type.upper() and top > 64 * MiB:
        # Kernel-bound on a CPU device: larger sizes add minutes of kernel time, no insight.
        top = 64 * MiB
        _progress("laziness: at most 64 MiB on a CPU device")
    lz = _sizes(lo or MiB, top, 16) if top >= MiB else [top]
    if lz[-1] != top and top >= MiB:
        lz.append(top)
    links: list[str | None] = [None]
    if laziness_link == "auto":
        if dev.link == "shared":
            links.append("copied")
    elif laziness_link is not None:
        links = [laziness_link]
    checks_bytes = min(4 * MiB, max_size)
    plan = {"checks": [checks_bytes], "attach": attach, "roundtrip": big, "sync": big,
            "laziness": lz * len(links)}
    _STEPS.append(_Steps([_weight(p, n) for p in plan if p in parts for n in plan[p]]))
    try:
        if "checks" in parts:
            _step("checks")
            result["checks"] = run_checks(env, checks_bytes)
        if "attach" in parts:
            result["attach"] = measure_attach(env, attach, repeat)
        if "roundtrip" in parts:
            result["roundtrip"] = measure_roundtrip(env, big, repeat)
        if "sync" in parts:
            result["sync"] = measure_sync(env, big, repeat)
        if "laziness" in parts:
            rep = max(1, min(3, repeat))
            result["laziness"] = []
            for lk in links:
                result["laziness"] += measure_laziness(env, lz, repeat=rep, link=lk)
    finally:
        _STEPS.pop()
    return result


def _output(value: Any) -> str | None:
    """An output option's path: ``"-"`` for stdout (``True``, the flag alone), else the
    path, or ``None`` when not asked for."""
    if value is None or value is False:
        return None
    return "-" if value is True else str(value)


def _write(path: str, text: str, what: str) -> str | None:
    """Write ``text`` to ``path``; why it could not be, or ``None``."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    except OSError as e:
        return f"{what} {path}: {e.strerror or e}"
    _progress(f"{what[2:].upper()} written to {path}")
    return None


def run_bench(args: Any) -> int:
    """Entry point of ``hostarray bench``: check the options, measure, then print tables
    (or JSON or CSV), write the JSON and CSV files and the plot asked for.

    Every option is checked before measuring: a bad size, two outputs for stdout, a file
    in a folder that does not exist, ``plot`` without matplotlib (the ``bench`` extra:
    ``pip install 'hostarray[bench]'``) is one sentence on stderr and exit status 2.

    Parameters
    ----------
    args : argparse.Namespace
        ``device`` (a device name or None), ``json`` and ``csv`` (``None``; ``"-"`` or
        ``True``: print it to stdout instead of the tables; a path: write it there too),
        ``max_size`` (bytes, or a size for :func:`parse_size`), ``repeat`` (int or None:
        5), ``plot`` (a PNG path or None); missing attributes take those defaults.

    Returns
    -------
    int
        The exit status: 0, 1 if a check or a result was wrong, 2 on a bad option or
        without a working OpenCL device.

    Examples
    --------
    >>> import argparse
    >>> from hostarray.bench import run_bench
    >>> args = argparse.Namespace(device=None, json=True, max_size="1MiB", plot=None)
    >>> run_bench(args)   # doctest: +SKIP
    0
    >>> run_bench(argparse.Namespace(max_size="4KiB", json="-", csv="-"))
    2
    """
    from ._text import error_lines

    try:
        given = getattr(args, "max_size", None)
        max_size = parse_size("64MiB" if given is None else given)
        if max_size < 4:
            raise ValueError(f"--max-size must be at least 4 bytes (one float32), not "
                             f"{max_size}")
    except ValueError as e:
        print(error_lines("bench", str(e)), file=sys.stderr)
        return 2
    json_out, csv_out = _output(getattr(args, "json", None)), _output(getattr(args, "csv", None))
    path = getattr(args, "plot", None)
    refused = check_outputs(json_out, csv_out, path)  # before minutes of measuring
    if refused:
        print(error_lines("bench", refused), file=sys.stderr)
        return 2
    repeat = int(getattr(args, "repeat", None) or 5)
    try:
        result = collect(getattr(args, "device", None), max_size, repeat)
    except RuntimeError as e:
        print(error_lines("bench", str(e)), file=sys.stderr)
        return 2
    if json_out == "-":
        print(format_json(result))
    elif csv_out == "-":
        print(format_csv(result), end="")
    else:
        print_tables(result)
    failed = [said for said in (
        _write(json_out, format_json(result) + "\n", "--json") if json_out not in (None, "-")
        else None,
        _write(csv_out, format_csv(result), "--csv") if csv_out not in (None, "-") else None)
        if said]
    if path:
        try:
            plot(result, path)
            _progress(f"plot written to {path}")
        except OSError as e:  # the tables are out; say why the plot is not, no traceback
            failed.append(f"--plot {path}: {e.strerror or e}")
    for said in failed:
        print(f"hostarray bench: {said}", file=sys.stderr)
    if failed:
        return 2
    ok = result.get("checks", {}).get("publish_ok", True) and all(
        all(r.get("correct", {}).values()) for r in result.get("roundtrip", []))
    ok = ok and all(all(r["agree"].values()) for r in result.get("laziness", [])
                    if "agree" in r)
    return 0 if ok else 1
