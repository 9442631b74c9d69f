"""The matrix product's tile configuration per device: a small autotuner and its cache.

Which :class:`~hostarray._compute.matmul_source.Config` is fastest depends on the device
(its compute units, registers, local memory, the driver's compiler) and on the product's
size (a large tile leaves most compute units idle on a small product).  So the first float32
product of at least :data:`TUNE_MIN_WORK` multiply-adds on a device tunes it: every candidate
of :func:`candidates` that the device can run (its local memory and work-group size; the
built kernel's own work-group limit) is built, checked against numpy and timed with OpenCL
profiling events on square float32 probe products (:func:`probe_sizes`: 1024, 2048, 4096 on
a GPU), within a time budget (:data:`FIRST_USE_SECONDS`; ``benchmarks/bench_matmul.py`` gives
its own).  The winner per probe size is cached per device, driver version and generator
version in the user's cache folder (``$XDG_CACHE_HOME/hostarray/matmul-tuning.json``, else
``~/.cache/...``), so later processes read it instead.  A product takes the winner of the
probe size nearest to its own (``M * N`` times its batch, on a log scale); other data types
use float32's winner where their tiles fit the local memory.  Until a device is tuned, and
for smaller products, :func:`default_config` decides (no tuning).

``HOSTARRAY_MATMUL_TUNE`` (:func:`hostarray._settings.matmul_tune`): ``auto`` (the default),
``off`` (never tune, the cache not read: :func:`default_config` alone) or ``reset`` (the
cached entry of each device is dropped at its first product, which tunes anew).

Examples
--------
>>> from hostarray._compute.matmul_tune import candidates
>>> [c.key() for c in candidates(local_mem=32768, max_group=256)][:2]
['128x128x8/8x8/db', '128x64x8/8x4/db']
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _settings
from .._devices import Device
from .matmul_source import VERSION, Config, layout, source

__all__ = ["FIRST_USE_SECONDS", "TUNE_MIN_WORK", "TuneResult", "cache_path", "candidates",
           "choose", "default_config", "device_key", "forget", "has_fma", "probe_sizes", "tune"]

#: the time budget of the tuning a device's first large product runs (seconds)
FIRST_USE_SECONDS = 20.0
#: the multiply-adds (``M * N * K`` times the batch) from which a float32 product tunes its
#: device: below, a product costs well under the tuning's time and the default does
TUNE_MIN_WORK = 512 ** 3

# The candidates, most likely winners on a large GPU first (so that a budget cut short still
# tried them): 128 x 128 blocks of 8 x 8 per work-item are the classic register-blocked tile
# of NVIDIA GPUs; the smaller ones fill more compute units on smaller products and suit
# small devices (and a CPU device, whose work-groups are loops); the last ones take 512
# work-items, past the 256 of most candidates.
_CANDIDATES = [Config.parse(k) for k in (
    "128x128x8/8x8/db", "128x64x8/8x4/db", "64x128x8/4x8/db", "128x128x16/8x8/db",
    "128x128x8/8x8/sb", "128x64x16/8x8/db", "64x128x16/8x8/db", "64x64x16/4x4/db",
    "64x64x8/4x4/db", "128x64x8/8x8/db", "64x64x16/8x8/db", "64x64x8/8x4/db",
    "128x128x16/8x8/sb", "64x64x16/4x4/sb", "32x32x8/4x4/db", "32x32x16/4x4/sb",
    "64x32x8/4x4/db",
    # 512 work-items (where the device allows them, and the built kernel's registers do)
    "128x128x8/8x4/db", "256x128x8/8x8/db", "128x256x8/8x8/db")]


def candidates(local_mem: int, max_group: int, itemsize: int = 4) -> list[Config]:
    """The candidate configurations a device with ``local_mem`` bytes of local memory and
    work-groups of at most ``max_group`` work-items can run, for elements of ``itemsize``
    bytes, in the order they are tried."""
    return [c for c in _CANDIDATES
            if c.local_size <= max_group and c.local_bytes(itemsize) <= local_mem]


def has_fma(dev: Device, itemsize: int) -> bool:
    """Whether ``dev`` has a hardware fused multiply-add for floats of ``itemsize`` bytes
    (``CL_FP_FMA`` in its single or double precision configuration)."""
    import pyopencl as cl

    d = dev._cl_device
    cfg = getattr(d, "single_fp_config" if itemsize == 4 else "double_fp_config", 0)
    try:
        return bool(int(cfg) & int(cl.device_fp_config.FMA))
    except (cl.Error, TypeError, ValueError):
        return False


def _limits(dev: Device) -> tuple[int, int, int]:
    d = dev._cl_device
    return int(d.local_mem_size), int(d.max_work_group_size), int(d.max_compute_units)


_DEFAULTS = (Config.parse("128x128x8/8x8/db"), Config.parse("64x64x8/4x4/db"),
             Config.parse("32x32x8/4x4/db"))
# A CPU device (PoCL) runs the TK = 16 tiles 20-35x faster than the TK = 8 ones
# (256^2 float32 on Debian's PoCL 3.1, 2026-12-02: 128x128x8/8x8/db 33 ms, 128x128x16 1.5 ms,
# 32x32x16/4x4/sb 0.9 ms), and most of its products are below the tuning's threshold.
_CPU_DEFAULTS = (Config.parse("128x128x16/8x8/db"), Config.parse("64x64x16/4x4/db"),
                 Config.parse("32x32x16/4x4/sb"))


def default_config(dev: Device, M: int, N: int, nb: int, itemsize: int) -> Config:
    """The untuned choice: 128 x 128 tiles (8 x 8 per work-item) where they give every
    compute unit a group and fit the device, else 64 x 64 (4 x 4), else 32 x 32; tiles
    16 deep on a CPU device, 8 elsewhere."""
    import pyopencl as cl

    local_mem, max_group, units = _limits(dev)
    cpu = bool(int(dev._cl_device.type) & int(cl.device_type.CPU))
    defaults = _CPU_DEFAULTS if cpu else _DEFAULTS
    fits = [c for c in defaults
            if c.local_size <= max_group and c.local_bytes(itemsize) <= local_mem]
    for c in fits:
        if -(-M // c.tm) * -(-N // c.tn) * nb >= units or c is fits[-1]:
            return c
    return _DEFAULTS[-1]  # (every device takes 64 work-items and 2.3 KiB of local memory)


def probe_sizes(dev: Device) -> tuple[int, ...]:
    """The sides of the square float32 products a device is tuned on: 1024, 2048 and 4096
    on a GPU (those that fit in a quarter of its memory), 256 and 512 elsewhere (a CPU
    device computes them in well under a second each)."""
    d = dev._cl_device
    import pyopencl as cl

    if not int(d.type) & int(cl.device_type.GPU):
        return (256, 512)
    mem = int(d.global_mem_size)
    return tuple(n for n in (1024, 2048, 4096) if 3 * n * n * 4 <= mem // 4) or (512,)


def device_key(dev: Device) -> str:
    """The cache's key of ``dev``: platform, device name, driver version, generator
    version."""
    d = dev._cl_device
    return f"{d.platform.name.strip()} | {d.name.strip()} | {d.driver_version.strip()} | " \
           f"matmul v{VERSION}"


def cache_path() -> str:
    """The tuning cache: ``matmul-tuning.json`` in ``$XDG_CACHE_HOME/hostarray`` (else
    ``~/.cache/hostarray``), read at each call."""
    return os.path.join(_settings.cache_dir(), "matmul-tuning.json")


def _read_cache() -> dict[str, Any]:
    try:
        with open(cache_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(key: str, entry: dict[str, Any] | None) -> None:
    """Set (``None``: drop) one device's entry; an unwritable cache folder is no error (the
    process keeps its tuning in memory)."""
    path = cache_path()
    data = _read_cache()
    if entry is None:
        if key not in data:
            return
        del data[key]
    else:
        data[key] = entry
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)  # whole or not at all, for a process reading it meanwhile
    except OSError:
        pass


@dataclass
class TuneResult:
    """What one tuning found: ``winners`` (probe side -> configuration), ``timings``
    (configuration key -> {probe side: median seconds}), ``rejected`` (configuration key ->
    why: a failed build, a wrong value, the kernel's work-group limit), ``seconds`` spent,
    whether the budget cut it short (``cut``), and the device's cache key."""

    key: str
    winners: dict[int, Config] = field(default_factory=dict)
    timings: dict[str, dict[int, float]] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    cut: bool = False

    def entry(self) -> dict[str, Any]:
        """The cache's JSON entry."""
        return {"winners": {str(n): c.key() for n, c in self.winners.items()},
                "timings": {k: {str(n): t for n, t in v.items()}
                            for k, v in self.timings.items()},
                "rejected": self.rejected, "seconds": round(self.seconds, 3),
                "cut": self.cut,
                "when": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}


def _winners_of(entry: Any) -> dict[int, Config] | None:
    try:
        return {int(n): Config.parse(k) for n, k in entry["winners"].items()} or None
    except (TypeError, KeyError, ValueError, AttributeError):
        return None  # an entry this version can't read: tune anew


class _Probe:
    """Square float32 products of side ``n`` on a profiling queue of the device's context:
    plain buffers, outside hostarray's arrays (nothing the user holds is touched)."""

    def __init__(self, dev: Device, queue: Any, n: int, rng: np.random.Generator) -> None:
        import pyopencl as cl

        self.n = n
        self.a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        self.b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
        ctx = dev.runtime.context
        flags = cl.mem_flags
        self.da = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=self.a)
        self.db = cl.Buffer(ctx, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=self.b)
        self.dc = cl.Buffer(ctx, flags.READ_WRITE, size=n * n * 4)
        # the rows checked: a numpy product of all of them costs too much at n = 4096
        self.rows = np.unique(np.r_[0, n - 1, rng.integers(0, n, 6)])
        ref = self.a[self.rows].astype(np.float64) @ self.b.astype(np.float64)
        bound = np.abs(self.a[self.rows]).astype(np.float64) @ np.abs(self.b).astype(
            np.float64)
        self.ref, self.tol = ref, 2 * n * np.finfo(np.float32).eps * bound + 1e-30
        self.queue = queue

    def run(self, knl: Any, cfg: Config) -> Any:
        n = self.n
        tn, tm = n // cfg.tn, n // cfg.tm
        return knl(self.queue, (tn * tm * cfg.local_size,), (cfg.local_size,),
                   n, n, n, tn, tm, self.dc, 0, self.da, 0, n, 1, self.db, 0, n, 1)

    def wrong(self) -> str:
        """Why the last product's checked rows are wrong, or ``""``."""
        import pyopencl as cl

        got = np.empty((self.n, self.n), np.float32)
        cl.enqueue_copy(self.queue, got, self.dc)
        err = np.abs(got[self.rows].astype(np.float64) - self.ref)
        bad = err > self.tol
        if not bad.any():
            return ""
        i, j = np.argwhere(bad)[0]
        return f"wrong value at n={self.n}, [{self.rows[i]}, {j}]: {got[self.rows[i], j]} " \
               f"(numpy: {self.ref[i, j]})"


def _build(dev: Device, cfg: Config) -> Any:
    """The plain float32 kernel of ``cfg`` (what a contiguous product of sizes multiple of
    the tiles runs), built in the device's program cache: the winner is not built again."""
    from ..backends.opencl import typed_kernel
    from .launch import _options

    lay = layout(cfg, "float", "f", "float", "float", "float", 4096, 4096, 4096,
                 (0, 4096, 1, ()), (0, 4096, 1, ()), 0, has_fma(dev, 4))
    prg = dev.runtime.program(source(cfg, lay), _options(dev))[0]
    return typed_kernel(prg, "mm", int(dev._cl_device.address_bits))[0]


def tune(dev: Device, max_seconds: float = FIRST_USE_SECONDS, sizes: tuple[int, ...] | None
         = None, configs: list[Config] | None = None, repeat: int = 5,
         report: Callable[[str], None] | None = None, save: bool = True) -> TuneResult:
    """Tune ``dev``: every configuration of ``configs`` (default :func:`candidates` for the
    device) built, checked and timed (median of ``repeat`` runs after a warm-up, OpenCL
    profiling) on square float32 products of each side in ``sizes`` (default
    :func:`probe_sizes`), within ``max_seconds`` (the configurations not reached then are
    left out, ``cut``); the winners replace the device's in this process and, with ``save``,
    in the cache.  ``report`` receives a line per configuration.

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray._compute.matmul_source import Config
    >>> dev = [d for d in ha.devices() if d.framework == "opencl"][0]
    >>> r = tune(dev, sizes=(64,), configs=[Config(32, 32, 8, 4, 4, True)], save=False)
    >>> r.winners[64].key()
    '32x32x8/4x4/db'
    """
    import pyopencl as cl

    t0 = time.perf_counter()
    local_mem, max_group, _ = _limits(dev)
    if configs is None:
        configs = candidates(local_mem, max_group)
    sizes = tuple(sorted(sizes or probe_sizes(dev)))
    result = TuneResult(device_key(dev))
    queue = cl.CommandQueue(dev.runtime.context, dev._cl_device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    probes = [_Probe(dev, queue, n, rng) for n in sizes]
    say = report or (lambda line: None)
    for cfg in configs:
        if time.perf_counter() - t0 > max_seconds:
            result.cut = True
            say(f"{cfg.key()}: not tried (budget of {max_seconds:g} s spent)")
            continue
        k = cfg.key()
        if any(n % cfg.tm or n % cfg.tn for n in sizes):
            result.rejected[k] = "a probe size is not a multiple of its tiles"
            continue
        try:
            knl = _build(dev, cfg)
            limit = knl.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE,
                                            dev._cl_device)
        except Exception as e:  # a build the driver refuses: not a candidate here
            result.rejected[k] = f"build failed: {str(e).splitlines()[0][:200]}"
            say(f"{k}: {result.rejected[k]}")
            continue
        if limit < cfg.local_size:
            result.rejected[k] = f"the kernel takes at most {limit} work-items per group"
            say(f"{k}: {result.rejected[k]}")
            continue
        times: dict[int, float] = {}
        for p in probes:
            try:
                p.run(knl, cfg).wait()  # the warm-up, checked
                why = p.wrong()
            except cl.Error as e:
                why = f"launch failed: {e}"
            if why:
                result.rejected[k] = why
                break
            runs = []
            for _ in range(repeat):
                ev = p.run(knl, cfg)
                ev.wait()
                runs.append((ev.profile.end - ev.profile.start) * 1e-9)
                if time.perf_counter() - t0 > max_seconds:
                    break
            times[p.n] = statistics.median(runs)
        if k in result.rejected:
            say(f"{k}: {result.rejected[k]}")
            continue
        result.timings[k] = times
        say(f"{k}: " + ", ".join(f"n={n} {t * 1e3:.3f} ms ({2 * n ** 3 / t * 1e-12:.2f} "
                                 f"TFLOP/s)" for n, t in times.items()))
    for n in sizes:
        timed = [(v[n], Config.parse(k)) for k, v in result.timings.items() if n in v]
        if timed:
            result.winners[n] = min(timed, key=lambda p: p[0])[1]
    result.seconds = time.perf_counter() - t0
    for p in probes:  # the buffers go now, not at the next collection
        for buf in (p.da, p.db, p.dc):
            buf.release()
    if result.winners:
        with _lock:
            _tuned[dev] = result.winners
        if save:
            _write_cache(result.key, result.entry())
    return result


# per device: its winners (probe side -> configuration), or {} where it is not tuned and
# won't be in this process (HOSTARRAY_MATMUL_TUNE=off, a failed tuning)
_tuned: dict[Device, dict[int, Config]] = {}
_looked: set[Device] = set()  # devices whose cache entry was read (or reset)
_lock = threading.Lock()
_tuning: dict[Device, threading.Lock] = {}


def forget(dev: Device | None = None) -> None:
    """Drop this process's tuning of ``dev`` (all devices: ``None``), so that the next
    product reads the cache again (tests, the benchmark)."""
    with _lock:
        for d in ([dev] if dev is not None else list(_tuned) + list(_looked)):
            _tuned.pop(d, None)
            _looked.discard(d)


def _winners(dev: Device, work: int) -> dict[int, Config] | None:
    """The device's winners: from this process, else from the cache, else tuned now where
    ``work`` is at least :data:`TUNE_MIN_WORK`; ``None`` where there are none (yet)."""
    w = _tuned.get(dev)
    if w is not None:
        return w or None
    mode = _settings.matmul_tune()
    if mode == "off":
        return None
    if dev not in _looked:
        with _lock:
            if dev not in _looked:
                key = device_key(dev)
                if mode == "reset":
                    _write_cache(key, None)
                else:
                    found = _winners_of(_read_cache().get(key))
                    if found:
                        _tuned[dev] = found
                _looked.add(dev)
        w = _tuned.get(dev)
        if w is not None:
            return w or None
    if work < TUNE_MIN_WORK:
        return None
    with _lock:
        gate = _tuning.setdefault(dev, threading.Lock())
    with gate:  # one tuning per device; a second thread waits for its winners
        if dev in _tuned:
            return _tuned[dev] or None
        try:
            found = tune(dev).winners
        except Exception:  # never fail a product for its tuning: the default then
            found = {}
        with _lock:
            _tuned[dev] = found
    return found or None


def choose(dev: Device, M: int, N: int, K: int, nb: int, itemsize: int) -> Config:
    """The configuration of an ``M x K`` by ``K x N`` product (``nb`` of them) whose loop
    type has ``itemsize`` bytes: the tuned winner of the nearest probe size that fits the
    device, else :func:`default_config` (tuning the device first, where this is its first
    float32 product of :data:`TUNE_MIN_WORK` multiply-adds or more)."""
    w = _winners(dev, M * N * K * nb if itemsize == 4 else 0)
    if w:
        area = math.log(max(M * N * nb, 1))
        n = min(w, key=lambda s: abs(2 * math.log(s) - area))
        cfg = w[n]
        local_mem, max_group, _ = _limits(dev)
        if cfg.local_bytes(itemsize) <= local_mem and cfg.local_size <= max_group:
            return cfg
    return default_config(dev, M, N, nb, itemsize)
