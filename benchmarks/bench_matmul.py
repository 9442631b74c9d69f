"""The device matmul: tune it on this device, then ``c = a @ b`` (n x n float32) against
CuPy (cuBLAS), CLBlast (where ``pyclblast`` imports) and numpy, in one process.

One run tunes and measures: first :func:`hostarray._compute.matmul_tune.tune` with the
``--max-seconds`` budget (every candidate tile configuration built, checked against numpy
and timed with OpenCL profiling events on the probe sizes; the winners cached in the user's
cache folder and used by the products below; ``--no-tune``: the cache or the built-in
choice), then per size ``n`` (``--sizes``, default 1024, 2048, 4096):

* ``ha`` -- hostarray: ``a @ b`` on arrays whose newest bytes a kernel left on the device,
  then a queue finish (wall time, median of ``--repeat``); ``ha kernel``: the configuration
  it chose, alone, timed by OpenCL profiling events;
* ``cupy`` -- CuPy's ``a @ b`` (cuBLAS), then a stream synchronise (wall), and CUDA events
  around it (``cupy kernel``).  float32 throughout, **without TF32**: this script sets
  ``CUPY_TF32=0`` before CuPy is imported (``--tf32`` sets 1 instead, to see what TF32
  gives; the check then uses TF32's error bound), so both sides compute in IEEE float32;
* ``clblast`` -- ``pyclblast.gemm`` on hostarray's device and queue, where it imports;
* ``numpy`` -- ``np.matmul`` on the host (its BLAS).

Every product's value is checked against a float64 numpy product on sampled rows (the
error bound of float32 sums).  Ratios are CuPy's time divided by hostarray's (> 1:
hostarray faster; the project's target is 0.7 at 4096).  Prints the tables, writes
``bench_matmul.json`` (every number, the tuning, the device, the environment) under
``--out`` (default ``$OUT``, else ``matmul_out/``).

    python3 benchmarks/bench_matmul.py [--device opencl:0:0] [--sizes 1024,2048,4096]
        [--repeat 10] [--max-seconds 60] [--no-tune] [--no-cupy] [--tf32] [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
import traceback
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402
from hostarray._compute import matmul_tune  # noqa: E402

T0 = time.perf_counter()


def say(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def pick_device(spec: str | None) -> Any:
    if spec:
        return ha.device(spec)
    import pyopencl as cl

    devs = [d for d in ha.devices() if d.framework == "opencl"]
    if not devs:
        raise SystemExit("no OpenCL device (hostarray devices says why)")
    gpus = [d for d in devs if int(d._cl_device.type) & int(cl.device_type.GPU)]
    return (gpus or devs)[0]


def inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + n)
    return (rng.uniform(-1, 1, (n, n)).astype(np.float32),
            rng.uniform(-1, 1, (n, n)).astype(np.float32))


class Checker:
    """A float64 product of sampled rows and the error bound of float32 sums of ``n``
    products (TF32: 10 mantissa bits, ``eps`` 2**-10, per product)."""

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        n = a.shape[0]
        rng = np.random.default_rng(n)
        self.rows = np.unique(np.r_[0, n - 1, rng.integers(0, n, 6)])
        a64, b64 = a[self.rows].astype(np.float64), b.astype(np.float64)
        self.ref = a64 @ b64
        self.absprod = np.abs(a64) @ np.abs(b64)
        self.n = n

    def why(self, got: np.ndarray, tf32: bool = False) -> str:
        eps = 2.0 ** -10 if tf32 else float(np.finfo(np.float32).eps)
        tol = 2 * (self.n if not tf32 else 1) * eps * self.absprod + 1e-30
        if tf32:
            tol = tol + 2 * self.n * float(np.finfo(np.float32).eps) * self.absprod
        err = np.abs(np.asarray(got, dtype=np.float64)[self.rows] - self.ref)
        bad = err > tol
        if not bad.any():
            return ""
        i, j = np.argwhere(bad)[0]
        return f"wrong at [{self.rows[i]}, {j}]: error {err[i, j]:.3g} > bound {tol[i, j]:.3g}"


def median_wall(fn: Any, repeat: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


_TOUCH = "__kernel void touch(__global float *x) { int i = get_global_id(0); x[i] = x[i]; }"


def measure_ha(dev: Any, n: int, a: np.ndarray, b: np.ndarray, chk: Checker,
               repeat: int) -> dict[str, Any]:
    q = ha.hostptr.queue(dev)
    prg = ha.Program(_TOUCH, device=dev)
    x = ha.asarray(a, device=dev, copy=True)
    y = ha.asarray(b, device=dev, copy=True)
    prg.touch((n * n,), x)
    prg.touch((n * n,), y)  # the newest bytes on the device, none on the host
    q.finish()
    cfg = matmul_tune.choose(dev, n, n, n, 1, 4)
    ha.reset_stats()
    c = x @ y  # the warm-up: builds the kernel
    q.finish()
    s = ha.stats()
    out: dict[str, Any] = {"config": cfg.key(), "device_ops": s.device_ops,
                           "host_fallbacks": s.host_fallbacks,
                           "bytes_moved_by_product": s.bytes_moved}
    out["error"] = chk.why(np.asarray(c))
    del c

    def run() -> None:
        c = x @ y
        q.finish()
        del c

    out["wall_s"], out["wall_runs"] = median_wall(run, repeat)
    # the same configuration's kernel alone, timed by OpenCL profiling events
    import pyopencl as cl

    pq = cl.CommandQueue(dev.runtime.context, dev._cl_device,
                         properties=cl.command_queue_properties.PROFILING_ENABLE)
    if n % cfg.tm == 0 and n % cfg.tn == 0:
        probe = matmul_tune._Probe(dev, pq, n, np.random.default_rng(n))
        knl = matmul_tune._build(dev, cfg)
        probe.run(knl, cfg).wait()
        ev_times = []
        for _ in range(repeat):
            ev = probe.run(knl, cfg)
            ev.wait()
            ev_times.append((ev.profile.end - ev.profile.start) * 1e-9)
        out["kernel_s"] = statistics.median(ev_times)
        out["kernel_error"] = probe.wrong()
        for buf in (probe.da, probe.db, probe.dc):
            buf.release()
    return out


def measure_cupy(n: int, a: np.ndarray, b: np.ndarray, chk: Checker, repeat: int,
                 tf32: bool) -> dict[str, Any]:
    import cupy as cp

    da, db = cp.asarray(a), cp.asarray(b)
    c = da @ db
    cp.cuda.Device().synchronize()
    out: dict[str, Any] = {"error": chk.why(cp.asnumpy(c), tf32=tf32)}
    if not tf32:  # an FP32-only bound held: cuBLAS did not use TF32
        out["fp32_bound_held"] = not out["error"]
    del c

    def run() -> None:
        c = da @ db
        cp.cuda.Device().synchronize()
        del c

    out["wall_s"], out["wall_runs"] = median_wall(run, repeat)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    ev_times = []
    for _ in range(repeat):
        start.record()
        c = da @ db
        end.record()
        end.synchronize()
        ev_times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
        del c
    out["kernel_s"] = statistics.median(ev_times)
    return out


def measure_clblast(dev: Any, n: int, a: np.ndarray, b: np.ndarray, chk: Checker,
                    repeat: int) -> dict[str, Any]:
    import pyclblast
    import pyopencl.array as cla

    q = ha.hostptr.queue(dev)
    da, db = cla.to_device(q, a), cla.to_device(q, b)
    dc = cla.empty(q, (n, n), np.float32)
    pyclblast.gemm(q, n, n, n, da, db, dc, a_ld=n, b_ld=n, c_ld=n)
    q.finish()
    out: dict[str, Any] = {"error": chk.why(dc.get())}

    def run() -> None:
        pyclblast.gemm(q, n, n, n, da, db, dc, a_ld=n, b_ld=n, c_ld=n)
        q.finish()

    out["wall_s"], out["wall_runs"] = median_wall(run, repeat)
    return out


def measure_numpy(a: np.ndarray, b: np.ndarray, chk: Checker, repeat: int) -> dict[str, Any]:
    c = a @ b
    out: dict[str, Any] = {"error": chk.why(c)}
    out["wall_s"], out["wall_runs"] = median_wall(lambda: a @ b, repeat)
    return out


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.3f}"


def _tf(n: int, t: float | None) -> str:
    return "-" if not t else f"{2 * n ** 3 / t * 1e-12:.2f}"


def _ratio(num: float | None, den: float | None) -> str:
    return "-" if not num or not den else f"{num / den:.2f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None, help="OpenCL device (default: the first GPU)")
    p.add_argument("--sizes", default="1024,2048,4096", help="the sides n (comma-separated)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs per median")
    p.add_argument("--numpy-repeat", type=int, default=3, help="timed runs of numpy's")
    p.add_argument("--max-seconds", type=float, default=60.0,
                   help="the tuning's time budget (default 60 s)")
    p.add_argument("--probe-sizes", default=None,
                   help="the tuning's probe sides (default: 1024,2048,4096 on a GPU)")
    p.add_argument("--no-tune", action="store_true",
                   help="no tuning here: the cached tuning, else the built-in choice")
    p.add_argument("--no-cupy", action="store_true", help="leave CuPy out")
    p.add_argument("--no-numpy", action="store_true", help="leave numpy out")
    p.add_argument("--tf32", action="store_true", help="let CuPy's cuBLAS use TF32")
    p.add_argument("--out", default=os.environ.get("OUT") or "matmul_out",
                   help="folder for bench_matmul.json (default $OUT, else matmul_out/)")
    args = p.parse_args(argv)
    sizes = [int(v) for v in args.sizes.split(",") if v.strip()]
    os.environ["CUPY_TF32"] = "1" if args.tf32 else "0"  # before CuPy is imported
    os.makedirs(args.out, exist_ok=True)
    ha.set_device_compute_threshold(0)
    dev = pick_device(args.device)
    d = dev._cl_device
    result: dict[str, Any] = {
        "when": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "device": {"name": str(dev), "cl_name": d.name.strip(),
                   "driver": d.driver_version.strip(), "platform": d.platform.name.strip(),
                   "compute_units": int(d.max_compute_units),
                   "local_mem": int(d.local_mem_size), "link": dev.link,
                   "cache_key": matmul_tune.device_key(dev)},
        "host": platform.node(), "python": platform.python_version(),
        "cupy_tf32": os.environ["CUPY_TF32"], "sizes": sizes, "repeat": args.repeat,
        "tuning": None, "results": {}}
    say(f"device {dev}: {d.name.strip()}, driver {d.driver_version.strip()}, link {dev.link}")
    if dev.link == "shared":
        say("a shared link: the device path does not run here (HOSTARRAY_LINK=copied forces it)")
    if not args.no_tune:
        probes = tuple(int(v) for v in args.probe_sizes.split(",")) if args.probe_sizes \
            else None
        say(f"tuning, budget {args.max_seconds:g} s, probes "
            f"{probes or matmul_tune.probe_sizes(dev)}")
        tr = matmul_tune.tune(dev, max_seconds=args.max_seconds, sizes=probes,
                              report=lambda line: say("  " + line))
        result["tuning"] = {**tr.entry(), "cache": matmul_tune.cache_path()}
        say(f"tuned in {tr.seconds:.1f} s{' (budget spent)' if tr.cut else ''}: " +
            ", ".join(f"n={k}: {c.key()}" for k, c in sorted(tr.winners.items())))
    have_cupy = False
    if not args.no_cupy:
        try:
            import cupy as cp

            have_cupy = cp.cuda.runtime.getDeviceCount() > 0
            result["cupy"] = cp.__version__
        except Exception as e:
            result["cupy"] = f"not available: {type(e).__name__}: {e}"
            say(f"CuPy: {result['cupy']}")
    try:
        import pyclblast  # noqa: F401

        have_clblast = True
    except Exception as e:
        have_clblast = False
        result["clblast"] = f"not available: {type(e).__name__}: {e}"
    for n in sizes:
        a, b = inputs(n)
        chk = Checker(a, b)
        row: dict[str, Any] = {}
        libs = {"ha": True, "cupy": have_cupy, "clblast": have_clblast,
                "numpy": not args.no_numpy}
        for lib in (k for k, on in libs.items() if on):
            say(f"n={n}: {lib}")
            try:
                if lib == "ha":
                    row[lib] = measure_ha(dev, n, a, b, chk, args.repeat)
                elif lib == "cupy":
                    row[lib] = measure_cupy(n, a, b, chk, args.repeat, args.tf32)
                    import cupy as cp

                    cp.get_default_memory_pool().free_all_blocks()
                elif lib == "clblast":
                    row[lib] = measure_clblast(dev, n, a, b, chk, args.repeat)
                else:
                    row[lib] = measure_numpy(a, b, chk, args.numpy_repeat)
            except Exception as e:
                row[lib] = {"failed": f"{type(e).__name__}: {e}",
                            "traceback": traceback.format_exc()}
                say(f"  {lib} failed: {type(e).__name__}: {e}")
        result["results"][str(n)] = row
        with open(os.path.join(args.out, "bench_matmul.json"), "w") as f:
            json.dump(result, f, indent=1, default=float)  # after every size: kept if cut
    print(table(result))
    return 0


def table(result: dict[str, Any]) -> str:
    """The table of one run: times in ms, TFLOP/s, CuPy's time / hostarray's."""
    lines = [f"matmul, n x n float32 ({result['device']['cl_name']}, driver "
             f"{result['device']['driver']}; CuPy without TF32: CUPY_TF32="
             f"{result['cupy_tf32']})", ""]
    head = ("| n | ha ms | ha kernel ms | cupy ms | cupy kernel ms | clblast ms | numpy ms | "
            "ha TFLOP/s | cupy TFLOP/s | cupy/ha | cupy/ha kernel | config | checks |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for n_text, row in result["results"].items():
        n = int(n_text)

        def get(lib: str, key: str, row: dict[str, Any] = row) -> float | None:
            return row.get(lib, {}).get(key)

        errs = [f"{lib}: {r.get('error') or r.get('failed')}" for lib, r in row.items()
                if r.get("error") or r.get("failed") or r.get("kernel_error")]
        lines.append(
            f"| {n} | {_ms(get('ha', 'wall_s'))} | {_ms(get('ha', 'kernel_s'))} | "
            f"{_ms(get('cupy', 'wall_s'))} | {_ms(get('cupy', 'kernel_s'))} | "
            f"{_ms(get('clblast', 'wall_s'))} | {_ms(get('numpy', 'wall_s'))} | "
            f"{_tf(n, get('ha', 'wall_s'))} | {_tf(n, get('cupy', 'wall_s'))} | "
            f"{_ratio(get('cupy', 'wall_s'), get('ha', 'wall_s'))} | "
            f"{_ratio(get('cupy', 'kernel_s'), get('ha', 'kernel_s'))} | "
            f"{row.get('ha', {}).get('config', '-')} | {'; '.join(errs) or 'all ok'} |")
    lines += ["", "ms: medians of wall time (the product, then a queue finish / stream "
              "synchronise); kernel: OpenCL profiling events (ha), CUDA events (cupy); "
              "cupy/ha > 1: hostarray faster (target 0.7 at 4096); config: hostarray's "
              "tile configuration (TMxTNxTK/WMxWN/db: double-buffered)"]
    tun = result.get("tuning")
    if tun:
        lines += ["", f"tuning ({tun['seconds']} s{', budget spent' if tun['cut'] else ''})"
                  f": winners {tun['winners']}"]
        for k, v in sorted(tun["timings"].items(), key=lambda kv: min(kv[1].values())):
            lines.append(f"  {k}: " + ", ".join(f"n={m} {t * 1e3:.3f} ms" for m, t in
                                                 sorted(v.items(), key=lambda p: int(p[0]))))
        for k, why in tun["rejected"].items():
            lines.append(f"  {k}: rejected: {why}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
