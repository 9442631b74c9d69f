"""Probe: the cost of acquiring a few bytes of a ``CL_MEM_USE_HOST_PTR`` buffer.

Two ways to bring the device's bytes ``[lo, hi)`` into the host memory under the buffer,
after a kernel wrote them: a blocking map for reading plus its unmap (what a publish or
acquire on the mapped link does), or a blocking ``clEnqueueReadBuffer`` into that very host
memory (valid on an in-order queue with no map outstanding: OpenCL 3.0, clEnqueueReadBuffer).
Each variant is checked (the host must see the kernel's value) and timed per read, median of
many, for 4 bytes to 256 MiB of a 256 MiB buffer (``--max-size``), with the rate in GB/s.

    python3 benchmarks/probes/probe_small_acquire.py [--device opencl:0:0] [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyopencl as cl

SRC = "__kernel void bump(__global float *x) { int i = get_global_id(0); x[i] += 1.0f; }"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--max-size", type=int, default=256 << 20)
    args = p.parse_args()
    dev = cl.get_platforms()[0].get_devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    n = args.max_size // 4
    raw = np.empty(n * 4 + 4096, np.uint8)
    off = -raw.ctypes.data % 4096
    host = raw[off:off + n * 4].view(np.float32)
    host[:] = 0
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=host)
    knl = cl.Program(ctx, SRC).build().bump
    u8 = host.view(np.uint8)
    print(f"device: {dev.name.strip()} ({dev.platform.name.strip()})")
    expect = 0.0
    for nbytes in (s for s in (4, 1 << 16, 1 << 20, 1 << 24, 1 << 28) if s <= n * 4):
        reps = max(5, args.repeat * 65536 // max(nbytes, 65536))
        for variant in ("map", "read"):
            times = []
            for _ in range(reps):
                knl(q, (1,), None, buf)  # element 0 only: the kernel's own time stays small
                expect += 1
                t0 = time.perf_counter()
                if variant == "map":
                    m, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ, 0, (nbytes,),
                                                 np.uint8, is_blocking=True)
                    m.base.release(q).wait()
                else:
                    cl.enqueue_copy(q, u8[:nbytes], buf, src_offset=0, is_blocking=True)
                times.append(time.perf_counter() - t0)
                if host[0] != expect:
                    raise SystemExit(f"WRONG: {variant} {nbytes} B read {host[0]}, "
                                     f"expected {expect}")
            # the kernel's time is inside the first blocking call: subtract the queue's own
            # drain by timing a finish after a kernel, the same way
            med = statistics.median(times)
            print(f"{variant:5s} {nbytes:10d} B: median {med * 1e6:10.1f} us "
                  f"(min {min(times) * 1e6:.1f}), {nbytes / med / 1e9:6.2f} GB/s")
    drains = []
    for _ in range(args.repeat):
        knl(q, (1,), None, buf)
        t0 = time.perf_counter()
        q.finish()
        drains.append(time.perf_counter() - t0)
    print(f"kernel + finish alone: median {statistics.median(drains) * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
