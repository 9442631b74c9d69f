"""Probe: kernels on many overlapping views of one buffer, old rule vs new (a variant a process).

Plain pyopencl, except the variant ``hostarray``.  The views are ``--count`` ranges of
``--size`` bytes (default 700) at steps of one alignment unit (``CL_DEVICE_MEM_BASE_ADDR_ALIGN``,
512 bytes on an H200), so each overlaps the next: the pattern that crashed NVIDIA's driver
580 (docs/gpu.md, "Known issue").  Each view is used by two kernels (read, then written),
for ``--rounds`` rounds; then every sub-buffer is released, then the parent, then the old
events are queried.  Every step prints before it runs, so the last line names the step a
crash happened in.

Variants:

``old``
    hostarray before the rule: one sub-buffer of exactly the view's bytes per view, all kept
    (overlapping), released at the end.
``oldparent``
    ``old``, and each kernel also gets the parent buffer (a short view at offset 0 used to be
    passed as the parent).
``new``
    the rule (``OpenCLBuffer.handle``): a sub-buffer covers whole units from the view's
    origin; before one is created, every live sub-buffer overlapping it is retired: wait for
    the last event that used it, then release it.  Live sub-buffers never overlap.
``newdefer``
    ``new``, but a retired sub-buffer is only released at the end (what hostarray does when
    the queue still runs other work: the graveyard): overlapping sub-buffers exist, unused.
``disjoint``
    control: views of exactly one unit, no two overlap.
``hostarray``
    the same views through hostarray (``prg.copy(n, x[view], other)``), which follows the rule.

    python3 -X faulthandler benchmarks/probes/probe_views.py new [--plain] [--count 30] [--size 700]
    python3 benchmarks/probes/probe_views.py --all      # every variant x {USE_HOST_PTR, plain},
                                                 # each in its own process; JSON to $OUT

``--plain`` makes the parent a plain device buffer (``COPY_HOST_PTR``, like hostarray's copied
link) instead of ``USE_HOST_PTR`` over page-aligned host memory.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pyopencl as cl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = ("old", "oldparent", "new", "newdefer", "disjoint", "hostarray")
SRC = """
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}"""


def say(*a: object) -> None:
    print(*a, flush=True)


def _device() -> cl.Device:
    devs = [d for p in cl.get_platforms() for d in p.get_devices()]
    gpus = [d for d in devs if d.type & cl.device_type.GPU]
    return (gpus or devs)[0]


def run(variant: str, plain: bool, count: int, size: int, rounds: int) -> None:
    if variant == "hostarray":
        return run_hostarray(plain, count, size, rounds)
    dev = _device()
    unit = max(1, dev.mem_base_addr_align // 8)
    if variant == "disjoint":
        size = unit
    say(f"{variant} {'plain' if plain else 'use_host_ptr'}: {dev.name.strip()} "
        f"({dev.platform.name.strip()}, driver {dev.driver_version}), unit {unit} B, "
        f"{count} views of {size} B at {unit}-byte steps, {rounds} rounds")
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    k = cl.Kernel(cl.Program(ctx, SRC).build(), "copy")
    # oldparent: the parent passed too, unused by the kernel (as a short view at offset 0 was)
    kp = cl.Kernel(cl.Program(ctx, SRC.replace("__global float *dst)", "__global float *dst, "
                                               "__global float *p)")).build(), "copy")
    nbytes = (count + 4) * unit + size
    raw = np.empty(nbytes + 4096, np.uint8)
    skip = -raw.ctypes.data % 4096
    host = raw[skip:skip + nbytes].view(np.float32)
    host[:] = np.arange(host.size)
    mf = cl.mem_flags
    flags = mf.READ_WRITE | (mf.COPY_HOST_PTR if plain else mf.USE_HOST_PTR)
    parent = cl.Buffer(ctx, flags, hostbuf=host)
    other = cl.Buffer(ctx, mf.READ_WRITE, nbytes)
    n = size // 4
    rule = variant in ("new", "newdefer")
    live: dict[tuple[int, int], Any] = {}  # (lo, hi) -> sub-buffer
    last: dict[tuple[int, int], Any] = {}  # (lo, hi) -> last event that used it
    kept: list[Any] = []  # every sub-buffer of the old rule; the graveyard of newdefer
    events: list[Any] = []
    for r in range(rounds):
        say(f"  round {r}")
        for i in range(1, count + 1):
            lo = i * unit
            hi = min(nbytes, lo + -(-size // unit) * unit) if rule else lo + size
            key = (lo, hi)
            sub = live.get(key)
            if sub is None:
                if rule:
                    for old in [kk for kk in live if kk[0] < hi and lo < kk[1]]:
                        say(f"    view {i}: retire {old}: wait for its last event")
                        ev = last.pop(old, None)
                        if ev is not None:
                            ev.wait()
                        dead = live.pop(old)
                        if variant == "newdefer":
                            kept.append(dead)
                        else:
                            say(f"    view {i}: release {old}")
                            dead.release()
                say(f"    view {i}: create sub-buffer {key}")
                sub = parent.get_sub_region(lo, hi - lo)
                if rule:
                    live[key] = sub
                else:
                    kept.append(sub)
            say(f"    view {i}: launch read, launch write")
            if variant == "oldparent":
                events.append(kp(q, (n,), None, sub, other, parent))
                events.append(kp(q, (n,), None, other, sub, parent))
            else:
                events.append(k(q, (n,), None, sub, other))
                events.append(k(q, (n,), None, other, sub))
            last[key] = events[-1]
    say("  finish the queue")
    q.finish()
    say(f"  release {len(live)} live and {len(kept)} kept sub-buffers")
    for s in list(live.values()) + kept:
        s.release()
    live.clear()
    kept.clear()
    say("  release the parent")
    parent.release()
    other.release()
    say("  query the events")
    say("  statuses", sorted({e.command_execution_status for e in events}))
    say(variant, "OK")


def run_hostarray(plain: bool, count: int, size: int, rounds: int) -> None:
    if plain:
        os.environ["HOSTARRAY_LINK"] = "copied"
    sys.path.insert(0, ROOT)
    import hostarray as ha

    devs = [d for d in ha.devices() if d.framework == "opencl"]
    dev = next((d for d in devs if "GPU" in d.type.upper()), devs[0])
    g = dev.alignment // 4
    n = size // 4
    say(f"hostarray on {dev} ({dev.name}, link {dev.link}), unit {dev.alignment} B, "
        f"{count} views of {size} B at unit steps, {rounds} rounds")
    prg = ha.Program(SRC, device=dev)
    total = (count + 4) * g + n
    x = ha.asarray(np.arange(total, dtype=np.float32), device=dev, copy=True)
    other = ha.zeros(total, dtype=ha.float32, device=dev)
    for r in range(rounds):
        say(f"  round {r}")
        for i in range(1, count + 1):
            live = x._s.buffers[dev].sub_ranges() if dev in x._s.buffers else []
            say(f"    view {i}: launch read, launch write (live sub-buffers {live})")
            prg.copy(n, x[i * g:i * g + n], other[:n])
            prg.copy(n, other[:n], x[i * g:i * g + n])
    say("  read back")
    got = np.array(x, copy=True)
    say("  values", "OK" if np.isfinite(got).all() else "BAD")
    say("  drop the arrays")
    del x, other
    import gc

    gc.collect()
    say("  finish")
    dev.runtime.queue.finish()
    dev.runtime.sweep()
    say("hostarray OK")


def run_all(args: argparse.Namespace) -> int:
    out = os.environ.get("OUT")
    results = []
    for variant in VARIANTS:
        for plain in (False, True):
            cmd = [sys.executable, "-X", "faulthandler", os.path.abspath(__file__), variant,
                   "--count", str(args.count), "--size", str(args.size),
                   "--rounds", str(args.rounds)] + (["--plain"] if plain else [])
            name = f"{variant}{'-plain' if plain else ''}"
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                rc, stdout, text = p.returncode, p.stdout, p.stdout + p.stderr
            except subprocess.TimeoutExpired as e:
                def s(b: str | bytes | None) -> str:
                    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
                rc, stdout = None, s(e.stdout)
                text = stdout + s(e.stderr) + "\n[timed out]"
            dt = time.perf_counter() - t0
            lines = [ln for ln in text.splitlines() if ln.strip()]
            how = ("timeout" if rc is None else "ok" if rc == 0 else
                   f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit {rc}")
            # the last line printed: the step that finished the run, or the one it died in
            last_step = ([ln.strip() for ln in stdout.splitlines() if ln.strip()] or [""])[-1]
            say(f"{name:20s} {how:16s} {dt:6.1f}s  last step: {last_step}")
            results.append({"variant": variant, "plain": plain, "rc": rc, "result": how,
                            "seconds": round(dt, 2), "last_step": last_step,
                            "tail": lines[-30:]})
            if out:
                os.makedirs(out, exist_ok=True)
                with open(os.path.join(out, f"probe_views-{name}.log"), "w") as f:
                    f.write(" ".join(cmd) + "\n" + text)
                with open(os.path.join(out, "probe_views.json"), "w") as f:
                    json.dump(results, f, indent=1)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("variant", nargs="?", choices=VARIANTS)
    p.add_argument("--all", action="store_true", help="every variant, each in a subprocess")
    p.add_argument("--plain", action="store_true", help="parent is COPY_HOST_PTR, not USE_HOST_PTR")
    p.add_argument("--count", type=int, default=30, help="views (default 30)")
    p.add_argument("--size", type=int, default=700, help="bytes per view (default 700)")
    p.add_argument("--rounds", type=int, default=3, help="launches per view (default 3)")
    p.add_argument("--timeout", type=int, default=60, help="seconds per variant with --all")
    args = p.parse_args()
    if args.all:
        return run_all(args)
    if args.variant is None:
        p.error("name a variant or pass --all")
    run(args.variant, args.plain, args.count, args.size, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
