"""Host RAM and time of device-born results (issue 23, item 3): results and temporaries of
the device compute path live in device memory and get host memory only when the host looks.

For each size, ``x`` is a kernel's output (its newest bytes on the device), then:

* ``chain``: ``float(ha.sum(((x * x + 1) * 0.5 - x) / 3))`` (seven device operations, the
  host reads one scalar): the median time, and the host RAM the timed runs added
  (``VmRSS`` growth, the process's resident memory, and ``ha.stats().host_bytes_committed``,
  the pages device-born results got from the host), with the pool's hits and misses;
* ``chain+read``: the same chain's array read back whole (``np.asarray(y)``): the cost of
  committing host pages as the acquire copies into them;
* ``pool``: one ``x * 2.0`` into a new result, dropped at once: with the pool (its buffer
  reused: a hit every time) and with the pool off (``pool_limit(0)``: a new buffer and new
  host address space every time), so the ratio is what the pool saves per result;
* ``host-backed``: the chain again with the pool's previous kind of result (committed,
  page-aligned host memory under a ``CL_MEM_USE_HOST_PTR`` buffer, which NVIDIA pins), in
  the same run: ``old/ha`` is its time over the device-only kind's;
* the same chain with CuPy (``cp.sum`` of the same expression; when CuPy imports and sees
  a CUDA device) and numpy, in the same process; ratios are CuPy's (numpy's) time over
  hostarray's: above 1 means hostarray is faster.

Every value is checked against numpy (relative 1e-3 for the float32 sums).

    python3 benchmarks/bench_device_born.py [--device opencl:0:0] [--max-size 1GiB]
                                            [--sizes 1MiB,64MiB,1GiB] [--repeat 5]
                                            [--link copied] [--no-cupy] [--json PATH]

On the H200: ``python3 benchmarks/bench_device_born.py --max-size 1GiB --json
benchmarks/results/device_born_h200.json`` (with and without CuPy installed: ``--no-cupy``
leaves it out).  On a CPU-only machine ``--link copied`` makes the device path run (PoCL's
device memory is host memory there, so ``VmRSS`` also counts the device buffers: read
``host_bytes_committed``).
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
from hostarray._compute import pool  # noqa: E402
from hostarray.bench import forced_link, parse_size  # noqa: E402

MIB = 1 << 20
FILL = ("__kernel void fill(__global float *x) "
        "{ size_t i = get_global_id(0); x[i] = (float)(i % 8) * 0.25f; }")


def rss() -> int:
    """The process's resident memory (bytes; 0 where /proc is not there)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    fn()  # warm-up: kernels built, buffers in the pool
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def expected(n: int) -> tuple[np.ndarray, float]:
    a = ((np.arange(n) % 8) * 0.25).astype(np.float32)
    y = ((a * a + 1) * np.float32(0.5) - a) / np.float32(3)
    return y, float(y.sum(dtype=np.float64))


def _check(got: float, want: float, what: str) -> None:
    if abs(got - want) > 1e-3 * max(1.0, abs(want)):
        raise SystemExit(f"{what}: {got} != numpy's {want}")


def measure_hostarray(dev: Any, nbytes: int, repeat: int) -> dict[str, Any]:
    n = nbytes // 4
    want_y, want = expected(n)
    x = ha.empty(n, dtype=ha.float32, device=dev)
    ha.Program(FILL, device=dev).fill((n,), ha.write(x))
    chain = lambda: float(ha.sum(((x * x + 1) * 0.5 - x) / 3))  # noqa: E731
    chain()
    gc.collect()
    before_rss, before_pool = rss(), pool.pool_info()
    ha.reset_stats()
    t_chain, got = median_time(chain, repeat)
    s = ha.stats()
    row: dict[str, Any] = {
        "bytes": nbytes, "chain_s": t_chain,
        "chain_rss_added": max(0, rss() - before_rss),
        "chain_host_committed": s.host_bytes_committed // (repeat + 1),
        "chain_acquired": s.bytes_acquired // (repeat + 1),
        "pool_hits": pool.pool_info()["hits"] - before_pool["hits"],
        "pool_misses": pool.pool_info()["misses"] - before_pool["misses"]}
    _check(got, want, f"hostarray chain at {nbytes} bytes")

    def chain_read() -> np.ndarray:
        return np.asarray(((x * x + 1) * 0.5 - x) / 3).copy()

    ha.reset_stats()
    row["chain_read_s"], y = median_time(chain_read, repeat)
    row["chain_read_host_committed"] = ha.stats().host_bytes_committed // (repeat + 1)
    np.testing.assert_allclose(y[:1024], want_y[:1024], rtol=1e-6)
    del y

    pool._DEVICE_ONLY[0] = False  # the previous kind: host memory under every result
    ha.clear_pool()
    try:
        before_rss = rss()
        row["host_backed_chain_s"], got = median_time(chain, repeat)
        row["host_backed_rss_added"] = max(0, rss() - before_rss)
        _check(got, want, f"host-backed chain at {nbytes} bytes")
    finally:
        pool._DEVICE_ONLY[0] = True
        ha.clear_pool()

    def one() -> None:
        y = x * 2.0
        del y

    row["pool_reuse_s"], _ = median_time(lambda: (one(), dev.runtime.queue.finish()), repeat)
    old = pool.pool_limit(0)
    try:
        row["pool_off_s"], _ = median_time(lambda: (one(), dev.runtime.queue.finish()), repeat)
    finally:
        pool.pool_limit(old)
    return row  # (x dies with this frame; the caller collects and empties the pool)


def measure_cupy(nbytes: int, repeat: int) -> dict[str, Any] | None:
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # noqa: BLE001 - no CuPy, or no CUDA device: left out
        return None
    n = nbytes // 4
    _, want = expected(n)
    x = (cp.arange(n) % 8).astype(cp.float32) * cp.float32(0.25)
    before = rss()
    t, got = median_time(lambda: float(cp.sum(((x * x + 1) * 0.5 - x) / 3)), repeat)
    _check(got, want, f"CuPy chain at {nbytes} bytes")
    x = None
    cp.get_default_memory_pool().free_all_blocks()
    return {"chain_s": t, "chain_rss_added": max(0, rss() - before)}


def measure_numpy(nbytes: int, repeat: int) -> dict[str, Any]:
    n = nbytes // 4
    _, want = expected(n)
    x = ((np.arange(n) % 8) * 0.25).astype(np.float32)
    t, got = median_time(lambda: float(np.sum(((x * x + 1) * np.float32(0.5) - x) / 3,
                                              dtype=np.float32)), repeat)
    _check(got, want, f"numpy chain at {nbytes} bytes")
    return {"chain_s": t}


def _fmt_s(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:9.2f}"


def _fmt_b(b: int) -> str:
    return f"{b / MIB:8.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default=None)
    p.add_argument("--max-size", default="1GiB")
    p.add_argument("--sizes", default="1MiB,16MiB,64MiB,256MiB,1GiB")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--link", default=None, choices=[None, "copied", "mapped", "shared"])
    p.add_argument("--no-cupy", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    dev = ha.device(args.device) if args.device else \
        [d for d in ha.devices() if d.framework == "opencl"][0]
    ha.set_device_compute_threshold(0)
    limit = min(parse_size(args.max_size), dev.max_alloc)
    sizes = [s for s in (parse_size(t) for t in args.sizes.split(",")) if s <= limit]
    rows = []
    with forced_link(dev, args.link):
        print(f"# device-born results on {dev} ({dev.name}), link {dev.link}", flush=True)
        for nbytes in sizes:
            print(f"# {nbytes // MIB} MiB ...", file=sys.stderr, flush=True)
            row = measure_hostarray(dev, nbytes, args.repeat)
            gc.collect()
            ha.clear_pool()
            row["cupy"] = None if args.no_cupy else measure_cupy(nbytes, args.repeat)
            row["numpy"] = measure_numpy(nbytes, args.repeat)
            rows.append(row)
    head = (f"{'size MiB':>8} {'chain ms':>9} {'RSS+ MiB':>8} {'commit MiB':>10} "
            f"{'hit/miss':>9} {'old/ha':>6} {'old RSS+':>8} {'read ms':>9} {'pool ms':>9} "
            f"{'off ms':>9} {'x pool':>7} "
            f"{'cupy ms':>9} {'cupy/ha':>7} {'numpy/ha':>8}")
    print(head)
    for r in rows:
        cu = r["cupy"]
        print(f"{r['bytes'] // MIB:8d} {_fmt_s(r['chain_s'])} {_fmt_b(r['chain_rss_added'])} "
              f"{r['chain_host_committed'] / MIB:10.3f} "
              f"{str(r['pool_hits']) + '/' + str(r['pool_misses']):>9} "
              f"{r['host_backed_chain_s'] / r['chain_s']:6.2f} "
              f"{_fmt_b(r['host_backed_rss_added'])} "
              f"{_fmt_s(r['chain_read_s'])} {_fmt_s(r['pool_reuse_s'])} "
              f"{_fmt_s(r['pool_off_s'])} {r['pool_off_s'] / r['pool_reuse_s']:7.2f} "
              f"{_fmt_s(cu and cu['chain_s'])} "
              f"{(cu['chain_s'] / r['chain_s']) if cu else float('nan'):7.2f} "
              f"{r['numpy']['chain_s'] / r['chain_s']:8.2f}")
    print("chain: float(ha.sum(((x*x+1)*0.5-x)/3)) on kernel output, median; RSS+: resident "
          "memory the timed runs added; commit: host_bytes_committed per chain (pages "
          "device-born results got); hit/miss: pool takes in the timed runs; old/ha, old RSS+: "
          "the chain with host-backed results (the previous pool), its time over "
          "hostarray's and the RSS it added; read: the "
          "chain's array read back whole; pool / off: one x*2.0 result made and dropped, "
          "with the pool and with pool_limit(0); x pool = off / pool; cupy/ha, numpy/ha: "
          "their chain time over hostarray's (> 1: hostarray faster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(dev), "name": dev.name, "link": dev.link, "rows": rows},
                      f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
