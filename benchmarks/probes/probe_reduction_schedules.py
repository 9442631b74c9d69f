"""Probe: schedules of a whole-array float32 sum's first pass on a device, kernel time only.

Plain pyopencl (no hostarray), an OpenCL profiling queue. Each variant reduces the array to
``groups`` partial sums (256 work-items a group); a second kernel (one group) adds those, and
the result is checked against numpy's float64 sum. The variants:

* ``chunk``: each group a contiguous chunk, read 256 elements at a step (hostarray's pass 1
  today, ``hostarray/_compute/reductions.py``);
* ``chunk4``: the same with four loads in flight per work-item;
* ``grid``: a grid-stride loop over the whole array (consecutive work-items, consecutive
  elements);
* ``grid4``: the grid-stride loop with four loads in flight;
* ``vec4``, ``vec4x2``: the grid-stride loop over ``float4`` (``vload4``), one or two in
  flight.

With CuPy importable, CuPy's ``x.sum()`` is timed with CUDA events beside them. Medians of
10 runs after 2 warm-ups, in µs; the floor is the bytes over ``--bandwidth`` (GB/s).
What it answers: how many groups and which loads a device's reduction wants (on a CPU
device, Debian's PoCL: few groups; on a GPU: enough loads in flight to cover memory latency).

    python3 benchmarks/probes/probe_reduction_schedules.py [--device-index 0] [--sizes 1MiB,16MiB]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

import numpy as np
import pyopencl as cl

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from hostarray.bench import parse_size  # noqa: E402

G = 256
_SOURCE = r"""
#define G 256
float tree(__local float *lv, float av) {
    const int l = get_local_id(0);
    lv[l] = av;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = G / 2; s > 0; s >>= 1) {
        if (l < s) lv[l] = av = av + lv[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return lv[0];
}
#define HEAD(name) __kernel void name(__global const float *p, const long m, \
                                      const long chunk, __global float *out) { \
    __local float lv[G]; const long grp = get_group_id(0); const int l = get_local_id(0); \
    const long step = get_global_size(0);
#define TAIL(av) av = tree(lv, av); if (l == 0) out[grp] = av; }

HEAD(chunk)
    float av = 0; const long k1 = min(grp * chunk + chunk, m);
    for (long k = grp * chunk + l; k < k1; k += G) av += p[k];
TAIL(av)

HEAD(chunk4)
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0; const long k1 = min(grp * chunk + chunk, m);
    long k = grp * chunk + l;
    for (; k + 3 * G < k1; k += 4 * G) { a0 += p[k]; a1 += p[k + G]; a2 += p[k + 2 * G];
                                         a3 += p[k + 3 * G]; }
    for (; k < k1; k += G) a0 += p[k];
    float av = (a0 + a1) + (a2 + a3);
TAIL(av)

HEAD(grid)
    float av = 0;
    for (long k = get_global_id(0); k < m; k += step) av += p[k];
TAIL(av)

HEAD(grid4)
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0; long k = get_global_id(0);
    for (; k + 3 * step < m; k += 4 * step) { a0 += p[k]; a1 += p[k + step];
                                              a2 += p[k + 2 * step]; a3 += p[k + 3 * step]; }
    for (; k < m; k += step) a0 += p[k];
    float av = (a0 + a1) + (a2 + a3);
TAIL(av)

HEAD(vec4)
    float4 a = (float4)(0); const long m4 = m / 4;
    for (long k = get_global_id(0); k < m4; k += step) a += vload4(k, p);
    float av = (a.x + a.y) + (a.z + a.w);
    for (long k = m4 * 4 + get_global_id(0); k < m; k += step) av += p[k];
TAIL(av)

HEAD(vec4x2)
    float4 a = (float4)(0), b = (float4)(0); const long m4 = m / 4; long k = get_global_id(0);
    for (; k + step < m4; k += 2 * step) { a += vload4(k, p); b += vload4(k + step, p); }
    for (; k < m4; k += step) a += vload4(k, p);
    a += b;
    float av = (a.x + a.y) + (a.z + a.w);
    for (long k = m4 * 4 + get_global_id(0); k < m; k += step) av += p[k];
TAIL(av)

__kernel void finish(__global const float *p, const long n, __global float *out) {
    __local float lv[G];
    float av = 0;
    for (long k = get_local_id(0); k < n; k += G) av += p[k];
    av = tree(lv, av);
    if (get_local_id(0) == 0) out[0] = av;
}
"""
VARIANTS = ("chunk", "chunk4", "grid", "grid4", "vec4", "vec4x2")


def _median_us(times: list[float]) -> float:
    return round(statistics.median(times), 1)


def probe(dev: Any, sizes: list[int], group_counts: list[int]) -> dict[str, Any]:
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    prg = cl.Program(ctx, _SOURCE).build()
    kernels = {name: cl.Kernel(prg, name) for name in VARIANTS}
    for k in kernels.values():
        k.set_scalar_arg_dtypes([None, np.int64, np.int64, None])
    finish = cl.Kernel(prg, "finish")
    finish.set_scalar_arg_dtypes([None, np.int64, None])
    try:
        import cupy as cp
    except Exception:  # CuPy is optional: the other rows stand alone
        cp = None
    out: dict[str, Any] = {}
    for nbytes in sizes:
        m = nbytes // 4
        host = np.random.default_rng(1).random(m, dtype=np.float32)
        exact = float(host.astype(np.float64).sum())
        data = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        total = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4)
        row: dict[str, Any] = {}
        for name in VARIANTS:
            for groups in group_counts:
                chunk = -(-m // groups)
                n = -(-m // chunk) if name.startswith("chunk") else groups
                partial = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
                times = []
                for it in range(12):
                    ev = kernels[name](q, (n * G,), (G,), data, m, chunk, partial)
                    finish(q, (G,), (G,), partial, n, total).wait()
                    if it >= 2:
                        times.append((ev.profile.end - ev.profile.start) * 1e-3)
                got = np.empty(1, np.float32)
                cl.enqueue_copy(q, got, total)
                if abs(float(got[0]) - exact) > 1e-4 * abs(exact):
                    raise SystemExit(f"{name} with {groups} groups: {got[0]} != {exact}")
                row[f"{name}/{groups}"] = _median_us(times)
        if cp is not None:
            cx = cp.asarray(host)
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            times = []
            for it in range(12):
                start.record()
                s = cx.sum()
                stop.record()
                stop.synchronize()
                if it >= 2:
                    times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
            if abs(float(s) - exact) > 1e-4 * abs(exact):
                raise SystemExit(f"CuPy: {float(s)} != {exact}")
            row["cupy"] = _median_us(times)
            del cx
        out[str(nbytes)] = row
        data.release()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--platform-index", type=int, default=0)
    p.add_argument("--device-index", type=int, default=0)
    p.add_argument("--sizes", default="1MiB,16MiB",
                   help="comma-separated sizes (default 1MiB,16MiB)")
    p.add_argument("--groups", default=None,
                   help="comma-separated group counts (default: 2, 8, 32 and 128 per "
                        "compute unit, and 1024)")
    p.add_argument("--bandwidth", type=float, default=4800.0,
                   help="the device's memory bandwidth in GB/s, for the floor column")
    p.add_argument("--json", default=None, metavar="PATH")
    a = p.parse_args()
    dev = cl.get_platforms()[a.platform_index].get_devices()[a.device_index]
    units = dev.max_compute_units
    groups = ([int(g) for g in a.groups.split(",")] if a.groups
              else sorted({2 * units, 8 * units, 32 * units, 128 * units, 1024}))
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    print(f"{dev.name.strip()} ({units} compute units), kernel time in us, medians of 10")
    result = probe(dev, sizes, groups)
    for nbytes, row in result.items():
        floor = int(nbytes) / (a.bandwidth * 1e3)
        print(f"\n{int(nbytes) >> 20} MiB (floor at {a.bandwidth:g} GB/s: {floor:.1f} us)")
        print("variant | " + " | ".join(f"{g} groups" for g in groups))
        for name in VARIANTS:
            print(f"{name} | " + " | ".join(f"{row[f'{name}/{g}']}" for g in groups))
        if "cupy" in row:
            print(f"CuPy x.sum() | {row['cupy']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": dev.name.strip(), "units": units, "groups": groups,
                       "results": result}, f, indent=1)


if __name__ == "__main__":
    main()
