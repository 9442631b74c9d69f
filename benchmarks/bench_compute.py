"""Namespace operations on data a kernel left on the device: hostarray's device path against
CuPy, pyopencl.array and numpy.

The data is already on the device: a kernel wrote it (for hostarray, into hostarray memory
attached to the device, so its newest bytes are on the device and the host has none of them).
Float32 throughout.  The workloads (one timed run each; the data is written again, untimed,
before every run):

* ``chain`` -- the issue's workload: a kernel ``x = 2x + 1``, then ``y = x * x + 1``, then
  ``float(sum(y))``;
* ``elementwise`` -- ``y = x * x + 1``, then a wait for the device (nothing read back);
* ``reduction`` -- ``float(sum(x))``;
* ``matmul`` -- ``c = a @ b`` of n x n matrices (``--matmul``, default 1024, 2048, 4096), then
  a wait for the device.

The libraries (the ``lib`` column): ``ha`` hostarray (``ha.Program`` kernels, the namespace:
``x * x + 1``, ``ha.sum``, ``@``); ``cupy`` CuPy, when it imports and sees a CUDA device (the
same operations, ``ElementwiseKernel`` for the kernel, the stream synchronised); ``cla``
``pyopencl.array`` on hostarray's own device and in-order queue (the same kernel source,
``cla.sum``; it has no matmul); ``numpy`` the same operations on the host.

For hostarray the ``ha.stats()`` deltas of one run are recorded: bytes moved (they must be the
bytes of what the host reads, nothing more: 4 bytes for a ``float(sum(...))``, 0 otherwise),
publishes and acquires, ``device_ops`` and ``host_fallbacks``.  Operations the device path
does not compute yet run on the host after acquiring their inputs: the run still works, and
the bytes and counters say so.  Every value is checked against numpy.

The threshold sweep (``sweep``) times ``float(ha.sum(x * x))`` on data a kernel wrote, 4 KiB to
``--sweep-max`` (default 4 MiB), with the device path on (``ha.set_device_compute_threshold(0)``)
and off (``None``), and suggests the default threshold: the smallest size from which the device
path is faster at every larger size measured.

Medians of ``--repeat`` runs (the sweep: ``--sweep-repeat``, default 15) after one warm-up
(which builds the generated kernels).  Tables go
to stdout (progress to stderr); ``compute.json`` (the numbers) and ``compute.md`` (the tables in
Markdown) to ``--out`` (default: ``$OUT``, else ``compute_out/``).  The device path runs only on
a mapped or copied link: on a CPU device, ``HOSTARRAY_LINK=copied`` forces one.

    python3 benchmarks/bench_compute.py [--device opencl:0:0] [--max-size 1GiB] [--repeat 5]
        [--matmul 1024,2048,4096] [--sweep-max 4MiB] [--sweep-repeat 15]
        [--parts chain,elementwise,reduction,matmul,sweep] [--threshold BYTES|off] [--no-cupy]
        [--out DIR]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _peers import SRC, CupyLib, _progress, python_reference, run_header, x0  # noqa: E402

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
from hostarray.bench import _fits  # noqa: E402

MiB = 1 << 20
SIZES = (MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
PARTS = ("chain", "elementwise", "reduction", "matmul", "sweep")
LIBS = ("ha", "cupy", "cla", "numpy")
# a kernel that rewrites its array unchanged: the newest bytes are on the device again
TOUCH = r"""
__kernel void touch(__global float *x) { size_t i = get_global_id(0); x[i] = x[i]; }
"""
STATS = ("publishes", "acquires", "bytes_published", "bytes_acquired", "waits", "launches",
         "device_ops", "host_fallbacks", "kernels_compiled")


class NotAvailable(Exception):
    """The library has no such operation (reported, not a failure)."""


# -- the libraries: the same small interface over each ----------------------------------------

class HaLib:
    """hostarray: arrays in host memory attached to the device, written there by kernels."""

    name = "ha"

    def __init__(self, dev: ha.Device) -> None:
        self.dev = dev
        self.prg = ha.Program(SRC + TOUCH, device=dev)
        self.q = ha.hostptr.queue(dev)

    def alloc(self, shape: tuple[int, ...]) -> Any:
        return ha.empty(shape, dtype=ha.float32, device=self.dev)

    def init(self, x: Any) -> None:
        self.prg.init(x.size, ha.write(x)).wait()  # only the device has the values

    def put(self, a: np.ndarray) -> Any:
        x = ha.asarray(a, device=self.dev, copy=True)
        self.touch(x)
        return x

    def touch(self, x: Any) -> None:
        self.prg.touch(x.size, x).wait()

    def affine(self, x: Any) -> None:
        self.prg.affine(x.size, x)

    def ew(self, x: Any) -> Any:
        return x * x + 1

    def total(self, y: Any) -> float:
        return float(ha.sum(y))

    def matmul(self, a: Any, b: Any) -> Any:
        return a @ b

    def sync(self) -> None:
        self.q.finish()

    def to_numpy(self, y: Any) -> np.ndarray:
        return np.array(y)

    def free(self) -> None:
        gc.collect()
        ha.clear_pool()


class ClaLib:
    """pyopencl.array on hostarray's device and queue, the same kernel source."""

    name = "cla"

    def __init__(self, dev: ha.Device) -> None:
        import pyopencl as cl
        import pyopencl.array as cla

        self.cl, self.cla = cl, cla
        self.q = ha.hostptr.queue(dev)
        prg = cl.Program(dev.runtime.context, SRC + TOUCH).build()
        self.k_affine, self.k_init = cl.Kernel(prg, "affine"), cl.Kernel(prg, "init")
        try:  # pyopencl.array's reductions generate their kernels with Mako
            import mako  # noqa: F401

            self.reductions = True
        except ImportError:
            self.reductions = False

    def alloc(self, shape: tuple[int, ...]) -> Any:
        return self.cla.empty(self.q, shape, np.float32)

    def init(self, d: Any) -> None:
        self.k_init(self.q, (d.size,), None, d.data)
        self.q.finish()

    def put(self, a: np.ndarray) -> Any:
        return self.cla.to_device(self.q, a)

    def touch(self, d: Any) -> None:
        pass  # a device array: its data stays on the device

    def affine(self, d: Any) -> None:
        self.k_affine(self.q, (d.size,), None, d.data)

    def ew(self, d: Any) -> Any:
        return d * d + 1

    def total(self, d: Any) -> float:
        if not self.reductions:
            raise NotAvailable("pyopencl.array.sum needs the Mako package, not installed")
        return float(self.cla.sum(d).get())

    def matmul(self, a: Any, b: Any) -> Any:
        raise NotAvailable("pyopencl.array has no matmul")

    def sync(self) -> None:
        self.q.finish()

    def to_numpy(self, d: Any) -> np.ndarray:
        return d.get()

    def free(self) -> None:
        gc.collect()


class CupyOps(CupyLib):
    """CuPy on its current CUDA device (``_peers.CupyLib``'s kernels)."""

    def alloc(self, shape: tuple[int, ...]) -> Any:
        return self.cp.empty(shape, dtype=self.cp.float32)

    def init(self, d: Any) -> None:
        self.k_init(d)
        self._sync()

    def put(self, a: np.ndarray) -> Any:
        return self.cp.asarray(a)

    def touch(self, d: Any) -> None:
        pass

    def affine(self, d: Any) -> None:
        self.k_affine(d)

    def ew(self, d: Any) -> Any:
        return d * d + 1

    def total(self, d: Any) -> float:
        return float(self.cp.sum(d))

    def matmul(self, a: Any, b: Any) -> Any:
        return a @ b

    def sync(self) -> None:
        self._sync()

    def to_numpy(self, d: Any) -> np.ndarray:
        return self.cp.asnumpy(d)

    def free(self) -> None:
        gc.collect()
        self._sync()
        self.cp.get_default_memory_pool().free_all_blocks()


class NumpyLib:
    """numpy on the host: the same operations, the kernels done by numpy in place."""

    name = "numpy"

    def __init__(self) -> None:
        self._x0: dict[int, np.ndarray] = {}

    def alloc(self, shape: tuple[int, ...]) -> Any:
        return np.empty(shape, np.float32)

    def init(self, x: Any) -> None:
        v = self._x0.get(x.size)
        if v is None:
            self._x0 = {x.size: x0(x.size)}  # one size at a time: its memory goes with it
            v = self._x0[x.size]
        np.copyto(x.reshape(-1), v)

    def put(self, a: np.ndarray) -> Any:
        return a.copy()

    def touch(self, x: Any) -> None:
        pass

    def affine(self, x: Any) -> None:
        np.multiply(x, 2, out=x)
        np.add(x, 1, out=x)

    def ew(self, x: Any) -> Any:
        return x * x + 1

    def total(self, y: Any) -> float:
        return float(np.sum(y))

    def matmul(self, a: Any, b: Any) -> Any:
        return a @ b

    def sync(self) -> None:
        pass

    def to_numpy(self, y: Any) -> np.ndarray:
        return np.asarray(y)

    def free(self) -> None:
        self._x0 = {}
        gc.collect()


# -- the workloads ------------------------------------------------------------------------------

def _exact_sum(values: np.ndarray, n: int) -> float:
    """The exact sum of ``values`` repeated over ``n`` elements (``x0``'s period is 8)."""
    full, rest = divmod(n, len(values))
    return float(values.astype(np.float64).sum() * full + values[:rest].astype(np.float64).sum())


_X0 = x0(8)  # 1, 2, ..., 7, 0


@dataclass
class Workload:
    """``prepare(lib, arrays)`` runs untimed before each run; ``run(lib, arrays)`` is timed
    and returns what the host got (a float) or the result array (checked after the last run,
    untimed); ``check(lib, got, n)`` says what is wrong with it, or ``""``; ``result_bytes`` is what
    the host must receive in one run."""

    key: str
    title: str
    setup: Callable[[Any, int], list[Any]]
    prepare: Callable[[Any, list[Any]], None]
    run: Callable[[Any, list[Any]], Any]
    check: Callable[[Any, Any, int], str]
    result_bytes: int
    legend: str


def _close(got: float, want: float, what: str) -> str:
    # float32 sums of up to 2**28 elements: pairwise or tree orders round differently
    return "" if abs(got - want) <= 1e-4 * abs(want) else f"{what} {got!r}, numpy: {want!r}"


def _vector(lib: Any, n: int) -> list[Any]:
    return [lib.alloc((n,))]


def _init(lib: Any, arrays: list[Any]) -> None:
    lib.init(arrays[0])


def _chain(lib: Any, arrays: list[Any]) -> float:
    x = arrays[0]
    lib.affine(x)
    return lib.total(lib.ew(x))


def _ew(lib: Any, arrays: list[Any]) -> Any:
    y = lib.ew(arrays[0])
    lib.sync()
    return y


def _ew_check(lib: Any, y: Any, n: int) -> str:
    got = lib.to_numpy(y)
    want = x0(n)
    want = want * want + 1
    bad = np.flatnonzero(got != want)
    return "" if not bad.size else (f"y differs from numpy's at {bad.size} elements, first "
                                    f"[{bad[0]}]: {got[bad[0]]} (numpy: {want[bad[0]]})")


def _matrices(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Small integers (a product's sum stays below 2**24: exact in float32 in any order),
    different along rows and columns so that a transposed index shows."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return ((3 * i + 5 * j) % 8).astype(np.float32), ((7 * i + j + 1) % 8).astype(np.float32)


def _mat_setup(lib: Any, n: int) -> list[Any]:
    a, b = _matrices(n)
    return [lib.put(a), lib.put(b)]


def _mat_prepare(lib: Any, arrays: list[Any]) -> None:
    for m in arrays:
        lib.touch(m)  # a host fallback acquired them: the newest bytes go back to the device


def _mat_run(lib: Any, arrays: list[Any]) -> Any:
    c = lib.matmul(arrays[0], arrays[1])
    lib.sync()
    return c


_MATMUL_WANT: dict[int, np.ndarray] = {}


def _mat_check(lib: Any, c: Any, n: int) -> str:
    want = _MATMUL_WANT.get(n)
    if want is None:
        a, b = _matrices(n)
        want = _MATMUL_WANT[n] = a @ b  # exact (see _matrices)
    got = lib.to_numpy(c)
    bad = np.flatnonzero(got != want)
    return "" if not bad.size else (f"c differs from numpy's at {bad.size} elements, first "
                                    f"[{np.unravel_index(bad[0], got.shape)}]")


WORKLOADS = {
    "chain": Workload(
        "chain", "chain: kernel x = 2x + 1, y = x * x + 1, float(sum(y))", _vector, _init,
        _chain, lambda lib, got, n: _close(got, _exact_sum((2 * _X0 + 1) ** 2 + 1, n), "sum"),
        4, "the data on the device; a kernel x = 2x + 1 over it, y = x * x + 1, float(sum(y))"),
    "elementwise": Workload(
        "elementwise", "elementwise: y = x * x + 1, then a wait for the device", _vector, _init,
        _ew, _ew_check, 0, "the data on the device; y = x * x + 1; a wait for the device "
                           "(ha, cla: queue finish; cupy: stream synchronize)"),
    "reduction": Workload(
        "reduction", "reduction: float(sum(x))", _vector, _init,
        lambda lib, arrays: lib.total(arrays[0]),
        lambda lib, got, n: _close(got, _exact_sum(_X0, n), "sum"), 4,
        "the data on the device; float(sum(x))"),
    "matmul": Workload(
        "matmul", "matmul: c = a @ b (n x n), then a wait for the device", _mat_setup,
        _mat_prepare, _mat_run, _mat_check, 0,
        "a and b on the device; c = a @ b; a wait for the device"),
}


# -- measuring ----------------------------------------------------------------------------------

def _delta(a: ha.Stats, b: ha.Stats) -> dict[str, int]:
    return {k: getattr(b, k) - getattr(a, k) for k in STATS}


def measure_lib(lib: Any, wl: Workload, n: int, repeat: int) -> dict[str, Any]:
    """``repeat`` timed runs of ``wl`` on ``lib`` after one warm-up, checked against numpy."""
    arrays = wl.setup(lib, n)
    times: list[float] = []
    deltas: list[dict[str, int]] = []
    got: Any = None
    try:
        for i in range(repeat + 1):
            got = None  # the last result dies first: its pooled storage can be reused
            wl.prepare(lib, arrays)
            s0 = ha.stats()
            t0 = time.perf_counter()
            got = wl.run(lib, arrays)
            t = time.perf_counter() - t0
            s1 = ha.stats()
            if i:
                times.append(t)
                deltas.append(_delta(s0, s1))
        wrong = wl.check(lib, got, n)
    finally:
        del arrays, got
        lib.free()
    out: dict[str, Any] = {"median_s": statistics.median(times), "times_s": times,
                           "correct": not wrong, "wrong": wrong}
    if lib.name == "ha":
        d = deltas[-1]
        out.update(stats=d, stats_same_every_run=all(x == d for x in deltas),
                   bytes_moved=d["bytes_published"] + d["bytes_acquired"])
        out["only_result_bytes"] = out["bytes_moved"] <= wl.result_bytes
    elif lib.name != "numpy":
        out["bytes_moved"] = wl.result_bytes  # what their reads copy, by construction
    else:
        out["bytes_moved"] = 0
    return out


def measure_row(libs: dict[str, Any], skipped: dict[str, str], wl: Workload, n: int,
                repeat: int, label: str) -> dict[str, Any]:
    row: dict[str, Any] = {"n": n, "label": label, "runs": {}}
    for name in LIBS:
        if name in skipped:
            row["runs"][name] = {"skipped": skipped[name]}
            continue
        _progress(f"{wl.key} {label}: {name}")
        try:
            row["runs"][name] = measure_lib(libs[name], wl, n, repeat)
        except NotAvailable as e:
            row["runs"][name] = {"skipped": f"not available: {e}"}
        except Exception as e:  # noqa: BLE001 -- one library's failure is reported, not fatal
            row["runs"][name] = {"error": f"{type(e).__name__}: {e}"}
            _progress(f"{name} failed: {type(e).__name__}: {e}")
            libs[name].free()
    runs = row["runs"]
    for ref in ("cupy", "numpy"):
        if "median_s" in runs.get(ref, {}):
            for r in runs.values():
                if "median_s" in r:
                    r[f"ratio_to_{ref}"] = r["median_s"] / runs[ref]["median_s"]
    return row


def measure_sweep(lib: HaLib, sizes: list[int], repeat: int) -> dict[str, Any]:
    """``float(ha.sum(x * x))`` on data a kernel wrote, the device path on and off."""
    rows = []
    for nbytes in sizes:
        n = nbytes // 4
        x = lib.alloc((n,))
        want = _exact_sum(_X0 * _X0, n)
        row: dict[str, Any] = {"size": nbytes}
        for mode, threshold in (("on", 0), ("off", None)):
            _progress(f"sweep {format_size(nbytes)}: device path {mode}")
            old = ha.set_device_compute_threshold(threshold)
            try:
                times, deltas, wrong = [], [], ""
                for i in range(repeat + 1):
                    lib.init(x)
                    s0 = ha.stats()
                    t0 = time.perf_counter()
                    got = float(ha.sum(x * x))
                    t = time.perf_counter() - t0
                    s1 = ha.stats()
                    wrong = wrong or _close(got, want, f"{mode}: sum")
                    if i:
                        times.append(t)
                        deltas.append(_delta(s0, s1))
            finally:
                ha.set_device_compute_threshold(old)
            d = deltas[-1]
            row[mode] = {"median_s": statistics.median(times), "times_s": times, "stats": d,
                         "bytes_moved": d["bytes_published"] + d["bytes_acquired"],
                         "correct": not wrong, "wrong": wrong}
        row["on_over_off"] = row["on"]["median_s"] / row["off"]["median_s"]
        rows.append(row)
        del x
        lib.free()
    return {"rows": rows, "suggested_threshold": suggest_threshold(rows)}


def suggest_threshold(rows: list[dict[str, Any]]) -> int | None:
    """The smallest size from which the device path is faster at that and every larger size
    measured (``None``: not at the largest)."""
    best = None
    for row in reversed(rows):
        if row["on_over_off"] >= 1:
            break
        best = row["size"]
    return best


# -- the tables -----------------------------------------------------------------------------------

def _lib_cells(name: str, r: dict[str, Any]) -> list[str]:
    if "median_s" not in r:
        why = r.get("skipped") or "failed"
        why = next((w for w in ("not installed", "left out", "unusable", "not available")
                    if why.startswith(w)), "failed")
        return [name, why, *["-"] * 6]
    if name == "ha":
        s = r["stats"]
        syncs = f"{s['publishes']}p/{s['acquires']}a"
        moved = format_size(r["bytes_moved"]) if r["bytes_moved"] else "0"
        if not r["only_result_bytes"]:
            moved += " !"
        ops, falls = str(s["device_ops"]), str(s["host_fallbacks"])
    else:
        syncs, ops, falls = "-", "-", "-"
        moved = format_size(r["bytes_moved"]) if r["bytes_moved"] else "0"
    return [name, _fmt_t(r["median_s"]) + ("" if r["correct"] else " WRONG"),
            _fmt_ratio(r["ratio_to_cupy"]) if "ratio_to_cupy" in r else "-",
            _fmt_ratio(r["ratio_to_numpy"]) if "ratio_to_numpy" in r else "-",
            moved, syncs, ops, falls]


HEADER = ["size", "lib", "time", "t/cupy", "t/numpy", "moved", "syncs", "dev ops", "fallbacks"]
LEGEND = [
    ("lib", "ha: hostarray (the namespace on data a kernel left on the device); cupy: CuPy; "
            "cla: pyopencl.array on ha's device and queue; numpy: the host"),
    ("time", "median wall time of one run"),
    ("t/cupy", "this library's time / CuPy's time (> 1: CuPy is faster, by that factor; "
               "< 1: this library is faster)"),
    ("t/numpy", "this library's time / numpy's time (> 1: numpy is faster, by that factor; "
                "< 1: this library is faster)"),
    ("moved", "bytes copied between host and device in one run: ha from ha.stats() "
              "(publishes + acquires; '!' where more than the bytes the host reads: an "
              "operation ran on the host); the others, what their reads copy"),
    ("syncs", "ha's publishes p / acquires a in one run"),
    ("dev ops", "ha's operations computed on the device in one run (ha.stats().device_ops)"),
    ("fallbacks", "ha's operations sent to the device that ran on the host (host_fallbacks)"),
]


def workload_rows(result: dict[str, Any], key: str) -> list[Any]:
    rows: list[Any] = []
    for row in result["workloads"][key]:
        if "skipped" in row:
            rows.append((row["label"], f"skipped: {row['skipped']}"))
            continue
        for name in LIBS:
            rows.append([row["label"], *_lib_cells(name, row["runs"][name])])
    return rows


def sweep_rows(sweep: dict[str, Any]) -> list[list[str]]:
    out = []
    for row in sweep["rows"]:
        on, off = row["on"], row["off"]
        out.append([format_size(row["size"]),
                    _fmt_t(on["median_s"]) + ("" if on["correct"] else " WRONG"),
                    _fmt_t(off["median_s"]) + ("" if off["correct"] else " WRONG"),
                    _fmt_ratio(row["on_over_off"]),
                    format_size(on["bytes_moved"]) if on["bytes_moved"] else "0",
                    format_size(off["bytes_moved"]) if off["bytes_moved"] else "0",
                    str(on["stats"]["device_ops"]), str(on["stats"]["host_fallbacks"])])
    return out


SWEEP_HEADER = ["size", "on", "off", "on/off", "moved on", "moved off", "dev ops", "fallbacks"]
SWEEP_LEGEND = [
    ("on", "float(ha.sum(x * x)), x written by a kernel, ha.set_device_compute_threshold(0)"),
    ("off", "the same with the device path off (threshold None): x acquired, numpy"),
    ("on/off", "time on / time off (< 1: the device path is faster; > 1: the host is faster)"),
    ("moved on, moved off", "bytes copied between host and device in one run, from ha.stats()"),
    ("dev ops", "operations computed on the device in one run, device path on"),
    ("fallbacks", "operations sent to the device that ran on the host, device path on"),
]


def _title(result: dict[str, Any]) -> str:
    d = result["device"]
    return (f"device compute -- {d['spec']} ({d['name']}), link {d['link']}; threshold "
            f"{result['threshold']}; CuPy: {result['cupy']}; {result['date']}"
            f"{python_reference(result)}; medians of {result['repeat']} "
            f"run{'s' if result['repeat'] != 1 else ''} after a warm-up")


def _verdicts(result: dict[str, Any]) -> list[str]:
    bad = []
    for key, rows in result["workloads"].items():
        for row in rows:
            for name, r in row.get("runs", {}).items():
                if r.get("wrong"):
                    bad.append(f"WRONG {key} {row['label']} {name}: {r['wrong']}")
                if "error" in r:
                    bad.append(f"FAILED {key} {row['label']} {name}: {r['error']}")
    for row in result.get("sweep", {}).get("rows", []):
        for mode in ("on", "off"):
            if row[mode]["wrong"]:
                bad.append(f"WRONG sweep {format_size(row['size'])}: {row[mode]['wrong']}")
    return bad


def _sweep_verdict(sweep: dict[str, Any]) -> str:
    t = sweep["suggested_threshold"]
    if t is None:
        return "suggested threshold: above the sizes measured (the device path was not faster " \
               "at the largest)"
    return f"suggested threshold: {format_size(t)} (the device path is faster from there up)"


def format_result(result: dict[str, Any]) -> str:
    lines = _wrap(_title(result))
    if result["device"]["link"] == "shared":
        lines += _wrap("note: a shared link: the device path never runs here (by design); "
                       "HOSTARRAY_LINK=copied forces a copied link", "  ")
    for key in result["workloads"]:
        wl = WORKLOADS[key]
        lines += ["", wl.title]
        lines += _table(HEADER, workload_rows(result, key), "llrrrrlrr", keep=2)
        lines += _legend([("run", wl.legend), *LEGEND])
    if "sweep" in result:
        lines += ["", f"threshold sweep: float(ha.sum(x * x)), device path on vs off (medians "
                      f"of {result['sweep_repeat']})"]
        lines += _table(SWEEP_HEADER, sweep_rows(result["sweep"]), "lrrrrrrr")
        lines += _legend(SWEEP_LEGEND)
        lines += _wrap(_sweep_verdict(result["sweep"]), "  ")
    bad = _verdicts(result)
    lines += [""] + _wrap(f"every value matches numpy's: {not bad}", "  ")
    for text in bad:
        lines += _wrap(text, "  ")
    return "\n".join(lines)


def _md_table(header: list[str], rows: list[Any]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        cells = r if isinstance(r, list) else [r[0], r[1], *[""] * (len(header) - 2)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return out


def format_markdown(result: dict[str, Any]) -> str:
    lines = ["# Device compute benchmark", "", _title(result), ""]
    for key in result["workloads"]:
        wl = WORKLOADS[key]
        lines += [f"## {wl.title}", "", *_md_table(HEADER, workload_rows(result, key)), ""]
    if "sweep" in result:
        lines += ["## Threshold sweep: float(ha.sum(x * x)), device path on vs off", "",
                  *_md_table(SWEEP_HEADER, sweep_rows(result["sweep"])), "",
                  _sweep_verdict(result["sweep"]), ""]
    lines += ["## Columns", ""]
    lines += [f"* **{k}**: {v}" for k, v in LEGEND + SWEEP_LEGEND[:3]]
    bad = _verdicts(result)
    lines += ["", f"Every value matches numpy's: {not bad}", *[f"* {b}" for b in bad]]
    return "\n".join(lines) + "\n"


# -- the command line ---------------------------------------------------------------------------

def _libs(dev: ha.Device, no_cupy: bool) -> tuple[dict[str, Any], dict[str, str], str]:
    libs: dict[str, Any] = {"ha": HaLib(dev), "cla": ClaLib(dev), "numpy": NumpyLib()}
    skipped: dict[str, str] = {}
    if no_cupy:
        skipped["cupy"] = "left out (--no-cupy)"
    else:
        try:
            libs["cupy"] = CupyOps()
        except ImportError as e:
            skipped["cupy"] = f"not installed ({e})"
        except Exception as e:  # noqa: BLE001 -- e.g. no CUDA device
            skipped["cupy"] = f"unusable: {type(e).__name__}: {e}"
    text = (f"{libs['cupy'].version} on {libs['cupy'].device_name}" if "cupy" in libs
            else skipped["cupy"])
    return libs, skipped, text


def _threshold(text: str) -> int | None:
    if text.strip().lower() in ("off", "none"):
        return None
    return parse_size(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None,
                   help="an OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--max-size", type=parse_size, default=1024 * MiB, metavar="SIZE",
                   help="largest array of the vector workloads, of 1MiB, 16MiB, 64MiB, 256MiB, "
                        "1GiB (default 1GiB; below 1MiB: that size alone)")
    p.add_argument("--matmul", default="1024,2048,4096",
                   help="comma-separated matrix sizes n (default 1024,2048,4096)")
    p.add_argument("--sweep-max", type=parse_size, default=4 * MiB, metavar="SIZE",
                   help="largest size of the threshold sweep, from 4KiB by doubling "
                        "(default 4MiB)")
    p.add_argument("--sweep-repeat", type=int, default=15,
                   help="timed runs per median of the sweep (default 15: small sizes are "
                        "cheap, and noisy)")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"what to measure (default {','.join(PARTS)})")
    p.add_argument("--threshold", default=None, metavar="BYTES|off",
                   help="ha.set_device_compute_threshold for the workloads (default: as set, "
                        "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES or 1MiB)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--no-cupy", action="store_true", help="leave CuPy out")
    p.add_argument("--out", default=os.environ.get("OUT") or "compute_out",
                   help="folder for compute.json and compute.md (default: $OUT, else "
                        "compute_out)")
    args = p.parse_args(argv)
    args.parts = [s.strip() for s in args.parts.split(",") if s.strip()]
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        p.error(f"argument --parts: unknown {sorted(unknown)}; choose from {', '.join(PARTS)}")
    try:
        args.matmul = [int(s) for s in args.matmul.split(",") if s.strip()]
    except ValueError:
        p.error("argument --matmul: comma-separated whole numbers")
    if args.repeat < 1 or args.sweep_repeat < 1:
        p.error("arguments --repeat, --sweep-repeat: at least 1")
    if args.threshold is not None:
        try:
            args.threshold = (_threshold(args.threshold),)  # a tuple: None is a setting
        except ValueError as e:
            p.error(f"argument --threshold: {e}")
    return args


def _sizes(max_size: int) -> list[int]:
    return [s for s in SIZES if s <= max_size] or [max_size]


def run_workloads(args: argparse.Namespace, dev: ha.Device, libs: dict[str, Any],
                  skipped: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for key in (k for k in WORKLOADS if k in args.parts):
        wl = WORKLOADS[key]
        rows = []
        if key == "matmul":
            cases = [(n, n * n * 4, f"n={n}") for n in args.matmul]
        else:
            cases = [(s // 4, s, format_size(s)) for s in _sizes(args.max_size)]
        for n, nbytes, label in cases:
            why = _fits(nbytes, dev, 4)
            if why:
                _progress(f"{key} {label}: skipped, {why}")
                rows.append({"n": n, "label": label, "skipped": why})
                continue
            rows.append(measure_row(libs, skipped, wl, n, args.repeat, label))
        out[key] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dev = ha.device(args.device or os.environ.get("HOSTARRAY_DEVICE") or "opencl")
    if dev.framework != "opencl":
        print(f"{dev} is not an OpenCL device", file=sys.stderr)
        return 2
    libs, skipped, cupy_text = _libs(dev, args.no_cupy)
    old = None
    if args.threshold is not None:
        old = ha.set_device_compute_threshold(args.threshold[0])
    result: dict[str, Any] = {
        "benchmark": "compute", **run_header(dev), "cupy": cupy_text, "repeat": args.repeat,
        "threshold": ha.device_compute_threshold(),
        "hostarray_link_env": os.environ.get("HOSTARRAY_LINK"), "workloads": {},
    }
    _progress(f"compute: {dev} ({dev.name}), link {dev.link}, threshold "
              f"{result['threshold']}, CuPy: {cupy_text}")
    try:
        result["workloads"] = run_workloads(args, dev, libs, skipped)
    finally:
        if args.threshold is not None:
            ha.set_device_compute_threshold(old)
    if "sweep" in args.parts:
        sizes = [s for s in (4096 << k for k in range(40)) if s <= args.sweep_max]
        result["sweep"] = measure_sweep(libs["ha"], sizes, args.sweep_repeat)
        result["sweep_repeat"] = args.sweep_repeat
    text = format_result(result)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compute.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "compute.md"), "w") as f:
        f.write(format_markdown(result))
    if _verdicts(result):
        print("FAILED: a value differs from numpy's or a library raised (see above)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
