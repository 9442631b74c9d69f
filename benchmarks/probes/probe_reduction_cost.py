"""Probe: where the time of ``float(ha.sum(x))`` goes on a device (data device-newest).

Times, medians of ``--repeat``: the reduction launched and the queue finished; the read of
its 0-d result alone; the two together; then a cProfile of the pair, by own time.

    python3 benchmarks/probes/probe_reduction_cost.py [--device opencl:0:0] [--size 1048576]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from _common import probe_device  # noqa: E402 - it puts the checkout on the path

import hostarray as ha  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--size", type=int, default=1 << 20, help="bytes of float32")
    p.add_argument("--repeat", type=int, default=50)
    a = p.parse_args()
    dev, q, n = probe_device(a.device, a.size)
    prg = ha.Program("__kernel void f(__global float *x) { x[get_global_id(0)] += 1; }",
                     device=dev)
    x = ha.asarray(np.ones(n, np.float32), device=dev, copy=True)
    prg.f(n, x)
    for _ in range(5):
        float(ha.sum(x))

    def med(fn: object) -> float:
        ts = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            fn()  # type: ignore[operator]
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e6

    def launch_only() -> None:
        ha.sum(x)
        q.finish()

    rs: list[ha.HostPtrArray] = []

    def read_only() -> None:
        float(rs.pop())

    print(f"{dev} link {dev.link}, {a.size} bytes")
    keep: list[ha.HostPtrArray] = []

    def split(op: object) -> tuple[float, float]:
        """Median host time of issuing ``op`` and of the queue finish after it."""
        issue, drain = [], []
        for _ in range(a.repeat):
            q.finish()
            t0 = time.perf_counter()
            keep.append(op())  # type: ignore[operator]
            t1 = time.perf_counter()
            q.finish()
            issue.append(t1 - t0)
            drain.append(time.perf_counter() - t1)
            keep.clear()
        return statistics.median(issue) * 1e6, statistics.median(drain) * 1e6

    for label, op in (("ha.sum(x)", lambda: ha.sum(x)), ("x * 2", lambda: x * 2),
                      ("ha.max(x)", lambda: ha.max(x))):
        i, d = split(op)
        print(f"{label:10s} issue {i:8.1f} us, then finish {d:8.1f} us")
    print(f"sum + finish:      {med(launch_only):9.1f} us")
    rs[:] = [ha.sum(x) for _ in range(a.repeat)]
    q.finish()
    print(f"float(r) alone:    {med(read_only):9.1f} us")
    print(f"float(ha.sum(x)):  {med(lambda: float(ha.sum(x))):9.1f} us")
    print(f"x * 2 + finish:    {med(lambda: (x * 2, q.finish())):9.1f} us")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(a.repeat):
        float(ha.sum(x))
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(15)
    print(s.getvalue())
    print(ha.stats())


if __name__ == "__main__":
    main()
