"""hostarray side by side with CuPy and pyopencl.array on one workload, in one process.

Shared by ``bench_iterative.py`` and ``bench_half.py``.  Each script describes its
workload (a :class:`Workload`); this module runs it on every library, checks every
value the host read against numpy, breaks each median time down into what limits it, and
prints a table (at most 100 columns, a legend under it) and, with ``--json``, the numbers.

The libraries (the ``lib`` column):

* ``ha`` -- hostarray: an array made with ``ha.zeros(n, device=dev)``, kernels through
  ``ha.Program`` (the kernel source :data:`SRC`), host reads by indexing and ``np.asarray``;
* ``cupy`` -- CuPy, when it imports and sees a CUDA device: ``cp.ElementwiseKernel`` with the
  same arithmetic, ``float(d[0])``, ``d[lo:].get()``;
* ``cla`` -- ``pyopencl.array`` on the same OpenCL device and in-order queue as hostarray, the
  same kernel source: ``d[0].get()``, ``d[lo:].get()``;
* ``cl`` -- plain pyopencl, the same calls without an array layer (``cl.Buffer``,
  ``enqueue_copy`` into numpy memory allocated once): the OpenCL driver's own cost for the
  workload, the floor the other OpenCL rows are compared with to tell driver from Python.

What limits each time is estimated from three measurements made in the same run:

* ``device``: the workload's kernels alone, timed by OpenCL profiling (the same kernels
  on the same device, no host in between);
* ``PCIe``: the bytes the library moved between host and device divided by the device->host
  copy rate measured here at the array's size (pinned host memory for hostarray, whose
  buffers are pinned; ordinary numpy memory for the others, which copy into it);
* ``host``: the rest -- Python and driver calls, and waits not covered by the two above.

The ``limit`` column names the largest of the three.  A host-bound OpenCL row is named
``Python`` when its host time exceeds ``cl``'s by more than ``cl``'s own (the library's
layer costs more than the driver calls under it), else ``driver``; CuPy's host time (its
Cython and the CUDA driver) is not split and is named ``host``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402
from hostarray._bench_report import (  # noqa: E402
    _fmt_ratio,
    _fmt_t,
    _legend,
    _table,
    _wrap,
    format_size,
    parse_size,
)
from hostarray.bench import _fits, forced_link  # noqa: E402

# One source for hostarray and pyopencl.array; CuPy's kernels below do the same arithmetic.
SRC = r"""
__kernel void affine(__global float *x) { size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }
__kernel void init(__global float *x) { size_t i = get_global_id(0); x[i] = (float)((i + 1) % 8); }
"""

LIBS = ("ha", "cupy", "cla", "cl")


def x0(n: int) -> np.ndarray:
    """The values :data:`SRC`'s ``init`` writes: ``(i + 1) % 8`` (1, 2, ..., 7, 0, 1, ...).

    Small integers: 20 doublings of them stay below 2**24, so every float32 result is exact
    and the closed forms below hold bit for bit."""
    return (np.arange(1, n + 1, dtype=np.uint32) % 8).astype(np.float32)


# -- the libraries: the same small interface over each ------------------------------------

class HaLib:
    """hostarray: the array lives in host memory attached to the OpenCL device."""

    name = "ha"

    def __init__(self, dev: Any, link: str | None) -> None:
        self.dev, self.link = dev, link
        self.prg = ha.Program(SRC, device=dev)

    def alloc(self, n: int) -> Any:
        """An array of ``n`` float32 whose host and device copies both hold :func:`x0`."""
        x = ha.zeros(n, dtype=ha.float32, device=self.dev)
        with forced_link(self.dev, self.link):  # the buffer is created by this first launch
            self.prg.init(n, ha.write(x)).wait()
        np.asarray(x)  # the host reads: acquired, both sides current
        return x

    def link_of(self, x: Any) -> str:
        return ha.hostptr.host_link(x, self.dev).kind

    def init(self, x: Any, m: int) -> None:
        self.prg.init(m, ha.write(x if m == x.shape[0] else x[:m])).wait()

    def affine(self, x: Any, m: int) -> None:
        self.prg.affine(m, x if m == x.shape[0] else x[:m])

    def read0(self, x: Any) -> float:
        return float(x[0])

    def sum_from(self, x: Any, lo: int) -> float:
        return float(np.asarray(x[lo:]).sum(dtype=np.float64))

    def to_numpy(self, x: Any) -> np.ndarray:
        return np.array(x)

    def free(self, x: Any) -> None:
        pass


class ClaLib:
    """pyopencl.array on hostarray's device and queue, hostarray's kernel source."""

    name = "cla"

    def __init__(self, dev: Any) -> None:
        import pyopencl as cl
        import pyopencl.array as cla

        self.cl, self.cla = cl, cla
        self.q = ha.hostptr.queue(dev)
        prg = cl.Program(dev.runtime.context, SRC).build()
        self.k_affine, self.k_init = cl.Kernel(prg, "affine"), cl.Kernel(prg, "init")

    def alloc(self, n: int) -> Any:
        d = self.cla.empty(self.q, n, np.float32)
        self.init(d, n)
        return d

    def init(self, d: Any, m: int) -> None:
        self.k_init(self.q, (m,), None, d.data)  # views start at offset 0 here
        self.q.finish()

    def affine(self, d: Any, m: int) -> None:
        self.k_affine(self.q, (m,), None, (d if m == d.shape[0] else d[:m]).data)

    def read0(self, d: Any) -> float:
        return float(d[0].get())

    def sum_from(self, d: Any, lo: int) -> float:
        return float(d[lo:].get().sum(dtype=np.float64))

    def to_numpy(self, d: Any) -> np.ndarray:
        return d.get()

    def free(self, d: Any) -> None:
        d.data.release()


class ClLib(ClaLib):
    """Plain pyopencl: a cl.Buffer, the same kernels, enqueue_copy into numpy memory that
    is allocated once (on the first, untimed run) and reused."""

    name = "cl"

    def alloc(self, n: int) -> Any:
        cl = self.cl
        buf = cl.Buffer(self.q.context, cl.mem_flags.READ_WRITE, 4 * n)
        self.n, self.one, self.host = n, np.empty(1, np.float32), {}
        self.init(buf, n)
        return buf

    def init(self, buf: Any, m: int) -> None:
        self.k_init(self.q, (m,), None, buf)
        self.q.finish()

    def affine(self, buf: Any, m: int) -> None:
        self.k_affine(self.q, (m,), None, buf)

    def read0(self, buf: Any) -> float:
        self.cl.enqueue_copy(self.q, self.one, buf, is_blocking=True)
        return float(self.one[0])

    def sum_from(self, buf: Any, lo: int) -> float:
        host = self.host.get(lo)
        if host is None:
            host = self.host[lo] = np.empty(self.n - lo, np.float32)
        self.cl.enqueue_copy(self.q, host, buf, src_offset=4 * lo, is_blocking=True)
        return float(host.sum(dtype=np.float64))

    def to_numpy(self, buf: Any) -> np.ndarray:
        out = np.empty(self.n, np.float32)
        self.cl.enqueue_copy(self.q, out, buf, is_blocking=True)
        return out

    def free(self, buf: Any) -> None:
        buf.release()
        self.host = {}


class CupyLib:
    """CuPy on its current CUDA device: ElementwiseKernels doing :data:`SRC`'s arithmetic."""

    name = "cupy"

    def __init__(self) -> None:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()  # raises without a CUDA device
        self.cp = cp
        self.k_affine = cp.ElementwiseKernel("", "float32 x", "x = 2 * x + 1", "bench_affine")
        self.k_init = cp.ElementwiseKernel("", "float32 x", "x = (float)((i + 1) % 8)",
                                           "bench_init")
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)
        self.version = cp.__version__

    def _sync(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def alloc(self, n: int) -> Any:
        d = self.cp.empty(n, dtype=self.cp.float32)
        self.init(d, n)
        return d

    def init(self, d: Any, m: int) -> None:
        self.k_init(d if m == d.shape[0] else d[:m])
        self._sync()

    def affine(self, d: Any, m: int) -> None:
        self.k_affine(d if m == d.shape[0] else d[:m])

    def read0(self, d: Any) -> float:
        return float(d[0])

    def sum_from(self, d: Any, lo: int) -> float:
        return float(d[lo:].get().sum(dtype=np.float64))

    def to_numpy(self, d: Any) -> np.ndarray:
        return self.cp.asnumpy(d)

    def free(self, d: Any) -> None:
        self._sync()
        self.cp.get_default_memory_pool().free_all_blocks()


# -- a workload ------------------------------------------------------------------------------

@dataclass
class Workload:
    """What a benchmark script measures.

    ``prepare(lib, x, n)`` runs untimed before each run and leaves the data on the device;
    ``run(lib, x, n)`` is timed and returns the values the host read; ``expected(n)`` is
    what they must be; ``final(n)`` the whole array after the last run; ``kernels(n)`` the
    global sizes of the kernels one run launches (timed alone for the ``device`` column);
    ``peer_bytes(n)`` the bytes the other libraries' reads copy, by construction;
    ``minimum_bytes(n)`` what the data dependencies require the host to receive."""

    key: str
    title: str
    prepare: Callable[[Any, Any, int], None]
    run: Callable[[Any, Any, int], list[float]]
    expected: Callable[[int], list[float]]
    final: Callable[[int], np.ndarray]
    kernels: Callable[[int], list[int]]
    peer_bytes: Callable[[int], int]
    minimum_bytes: Callable[[int], int]
    legend: list[tuple[str, str]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)


def _progress(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def python_reference_us() -> float:
    """The host's Python speed: µs of the launching thread's CPU time for one
    ``[None for _ in range(1000)]`` (median of 9 batches of 100).  Lent machines of one
    kind differ (the H200 hosts ran it in 28-30 µs, the development machine in 11-13):
    hostarray's Python-bound figures compare across runs only next to this."""
    runs = []
    for _ in range(9):
        t0 = time.thread_time()
        for _ in range(100):
            [None for _ in range(1000)]
        runs.append((time.thread_time() - t0) / 100 * 1e6)
    return statistics.median(runs)


def python_reference(result: dict[str, Any]) -> str:
    """The header's Python reference, for a title line (empty where not measured)."""
    ref = result.get("host", {}).get("python_reference_us")
    return f"; Python reference {ref:.1f} us" if ref else ""


def run_header(dev: ha.Device) -> dict[str, Any]:
    """When, on which device and with which software a benchmark ran (its JSON header),
    with the host's Python speed (:func:`python_reference_us`)."""
    import pyopencl as cl

    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "device": {"spec": str(dev), "name": dev.name, "type": dev.type, "link": dev.link,
                   "platform": dev._cl_device.platform.name.strip(),
                   "driver": dev._cl_device.driver_version},
        "host": {"python": platform.python_version(), "numpy": np.__version__,
                 "pyopencl": cl.VERSION_TEXT, "hostarray": ha.__version__,
                 "cpus": os.cpu_count(), "python_reference_us": python_reference_us()},
    }


_STATS = ("publishes", "acquires", "bytes_published", "bytes_acquired", "waits", "launches")


def _delta(a: Any, b: Any) -> dict[str, int]:
    return {k: getattr(b, k) - getattr(a, k) for k in _STATS}


def measure_lib(lib: Any, wl: Workload, n: int, repeat: int, expected: list[float],
                final: np.ndarray) -> dict[str, Any]:
    """``repeat`` timed runs of ``wl`` on ``lib`` after one warm-up; every value read is
    compared with ``expected``, the whole array after the last run with ``final``."""
    x = lib.alloc(n)
    out: dict[str, Any] = {}
    try:
        if isinstance(lib, HaLib):
            out["link"] = lib.link_of(x)
        times: list[float] = []
        deltas: list[dict[str, int]] = []
        wrong: list[str] = []
        got: list[float] = []
        for i in range(repeat + 1):
            wl.prepare(lib, x, n)
            s0 = ha.stats()
            t0 = time.perf_counter()
            got = wl.run(lib, x, n)
            t = time.perf_counter() - t0
            s1 = ha.stats()
            if got != expected:
                wrong.append(f"run {i}: read {got}, numpy says {expected}")
            if i:
                times.append(t)
                deltas.append(_delta(s0, s1))
        full = lib.to_numpy(x)
        if not np.array_equal(full, final):
            bad = np.flatnonzero(full != final)
            wrong.append(f"final array differs from numpy's at {bad.size} elements, first at "
                         f"[{bad[0]}]: {full[bad[0]]} (numpy: {final[bad[0]]})")
        del full
        out.update(median_s=statistics.median(times), times_s=times, correct=not wrong,
                   wrong=wrong, read=got)
        if isinstance(lib, HaLib):
            out["stats"] = deltas[-1]  # one iteration's counters
            out["stats_same_every_run"] = all(d == deltas[-1] for d in deltas)
            out["bytes_moved"] = deltas[-1]["bytes_published"] + deltas[-1]["bytes_acquired"]
        else:
            out["bytes_moved"] = wl.peer_bytes(n)
    finally:
        lib.free(x)
        del x
        gc.collect()
    return out


def device_time(cla_lib: ClaLib, n: int, wl: Workload, repeat: int) -> float:
    """Median OpenCL-profiled execution time of one run's kernels (plain pyopencl, its own
    profiling queue and buffer), the values reset before each run as the workloads do."""
    cl = cla_lib.cl
    dev = cla_lib.q.device
    pq = cl.CommandQueue(cla_lib.q.context, dev,
                         properties=cl.command_queue_properties.PROFILING_ENABLE)
    buf = cl.Buffer(cla_lib.q.context, cl.mem_flags.READ_WRITE, 4 * n)
    totals = []
    for i in range(repeat + 1):
        cla_lib.k_init(pq, (n,), None, buf)  # the values each run starts from
        pq.finish()
        evs = [cla_lib.k_affine(pq, (m,), None, buf) for m in wl.kernels(n)]
        pq.finish()
        if i:
            totals.append(sum(e.profile.end - e.profile.start for e in evs) * 1e-9)
    buf.release()
    return statistics.median(totals)


def copy_rates(cla_lib: ClaLib, nbytes: int, repeat: int) -> dict[str, float]:
    """Device->host ``enqueue_copy`` rate of ``nbytes`` in GB/s: into pinned host memory
    (a mapped ``CL_MEM_ALLOC_HOST_PTR`` buffer) and into ordinary numpy memory."""
    cl, q = cla_lib.cl, cla_lib.q
    mf = cl.mem_flags
    dbuf = cl.Buffer(q.context, mf.READ_WRITE, nbytes)
    pin = cl.Buffer(q.context, mf.READ_WRITE | mf.ALLOC_HOST_PTR, nbytes)
    pinned, _ = cl.enqueue_map_buffer(q, pin, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                      (nbytes,), np.uint8, is_blocking=True)
    pageable = np.ones(nbytes, np.uint8)
    cl.enqueue_fill_buffer(q, dbuf, np.uint8(1), 0, nbytes)
    q.finish()
    rates = {}
    for name, dst in (("pinned", pinned), ("pageable", pageable)):
        ts = []
        for i in range(repeat + 1):
            t0 = time.perf_counter()
            cl.enqueue_copy(q, dst, dbuf, is_blocking=True)
            if i:
                ts.append(time.perf_counter() - t0)
        rates[name] = nbytes / statistics.median(ts) / 1e9
    pinned.base.release(q).wait()
    del pinned, pageable
    pin.release()
    dbuf.release()
    gc.collect()
    return rates


def _breakdown(row: dict[str, Any]) -> None:
    """Fill each run's ``device``/``pcie``/``host`` seconds and its ``limit``."""
    runs = row["runs"]
    dev_t = row["device_kernels_s"]
    rates = row["copy_rate_GBps"]

    def host_of(name: str) -> float:
        r = runs[name]
        rate = rates["pinned" if name == "ha" else "pageable"]
        pcie = r["bytes_moved"] / (rate * 1e9) if r["bytes_moved"] else 0.0
        r["pcie_s"], r["device_s"] = pcie, dev_t
        r["host_s"] = max(0.0, r["median_s"] - dev_t - pcie)
        return r["host_s"]

    ok = [k for k in LIBS if "median_s" in runs.get(k, {})]
    for k in ok:
        host_of(k)
    floor = runs["cl"]["host_s"] if "cl" in ok else None
    for k in ok:
        r = runs[k]
        if floor is not None and k in ("ha", "cla"):
            # the same OpenCL calls cost the driver `floor`: the rest is the library's Python
            r["above_driver_s"] = r["host_s"] - floor
        parts = {"PCIe": r["pcie_s"], "device": r["device_s"], "host": r["host_s"]}
        limit = max(parts, key=lambda p: parts[p])
        if limit == "host" and k != "cupy" and floor is not None:
            limit = "Python" if r.get("above_driver_s", 0.0) > floor else "driver"
        r["limit"] = limit
    if "median_s" in runs.get("cupy", {}):
        for k in ok:
            runs[k]["ratio_to_cupy"] = runs[k]["median_s"] / runs["cupy"]["median_s"]


def measure_size(libs: dict[str, Any], skipped: dict[str, str], wl: Workload, nbytes: int,
                 repeat: int) -> dict[str, Any]:
    n = nbytes // 4
    row: dict[str, Any] = {"size": nbytes, "n": n, "runs": {},
                           "minimum_bytes": wl.minimum_bytes(n)}
    expected, final = wl.expected(n), wl.final(n)  # numpy's answers, once per size
    for name in LIBS:
        if name in skipped:
            row["runs"][name] = {"skipped": skipped[name]}
            continue
        _progress(f"{wl.key} {format_size(nbytes)}: {name}")
        try:
            row["runs"][name] = measure_lib(libs[name], wl, n, repeat, expected, final)
        except Exception as e:  # noqa: BLE001 -- one library's failure is reported, not fatal
            row["runs"][name] = {"error": f"{type(e).__name__}: {e}"}
            _progress(f"{name} failed: {type(e).__name__}: {e}")
    del final
    gc.collect()
    _progress(f"{wl.key} {format_size(nbytes)}: kernels alone (OpenCL profiling), copy rates")
    row["device_kernels_s"] = device_time(libs["cla"], n, wl, repeat)
    row["copy_rate_GBps"] = copy_rates(libs["cla"], nbytes, repeat)
    _breakdown(row)
    return row


# -- the table --------------------------------------------------------------------------------

def format_result(result: dict[str, Any], wl: Workload) -> str:
    d = result["device"]
    forced = result["forced_link"]
    lines = _wrap(f"{wl.title} -- {d['spec']} ({d['name']}), link {d['link']}"
                  + (f" (hostarray's buffers forced to {forced})" if forced else "")
                  + f"; CuPy: {result['cupy']}; {result['date']}{python_reference(result)}; "
                  f"medians of {result['repeat']} run{'s' if result['repeat'] != 1 else ''} "
                  f"after a warm-up (us, ms, s)")
    header = ["size", "lib", "time", "t/cupy", "moved", "syncs", "PCIe", "host", "over cl",
              "limit"]
    rows: list[Any] = []
    for row in result["rows"]:
        size = format_size(row["size"])
        if "skipped" in row:
            rows.append((size, f"skipped: {row['skipped']}"))
            continue
        for name in LIBS:
            r = row["runs"][name]
            if "median_s" not in r:
                why = r.get("skipped", "failed")
                why = next((w for w in ("not installed", "left out", "unusable")
                            if why.startswith(w)), "failed")
                rows.append([size, name, why, *["-"] * 7])
                continue
            if name == "ha":
                s = r["stats"]
                syncs = f"{s['publishes']}p/{s['acquires']}a"
            else:
                syncs = "-"
            rows.append([size, name, _fmt_t(r["median_s"]) + ("" if r["correct"] else " WRONG"),
                         _fmt_ratio(r["ratio_to_cupy"]) if "ratio_to_cupy" in r else "-",
                         format_size(r["bytes_moved"]) if r["bytes_moved"] else "0", syncs,
                         _fmt_t(r["pcie_s"]) if r["pcie_s"] else "0",
                         _fmt_t(r["host_s"]),
                         _fmt_t(r["above_driver_s"]) if "above_driver_s" in r else "-",
                         r["limit"]])
    lines += _table(header, rows, "llrrrlrrrl", keep=2)
    legend = [("lib", "ha: hostarray; cupy: CuPy (ElementwiseKernel); cla: pyopencl.array on "
                      "the same device and queue as ha, the same kernel source; cl: plain "
                      "pyopencl, the same calls without an array layer (the OpenCL driver's "
                      "floor)"),
              *wl.legend,
              ("time", "median wall time of one run, the host's last read included"),
              ("t/cupy", "this library's time / CuPy's time at the same size (> 1: CuPy is "
                         "faster, by that factor; < 1: this library is faster)"),
              ("moved", "bytes copied between host and device in one run: ha from "
                        "ha.stats() (publishes + acquires); the others, what their reads copy"),
              ("syncs", "ha's publishes p / acquires a in one run, from ha.stats()"),
              ("PCIe", "moved / the device->host copy rate in the table below (pin for ha, "
                       "page for the others); 0 where nothing moves"),
              ("host", "time - device - PCIe, device from the table below: Python and driver "
                       "calls, waits (a lower bound: kernels overlap the host's next calls)"),
              ("over cl", "host - cl's host: what the library adds above the OpenCL "
                          "driver's own cost of the same calls (its Python); may be < 0 by noise"),
              ("limit", "the largest of device (below), PCIe and host; host is named Python "
                        "when over cl exceeds cl's host time, else driver (cupy: host, its "
                        "Cython and CUDA driver not told apart)")]
    lines += _legend(legend)
    ref_rows: list[Any] = []
    for row in result["rows"]:
        if "skipped" in row:
            continue
        rates = row["copy_rate_GBps"]
        ha_run = row["runs"]["ha"]
        ref_rows.append([format_size(row["size"]), ha_run.get("link", "-"),
                         _fmt_t(row["device_kernels_s"]), f"{rates['pinned']:.1f}",
                         f"{rates['pageable']:.1f}",
                         format_size(row["minimum_bytes"]) if row["minimum_bytes"] else "0"])
    if ref_rows:
        lines += ["", "reference measurements, same run"]
        lines += _table(["size", "ha link", "device", "pin GB/s", "page GB/s", "minimum"],
                        ref_rows, "llrrrr")
        lines += _legend([
            ("ha link", "host-link kind of hostarray's buffer: shared (no byte moves), "
                        "mapped or copied"),
            ("device", "one run's kernels alone, timed by OpenCL profiling on this device "
                       "(CuPy's kernels run on the CUDA device: this figure stands in)"),
            ("GB/s", "device->host enqueue_copy of the whole array, 10^9 bytes per second, "
                     "into pinned (pin) or ordinary numpy (page) memory"),
            ("minimum", "bytes the host must receive in one run, by the data dependencies")])
    bad = [f"{format_size(row['size'])} {name}: {w}" for row in result["rows"]
           for name, r in row.get("runs", {}).items() for w in r.get("wrong", [])]
    errors = [f"{format_size(row['size'])} {name}: {r['error']}" for row in result["rows"]
              for name, r in row.get("runs", {}).items() if "error" in r]
    lines += [""]
    lines += _wrap(f"every value read matches numpy's closed form: {not bad}", "  ")
    for text in bad + errors:
        lines += _wrap(("WRONG " if text in bad else "FAILED ") + text, "  ")
    return "\n".join(lines)


# -- the command line ------------------------------------------------------------------------

def main(wl: Workload, doc: str, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--device", default=None,
                   help="an OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--sizes", default="1MiB,64MiB,1GiB",
                   help="comma-separated array sizes, float32 (default 1MiB,64MiB,1GiB; "
                        "GB = 10**9 bytes, GiB = 2**30)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--link", choices=["copied"], default=None,
                   help="force hostarray's buffers to this link kind (copied: bytes move "
                        "even on a device whose own link is shared)")
    p.add_argument("--no-cupy", action="store_true", help="leave CuPy out")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    args = p.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
    except ValueError as e:
        p.error(f"argument --sizes: {e}")
    if args.repeat < 1:
        p.error("argument --repeat: at least 1")

    dev = ha.device(args.device or os.environ.get("HOSTARRAY_DEVICE") or "opencl")
    if dev.framework != "opencl":
        p.error(f"{dev} is not an OpenCL device")
    libs: dict[str, Any] = {"ha": HaLib(dev, args.link), "cla": ClaLib(dev), "cl": ClLib(dev)}
    skipped: dict[str, str] = {}
    if args.no_cupy:
        skipped["cupy"] = "left out (--no-cupy)"
    else:
        try:
            libs["cupy"] = CupyLib()
        except ImportError as e:
            skipped["cupy"] = f"not installed ({e})"
        except Exception as e:  # noqa: BLE001 -- e.g. no CUDA device
            skipped["cupy"] = f"unusable: {type(e).__name__}: {e}"
    cupy_text = (f"{libs['cupy'].version} on {libs['cupy'].device_name}" if "cupy" in libs
                 else skipped["cupy"])
    result: dict[str, Any] = {
        "benchmark": wl.key, **wl.params, **run_header(dev),
        "cupy": cupy_text, "forced_link": args.link, "repeat": args.repeat, "rows": [],
    }
    _progress(f"{wl.key}: {dev} ({dev.name}), link {dev.link}, CuPy: {cupy_text}")
    for nbytes in sizes:
        why = _fits(nbytes, dev, 4)
        if why:
            _progress(f"{format_size(nbytes)}: skipped, {why}")
            result["rows"].append({"size": nbytes, "skipped": why})
            continue
        result["rows"].append(measure_size(libs, skipped, wl, nbytes, args.repeat))
    print(format_result(result, wl))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    failed = [r for row in result["rows"] for r in row.get("runs", {}).values()
              if "error" in r or not r.get("correct", True)]
    if failed:
        print("FAILED: a library's values differ from numpy's or it raised (see above)",
              file=sys.stderr)
        return 1
    return 0
