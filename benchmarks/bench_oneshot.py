"""One-shot numpy -> kernel -> numpy on the user's own numpy array, against CuPy and pyopencl.

The input is an ordinary numpy array the caller already has (``np.arange``: numpy's own
allocation, not page-aligned).  Each library moves it to the device, runs one
``x = 2x + 1`` kernel over it, and hands the result back as numpy:

* hostarray: ``x = ha.asarray(a, device=dev)`` (zero-copy where the device's host-pointer
  alignment allows), ``prg.affine(n, x)``, ``np.asarray(x)``;
* CuPy (when installed): ``cp.asarray(a)``, an ``ElementwiseKernel``, ``cp.asnumpy``;
* pyopencl.array: ``cla.to_device``, the same OpenCL kernel, ``.get()``.

Medians of ``--repeat`` runs after one warm-up, in one process, with the bytes each moved.

    python3 benchmarks/bench_oneshot.py [--device opencl:0:0] [--sizes 1MiB,64MiB,1GiB]
                                        [--repeat 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402
from hostarray.bench import format_size, parse_size  # noqa: E402

SRC = "__kernel void affine(__global float *x) { int i = get_global_id(0); x[i] = 2 * x[i] + 1; }"


def measure(dev: ha.Device, nbytes: int, repeat: int) -> dict[str, Any]:
    import pyopencl as cl
    import pyopencl.array as cla

    n = nbytes // 4
    a0 = np.arange(n, dtype=np.float32) % 1000
    expected = 2 * a0 + 1
    prg = ha.Program(SRC, device=dev)
    q = ha.hostptr.queue(dev)
    raw = cl.Program(dev.runtime.context, SRC).build().affine
    runs: dict[str, Any] = {}

    def ha_run(a: np.ndarray) -> np.ndarray:
        x = ha.asarray(a, device=dev)
        prg.affine(n, x)
        return np.asarray(x)

    def cl_run(a: np.ndarray) -> np.ndarray:
        d = cla.to_device(q, a)
        raw(q, (n,), None, d.data)
        return d.get()

    libs = {"hostarray": ha_run, "pyopencl.array": cl_run}
    try:
        import cupy as cp

        k = cp.ElementwiseKernel("", "float32 x", "x = 2 * x + 1", "affine")

        def cp_run(a: np.ndarray) -> np.ndarray:
            d = cp.asarray(a)
            k(d)
            return cp.asnumpy(d)

        libs["cupy"] = cp_run
    except ImportError:
        pass
    for name, fn in libs.items():
        times, ok, moved = [], True, 0
        for i in range(repeat + 1):
            a = a0.copy()  # the user's array, in numpy's own memory
            shared = None
            ha.reset_stats()
            t0 = time.perf_counter()
            r = fn(a)
            t = time.perf_counter() - t0
            if name == "hostarray":
                moved = ha.stats().bytes_moved
                shared = np.shares_memory(r, a)
            ok &= bool(np.array_equal(r, expected))
            if i:
                times.append(t)
            del r, a
        runs[name] = {"median_s": statistics.median(times), "correct": ok}
        if name == "hostarray":
            runs[name].update(bytes_moved=moved, shared=shared)
    base = runs["hostarray"]["median_s"]
    for v in runs.values():
        v["ratio_to_hostarray"] = v["median_s"] / base
    return {"size": nbytes, "runs": runs}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None, help="an OpenCL device (default: the first)")
    p.add_argument("--sizes", default="1MiB,64MiB,1GiB",
                   help="comma-separated sizes (default 1MiB,64MiB,1GiB; GB = 10**9 bytes, "
                        "GiB = 2**30)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    args = p.parse_args()
    dev = ha.device(args.device or "opencl")
    print(f"device {dev} ({dev.name}), link {dev.link}, host alignment {dev.host_alignment} B")
    rows = [measure(dev, parse_size(s), args.repeat) for s in args.sizes.split(",")]
    print(f"{'size':>8}  {'library':<15} {'median ms':>10} {'vs hostarray':>12}  correct  notes")
    for row in rows:
        for name, v in row["runs"].items():
            note = (f"shared={v['shared']}, moved {v['bytes_moved'] / 2**20:.1f} MiB"
                    if name == "hostarray" else "")
            print(f"{format_size(row['size']):>8}  {name:<15} {v['median_s'] * 1e3:>10.2f} "
                  f"{v['ratio_to_hostarray']:>11.2f}x  {str(v['correct']):<7}  {note}")
    print("vs hostarray: the library's median time / hostarray's; > 1 means hostarray is "
          "faster, by that factor")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(v["correct"] for r in rows for v in r["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
