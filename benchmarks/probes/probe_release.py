"""Probe: sub-buffers of one buffer, kernels, maps, copies, then release (one variant a process).

A variant is steps joined by '+': ``uhp`` (parent over host memory, USE_HOST_PTR),
``launch`` (kernels on sub-buffers, writing the parent), ``map`` (map the parent for reading,
then with WRITE_INVALIDATE_REGION), ``copy`` (enqueue_copy into and out of the parent),
``status`` (query old events after all that), ``release`` (subs, then parent) or ``gc``.

    python3 -X faulthandler benchmarks/probes/probe_release.py uhp+launch+map+release
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

SRC = """
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}"""


def say(*a: object) -> None:
    print(*a, flush=True)


def main(variant: str) -> None:
    steps = variant.split("+")
    plat = [p for p in cl.get_platforms() if p.get_devices()][0]
    dev = plat.get_devices()[0]
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    k = cl.Kernel(cl.Program(ctx, SRC).build(), "copy")
    g = max(1, dev.mem_base_addr_align // 8)
    n = 4096
    raw = np.empty(n + 1024, np.float32)
    skip = (-raw.ctypes.data % 4096) // 4
    host = raw[skip:skip + n]
    host[:] = np.arange(n)
    mf = cl.mem_flags
    flags = mf.READ_WRITE | (mf.USE_HOST_PTR if "uhp" in steps else mf.COPY_HOST_PTR)
    parent = cl.Buffer(ctx, flags, hostbuf=host)
    rng = np.random.default_rng(0)
    subs, events, spans = [], [], []
    for _ in range(100):
        off = int(rng.integers(1, n * 4 // g - 1)) * g
        size = int(rng.integers(1, min(64, (n * 4 - off) // 4) + 1)) * 4
        subs.append(parent.get_sub_region(off, size))
        spans.append((off, off + size))
    if "tile" in steps:  # disjoint sub-buffers only: one per alignment unit
        subs = [parent.get_sub_region(i * g, g) for i in range(1, 31)]
        spans = [(i * g, i * g + g) for i in range(1, 31)]
    if "suffix" in steps:  # one sub-buffer per offset, reaching to the parent's end (nested)
        subs = [parent.get_sub_region(i * g, n * 4 - i * g) for i in range(1, 31)]
        spans = [(i * g, n * 4) for i in range(1, 31)]
    if "pair" in steps:  # just two overlapping sub-buffers
        subs = [parent.get_sub_region(g, 8 * g), parent.get_sub_region(2 * g, 8 * g)]
        spans = [(g, 9 * g), (2 * g, 10 * g)]
    for tok in steps:  # sizeNNN: 30 disjoint sub-buffers of NNN bytes at aligned offsets
        if tok.startswith("size"):
            nb = int(tok[4:])
            subs = [parent.get_sub_region(i * g, nb) for i in range(1, 31)]
            spans = [(i * g, i * g + nb) for i in range(1, 31)]
    other = cl.Buffer(ctx, mf.READ_WRITE, n * 4)
    say(variant, "created", len(subs), "sub-buffers")
    for round_ in range(3):
        if "launch" in steps:  # a sub-buffer and its own parent in one kernel
            for s in subs[:40]:
                events.append(k(q, (1,), None, s, parent))
                events.append(k(q, (1,), None, parent, s))
        if "launchsubs" in steps:  # two disjoint sub-buffers of one parent per kernel
            for i in range(len(subs) - 1):
                (a0, a1), (b0, b1) = spans[i], spans[i + 1]
                if a1 <= b0 or b1 <= a0:
                    events.append(k(q, (1,), None, subs[i], subs[i + 1]))
        if "launchone" in steps:  # a sub-buffer and an unrelated buffer per kernel
            for sb in subs[:1 if "few" in steps else 40]:
                events.append(k(q, (1,), None, sb, other))
                events.append(k(q, (1,), None, other, sb))
        if "map" in steps:
            m, _ = cl.enqueue_map_buffer(q, parent, cl.map_flags.READ, 0, (n * 4,), np.uint8,
                                         is_blocking=True)
            m.base.release(q).wait()
            m, _ = cl.enqueue_map_buffer(q, parent, cl.map_flags.WRITE_INVALIDATE_REGION, 0,
                                         (n * 4,), np.uint8, is_blocking=True)
            events.append(m.base.release(q))
        if "copy" in steps:
            events.append(cl.enqueue_copy(q, parent, host, is_blocking=False))
            cl.enqueue_copy(q, host, parent, is_blocking=True)
        say("  round", round_, "done")
    q.finish()
    if "eventsdrop" in steps:
        events = []
    if "argreset" in steps:  # no released memory object stays a kernel argument
        k.set_args(other, other)
    if "parentfirst" in steps:
        parent.release()
        say("  parent released first")
        for s in subs:
            s.release()
        say("  subs released")
        steps.remove("parentfirst")
        subs = parent = None
    if "release" in steps and subs is not None:
        for s in subs:
            s.release()
        say("  subs released")
        parent.release()
        say("  parent released")
    subs = parent = None
    if "status" in steps:
        say("  statuses", {e.command_execution_status for e in events})
    say(variant, "OK")


if __name__ == "__main__":
    main(sys.argv[1])
