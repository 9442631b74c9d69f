"""``hostarray demo``: a numpy -> kernel -> numpy pipeline that shows what did not move.

The pipeline: synthesise a noisy signal with numpy, smooth it with a kernel,
compute a threshold (the 90th percentile) with numpy on the host, clip the
signal above it with a second kernel, and hand the result back to numpy.
It runs three ways: through hostarray, as an eager pyopencl program that
copies each kernel's inputs in before it and its outputs out after it
(``enqueue_copy``), and as pure numpy, which is the reference both must match.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np

__all__ = ["run_demo", "SMOOTH_SOURCE", "numpy_pipeline", "hostarray_pipeline",
           "eager_pipeline", "make_signal", "QUANTILE"]

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

QUANTILE = 0.9  # clip everything above the 90th percentile of the smoothed signal


def make_signal(size: int, seed: int = 0) -> np.ndarray:
    """A noisy sine of ``size`` float32 samples.

    Examples
    --------
    >>> from hostarray.demo import make_signal
    >>> make_signal(8).dtype
    dtype('float32')
    """
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 40 * np.pi, size, dtype=np.float32)
    return (np.sin(t) + 0.3 * rng.standard_normal(size, dtype=np.float32)).astype(np.float32)


def numpy_pipeline(signal: np.ndarray, q: float = QUANTILE) -> np.ndarray:
    """The reference: the same pipeline in pure numpy.

    Examples
    --------
    >>> import numpy as np
    >>> from hostarray.demo import numpy_pipeline
    >>> numpy_pipeline(np.array([0, 4, 0, 4], np.float32), q=0.5)
    array([1., 2., 2., 2.], dtype=float32)
    """
    padded = np.concatenate([signal[:1], signal, signal[-1:]])
    y = (np.float32(0.25) * padded[:-2] + np.float32(0.5) * padded[1:-1]
         + np.float32(0.25) * padded[2:])
    threshold = np.float32(np.quantile(y, q))
    return np.minimum(y, threshold)


def hostarray_pipeline(signal: np.ndarray, dev: Any, q: float = QUANTILE,
                       progress: Callable[[str], None] | None = None) -> np.ndarray:
    """The pipeline through hostarray: kernels and numpy on the same memory.

    Nothing is copied by hand: the smooth kernel reads ``x`` (hostarray
    publishes it) and writes ``y``; ``np.quantile`` reads ``y`` on the host
    (hostarray acquires it); the clip kernel runs on ``y`` again, which the
    device still holds, so nothing is published; the final ``np.asarray``
    acquires once more.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray.demo import hostarray_pipeline, make_signal, numpy_pipeline
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     s = make_signal(1000)
    ...     assert np.allclose(hostarray_pipeline(s, gpu), numpy_pipeline(s), atol=1e-5)
    """
    import hostarray as ha

    step = progress or (lambda msg: None)
    size = signal.size
    step("ha.asarray(signal), ha.empty(...) on the device")
    prg = ha.Program(SMOOTH_SOURCE, device=dev)
    x = ha.asarray(signal, device=dev)
    y = ha.empty(signal.shape, dtype=ha.float32, device=dev)
    step("kernel smooth(x -> y)")
    prg.smooth(size, x, ha.write(y), np.int32(size))
    step(f"numpy: threshold = np.quantile(y, {q})")
    threshold = np.float32(np.quantile(y, q))
    step("kernel clip_above(y, threshold)")
    prg.clip_above(size, y, threshold)
    step("numpy: np.asarray(y)")
    return np.asarray(y)


def eager_pipeline(signal: np.ndarray, dev: Any, q: float = QUANTILE,
                   progress: Callable[[str], None] | None = None) -> tuple[np.ndarray, int]:
    """The same pipeline as an eager pyopencl program: copy in, launch, copy out.

    Each kernel's inputs are copied to plain device buffers before it and its
    outputs back after it, with ``pyopencl.enqueue_copy``.  Returns the
    result and the bytes copied.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray.demo import eager_pipeline, make_signal
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     result, moved = eager_pipeline(make_signal(1000), gpu)
    ...     assert moved == 4 * result.nbytes
    """
    import pyopencl as cl

    from . import hostptr

    step = progress or (lambda msg: None)
    step("allocate device buffers")
    queue = hostptr.queue(dev)
    ctx = queue.context
    smooth, clip_above = _eager_program(ctx)
    size, nbytes = signal.size, signal.nbytes
    mf = cl.mem_flags
    x_dev = cl.Buffer(ctx, mf.READ_ONLY, nbytes)
    y_dev = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
    y = np.empty_like(signal)
    moved = 0
    step("copy x in, kernel smooth(x -> y), copy y out")
    cl.enqueue_copy(queue, x_dev, signal)
    moved += nbytes
    smooth(queue, (size,), None, x_dev, y_dev, np.int32(size))
    cl.enqueue_copy(queue, y, y_dev)  # blocking: the host is about to read y
    moved += nbytes
    step(f"numpy: threshold = np.quantile(y, {q})")
    threshold = np.float32(np.quantile(y, q))
    step("copy y in, kernel clip_above(y, threshold), copy y out")
    cl.enqueue_copy(queue, y_dev, y)
    moved += nbytes
    clip_above(queue, (size,), None, y_dev, threshold)
    cl.enqueue_copy(queue, y, y_dev)
    moved += nbytes
    x_dev.release()
    y_dev.release()
    return y, moved


_EAGER_PROGRAMS: dict[Any, Any] = {}


def _eager_program(ctx: Any) -> tuple[Any, Any]:
    """The eager program's two kernels, built once per context."""
    import pyopencl as cl

    kernels = _EAGER_PROGRAMS.get(ctx)
    if kernels is None:
        from .backends.opencl import quiet_build

        prg = quiet_build(ctx, SMOOTH_SOURCE)  # (no CompilerWarning for NVIDIA's remarks)
        kernels = _EAGER_PROGRAMS[ctx] = (cl.Kernel(prg, "smooth"), cl.Kernel(prg, "clip_above"))
    return kernels


def _pick_device(spec: str | None) -> Any:
    import hostarray as ha

    from ._devices import environment_device

    if spec is not None:
        return ha.device(spec)
    named = environment_device()  # (a wrong HOSTARRAY_DEVICE: the error names the variable)
    if named is not None:
        return named
    for d in ha.devices():
        if d.framework == "opencl":
            return d
    return None


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def run_demo(device: str | None = None, size: int = 1 << 22, repeat: int = 3,
             out: TextIO | None = None, wide: bool = False) -> int:
    """Run the demo pipeline three ways and print what moved.

    Parameters
    ----------
    device : str, optional
        Device to run on; defaults to ``HOSTARRAY_DEVICE``, else the first
        working OpenCL device.
    size : int
        Signal length in float32 elements.
    repeat : int
        Timed runs of each pipeline (the best time is shown).
    out : file, optional
        Where to print (nothing is printed when ``None``).
    wide : bool
        Print the device's name in full and long lines unwrapped; by default every line
        has at most 100 characters (the name is shortened with ``...``).

    Returns
    -------
    int
        0 when hostarray's result (and the eager program's) match numpy's,
        1 when they do not, 2 when there is no OpenCL device to run on.

    Examples
    --------
    >>> from hostarray.demo import run_demo
    >>> run_demo(size=4096, repeat=1) in (0, 2)
    True
    """
    import hostarray as ha

    from ._text import WIDTH, error_lines, shorten, wrap

    def say(msg: str = "", indent: str = "      ") -> None:
        if out is not None:
            print("\n".join(wrap(msg, indent, None if wide else WIDTH)), file=out, flush=True)

    def refuse(why: str) -> int:  # an error, as the command's others: on stderr, prefixed
        if out is not None:
            print(error_lines("demo", why, None if wide else WIDTH), file=sys.stderr,
                  flush=True)
        return 2

    t_start = time.perf_counter()
    dev = _pick_device(device)
    if dev is None:
        return refuse("it needs an OpenCL device and found none: install one (e.g. "
                      "`apt-get install pocl-opencl-icd`); `hostarray devices` lists what was "
                      "found")
    if dev.framework != "opencl":
        opencl = next((d for d in ha.devices() if d.framework == "opencl"), None)
        there = (f"pass --device {opencl} (the OpenCL device here)" if opencl is not None
                 else "there is none here: see `hostarray devices`")
        from ._devices import environment_prefix

        return refuse(f"{environment_prefix(device)}{dev} is the host; the demo runs kernels, "
                      f"so it needs an OpenCL device: {there}")
    signal = make_signal(size)
    nbytes = signal.nbytes
    title = f"hostarray demo on {dev} (), host link: {dev.link}"
    name = dev.name if wide else shorten(dev.name, WIDTH - len(title))
    say(f"hostarray demo on {dev} ({name}), host link: {dev.link}")
    steps = (f"pipeline: noisy signal, {size} float32 ({_mib(nbytes)}) -> kernel smooth -> "
             f"numpy np.quantile(y, {QUANTILE})", "-> kernel clip_above -> numpy")
    if wide:
        say(" ".join(steps))
    else:  # the second kernel on a line of its own, under the first
        say(steps[0], " " * 10)
        say(" " * 10 + steps[1])
    say()

    t = time.perf_counter()
    ha.Program(SMOOTH_SOURCE, device=dev)
    _eager_program(ha.hostptr.queue(dev).context)
    say(f"[1/4] build the kernels for {dev}: {(time.perf_counter() - t) * 1e3:.0f} ms")

    say("[2/4] hostarray pipeline, first run step by step (ms since its start):")
    t = time.perf_counter()

    def progress(msg: str) -> None:
        say(f"      {(time.perf_counter() - t) * 1e3:7.1f}  {msg}")

    ha.reset_stats()
    result = hostarray_pipeline(signal, dev, progress=progress)
    first = time.perf_counter() - t
    progress("done")
    s = ha.stats()
    t_ha, _ = _best(lambda: hostarray_pipeline(signal, dev), repeat - 1) if repeat > 1 else (
        first, None)
    t_ha = min(t_ha, first)
    say(f"      best of {max(1, repeat)}: {t_ha * 1e3:.1f} ms")

    say(f"[3/4] eager pyopencl pipeline (copy in before each kernel, out after), best of "
        f"{max(1, repeat)}")
    t_eager, (eager_result, eager_bytes) = _best(lambda: eager_pipeline(signal, dev), repeat)
    say(f"      done: {t_eager * 1e3:.1f} ms")

    say("[4/4] pure numpy pipeline (the reference)")
    t_np, expected = _best(lambda: numpy_pipeline(signal), repeat)
    say(f"      done: {t_np * 1e3:.1f} ms")
    say()

    err_ha = float(np.max(np.abs(result - expected))) if size else 0.0
    err_eager = float(np.max(np.abs(eager_result - expected))) if size else 0.0
    ok_ha = bool(np.allclose(result, expected, rtol=1e-5, atol=1e-5))
    ok_eager = bool(np.allclose(eager_result, expected, rtol=1e-5, atol=1e-5))
    ok = ok_ha and ok_eager
    say(f"check: hostarray vs numpy max |diff| {err_ha:.2g}, eager vs numpy max |diff| "
        f"{err_eager:.2g}: {'OK' if ok else 'FAILED'}")
    say()

    # The fewest synchronisations this pipeline can do: publish x once before
    # smooth, acquire y for np.quantile and again for the final np.asarray.
    least_publishes, least_acquires = 1, 2
    rows = [
        ("", "publishes", "acquires", "bytes moved", "time"),
        ("hostarray", str(s.publishes), str(s.acquires), _mib(s.bytes_moved),
         f"{t_ha * 1e3:.1f} ms"),
        ("eager copies", "-", "-", _mib(eager_bytes), f"{t_eager * 1e3:.1f} ms"),
        ("numpy only", "-", "-", "-", f"{t_np * 1e3:.1f} ms"),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        say("  ".join(v.ljust(w) if i == 0 else v.rjust(w)
                      for i, (v, w) in enumerate(zip(r, widths))).rstrip())
    say()
    minimal = s.publishes == least_publishes and s.acquires == least_acquires
    say(f"hostarray synchronised {s.publishes} + {s.acquires} times "
        f"(the least possible: {least_publishes} + {least_acquires}"
        f"{'' if minimal else '; more because a raw numpy view escaped'}); "
        f"on a {dev.link} link that moved {_mib(s.bytes_moved)}.")
    say(f"bytes not moved: {_mib(eager_bytes - s.bytes_moved)} of the {_mib(eager_bytes)} "
        f"the eager program copied.")
    say(f"total {time.perf_counter() - t_start:.2f} s")
    return 0 if ok else 1
