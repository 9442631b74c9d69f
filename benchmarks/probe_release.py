"""Probe: releasing a buffer with many sub-buffers (variants run one per process).

    python3 -X faulthandler benchmarks/probe_release.py VARIANT
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

SRC = """
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}"""


def main(variant: str) -> None:
    plat = [p for p in cl.get_platforms() if p.get_devices()][0]
    dev = plat.get_devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    k = cl.Kernel(cl.Program(ctx, SRC).build(), "copy")
    g = max(1, dev.mem_base_addr_align // 8)
    n = 4096
    host = np.arange(n, dtype=np.float32)
    parent = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    nsubs = int(variant.split("-")[1]) if "-" in variant else 300
    rng = np.random.default_rng(0)
    subs = []
    for _ in range(nsubs):
        off = int(rng.integers(1, n * 4 // g - 1)) * g
        size = int(rng.integers(1, (n * 4 - off) // 4 + 1)) * 4
        subs.append(parent.get_sub_region(off, size))
    print(variant, "created", len(subs), "sub-buffers", flush=True)
    if variant.startswith(("launch", "parentfirst")):
        for s in subs[:50]:
            k(q, (1,), None, s, parent)
        q.finish()
        print("launched", flush=True)
    if variant.startswith("parentfirst"):
        parent.release()
        print("parent released", flush=True)
    if variant.startswith("gc"):
        del subs, parent
        print(variant, "OK (dropped, no explicit release)", flush=True)
        return
    for s in subs:
        s.release()
    print("subs released", flush=True)
    if not variant.startswith("parentfirst"):
        parent.release()
        print("parent released", flush=True)
    del subs, parent
    print(variant, "OK", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
