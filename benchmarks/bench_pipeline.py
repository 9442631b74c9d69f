"""A numpy-written pipeline on data a kernel wrote: the namespace spelling, numpy's spelling
of the same calls on hostarray arrays, and CuPy (issue 22).

The pipeline, on an (m, 256) float32 matrix ``x`` a kernel wrote on the device (untimed):
standardise its columns, multiply by a 256 x 256 matrix ``w``, a relu kernel in place, the
index of each row's largest value, read back by the host (``np.asarray``: m int64)::

    ha:     z = (x - ha.mean(x, axis=0)) / ha.std(x, axis=0); y = z @ w; relu(y);
            ha.argmax(y, axis=1)
    numpy:  z = (x - np.mean(x, axis=0)) / np.std(x, axis=0); y = np.matmul(z, w); relu(y);
            np.argmax(y, axis=1)                    (the same HostPtrArrays)
    cupy:   the numpy spelling on CuPy arrays (CuPy routes np.mean(cupy_array) to itself
            through __array_function__), an ElementwiseKernel relu

Medians of ``--repeat`` runs after one warm-up, per size (1 MiB ... 1 GiB of ``x``), with the
ratios numpy/ha (the issue's goal: at most 1.1) and each against CuPy; for hostarray the
``ha.stats()`` deltas of one run (bytes moved must be the m * 8 bytes of the result read
back), ``device_ops`` and ``host_fallbacks``.  Every result is checked against numpy's
(rows whose top two values are within rounding of each other may pick either).  The device
path runs only on a mapped or copied link: on a CPU device, use ``HOSTARRAY_LINK=copied``.

    python3 benchmarks/bench_pipeline.py [--device opencl:0:0] [--sizes 1MiB,16MiB,...]
        [--repeat 5] [--threshold BYTES|off] [--no-cupy] [--out DIR]

Writes ``pipeline.json`` and ``pipeline.md`` to ``--out`` (default ``$OUT``, else
``pipeline_out/``); the table goes to stdout.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hostarray as ha  # noqa: E402
from hostarray._bench_report import format_size, parse_size  # noqa: E402

MiB = 1 << 20
COLS = 256
SIZES = (MiB, 16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)
STATS = ("bytes_published", "bytes_acquired", "publishes", "acquires", "launches",
         "device_ops", "host_fallbacks")
SRC = r"""
__kernel void fill(__global float *x, const uint cols) {
    size_t i = get_global_id(0);
    uint r = (uint)(i / cols), c = (uint)(i % cols);
    uint h = (r * 2654435761u) ^ (c * 40503u + 12345u);
    h ^= h >> 13; h *= 1274126177u; h ^= h >> 16;
    x[i] = (float)(h & 0xffff) / 65536.0f * (1.0f + (float)(c % 7)) + (float)(c % 5);
}
__kernel void relu(__global float *y) {
    size_t i = get_global_id(0); y[i] = fmax(y[i], 0.0f);
}
"""


def _progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def reference(m: int) -> np.ndarray:
    """The fill kernel's matrix, computed by numpy (the same integer hash)."""
    i = np.arange(m * COLS, dtype=np.uint64)
    r, c = (i // COLS).astype(np.uint32), (i % COLS).astype(np.uint32)
    with np.errstate(over="ignore"):
        h = (r * np.uint32(2654435761)) ^ (c * np.uint32(40503) + np.uint32(12345))
        h ^= h >> np.uint32(13)
        h *= np.uint32(1274126177)
        h ^= h >> np.uint32(16)
    v = (h & np.uint32(0xFFFF)).astype(np.float32) / np.float32(65536.0)
    return (v * (np.float32(1) + (c % 7).astype(np.float32)) + (c % 5).astype(np.float32)
            ).reshape(m, COLS)


def weights() -> np.ndarray:
    return np.random.default_rng(22).standard_normal((COLS, COLS)).astype(np.float32)


def check(best: np.ndarray, m: int, x_ref: np.ndarray | None) -> str:
    """``ok`` where every row's pick is one of its largest values (within rounding)."""
    if x_ref is None:
        return "unchecked"
    z = (x_ref.astype(np.float64) - x_ref.mean(axis=0)) / x_ref.std(axis=0)
    y = np.maximum(z @ weights().astype(np.float64), 0)
    top = y.max(axis=1)
    got = np.take_along_axis(y, best.astype(np.int64)[:, None], 1)[:, 0]
    bad = int(np.count_nonzero(got < top - 1e-3 * np.maximum(1, np.abs(top))))
    return "ok" if bad == 0 and best.shape == (m,) else f"WRONG in {bad} rows"


class Hostarray:
    """hostarray on an OpenCL device: ``spelling`` "ha" (the namespace) or "numpy"."""

    def __init__(self, dev: ha.Device, spelling: str) -> None:
        self.dev, self.spelling = dev, spelling
        self.prg = ha.Program(SRC, device=dev)
        self.w = ha.asarray(weights(), device=dev, copy=True)
        self.q = ha.hostptr.queue(dev)

    def setup(self, m: int) -> Any:
        x = ha.empty((m, COLS), dtype=ha.float32, device=self.dev)
        self.prg.fill(x.size, ha.write(x), np.uint32(COLS))
        self.q.finish()
        return x

    def run(self, x: Any) -> np.ndarray:
        if self.spelling == "ha":
            z = (x - ha.mean(x, axis=0)) / ha.std(x, axis=0)
            y = z @ self.w
            self.prg.relu(y.size, y)
            best = ha.argmax(y, axis=1)
        else:
            z = (x - np.mean(x, axis=0)) / np.std(x, axis=0)
            y = np.matmul(z, self.w)
            self.prg.relu(y.size, y)
            best = np.argmax(y, axis=1)
        return np.asarray(best)

    def free(self) -> None:
        gc.collect()
        ha.clear_pool()


class Cupy:
    """CuPy on its current CUDA device, spelt with numpy's functions."""

    def __init__(self) -> None:
        import cupy as cp

        self.cp = cp
        self.fill_k = cp.ElementwiseKernel(
            "uint32 cols", "float32 x",
            "unsigned int r = (unsigned int)(i / cols), c = (unsigned int)(i % cols);"
            "unsigned int h = (r * 2654435761u) ^ (c * 40503u + 12345u);"
            "h ^= h >> 13; h *= 1274126177u; h ^= h >> 16;"
            "x = (float)(h & 0xffff) / 65536.0f * (1.0f + (float)(c % 7)) + (float)(c % 5)",
            "pipeline_fill")
        self.relu_k = cp.ElementwiseKernel("", "float32 y", "y = fmaxf(y, 0.0f)",
                                           "pipeline_relu")
        self.w = cp.asarray(weights())

    def setup(self, m: int) -> Any:
        x = self.cp.empty((m, COLS), dtype=self.cp.float32)
        self.fill_k(np.uint32(COLS), x)
        self.cp.cuda.get_current_stream().synchronize()
        return x

    def run(self, x: Any) -> np.ndarray:
        z = (x - np.mean(x, axis=0)) / np.std(x, axis=0)  # CuPy's, through __array_function__
        y = np.matmul(z, self.w)
        self.relu_k(y)
        return self.cp.asnumpy(np.argmax(y, axis=1))

    def free(self) -> None:
        gc.collect()
        self.cp.cuda.get_current_stream().synchronize()
        self.cp.get_default_memory_pool().free_all_blocks()


def _cupy(no_cupy: bool) -> tuple[Cupy | None, str]:
    if no_cupy:
        return None, "skipped (--no-cupy)"
    try:
        lib = Cupy()
        return lib, f"CuPy {lib.cp.__version__}"
    except Exception as e:  # not installed, or no CUDA device
        return None, f"not available ({type(e).__name__}: {str(e)[:80]})"


def measure(lib: Any, m: int, repeat: int, x_ref: np.ndarray | None,
            counted: bool) -> dict[str, Any]:
    times: list[float] = []
    deltas: dict[str, int] = {}
    verdict = "unchecked"
    x = lib.setup(m)
    try:
        for k in range(repeat + 1):  # (the first run builds the generated kernels)
            if counted:
                lib.prg.fill(x.size, ha.write(x), np.uint32(COLS))  # newest on the device again
                lib.q.finish()
                before = ha.stats()
            t = time.perf_counter()
            best = lib.run(x)
            times.append(time.perf_counter() - t)
            if counted and k == repeat:
                after = ha.stats()
                deltas = {s: getattr(after, s) - getattr(before, s) for s in STATS}
            if k == 0:
                verdict = check(best, m, x_ref)
    finally:
        del x
        lib.free()
    return {"median_s": statistics.median(times[1:]), "runs_s": times[1:], "check": verdict,
            "stats": deltas}


def _ms(r: dict[str, Any]) -> str:
    return f"{r['median_s'] * 1e3:.2f}"


def _ratio(a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
    return f"{a['median_s'] / b['median_s']:.2f}" if a and b else "-"


def _moved(r: dict[str, Any]) -> str:
    return str(r["stats"].get("bytes_published", 0) + r["stats"].get("bytes_acquired", 0))


def format_table(result: dict[str, Any]) -> str:
    head = ("| size | ha (ms) | numpy spelling (ms) | numpy/ha | CuPy (ms) | ha/CuPy "
            "| numpy/CuPy | ha bytes moved | numpy bytes moved | checks |")
    lines = [head, "|" + "---|" * 10]
    for row in result["rows"]:
        h, n, c = row["ha"], row["numpy"], row.get("cupy")
        cu = _ms(c) if c else "-"
        checks = ",".join(r["check"] for r in (h, n, c) if r)
        lines.append(f"| {format_size(row['nbytes'])} | {_ms(h)} | {_ms(n)} | {_ratio(n, h)} "
                     f"| {cu} | {_ratio(h, c)} | {_ratio(n, c)} | {_moved(h)} | {_moved(n)} "
                     f"| {checks} |")
    legend = ("ha: ha.mean/ha.std/@/ha.argmax; numpy spelling: np.mean/np.std/np.matmul/"
              "np.argmax on the same HostPtrArrays; CuPy: the numpy spelling on CuPy arrays. "
              "Medians of the timed runs; bytes moved: published + acquired in one run (the "
              "result read back is m * 8 bytes).")
    return "\n".join(lines) + "\n\n" + legend + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None)
    p.add_argument("--sizes", default=",".join(format_size(s) for s in SIZES))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-cupy", action="store_true")
    p.add_argument("--threshold", default=None,
                   help="ha.set_device_compute_threshold for the run: bytes, or 'off'")
    p.add_argument("--no-check", action="store_true", help="skip the numpy reference")
    p.add_argument("--out", default=os.environ.get("OUT") or "pipeline_out")
    args = p.parse_args(argv)
    dev = ha.device(args.device or os.environ.get("HOSTARRAY_DEVICE") or "opencl")
    if dev.framework != "opencl":
        print(f"{dev} is not an OpenCL device", file=sys.stderr)
        return 2
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    if args.threshold is not None:
        ha.set_device_compute_threshold(None if args.threshold == "off"
                                        else parse_size(args.threshold))
    cupy, cupy_text = _cupy(args.no_cupy)
    libs: dict[str, Any] = {"ha": Hostarray(dev, "ha"), "numpy": Hostarray(dev, "numpy")}
    if cupy is not None:
        libs["cupy"] = cupy
    result: dict[str, Any] = {"benchmark": "pipeline", "device": str(dev), "name": dev.name,
                              "link": dev.link, "cupy": cupy_text, "repeat": args.repeat,
                              "threshold": ha.device_compute_threshold(), "rows": []}
    _progress(f"pipeline: {dev} ({dev.name}), link {dev.link}, CuPy: {cupy_text}")
    for nbytes in sizes:
        m = max(1, nbytes // (COLS * 4))
        x_ref = None if args.no_check else reference(m)
        row: dict[str, Any] = {"nbytes": m * COLS * 4, "rows": m}
        for name, lib in libs.items():
            _progress(f"  {format_size(nbytes)} {name}")
            try:
                row[name] = measure(lib, m, args.repeat, x_ref, counted=name != "cupy")
            except Exception as e:  # a library that fails at a size is reported, not fatal
                row[name] = {"median_s": float("nan"), "check": f"raised {type(e).__name__}: "
                                                                f"{str(e)[:80]}", "stats": {}}
        result["rows"].append(row)
    text = format_table(result)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pipeline.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "pipeline.md"), "w") as f:
        f.write(f"# pipeline on {dev} ({dev.name}), link {dev.link}; {cupy_text}\n\n{text}")
    bad = [r for row in result["rows"] for r in row.values()
           if isinstance(r, dict) and r.get("check") not in ("ok", "unchecked")]
    if bad:
        print("FAILED: a result differs from numpy's or a library raised", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
