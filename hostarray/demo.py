"""``hostarray demo``: a numpy -> kernel -> numpy pipeline that shows what did not move."""

from __future__ import annotations

import os
import time
from typing import TextIO

import numpy as np

__all__ = ["run_demo", "SMOOTH_SOURCE"]

SMOOTH_SOURCE = r"""
__kernel void smooth(__global const float *x, __global float *y, const int n) {
    int i = get_global_id(0);
    float l = x[max(i - 1, 0)], c = x[i], r = x[min(i + 1, n - 1)];
    y[i] = 0.25f * l + 0.5f * c + 0.25f * r;
}
__kernel void clip_above(__global float *y, const float threshold) {
    int i = get_global_id(0);
    y[i] = y[i] > threshold ? threshold : y[i];
}
"""


def _numpy_pipeline(signal: np.ndarray, q: float) -> np.ndarray:
    padded = np.concatenate([signal[:1], signal, signal[-1:]])
    y = (0.25 * padded[:-2] + 0.5 * padded[1:-1] + 0.25 * padded[2:]).astype(np.float32)
    t = np.float32(np.quantile(y, q))
    return np.minimum(y, t)


def _pick_device(spec: str | None):
    import hostarray as ha

    if spec is None:
        spec = os.environ.get("HOSTARRAY_DEVICE") or None
    if spec is not None:
        return ha.device(spec)
    for d in ha.devices():
        if d.framework == "opencl":
            return d
    return None


def run_demo(device: str | None = None, size: int = 1 << 22, out: TextIO | None = None) -> int:
    """Run the demo pipeline; return 0 when hostarray's result matches numpy's."""
    import hostarray as ha

    def say(msg: str) -> None:
        if out is not None:
            print(msg, file=out, flush=True)

    dev = _pick_device(device)
    if dev is None or dev.framework != "opencl":
        say("no working OpenCL device: install one (e.g. `apt-get install pocl-opencl-icd`), "
            "see `hostarray devices`")
        return 2
    say(f"device: {dev} ({dev.name}), host link: {dev.link}")
    rng = np.random.default_rng(0)
    signal = (np.sin(np.linspace(0, 40 * np.pi, size)) +
              0.3 * rng.standard_normal(size)).astype(np.float32)
    q = 0.9
    nbytes = signal.nbytes

    t0 = time.perf_counter()
    say(f"[1/4] numpy: a noisy signal of {size} float32 ({nbytes / 2**20:.1f} MiB)")
    x = ha.asarray(signal, device=dev)
    y = ha.empty(signal.shape, dtype=ha.float32, device=dev)
    prg = ha.Program(SMOOTH_SOURCE, device=dev)
    ha.reset_stats()
    say("[2/4] kernel: smooth (x is read, y written)")
    prg.smooth(size, x, ha.write(y), np.int32(size))
    say("[3/4] numpy: threshold = 90th percentile of y (the host reads y)")
    threshold = np.float32(np.quantile(np.asarray(y), q))
    say("[4/4] kernel: clip y above the threshold, then numpy checks the result")
    prg.clip_above(size, y, threshold)
    result = np.asarray(y)
    elapsed = time.perf_counter() - t0
    s = ha.stats()

    expected = _numpy_pipeline(signal, q)
    ok = bool(np.allclose(result, expected, rtol=1e-5, atol=1e-5))
    # An eager "copy in, copy out around every kernel" program moves, per kernel,
    # its inputs to the device and its outputs back.
    eager = (nbytes + nbytes) + (nbytes + nbytes) + nbytes
    say("")
    say(f"result matches numpy: {ok}")
    say(f"hostarray: {s.publishes} publishes, {s.acquires} acquires, "
        f"{s.bytes_moved / 2**20:.1f} MiB moved in {elapsed * 1e3:.1f} ms")
    say(f"eager copies would move {eager / 2**20:.1f} MiB; "
        f"bytes not moved: {(eager - s.bytes_moved) / 2**20:.1f} MiB")
    return 0 if ok else 1
