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
:func:`hostarray.stats`, never from timings.  Progress goes to stderr.
:func:`format_tables` writes lines of at most 100 characters, each table
followed by a legend of its columns.  Sizes are read as written
(:func:`parse_size`): ``GB`` is 10**9 bytes, ``GiB`` 2**30.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import json
import os
import platform
import re
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import numpy as np

__all__ = ["run_bench", "parse_size", "format_size", "format_tables", "measure_attach",
           "measure_roundtrip", "measure_sync", "measure_laziness", "run_checks", "collect",
           "print_tables", "plot", "KERNELS", "WIDTH"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

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

_DECIMAL = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_BINARY = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_UNITS = {"": 1, "b": 1, **_DECIMAL, **_BINARY}
_UNIT_HELP = "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"


def parse_size(text: str | int) -> int:
    """Bytes named by ``text``, read as written: ``"1GB"`` is 10**9, ``"1GiB"`` 2**30.

    ``KB``, ``MB``, ``GB`` and ``TB`` are powers of 1000 and ``KiB``, ``MiB``,
    ``GiB`` and ``TiB`` powers of 1024; ``B`` or no unit means bytes.  Units are
    case-insensitive (``"1gb"`` is ``"1GB"``) and a space may separate the number
    from its unit (``"1 GiB"``).  A fraction is allowed where it names whole bytes
    (``"1.5KiB"`` is 1536).  A bare ``k``, ``M``, ``G`` or ``T`` is refused: it could
    mean either power.

    Parameters
    ----------
    text : str or int
        The size; an ``int`` is a number of bytes already.

    Returns
    -------
    int
        The number of bytes.

    Raises
    ------
    ValueError
        If ``text`` is not a number followed by one of the units above, names a
        fraction of a byte, or is negative.

    Examples
    --------
    >>> from hostarray.bench import parse_size
    >>> parse_size("64MiB"), parse_size("1GB"), parse_size("1 GiB"), parse_size("4096")
    (67108864, 1000000000, 1073741824, 4096)
    >>> parse_size("2g")
    Traceback (most recent call last):
    ...
    ValueError: ambiguous size '2g': write 2GB (2000000000 bytes) or 2GiB (2147483648 bytes)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a size cannot be negative: {text}")
        return text
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (write e.g. 64MiB, 1GB or 4096; units: "
                         f"{_UNIT_HELP})")
    number, unit = Decimal(m.group(1)), m.group(2)
    key = unit.lower()
    if key in ("k", "m", "g", "t"):
        dec, binary = number * _DECIMAL[key + "b"], number * _BINARY[key + "ib"]
        raise ValueError(f"ambiguous size {text!r}: write {m.group(1)}{key.upper()}B "
                         f"({dec:.0f} bytes) or {m.group(1)}{key.upper()}iB ({binary:.0f} bytes)")
    if key not in _UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {text!r}: use {_UNIT_HELP}")
    n = number * _UNITS[key]
    if n != n.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of bytes ({n.normalize():f} B)")
    return int(n)


def format_size(n: int) -> str:
    """``n`` bytes as a short string in powers of 1024, named so (``KiB``, ``MiB``, ...).

    The output reads back through :func:`parse_size` (to 6 significant digits).

    Examples
    --------
    >>> from hostarray.bench import format_size
    >>> format_size(4096), format_size(3 * 2**30), format_size(1000)
    ('4 KiB', '3 GiB', '1000 B')
    """
    for unit, f in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


def _sizes(lo: int, hi: int, step: int = 4) -> list[int]:
    out, n = [], lo
    while n <= hi:
        out.append(n)
        n *= step
    return out


def _progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


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
        raw = cl.Program(self.ctx, KERNELS).build()
        # One cl.Kernel per name, reused: what a careful pyopencl user writes.
        self.raw = {k: cl.Kernel(raw, k) for k in ("axpb", "fill", "touch", "jacobi", "residual")}
        self.out1 = ha.zeros(1, dtype=ha.float32, device=dev)
        self.out1_raw = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, 4)

    def finish(self) -> None:
        self.queue.finish()


def _per_size(env: _Env, sizes: list[int], copies: int,
              one: Callable[[int], dict[str, Any]]) -> list[dict[str, Any]]:
    """``one(nbytes)`` for each size that fits ``copies`` arrays; skipped rows say why."""
    rows = []
    for nbytes in sizes:
        why = _fits(nbytes, env.dev, copies)
        if why:
            _progress(f"{format_size(nbytes)}: skipped, {why}")
            rows.append({"size": nbytes, "skipped": why})
        else:
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
    ha, cl, dev, q = env.ha, env.cl, env.dev, env.queue
    mf = cl.mem_flags
    def one(nbytes: int) -> dict[str, Any]:
        _progress(f"attach {format_size(nbytes)}")
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

    return _per_size(env, sizes, 3, one)


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
        _progress(f"roundtrip {format_size(nbytes)}")
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

    return _per_size(env, sizes, 5, one)


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
        _progress(f"sync {format_size(nbytes)}")
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

    return _per_size(env, sizes, 4, one)


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
        _progress(f"laziness {format_size(nbytes)} ({iterations} iterations, residual every "
                  f"{check_every}{', link ' + link if link else ''})")
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

    return _per_size(env, sizes, 8, one)


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

    if spec is None:
        spec = os.environ.get("HOSTARRAY_DEVICE") or None
    if spec is not None:
        d = ha.device(spec)
        return d if d.framework == "opencl" else None
    return next((d for d in ha.devices() if d.framework == "opencl"), None)


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
        raise RuntimeError("no working OpenCL device: see 'hostarray devices'")
    env = _Env(dev)
    result: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": {"spec": str(dev), "name": dev.name, "type": dev.type, "link": dev.link,
                   "alignment": dev.alignment, "max_alloc": dev.max_alloc,
                   "platform": dev._cl_device.platform.name.strip(),
                   "driver": dev._cl_device.driver_version},
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "pyopencl": cl.VERSION_TEXT, "hostarray": ha.__version__,
                 "machine": platform.machine(), "cpus": os.cpu_count()},
        "max_size": max_size, "repeat": repeat,
    }
    _progress(f"device {dev} ({dev.name}), link {dev.link}, sizes up to "
              f"{format_size(max_size)}, medians of {repeat}")
    lo = min_size
    if "checks" in parts:
        _progress("checks")
        result["checks"] = run_checks(env, min(4 * MiB, max_size))
    if "attach" in parts:
        result["attach"] = measure_attach(env, _sizes(lo or 4 * KiB, max_size), repeat)
    big = _sizes(lo or MiB, max_size) if max_size >= MiB else [max_size]
    if "roundtrip" in parts:
        result["roundtrip"] = measure_roundtrip(env, big, repeat)
    if "sync" in parts:
        result["sync"] = measure_sync(env, big, repeat)
    if "laziness" in parts:
        top = max_size
        if "CPU" in dev.type.upper() and top > 64 * MiB:
            # Kernel-bound on a CPU device: larger sizes add minutes of kernel time, no insight.
            top = 64 * MiB
            _progress("laziness: at most 64 MiB on a CPU device")
        lz = _sizes(lo or MiB, top, 16) if top >= MiB else [top]
        if lz[-1] != top and top >= MiB:
            lz.append(top)
        rep = max(1, min(3, repeat))
        links: list[str | None] = [None]
        if laziness_link == "auto":
            if dev.link == "shared":
                links.append("copied")
        elif laziness_link is not None:
            links = [laziness_link]
        result["laziness"] = []
        for lk in links:
            result["laziness"] += measure_laziness(env, lz, repeat=rep, link=lk)
    return result


WIDTH = 100
"""The widest line :func:`format_tables` writes, in characters."""

_FASTER = "> 1: hostarray is faster, by that factor; < 1: hostarray is slower"


def _fmt_t(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def _fmt_ratio(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}x"
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


def _wrap(text: str, indent: str = "") -> list[str]:
    """``text`` wrapped to :data:`WIDTH` columns, later lines indented by ``indent``."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent) or [""]


Row = list[str] | tuple[str, str]  # cells, or (first cell, a note across the other columns)


def _table(header: list[str], rows: list[Row], align: str | None = None,
           keep: int = 1) -> list[str]:
    """A plain-text table: two spaces between columns, a rule under the header.

    ``align`` has one letter per column, ``l`` or ``r`` (default: the first column
    left, the others right).  A row given as ``(first, note)`` writes ``note``
    across the other columns, wrapped.  A table wider than :data:`WIDTH` is split
    into several, each repeating the first ``keep`` columns.
    """
    align = align or "l" + "r" * (len(header) - 1)
    cells = [r for r in rows if isinstance(r, list)]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    if sum(widths) + 2 * (len(widths) - 1) > WIDTH and len(header) > keep + 1:
        groups: list[list[int]] = [[]]
        used = sum(widths[:keep]) + 2 * keep
        for i in range(keep, len(header)):
            if groups[-1] and used + widths[i] > WIDTH:
                groups.append([])
                used = sum(widths[:keep]) + 2 * keep
            groups[-1].append(i)
            used += widths[i] + 2
        if len(groups) > 1:
            out: list[str] = []
            for g in groups:
                cols = [*range(keep), *g]
                sub = [[r[i] for i in cols] if isinstance(r, list) else r for r in rows]
                out += _table([header[i] for i in cols], sub, "".join(align[i] for i in cols),
                              keep) + [""]
            return out[:-1]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w)
                         for v, w, a in zip(values, widths, align)).rstrip()

    lines = [line(header), "  ".join("-" * w for w in widths)]
    for r in rows:
        if isinstance(r, list):
            lines.append(line(r))
        else:
            first = r[0].ljust(widths[0]) + "  "
            lines += textwrap.wrap(r[1], WIDTH, initial_indent=first,
                                   subsequent_indent=" " * len(first))
    return lines


def _legend(entries: list[tuple[str, str]]) -> list[str]:
    """``name  meaning`` lines under a table, the meanings aligned and wrapped."""
    w = max(len(k) for k, _ in entries)
    lines = []
    for k, text in entries:
        first = f"  {k.ljust(w)}  "
        # "> 1" and "< 1" stay on one line
        text = re.sub(r"([<>]=?) (\d)", "\\1\0\\2", text)
        lines += [ln.replace("\0", " ") for ln in textwrap.wrap(
            text, WIDTH, initial_indent=first, subsequent_indent=" " * len(first))]
    return lines


def _skipped(r: dict[str, Any]) -> tuple[str, str]:
    return (format_size(r["size"]), f"skipped: {r['skipped']}")


def _times_table(rows: list[dict[str, Any]], methods: list[tuple[str, str]]) -> list[str]:
    """Median times of ``methods`` (``(key in the result, column name)``) per size, then
    each method's time over the first method's (hostarray's)."""
    if not any("times" in r for r in rows):
        return ["(nothing measured)"]
    (base, bname), others = methods[0], methods[1:]
    header = ["size", *(name for _, name in methods), *(f"{n}/{bname}" for _, n in others)]
    out: list[Row] = []
    for r in rows:
        if "skipped" in r:
            out.append(_skipped(r))
            continue
        t = r["times"]
        out.append([format_size(r["size"]), *(_fmt_t(t[k]) for k, _ in methods),
                    *(_fmt_ratio(t[k] / t[base]) for k, _ in others)])
    return _table(header, out)


def _ratio_legend(methods: list[tuple[str, str]], verdict: str = _FASTER
                  ) -> list[tuple[str, str]]:
    (_, bname), others = methods[0], methods[1:]
    return [(f"{n}/{bname}", f"{n} time / {bname} time ({verdict})") for _, n in others]


_ATTACH = [("ha of_numpy", "ha"), ("ha to_device (lazy)", "lazy"),
           ("cl.Buffer COPY_HOST_PTR", "cl.Buffer"), ("cla.to_device", "cla")]
_ATTACH_USED = [("ha of_numpy + kernel", "ha"), ("cl.Buffer COPY_HOST_PTR + kernel", "cl.Buffer"),
                ("cla.to_device + kernel", "cla")]
_ROUNDTRIP = [("ha", "ha"), ("cl enqueue_copy", "cl copy"), ("cla set/get", "cla")]


def _attach_parts(rows: list[dict[str, Any]]) -> list[str]:
    lazy_verdict = ("< 1: the lazy attach is faster than creating the buffer now, > 1: slower; "
                    "both are hostarray")
    legend = [("ha", "ha.hostptr.of_numpy(dev, a): hostarray creates the device buffer over "
                     "the numpy memory"),
              ("lazy", "x.to_device(dev) of a hostarray array: hostarray's lazy attach, the "
                       "buffer is made at the first launch"),
              ("cl.Buffer", "cl.Buffer(ctx, READ_ONLY | COPY_HOST_PTR, hostbuf=a): pyopencl "
                            "copies the data into a new buffer"),
              ("cla", "pyopencl.array.to_device(queue, a)")]
    legend += [("lazy/ha", f"lazy time / ha time ({lazy_verdict})")]
    legend += _ratio_legend(_ATTACH[:1] + _ATTACH[2:])
    used = [("ha, cl.Buffer, cla", "as above, each followed by a one-work-item kernel that "
                                   "reads the data, waited for")]
    used += _ratio_legend(_ATTACH_USED)
    return ["", "attach vs copy: time until the data is usable on the device",
            *_times_table(rows, _ATTACH), *_legend(legend),
            "", "attach vs copy, then a first kernel that reads the data, finished",
            *_times_table(rows, _ATTACH_USED), *_legend(used)]


def _roundtrip_parts(rows: list[dict[str, Any]]) -> list[str]:
    legend = [("ha", "x[...] = src; kernel; np.asarray(x): hostarray publishes and acquires x"),
              ("cl copy", "enqueue_copy to a plain device buffer, kernel, enqueue_copy back "
                          "(pyopencl)"),
              ("cla", "pyopencl.array set(src), kernel, get()"),
              *_ratio_legend(_ROUNDTRIP)]
    bad = [(format_size(r["size"]), k) for r in rows for k, ok in r.get("correct", {}).items()
           if not ok]
    return ["", "round trip: host write -> kernel x = 2x + 1 -> host read",
            *_times_table(rows, _ROUNDTRIP), *_legend(legend),
            *_wrap(f"all results correct: {not bad}" + (f" (wrong: {bad})" if bad else ""),
                   "  ")]


def _sync_parts(rows: list[dict[str, Any]]) -> list[str]:
    times: list[Row] = []
    rates: list[Row] = []
    for r in rows:
        if "skipped" in r:
            times.append(_skipped(r))
            rates.append(_skipped(r))
            continue
        t, bw = r["times"], r["bandwidth_GBps"]
        times.append([format_size(r["size"]), r["link"], _fmt_t(t["publish"]),
                      _fmt_t(t["acquire"]), _fmt_t(t["copy pinned H->D"]),
                      _fmt_t(t["copy pinned D->H"]), _fmt_t(t["copy pageable H->D"]),
                      _fmt_t(t["copy pageable D->H"]), f"{100 * r['fraction_of_pinned']:.0f}%"])
        rates.append([format_size(r["size"]), r["link"], f"{bw['publish']:.1f}",
                      f"{bw['acquire']:.1f}", f"{bw['copy pinned H->D']:.1f}",
                      f"{bw['copy pageable H->D']:.1f}", _fmt_t(t["second read x[-1]"]),
                      _fmt_t(t["second acquire_device_writes"]), str(r["second_read_bytes"])])
    hdr1 = ["size", "link", "publish", "acquire", "pin H>D", "pin D>H", "page H>D", "page D>H",
            "pin/ha"]
    hdr2 = ["size", "link", "pub GB/s", "acq GB/s", "pin GB/s", "page GB/s", "2nd read",
            "2nd acq", "2nd bytes"]
    legend1 = [("link", "host-link kind of the array's buffer: shared, mapped or copied"),
               ("publish", "ha.hostptr.publish_host_writes(x, dev) of the whole array, finished"),
               ("acquire", "ha.hostptr.acquire_device_writes(x, dev) after a kernel wrote x"),
               ("pin H>D", "enqueue_copy from pinned host memory (CL_MEM_ALLOC_HOST_PTR, "
                           "mapped) to a device buffer; D>H: back"),
               ("page H>D", "the same from ordinary (pageable) numpy memory; D>H: back"),
               ("pin/ha", "(pin H>D + pin D>H) / (publish + acquire), in percent: above 100% "
                          "hostarray is faster than the pinned copies, below 100% slower; "
                          "target >= 90% on a mapped link")]
    legend2 = [("GB/s", "size / median time, in 10^9 bytes per second, of publish (pub), "
                        "acquire (acq), pinned H>D (pin) and pageable H>D (page)"),
               ("2nd read", "x[-1] read on the host right after an acquire, nothing launched "
                            "in between"),
               ("2nd acq", "acquire_device_writes(x, dev) again, nothing launched in between"),
               ("2nd bytes", "bytes moved by those second reads and acquires (must be 0)")]
    return ["", "sync: publish/acquire vs enqueue_copy, median times",
            *_table(hdr1, times, "ll" + "r" * 7, keep=2), *_legend(legend1),
            "", "sync: bandwidth, and a second host read with nothing launched since",
            *_table(hdr2, rates, "ll" + "r" * 7, keep=2), *_legend(legend2)]


def _laziness_parts(rows: list[dict[str, Any]], repeat: int) -> list[str]:
    hdr = ["size", "link", "policy", "moved", "x min", "syncs", "time", "t/lazy", "same"]
    out: list[Row] = []
    for r in rows:
        if "skipped" in r:
            out.append(_skipped(r))
            continue
        pol = r["policies"]
        base = pol["ha lazy"]["median_s"]
        for name, p in pol.items():
            syncs = (f"{p['publishes']}p/{p['acquires']}a" if "publishes" in p else "by hand")
            out.append([format_size(r["size"]), r["link"], name,
                        format_size(p["bytes_moved"]) if p["bytes_moved"] else "0",
                        f"{p['bytes_moved'] / r['minimum_bytes']:.2f}", syncs,
                        _fmt_t(p["median_s"]), _fmt_ratio(p["median_s"] / base),
                        str(r["agree"][name])])
    r0 = next((r for r in rows if "policies" in r), None)
    title = "laziness: a Jacobi solver"
    if r0 is not None:
        title += (f", {r0['iterations']} iterations, residual summed on the host every "
                  f"{r0['check_every']}; medians of {max(1, min(3, repeat))}")
    legend = [("policy", "ha lazy: hostarray decides, the arrays attached before; ha eager: "
                         "publish and acquire of every argument around each launch; ha lazy + "
                         "attach: ha lazy, creating the buffers inside the timing; cl minimal: "
                         "hand-written pyopencl copying only what the data dependencies need"),
              ("link", "host-link kind of the buffers (copied: forced, so that bytes move)"),
              ("moved", "bytes copied between host and device, from ha.stats() (cl minimal: "
                        "the minimum, by construction)"),
              ("x min", "moved / the minimum (u and f in once, the partial sums out at each "
                        "check, u out at the end)"),
              ("syncs", "publishes p / acquires a, from ha.stats()"),
              ("time", "median time of the whole solve"),
              ("t/lazy", "this policy's time / ha lazy's time at the same size and link; "
                         "> 1: this policy is slower than hostarray's lazy one, < 1: faster"),
              ("same", "the final u equals cl minimal's, bit for bit")]
    return ["", *_wrap(title), *_table(hdr, out, "lllrrlrrl", keep=3), *_legend(legend)]


def format_tables(result: dict[str, Any]) -> str:
    """The human-readable tables of a :func:`collect` result.

    Every line is at most :data:`WIDTH` (100) characters: wide tables are split,
    column names abbreviated, and each table is followed by a legend naming what
    each column measures and what each ratio divides.

    Parameters
    ----------
    result : dict
        What :func:`collect` returned (or its JSON, read back).

    Returns
    -------
    str
        The tables, lines joined by newlines.
    """
    d = result["device"]
    lines = _wrap(f"hostarray bench -- {d['spec']} ({d['name']}, {d['platform']}), link "
                  f"{d['link']}, {result['date']}; times are medians of {result['repeat']} "
                  f"run{'s' if result['repeat'] != 1 else ''} after a warm-up (us = "
                  f"microseconds, ms = milliseconds, s = seconds)")
    if "checks" in result:
        c = result["checks"]
        lines += ["", *_wrap(
            f"checks: publish map flags {c['publish_map_flags']}, bytes read back by a publish "
            f"{c['publish_acquired_bytes']}, kernel saw the host's bytes "
            f"{c['publish_keeps_host_bytes']} -> {'OK' if c['publish_ok'] else 'FAIL'}")]
    if result.get("attach"):
        lines += _attach_parts(result["attach"])
    if result.get("roundtrip"):
        lines += _roundtrip_parts(result["roundtrip"])
    if result.get("sync"):
        lines += _sync_parts(result["sync"])
    if result.get("laziness"):
        lines += _laziness_parts(result["laziness"], result["repeat"])
    return "\n".join(lines)


def print_tables(result: dict[str, Any], file: Any = None) -> None:
    """Print :func:`format_tables` of ``result`` (to stdout by default)."""
    print(format_tables(result), file=file or sys.stdout)


def plot(result: dict[str, Any], path: str) -> None:
    """Write a PNG of time against size (attach, round trip, sync) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, t) for k, t in (("attach", "attach vs copy"), ("roundtrip", "round trip"),
                                  ("sync", "publish/acquire vs copies"))
              if result.get(k)]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6 * max(1, len(panels)), 4.5),
                             squeeze=False)
    for ax, (key, title) in zip(axes[0], panels):
        rows = [r for r in result[key] if "times" in r]
        methods = [m for m in rows[0]["times"] if not m.startswith("second")]
        for m in methods:
            ax.loglog([r["size"] for r in rows], [r["times"][m] for r in rows], marker="o",
                      label=m, linestyle="-" if m.startswith(("ha", "publish", "acquire"))
                      else "--")
        ax.set_xlabel("bytes")
        ax.set_ylabel("seconds (median)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    d = result["device"]
    fig.suptitle(f"hostarray bench: {d['name']} ({d['link']} link), {result['date']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_bench(args: Any) -> int:
    """Entry point of ``hostarray bench``: measure, print tables or JSON, plot.

    Parameters
    ----------
    args : argparse.Namespace
        ``device`` (a device name or None), ``json`` (bool), ``max_size`` (bytes, or a
        size for :func:`parse_size`), ``repeat`` (int or None: 5), ``plot`` (a PNG path
        or None); missing attributes take those defaults.

    Returns
    -------
    int
        The exit status: 0, 1 if a check or a result was wrong, 2 on a bad size or
        without a working OpenCL device.

    Examples
    --------
    >>> import argparse
    >>> from hostarray.bench import run_bench
    >>> args = argparse.Namespace(device=None, json=True, max_size="1MiB", plot=None)
    >>> run_bench(args)   # doctest: +SKIP
    0
    """
    try:
        given = getattr(args, "max_size", None)
        max_size = parse_size("64MiB" if given is None else given)
        if max_size < 4:
            raise ValueError(f"--max-size must be at least 4 bytes (one float32), not "
                             f"{max_size}")
    except ValueError as e:
        print(f"hostarray bench: {e}", file=sys.stderr)
        return 2
    path = getattr(args, "plot", None)
    folder = os.path.dirname(os.path.abspath(path)) if path else None
    if folder is not None and not os.path.isdir(folder):  # refused before minutes of measuring
        print(f"hostarray bench: --plot {path}: there is no folder {folder}", file=sys.stderr)
        return 2
    repeat = int(getattr(args, "repeat", None) or 5)
    try:
        result = collect(getattr(args, "device", None), max_size, repeat)
    except RuntimeError as e:
        print(f"hostarray bench: {e}", file=sys.stderr)
        return 2
    if getattr(args, "json", False):
        print(json.dumps(result, indent=1, default=float))
    else:
        print_tables(result)
    if path:
        try:
            plot(result, path)
            _progress(f"plot written to {path}")
        except ImportError:
            print("hostarray bench: --plot needs matplotlib (pip install matplotlib)",
                  file=sys.stderr)
        except OSError as e:  # the tables are out; say why the plot is not, no traceback
            print(f"hostarray bench: --plot {path}: {e.strerror or e}", file=sys.stderr)
            return 2
    ok = result.get("checks", {}).get("publish_ok", True) and all(
        all(r.get("correct", {}).values()) for r in result.get("roundtrip", []))
    ok = ok and all(all(r["agree"].values()) for r in result.get("laziness", [])
                    if "agree" in r)
    return 0 if ok else 1

