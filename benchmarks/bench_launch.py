"""Per-launch cost of a small kernel on data that stays on the device: hostarray vs pyopencl.

One float32 array, already on the device (hostarray: attached and current there, the host
stale; nothing is read back while timing).  One timed batch is ``--launches`` (default 200)
launches of ``x[i] = 2 * x[i] + 1`` over the whole array, then one queue finish; the time per
launch is the batch's wall time over the launches, the median of ``--repeat`` batches after a
warm-up.  The variants (the ``how`` column):

* ``ha``: hostarray, ``prg.affine(n, x)`` (``ha.Program``; every argument checked, the
  coherence state consulted and updated, a :class:`~hostarray.kernels.Launch` returned);
* ``ha op`` / ``ha op new``: a generated kernel of the device compute path, ``x += 0.0`` in
  place and ``x + 0.0`` into a pooled result (``ha.set_device_compute_threshold(0)``; the
  values stay those of ``ha``);
* ``cl``: raw pyopencl, ``k.set_args(buf)`` and ``cl.enqueue_nd_range_kernel(q, k, (n,),
  None)`` on a plain device ``cl.Buffer``: the floor hostarray is measured against;
* ``cl call``: pyopencl's own ``k(q, (n,), None, buf)``;
* ``cl ha-buf``: raw pyopencl on hostarray's own buffer (``hostptr.cl_buffer(x)``): the
  driver's cost of that buffer (a ``CL_MEM_USE_HOST_PTR`` one on the shared and mapped
  links), so that ``ha`` minus this is hostarray's Python alone;
* ``cupy raw`` / ``cupy ew`` (when CuPy imports and sees a CUDA device): a ``RawKernel`` and
  an ``ElementwiseKernel`` on a CuPy array, the stream synchronised at the end.

Every OpenCL variant uses hostarray's device, context and in-order queue and the same
kernel source.  Besides the wall time, the launching thread's own CPU time per launch
(``time.thread_time``, the final finish left out) is recorded: on a CPU device the kernels
run on the driver's threads, so this is the host's cost of issuing one launch; the kernel's
own time is measured alone with OpenCL profiling.  ``limit`` names what dominates: the
device when a kernel takes longer than issuing it, else the host, named ``Python`` when
hostarray's time above ``cl`` exceeds ``cl``'s own, else ``driver``.

hostarray's counters (``ha.stats()``) are checked for every batch: exactly the launches,
no publish and no acquire; and each variant's values are checked against numpy.

    python3 benchmarks/bench_launch.py [--device opencl:0:0] [--sizes 4KiB,1MiB]
                                       [--launches 200] [--repeat 5] [--link copied]
                                       [--profile] [--json PATH]
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
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _peers import _progress, python_reference, run_header  # noqa: E402

import hostarray as ha  # noqa: E402
from hostarray._bench_report import (  # noqa: E402
    _fmt_t,
    _legend,
    _table,
    _wrap,
    format_size,
    parse_size,
)
from hostarray.bench import _fits, forced_link  # noqa: E402

SRC = ("__kernel void affine(__global float *x) "
       "{ size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }")
CUDA_SRC = (r'extern "C" __global__ void affine(float *x, unsigned long long n) '
            r"{ unsigned long long i = (unsigned long long)blockDim.x * blockIdx.x + "
            r"threadIdx.x; if (i < n) x[i] = 2 * x[i] + 1; }")
GOAL_US = 10.0  # what a launch through hostarray may cost above raw pyopencl (issue 12)
VARIANTS = ("ha", "ha op", "ha op new", "cl", "cl call", "cl ha-buf", "cupy raw", "cupy ew")


def expected_after(k: int) -> np.float32:
    """``x`` after ``k`` launches from 0, in float32 as the kernels compute it."""
    v = np.float32(0)
    with np.errstate(over="ignore"):
        for _ in range(k):
            v = np.float32(2) * v + np.float32(1)
    return v


def batch(launch: Callable[[], Any], sync: Callable[[], Any], launches: int,
          repeat: int) -> dict[str, Any]:
    """``repeat`` timed batches of ``launches`` launches and one ``sync`` (after a warm-up
    batch): median wall and launching-thread CPU seconds per launch."""
    walls, cpus = [], []
    gc_was = gc.isenabled()
    gc.disable()  # a collection inside one batch is noise, not launch cost
    try:
        for i in range(repeat + 1):
            sync()
            c0 = time.thread_time()
            t0 = time.perf_counter()
            for _ in range(launches):
                launch()
            c1 = time.thread_time()
            sync()
            t1 = time.perf_counter()
            if i:
                walls.append((t1 - t0) / launches)
                cpus.append((c1 - c0) / launches)
    finally:
        if gc_was:
            gc.enable()
    return {"s_per_launch": statistics.median(walls), "host_s_per_launch":
            statistics.median(cpus), "batches_s_per_launch": walls}


def split_batch(launch: Callable[[], Any], sync: Callable[[], Any], launches: int,
                repeat: int) -> dict[str, float]:
    """hostarray's cost of issuing one launch, in the launching thread's CPU time, split in
    two: the driver's ``clEnqueueNDRangeKernel`` (pyopencl's ``enqueue_nd_range_kernel``,
    wrapped by a timer for these batches) and the rest, hostarray's own Python (with
    pyopencl's ``set_args``).  CPU time, not wall time: on a CPU device the kernels run on
    the same cores and would be counted as the host's.  The timer's own cost is measured on
    a function doing nothing and taken off.  Medians of ``repeat`` batches after a
    warm-up, the final finish left out."""
    import pyopencl as cl

    real = cl.enqueue_nd_range_kernel
    inside = [0]
    clock = time.thread_time_ns

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*a: Any, **kw: Any) -> Any:
            t0 = clock()
            try:
                return fn(*a, **kw)
            finally:
                inside[0] += clock() - t0
        return timed

    def nothing(*a: Any, **kw: Any) -> None:
        return None

    def per_call(fn: Callable[[], Any], count: int) -> tuple[float, float]:
        inside[0] = 0
        t0 = clock()
        for _ in range(count):
            fn()
        return (clock() - t0) * 1e-9 / count, inside[0] * 1e-9 / count

    gc_was = gc.isenabled()
    gc.disable()
    try:
        # the timer's cost: what it adds to a call, and what of it lands inside
        timed_nothing = wrap(nothing)
        cal = [(per_call(timed_nothing, 2000), per_call(nothing, 2000)) for _ in range(5)]
        added = statistics.median(w[0] - b[0] for w, b in cal)
        added_inside = statistics.median(w[1] for w, _ in cal)
        issue, enqueue = [], []
        cl.enqueue_nd_range_kernel = wrap(real)  # hostarray.kernels calls it via the module
        try:
            for i in range(repeat + 1):
                sync()
                t_issue, t_in = per_call(launch, launches)
                if i:
                    issue.append(t_issue)
                    enqueue.append(t_in)
            sync()
        finally:
            cl.enqueue_nd_range_kernel = real
    finally:
        if gc_was:
            gc.enable()
    t_issue, t_in = statistics.median(issue), statistics.median(enqueue)
    t_enq = max(0.0, t_in - added_inside)
    return {"issue_cpu_s": t_issue - added, "enqueue_s": t_enq,
            "python_s": max(0.0, t_issue - added - t_enq), "timer_s": added}


def device_time(dev: ha.Device, n: int, launches: int) -> float:
    """Median seconds of one kernel alone (OpenCL profiling, its own queue and buffer)."""
    import pyopencl as cl

    ctx = dev.runtime.context
    pq = cl.CommandQueue(ctx, dev._cl_device,
                         properties=cl.command_queue_properties.PROFILING_ENABLE)
    k = cl.Kernel(cl.Program(ctx, SRC).build(), "affine")
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
    cl.enqueue_fill_buffer(pq, buf, np.float32(0), 0, 4 * n)
    evs = [k(pq, (n,), None, buf) for _ in range(min(launches, 50) + 1)]
    pq.finish()
    t = statistics.median((e.profile.end - e.profile.start) * 1e-9 for e in evs[1:])
    buf.release()
    return t


def measure_size(dev: ha.Device, nbytes: int, launches: int, repeat: int, link: str | None,
                 profile: bool) -> dict[str, Any]:
    import pyopencl as cl

    n = nbytes // 4
    q = ha.hostptr.queue(dev)
    ctx = dev.runtime.context
    prg = ha.Program(SRC, device=dev)
    raw = cl.Kernel(cl.Program(ctx, SRC).build(), "affine")
    row: dict[str, Any] = {"size": nbytes, "n": n, "runs": {}}
    runs = row["runs"]
    total = launches * (repeat + 1)

    # hostarray: attached by the first launch, device-current from then on
    x = ha.zeros(n, dtype=ha.float32, device=dev)
    with forced_link(dev, link):
        prg.affine(n, x)
    ok = float(x[0]) == 1.0  # the host reads once: from here the device alone works on x
    prg.affine(n, x)
    kern = prg.affine
    counts: list[dict[str, int]] = []

    def ha_sync() -> None:
        q.finish()

    def ha_batch_stats() -> None:
        s0 = ha.stats()
        for _ in range(launches):
            kern(n, x)
        q.finish()
        s1 = ha.stats()
        counts.append({k: getattr(s1, k) - getattr(s0, k)
                       for k in ("launches", "publishes", "acquires", "waits")})

    _progress(f"{format_size(nbytes)}: ha")
    runs["ha"] = batch(lambda: kern(n, x), ha_sync, launches, repeat)
    ha_batch_stats()  # untimed: what one batch synchronised
    c = counts[-1]
    runs["ha"]["stats"] = c
    runs["ha"]["split"] = split_batch(lambda: kern(n, x), q.finish, launches, repeat)
    clean = c == {"launches": launches, "publishes": 0, "acquires": 0, "waits": 0}
    if profile:
        import cProfile
        import pstats

        pr = cProfile.Profile()
        pr.enable()
        for _ in range(launches):
            kern(n, x)
        pr.disable()
        q.finish()
        st = pstats.Stats(pr)
        top = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:8]  # type: ignore[attr-defined]
        runs["ha"]["profile"] = [
            {"function": f"{os.path.basename(f)}:{line}({name})",
             "own_us_per_launch": v[2] / launches * 1e6,
             "cumulative_us_per_launch": v[3] / launches * 1e6}
            for (f, line, name), v in top]
    done = 2 + 2 * total + launches + (launches if profile else 0)
    runs["ha"]["correct"] = ok and bool(np.all(np.asarray(x) == expected_after(done)))
    runs["ha"]["link"] = ha.hostptr.host_link(x, dev).kind
    runs["ha"]["counters_clean"] = clean

    # generated kernels (the device compute path): in place, and into a pooled result
    prg.affine(n, x)  # the check above read x back: the device newest again
    done += 1
    old = ha.set_device_compute_threshold(0)
    ops = (("ha op", lambda: x.__iadd__(0.0)), ("ha op new", lambda: x + 0.0))
    if runs["ha"]["link"] == "shared":  # numpy reads the device's bytes: no generated kernels
        for name, _ in ops:
            runs[name] = {"skipped": "the device compute path does not run on a shared link "
                                     "(--link copied measures it)"}
        ops = ()
    try:
        for name, fn in ops:
            _progress(f"{format_size(nbytes)}: {name}")
            fn()
            s0 = ha.stats()
            runs[name] = batch(fn, q.finish, launches, repeat)
            s1 = ha.stats()
            delta = {k: getattr(s1, k) - getattr(s0, k)
                     for k in ("device_ops", "publishes", "acquires", "host_fallbacks")}
            runs[name]["stats"] = delta
            runs[name]["counters_clean"] = delta == {"device_ops": total, "publishes": 0,
                                                     "acquires": 0, "host_fallbacks": 0}
            runs[name]["link"] = runs["ha"]["link"]
            runs[name]["correct"] = bool(np.all(np.asarray(x) == expected_after(done)))
            prg.affine(n, x)  # the check read x back: the device newest again
            done += 1
    finally:
        ha.set_device_compute_threshold(old)

    # raw pyopencl on a plain device buffer, then on hostarray's own buffer
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
    cl.enqueue_fill_buffer(q, buf, np.float32(0), 0, 4 * n)
    target = [buf]

    def cl_raw() -> None:
        raw.set_args(target[0])
        cl.enqueue_nd_range_kernel(q, raw, (n,), None)

    def cl_call() -> None:
        raw(q, (n,), None, target[0])

    for name, fn in (("cl", cl_raw), ("cl call", cl_call)):
        _progress(f"{format_size(nbytes)}: {name}")
        runs[name] = batch(fn, q.finish, launches, repeat)
    out = np.empty(n, np.float32)
    cl.enqueue_copy(q, out, buf, is_blocking=True)
    for name in ("cl", "cl call"):
        runs[name]["correct"] = bool(np.all(out == expected_after(2 * total)))
    _progress(f"{format_size(nbytes)}: cl ha-buf")
    with ha.hostptr.cl_buffer(x, dev) as hbuf:  # the device's writes recorded on exit
        target[0] = hbuf
        runs["cl ha-buf"] = batch(cl_raw, q.finish, launches, repeat)
        raw.set_arg(0, None)
        del hbuf
    target.clear()
    runs["cl ha-buf"]["correct"] = bool(np.all(np.asarray(x) == expected_after(done + total)))
    del out
    buf.release()

    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()  # raises without a CUDA device
    except ImportError as e:
        runs["cupy raw"] = runs["cupy ew"] = {"skipped": f"not installed ({e})"}
    except Exception as e:  # noqa: BLE001 -- e.g. no CUDA device
        runs["cupy raw"] = runs["cupy ew"] = {"skipped": f"unusable: {type(e).__name__}: {e}"}
    else:
        d = cp.zeros(n, dtype=cp.float32)
        rk = cp.RawKernel(CUDA_SRC, "affine")
        ew = cp.ElementwiseKernel("", "float32 x", "x = 2 * x + 1", "bench_launch_affine")
        grid, block, nn = ((n + 255) // 256,), (256,), np.uint64(n)
        stream = cp.cuda.get_current_stream()
        cdone = 0
        for name, fn in (("cupy raw", lambda: rk(grid, block, (d, nn))),
                         ("cupy ew", lambda: ew(d))):
            _progress(f"{format_size(nbytes)}: {name}")
            runs[name] = batch(fn, stream.synchronize, launches, repeat)
            cdone += total
        got = cp.asnumpy(d)
        for name in ("cupy raw", "cupy ew"):
            runs[name]["correct"] = bool(np.all(got == expected_after(cdone)))
        del d, got
        cp.get_default_memory_pool().free_all_blocks()

    row["device_s"] = device_time(dev, n, launches)
    _breakdown(row)
    return row


def _breakdown(row: dict[str, Any]) -> None:
    """Differences to raw pyopencl, and what limits each variant."""
    runs = row["runs"]
    dev_t = row["device_s"]
    base = runs["cl"]
    for name, r in runs.items():
        if "s_per_launch" not in r:
            continue
        r["over_cl_s"] = r["s_per_launch"] - base["s_per_launch"]
        host = r["host_s_per_launch"]
        if name.startswith("cupy"):
            r["limit"] = "host"  # its Cython and the CUDA driver, not told apart
        elif dev_t >= host:
            r["limit"] = "device"
        elif name == "cl":
            r["limit"] = "driver"
        else:
            r["limit"] = "Python" if host - base["host_s_per_launch"] > \
                base["host_s_per_launch"] else "driver"
    ha_run = runs["ha"]
    row["ha_over_cl_us"] = ha_run["over_cl_s"] * 1e6
    split = ha_run["split"]
    row["ha_python_us"] = split["python_s"] * 1e6
    row["ha_enqueue_us"] = split["enqueue_s"] * 1e6
    parts = {"kernel": dev_t, "enqueue": split["enqueue_s"], "Python": split["python_s"]}
    row["ha_dominant"] = max(parts, key=lambda k: parts[k])
    row["goal_met"] = row["ha_over_cl_us"] <= GOAL_US


def format_result(result: dict[str, Any]) -> str:
    d = result["device"]
    forced = result["forced_link"]
    lines = _wrap(f"launch cost -- {d['spec']} ({d['name']}), link {d['link']}"
                  + (f" (hostarray's buffers forced to {forced})" if forced else "")
                  + f"; CuPy: {result['cupy']}; {result['date']}{python_reference(result)}; "
                  f"medians of {result['repeat']} batches of {result['launches']} launches "
                  f"after a warm-up")
    header = ["size", "how", "per launch", "over cl", "host CPU", "limit", "correct"]
    rows: list[Any] = []
    for row in result["rows"]:
        size = format_size(row["size"])
        if "skipped" in row:
            rows.append((size, f"skipped: {row['skipped']}"))
            continue
        for name in VARIANTS:
            r = row["runs"].get(name, {})
            if "s_per_launch" not in r:
                why = r.get("skipped", "failed")
                why = next((w for w in ("not installed", "unusable") if why.startswith(w)),
                           "failed")
                rows.append([size, name, why, "-", "-", "-", "-"])
                continue
            ok = r["correct"] and r.get("counters_clean", True)
            rows.append([size, name, _fmt_t(r["s_per_launch"]),
                         f"{r['over_cl_s'] * 1e6:+.1f} us" if name != "cl" else "-",
                         _fmt_t(r["host_s_per_launch"]), r["limit"],
                         "yes" if ok else "NO"])
    lines += _table(header, rows, "llrrrll", keep=2)
    lines += _legend([
        ("how", "ha: hostarray prg.affine(n, x); cl: raw pyopencl set_args + "
                "enqueue_nd_range_kernel on a device cl.Buffer; cl call: pyopencl's "
                "k(q, (n,), None, buf); cl ha-buf: raw pyopencl on hostarray's own buffer; "
                "cupy raw / cupy ew: CuPy RawKernel / ElementwiseKernel"),
        ("per launch", "wall time of one batch (launches, then one queue finish) over its "
                       "launches"),
        ("over cl", "per launch minus cl's: what the variant adds to a raw pyopencl "
                    "enqueue of the same kernel (CuPy: a different driver, for scale)"),
        ("host CPU", "the launching thread's CPU time per launch, the final finish left out "
                     "(the host's cost of issuing one launch)"),
        ("limit", "device when one kernel alone (below) takes at least the host CPU time, "
                  "else host: Python when the variant's host CPU above cl's exceeds cl's "
                  "own, else driver (cupy: host)"),
        ("correct", "the values match numpy's; for ha also: each batch counted exactly its "
                    "launches, no publish, acquire or wait")])
    lines += ["", "hostarray above raw pyopencl, per launch"]
    sub: list[Any] = []
    for row in result["rows"]:
        if "skipped" in row:
            continue
        sub.append([format_size(row["size"]), row["runs"]["ha"].get("link", "-"),
                    _fmt_t(row["device_s"]), f"{row['ha_enqueue_us']:.1f} us",
                    f"{row['ha_python_us']:.1f} us", row["ha_dominant"],
                    f"{row['ha_over_cl_us']:.1f} us",
                    f"<= {GOAL_US:g} us: {'met' if row['goal_met'] else 'NOT met'}"])
    lines += _table(["size", "ha link", "kernel", "enqueue", "Python", "dominates", "ha - cl",
                     "goal"], sub, "llrrrlrl")
    lines += _legend([
        ("kernel", "one kernel alone, timed by OpenCL profiling on this device"),
        ("enqueue", "the launching thread's CPU time inside the driver's "
                    "clEnqueueNDRangeKernel per hostarray launch (one more batch, the call "
                    "wrapped by a timer, its cost taken off); on a CPU device it grows when the "
                    "queue runs dry between launches (the driver wakes its threads)"),
        ("Python", "the rest of the thread's CPU time issuing one hostarray launch: "
                   "hostarray's own code (argument checks, coherence, bookkeeping) and "
                   "pyopencl's set_args"),
        ("dominates", "the largest of kernel, enqueue and Python"),
        ("ha - cl", "hostarray's time per launch minus raw pyopencl's (the issue-12 figure)"),
        ("goal", f"a launch through hostarray costs at most {GOAL_US:g} us more than raw "
                 f"pyopencl")])
    for row in result["rows"]:
        prof = row.get("runs", {}).get("ha", {}).get("profile")
        if prof:
            lines += ["", f"{format_size(row['size'])}: hostarray's launch under cProfile "
                          f"(inflated by the profiler), the functions costing most"]
            lines += _table(["function", "own", "with callees"],
                            [[p["function"][:70], f"{p['own_us_per_launch']:.1f} us",
                              f"{p['cumulative_us_per_launch']:.1f} us"] for p in prof])
            lines += _legend([("own", "seconds in the function itself per launch (driver "
                                      "calls included: they are not Python functions)"),
                              ("with callees", "the same with the functions it calls")])
    bad = [f"{format_size(row['size'])} {name}" for row in result["rows"]
           for name, r in row.get("runs", {}).items()
           if "s_per_launch" in r and not (r["correct"] and r.get("counters_clean", True))]
    lines += [""] + _wrap(f"every variant computed numpy's values and hostarray synchronised "
                          f"nothing while launching: {not bad}", "  ")
    for text in bad:
        lines += _wrap(f"WRONG {text}", "  ")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None,
                   help="an OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--sizes", default="4KiB,1MiB",
                   help="comma-separated array sizes, float32 (default 4KiB,1MiB: 1024 floats "
                        "and 1 MiB; GB = 10**9 bytes, GiB = 2**30)")
    p.add_argument("--launches", type=int, default=200,
                   help="launches per timed batch (default 200)")
    p.add_argument("--repeat", type=int, default=5, help="timed batches per median (default 5)")
    p.add_argument("--link", choices=["copied"], default=None,
                   help="force hostarray's buffers to this link kind")
    p.add_argument("--profile", action="store_true",
                   help="also run one batch of hostarray's launches under cProfile and list "
                        "the functions costing most")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    args = p.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
    except ValueError as e:
        p.error(f"argument --sizes: {e}")
    if args.repeat < 1 or args.launches < 1:
        p.error("--repeat and --launches: at least 1")

    dev = ha.device(args.device or os.environ.get("HOSTARRAY_DEVICE") or "opencl")
    if dev.framework != "opencl":
        p.error(f"{dev} is not an OpenCL device")
    try:
        import cupy as cp

        cupy_text = f"{cp.__version__}"
    except ImportError:
        cupy_text = "not installed"
    result: dict[str, Any] = {
        "benchmark": "launch", "launches": args.launches, "goal_us": GOAL_US,
        **run_header(dev), "cupy": cupy_text, "forced_link": args.link, "repeat": args.repeat,
        "rows": [],
    }
    _progress(f"launch: {dev} ({dev.name}), link {dev.link}, CuPy: {cupy_text}")
    for nbytes in sizes:
        why = _fits(nbytes, dev, 3)
        if why or nbytes < 4:
            why = why or "smaller than one float32"
            _progress(f"{format_size(nbytes)}: skipped, {why}")
            result["rows"].append({"size": nbytes, "skipped": why})
            continue
        result["rows"].append(measure_size(dev, nbytes, args.launches, args.repeat,
                                           args.link, args.profile))
    print(format_result(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    bad = [r for row in result["rows"] for r in row.get("runs", {}).values()
           if "s_per_launch" in r and not (r["correct"] and r.get("counters_clean", True))]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
