"""Dask over several OpenCL devices: a chunked kernel + reductions, one worker to one per device.

A :class:`hostarray.dask.LocalDeviceCluster` of the first ``n`` devices, for ``n`` = 1 ...
every device: the chunks are made on the workers (``da.arange``, then
``map_blocks(hd.to_worker_device)``), a kernel runs ``--iters`` steps of ``x = a x + b`` on
each chunk (a program cached per worker, ``hd.program``), then ``x.sum()`` and the mean
over the rows (``x.reshape(rows, -1).mean(axis=0)``) are computed, checked against the
closed form.  Printed: the median and best wall time of ``--repeat`` timed runs (after one
untimed run that builds the programs), the speedup over one worker and the efficiency
(speedup / workers), and per worker the bytes hostarray moved (``ha.stats()`` on each
worker through ``client.run``: published to its device, acquired from it) and its launches,
in the last timed run.

    python3 benchmarks/bench_dask_devices.py [--devices opencl:0:0,opencl:1:0] [--size 64MiB]
        [--chunk 4MiB] [--iters 64] [--repeat 5] [--link copied] [--second-device] [--json PATH]

The measurement the issue asks for, two GPUs against one, needs a machine with two OpenCL
GPUs (``--devices gpu:0,gpu:1``, or no ``--devices``: every GPU is the default); none was
available where this script was written.  On a machine with one real OpenCL device,
``--second-device`` adds the test-only second driver (``tests/reliability/_support.py``'s
``two_devices_env``: the PyPI PoCL, or Oclgrind where that PoCL does not work on the CPU)
to this process's drivers, which the workers inherit.  Oclgrind interprets its kernels (a
few million loop steps a second): keep ``--size`` and ``--iters`` small with it, and read
its rows as a check that the work spreads, not as a speed.  Two CPU devices share the
same cores, so they do not scale the way two GPUs do either.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SRC = r"""
__kernel void steps(__global float *x, const float a, const float b, const int iters) {
    int i = get_global_id(0);
    float v = x[i];
    for (int k = 0; k < iters; ++k) v = a * v + b;
    x[i] = v;
}
"""
A, B = 0.5, 1.0  # x -> a x + b: after k steps x_k = a^k x_0 + b (1 - a^k) / (1 - a)


def kernel_task(block: Any, iters: int) -> Any:
    """``iters`` steps of ``x = a x + b`` on a private copy of the chunk, on the worker's
    device (program built once per worker)."""
    import hostarray as ha
    import hostarray.dask as hd

    out = ha.asarray(block, copy=True)
    hd.program(SRC).steps(out.size, out, A, B, iters)
    return out


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _with_second_device(argv: list[str]) -> None:
    """Run this script again with the test-only second driver among the drivers."""
    from tests.reliability._support import two_devices_env  # skips/fails outside pytest: see below

    tmp = tempfile.mkdtemp(prefix="bench-dask-")
    try:
        env = two_devices_env(Path(tmp))
    except BaseException as e:  # pytest.skip / pytest.fail: the drivers are not installed
        raise SystemExit(f"--second-device: {e}") from None
    env = {**os.environ, **env, "HOSTARRAY_BENCH_SECOND_DEVICE": "1"}
    os.execve(sys.executable, [sys.executable, __file__, *argv], env)


def measure(devices: list[Any], size: int, chunk: int, iters: int, repeat: int,
            link: str | None) -> dict[str, Any]:
    """One cluster of ``devices``: the timed runs and each worker's transfers."""
    import dask
    import dask.array as da
    import numpy as np
    from distributed import Client

    import hostarray as ha
    import hostarray.dask as hd

    n, per_chunk = size // 4, chunk // 4
    cols = per_chunk  # rows of one chunk each: the mean over the rows combines every chunk
    rows = n // cols
    n = rows * cols
    env = {"HOSTARRAY_LINK": link} if link else {}
    meta = ha.empty((0,), dtype=np.float32)
    x0 = np.arange(n, dtype=np.float64).reshape(rows, cols) % 1024
    ak = A ** iters
    want = ak * x0 + B * (1 - ak) / (1 - A)
    with hd.LocalDeviceCluster(devices, env=env, dashboard_address=None,
                               silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        started = set(cluster.devices)
        times = []
        for run in range(repeat + 1):
            client.run(ha.reset_stats)
            x = (da.arange(n, chunks=per_chunk, dtype=np.float32) % 1024).reshape(rows, cols)
            y = x.map_blocks(hd.to_worker_device, meta=meta).map_blocks(
                kernel_task, iters, meta=meta)
            t0 = time.perf_counter()
            total, mean = dask.compute(y.sum(dtype=np.float64), y.mean(axis=0))
            dt = time.perf_counter() - t0
            if run:
                times.append(dt)
            assert np.isclose(float(total), want.sum(), rtol=1e-4), (float(total), want.sum())
            assert np.allclose(np.asarray(mean), want.mean(axis=0), rtol=1e-4)
            _say(f"  {len(devices)} worker(s), run {run}: {dt:.3f} s"
                 + ("" if run else " (untimed: builds the programs)"))
        stats = client.run(ha.stats)
        names = {a: str(d) for a, d in cluster.devices.items()}
        restarted = sorted(names[a] for a in set(names) - started if a in names)
    if restarted:
        _say(f"  the workers of {', '.join(restarted)} died and were started again")
    return {"devices": [str(d) for d in devices], "times": times,
            "median": statistics.median(times), "best": min(times), "restarted": restarted,
            "workers": {names[a]: {"bytes_published": s.bytes_published,
                                   "bytes_acquired": s.bytes_acquired,
                                   "launches": s.launches} for a, s in stats.items()
                        if a in names}}


def table(rows: list[dict[str, Any]], size: int, chunk: int, iters: int,
          link: str | None) -> str:
    """The printed table and its legend."""
    base = rows[0]["median"]
    out = [f"chunked kernel ({iters} steps) + x.sum() + x.mean(axis=0): {size / 2**20:g} MiB "
           f"float32 in {size // chunk} chunks of {chunk / 2**20:g} MiB, link "
           f"{link or 'as the devices have it'}",
           f"{'workers':>7}  {'median s':>9}  {'best s':>8}  {'speedup':>7}  {'effic.':>6}  "
           f"{'device':<12} {'MB to dev':>9}  {'MB from':>8}  {'launches':>8}"]
    for r in rows:
        speedup = base / r["median"]
        first = True
        for dev in r["devices"]:
            w = r["workers"].get(dev, {})
            head = (f"{len(r['devices']):>7}  {r['median']:>9.3f}  {r['best']:>8.3f}  "
                    f"{speedup:>7.2f}  {speedup / len(r['devices']):>6.2f}  " if first
                    else " " * 47)
            out.append(f"{head}{dev:<12} {w.get('bytes_published', 0) / 1e6:>9.1f}  "
                       f"{w.get('bytes_acquired', 0) / 1e6:>8.1f}  {w.get('launches', 0):>8}")
            first = False
        if r.get("restarted"):
            out.append(" " * 47 + f"(restarted: {', '.join(r['restarted'])})")
    out += ["",
            "workers: one per device, the first n devices; median / best: wall time of the",
            "  compute (the two reductions of one graph); speedup: one worker's median over",
            "  this median; effic.: speedup / workers; per worker, in the last timed run: MB",
            "  to dev / MB from: bytes hostarray copied to / from its device (0 on a shared",
            "  link: the device works on the host bytes), launches: kernel launches (the",
            "  chunk kernels and any the device path generated); restarted: a worker died",
            "  during the runs and its nanny started it again (Oclgrind's host API is not",
            "  thread-safe: a worker calls it from a task and from its transfers at once)"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from hostarray.bench import parse_size

    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--devices", default=None,
                   help="comma-separated devices, one worker each, in order (default: every "
                        "OpenCL GPU, else every OpenCL device)")
    p.add_argument("--size", default="64MiB", help="the array's bytes (default 64MiB)")
    p.add_argument("--chunk", default="4MiB", help="one chunk's bytes (default 4MiB)")
    p.add_argument("--iters", type=int, default=64, help="kernel steps per element (64)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs per median (default 5)")
    p.add_argument("--link", choices=["copied", "mapped"], default=None,
                   help="HOSTARRAY_LINK in the workers' environment")
    p.add_argument("--second-device", action="store_true",
                   help="add the test-only second OpenCL driver (see the docstring)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the numbers here")
    args = p.parse_args(argv)
    if args.second_device and not os.environ.get("HOSTARRAY_BENCH_SECOND_DEVICE"):
        _with_second_device(argv)
    size, chunk = parse_size(args.size), parse_size(args.chunk)
    if chunk > size or chunk % 4:
        p.error("--chunk must be at most --size and a whole number of float32")

    import hostarray as ha
    import hostarray.dask as hd

    if args.devices:
        devs = [ha.device(s) for s in args.devices.split(",")]
    elif os.environ.get("HOSTARRAY_TEST_SECOND_PLATFORM"):  # --second-device: its device last
        from tests.reliability._support import own_devices_first

        devs = own_devices_first([d for d in ha.devices() if d.framework == "opencl"],
                                 os.environ["HOSTARRAY_TEST_SECOND_PLATFORM"])
    else:
        devs = hd._default_devices()
    if not devs:
        raise SystemExit("no OpenCL device here")
    _say(f"devices: {', '.join(f'{d} ({d.name})' for d in devs)}")
    rows = [measure(devs[:k], size, chunk, args.iters, args.repeat, args.link)
            for k in range(1, len(devs) + 1)]
    print(table(rows, size, chunk, args.iters, args.link))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": size, "chunk": chunk, "iters": args.iters, "link": args.link,
                       "device_names": {str(d): d.name for d in devs}, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
