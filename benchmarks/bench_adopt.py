"""Adopting ordinary numpy arrays on a device: shared or copied, and what it costs.

For ``np.arange``, ``np.linspace`` and ``np.empty`` float32 arrays of each size:
whether ``ha.asarray(a, device=dev)`` shares ``a``'s memory; the median time of
that call right after the array is made (and, *warm*, called again and again on
one array, the result dropped each time); of the first launch that uses the
array (a one-work-item kernel reading it: the buffer is created and the array
published; while the caller holds ``a`` the launch also waits, see the coherence
model); then of a second launch with ``a`` still held and of one after ``del a``.
``copy=True`` (a copy into page-aligned storage, lazy from the start) is measured
for scale.

    python3 benchmarks/bench_adopt.py [--device opencl:0:0] [--sizes 1MiB,64MiB] [--repeat 9]
                                      [--json PATH]
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

import hostarray as ha  # noqa: E402
from hostarray.bench import format_size, parse_size  # noqa: E402

SRC = r"""
__kernel void touch(__global const float *x, __global float *out) {
    if (get_global_id(0) == 0) out[0] = x[0];
}
"""

MAKERS: dict[str, Callable[[int], np.ndarray]] = {
    "np.arange": lambda n: np.arange(n, dtype=np.float32),
    "np.linspace": lambda n: np.linspace(0.0, 1.0, n, dtype=np.float32),
    "np.empty": lambda n: np.empty(n, dtype=np.float32),
}


def _us(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1e6


def measure(dev: Any, make: Callable[[int], np.ndarray], nbytes: int, repeat: int,
            copy: bool | None) -> dict[str, Any]:
    """Medians (µs) over ``repeat`` fresh arrays: asarray, first launch, next launch with
    the numpy array held, next launch after it is dropped; and whether memory is shared."""
    prg = ha.Program(SRC, device=dev)
    out = ha.zeros(16, dtype=ha.float32, device=dev)
    n = nbytes // 4
    t_asarray, t_first, t_held, t_dropped, shared = [], [], [], [], []
    publishes = []
    for i in range(repeat + 1):  # the first round warms up (program, allocator)
        a = make(n)
        t0 = time.perf_counter()
        x = ha.asarray(a, device=dev, copy=copy)
        t1 = time.perf_counter()
        ha.reset_stats()
        prg.touch(1, x, ha.write(out)).wait()
        t2 = time.perf_counter()
        p_first = ha.stats().publishes
        prg.touch(1, x, ha.write(out)).wait()
        t3 = time.perf_counter()
        same = bool(np.shares_memory(x._a, a))
        del a
        prg.touch(1, x, ha.write(out)).wait()  # the first launch after: publishes what the
        t4 = time.perf_counter()               # user may have written, once
        prg.touch(1, x, ha.write(out)).wait()
        t5 = time.perf_counter()
        if i:
            t_asarray.append(t1 - t0)
            t_first.append(t2 - t1)
            t_held.append(t3 - t2)
            t_dropped.append(t5 - t4)
            shared.append(same)
            publishes.append(p_first)
        del x
        gc.collect()
    a = make(n)
    ha.asarray(a, device=dev, copy=copy)
    warm = []
    for _ in range(max(3, min(200, 2**24 // nbytes))):  # the result dropped each time
        t0 = time.perf_counter()
        ha.asarray(a, device=dev, copy=copy)
        warm.append(time.perf_counter() - t0)
    return {"shares": all(shared), "asarray_us": _us(t_asarray), "asarray_warm_us": _us(warm),
            "first_launch_us": _us(t_first),
            "next_launch_held_us": _us(t_held), "next_launch_dropped_us": _us(t_dropped),
            "first_launch_publishes": max(publishes)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None,
                   help="OpenCL device (default: HOSTARRAY_DEVICE, else the first one)")
    p.add_argument("--sizes", default="1MiB,64MiB",
                   help="comma-separated sizes (default 1MiB,64MiB; GB = 10**9 bytes, "
                        "GiB = 2**30)")
    p.add_argument("--repeat", type=int, default=9, help="fresh arrays per median (default 9)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    args = p.parse_args(argv)
    if args.device is not None:
        dev = ha.device(args.device)
    else:
        dev = ha.default_device()
        if dev.framework != "opencl":
            dev = next(d for d in ha.devices() if d.framework == "opencl")
    print(f"device {dev} ({dev.name}), link {dev.link}, host alignment {dev.host_alignment} B, "
          f"sub-buffer alignment {dev.alignment} B; medians of {args.repeat} fresh arrays")
    rows = []
    header = (f"{'array':<12} {'size':>7} {'copy':>5} {'shares':>6} {'asarray µs':>11} "
              f"{'(warm)':>8} "
              f"{'1st launch µs':>14} {'next, a held':>13} {'next, a dropped':>16}")
    print(header)
    print("-" * len(header))
    for text in args.sizes.split(","):
        nbytes = parse_size(text.strip())
        for name, make in MAKERS.items():
            for copy in (None, True):
                r = measure(dev, make, nbytes, args.repeat, copy)
                r.update(array=name, size=nbytes, copy=copy)
                rows.append(r)
                print(f"{name:<12} {format_size(nbytes):>7} {str(bool(copy)):>5} "
                      f"{'yes' if r['shares'] else 'no':>6} {r['asarray_us']:>11.1f} "
                      f"{r['asarray_warm_us']:>8.1f} "
                      f"{r['first_launch_us']:>14.1f} {r['next_launch_held_us']:>13.1f} "
                      f"{r['next_launch_dropped_us']:>16.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "name": dev.name, "link": dev.link,
                       "host_alignment": dev.host_alignment, "alignment": dev.alignment,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
