"""Lazy fusion (issue 23): host time per element-wise operation, and fused chains vs CuPy.

Host-time figures (medians of ``--repeat`` rounds, microseconds), on data a kernel left
on the device:

* ``node``: building one pending operation (``y = x * 2.0 + 1.0``, two nodes, results
  dropped unread: nothing is ever launched), per operation;
* ``fused launch``: enqueueing a pending two-operation expression (the kernel cached),
  per launch, the queue not waited for;
* ``eager op``: one operation with fusion off (one launch per operation, as before
  issue 23: main's per-operation cost);
* ``raw pyopencl``: ``set_args`` + ``enqueue_nd_range_kernel`` of a comparable kernel;
* ``cupy op``: ``y = x * 2.0 + 1.0`` in CuPy, per operation (when CuPy imports).

Chains (wall time per run, medians), every value checked against numpy, for each size of
``--sizes``: ``float(ha.sum(((x * x + 1) * 0.5 - x) / 3))`` and ``float(ha.sum(x * x + 1))``
on kernel output (``x = 2x + 1`` first): hostarray fused, hostarray eager (fusion off),
CuPy (when it imports), and the ratio CuPy / hostarray (> 1: hostarray faster).

Run: ``python3 benchmarks/bench_fusion.py [--sizes 1MiB,64MiB,1GiB] [--repeat 7]
[--link copied] [--json out.json]``.  On a CPU device use ``--link copied`` (the device
path never runs on a shared link); ``--profile`` prints cProfile's costliest functions
of building nodes.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from typing import Any

import numpy as np


def _size(text: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if text.endswith(u):
            return int(float(text[:-3]) * m)
    return int(text)


def _median_us(fn: Any, inner: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(inner)
        times.append((time.perf_counter() - t) / inner * 1e6)
    return statistics.median(times)


def _cupy() -> Any:
    try:
        import cupy  # type: ignore[import-not-found]

        cupy.zeros(1).sum()
        return cupy
    except Exception:
        return None


def host_costs(ha: Any, fusion: Any, dev: Any, repeat: int) -> dict[str, float]:
    import pyopencl as cl

    n = 1 << 12  # small: the kernels cost little next to the host time
    prg = ha.Program("__kernel void affine(__global float *x) "
                     "{ size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }", device=dev)
    x = ha.zeros(n, dtype=ha.float32, device=dev)
    prg.affine(x.shape, x)
    out: dict[str, float] = {}

    def nodes(k: int) -> None:
        for _ in range(k):
            x * 2.0 + 1.0

    nodes(200)
    out["node"] = _median_us(nodes, 500, repeat) / 2

    def flushes(k: int) -> None:
        ys = [x * 2.0 + 1.0 for _ in range(k)]
        t = time.perf_counter()
        for y in ys:
            fusion.evaluate(y)
        flushes.t += time.perf_counter() - t  # type: ignore[attr-defined]
        ha.hostptr.queue(dev).finish()

    times = []
    for _ in range(repeat):
        flushes.t = 0.0  # type: ignore[attr-defined]
        flushes(300)
        times.append(flushes.t / 300 * 1e6)  # type: ignore[attr-defined]
    out["fused launch"] = statistics.median(times)

    fusion.ENABLED[0] = False
    try:
        nodes(100)
        out["eager op"] = _median_us(nodes, 300, repeat) / 2
    finally:
        fusion.ENABLED[0] = True
    ha.hostptr.queue(dev).finish()

    q = ha.hostptr.queue(dev)
    raw = cl.Program(q.context, "__kernel void k(__global float *y, __global const float "
                     "*x, const float a, const float b) { size_t i = get_global_id(0); "
                     "y[i] = x[i] * a + b; }").build()
    k = raw.k
    bx = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, n * 4)
    by = cl.Buffer(q.context, cl.mem_flags.READ_WRITE, n * 4)

    def enqueues(m: int) -> None:
        for _ in range(m):
            k.set_args(by, bx, np.float32(2), np.float32(1))
            cl.enqueue_nd_range_kernel(q, k, (n,), None)
        q.finish()

    enqueues(100)
    out["raw pyopencl"] = _median_us(enqueues, 300, repeat)
    cp = _cupy()
    if cp is not None:
        cx = cp.zeros(n, dtype=cp.float32)

        def cupy_ops(m: int) -> None:
            for _ in range(m):
                cx * 2.0 + 1.0
            cp.cuda.Device().synchronize()

        cupy_ops(100)
        out["cupy op"] = _median_us(cupy_ops, 500, repeat) / 2
    return out


def chains(ha: Any, fusion: Any, dev: Any, sizes: list[int], repeat: int) -> list[dict[str, Any]]:
    cp = _cupy()
    prg = ha.Program("__kernel void affine(__global float *x) "
                     "{ size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }", device=dev)
    rows = []
    for nbytes in sizes:
        n = nbytes // 4
        base = (np.arange(n) % 8).astype(np.float32) * np.float32(0.25)
        ref_x = base * 2 + 1
        for name, f in (("long chain", lambda x: ((x * x + 1) * 0.5 - x) / 3),
                        ("x * x + 1", lambda x: x * x + 1)):
            expected = float(np.sum(f(ref_x), dtype=np.float64))
            row: dict[str, Any] = {"workload": name, "bytes": nbytes}
            x = ha.asarray(base, device=dev, copy=True)
            for label, fused in (("fused", True), ("eager", False)):
                fusion.ENABLED[0] = fused
                times = []
                try:
                    for _ in range(repeat):
                        x[...] = base
                        prg.affine(x.shape, x)
                        ha.hostptr.queue(dev).finish()
                        t = time.perf_counter()
                        v = float(ha.sum(f(x)))
                        times.append(time.perf_counter() - t)
                        assert abs(v - expected) <= 1e-4 * abs(expected) + 1e-3, (v, expected)
                finally:
                    fusion.ENABLED[0] = True
                row[label] = statistics.median(times) * 1e3
            del x
            ha.clear_pool()
            if cp is not None:
                cx0 = cp.asarray(base)
                times = []
                for _ in range(repeat):
                    cx = cx0 * 2 + 1
                    cp.cuda.Device().synchronize()
                    t = time.perf_counter()
                    v = float(cp.sum(f(cx)))
                    times.append(time.perf_counter() - t)
                    assert abs(v - expected) <= 1e-4 * abs(expected) + 1e-3
                row["cupy"] = statistics.median(times) * 1e3
                row["cupy/fused"] = row["cupy"] / row["fused"]
                del cx0, cx
                cp.get_default_memory_pool().free_all_blocks()
            rows.append(row)
            print(f"  {name:12s} {nbytes / 2**20:8.1f} MiB  fused {row['fused']:9.3f} ms  "
                  f"eager {row['eager']:9.3f} ms"
                  + (f"  cupy {row['cupy']:9.3f} ms  cupy/fused {row['cupy/fused']:.2f}"
                     if "cupy" in row else ""), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1MiB,16MiB,64MiB")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--link", choices=["copied", "mapped"], default=None)
    p.add_argument("--device", default=None)
    p.add_argument("--json", default=None)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--no-chains", action="store_true")
    args = p.parse_args(argv)
    if args.link:
        os.environ["HOSTARRAY_LINK"] = args.link
    import hostarray as ha
    from hostarray._compute import fusion

    dev = ha.device(args.device or "opencl")
    print(f"device {dev} ({dev.link} link), CuPy {'yes' if _cupy() is not None else 'no'}")
    old = ha.set_device_compute_threshold(0)
    try:
        costs = host_costs(ha, fusion, dev, args.repeat)
    finally:
        ha.set_device_compute_threshold(old)
    print("host time per call (us): " + ", ".join(f"{k} {v:.1f}" for k, v in costs.items()))
    if args.profile:
        old = ha.set_device_compute_threshold(0)
        x = ha.zeros(4096, dtype=ha.float32, device=dev)
        ha.Program("__kernel void k(__global float *x) { }", device=dev).k(x.shape, x)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            x * 2.0 + 1.0
        prof.disable()
        ha.set_device_compute_threshold(old)
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(15)
    rows = [] if args.no_chains else chains(
        ha, fusion, dev, [_size(s) for s in args.sizes.split(",")], args.repeat)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "link": dev.link, "host_us": costs,
                       "chains_ms": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
