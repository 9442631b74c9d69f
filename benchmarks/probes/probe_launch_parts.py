"""Probe: the parts of a launch on one device, in the launching thread's CPU time.

pyopencl's own calls (``set_args``, ``set_arg(j, None)``, ``clEnqueueNDRangeKernel``, an event
status query, a blocking 4-byte read) next to hostarray's launches (a user kernel, a generated
in-place operation ``x += 0.0``, one into a pooled result ``x + 0.0``, ``ha.sum(x)``,
``float(ha.sum(x))``) on a float32 array a kernel left on the device, and a pure-Python reference
loop (``[None for _ in range(1000)]``): the host's Python speed, which sets hostarray's part
(the H200 machines ran it 2.7 times slower than the development machine).

Medians of 5 batches (gc off, the queue finished between batches).

    python3 benchmarks/probes/probe_launch_parts.py [--device opencl:0:0] [--size 4096]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/
from _common import probe_device  # noqa: E402 - it puts the checkout on the path

import hostarray as ha  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--size", type=int, default=4096, help="bytes of float32")
    a = p.parse_args()
    dev, q, n = probe_device(a.device, a.size)
    x = ha.asarray(np.zeros(n, np.float32), device=dev, copy=True)
    prg = ha.Program("__kernel void affine(__global float *x) "
                     "{ size_t i = get_global_id(0); x[i] = 2 * x[i] + 1; }", device=dev)
    prg.affine(n, x)
    q.finish()
    knl = prg.affine._cl
    buf = x._s.buffers[dev].buf  # the array's own buffer: the driver's cost of it
    done = cl.enqueue_marker(q)
    q.finish()
    host = np.empty(1, np.float32)
    status = cl.event_info.COMMAND_EXECUTION_STATUS

    def cpu(fn: Callable[[], Any], count: int) -> float:
        for _ in range(count // 10):
            fn()
        q.finish()
        runs = []
        for _ in range(5):
            t0 = time.thread_time()
            for _ in range(count):
                fn()
            runs.append((time.thread_time() - t0) / count)
            q.finish()
        return statistics.median(runs) * 1e6

    def in_place() -> None:
        nonlocal x
        x += 0.0

    knl.set_args(buf)
    parts: list[tuple[str, Callable[[], Any], int]] = [
        ("pyopencl set_args(buf)", lambda: knl.set_args(buf), 2000),
        ("pyopencl set_arg(0, None)", lambda: knl.set_arg(0, None), 2000),
        ("pyopencl set_args + enqueue", lambda: (knl.set_args(buf), cl.enqueue_nd_range_kernel(
            q, knl, (n,), None)), 2000),
        ("event status (finished)", lambda: done.get_info(status), 2000),
        ("blocking read of 4 bytes", lambda: cl.enqueue_copy(q, host, buf, is_blocking=True),
         300),
        ("hostarray user kernel", lambda: prg.affine(n, x), 2000),
        ("hostarray x += 0.0", in_place, 2000),
        ("hostarray x + 0.0", lambda: x + 0.0, 2000),
        ("hostarray ha.sum(x)", lambda: ha.sum(x), 500),
        ("hostarray float(ha.sum(x))", lambda: float(ha.sum(x)), 300),
        ("Python reference loop", lambda: [None for _ in range(1000)], 200),
    ]
    print(f"{dev} ({dev.name}), link {dev.link}, {a.size} bytes; the launching thread's CPU "
          f"time per call, medians of 5 batches")
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for label, fn, count in parts:
            print(f"{label:30s} {cpu(fn, count):8.2f} us", flush=True)
    finally:
        if gc_was:
            gc.enable()


if __name__ == "__main__":
    main()
