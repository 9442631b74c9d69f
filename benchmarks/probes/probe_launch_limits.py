"""Which global and local sizes an OpenCL driver really runs (issue 20 (4)); plain pyopencl.

Each launch runs in a process of its own (a driver may kill the process: PoCL 3.1 aborts
with ``Assertion max_wgs > 0`` or dies of SIGILL at 2**32 work-groups), with a time limit
(a launch the driver takes may simply run for long).  The kernel counts its work-groups
with an atomic and marks the last work-item, so a launch that "runs" but skips or repeats
groups shows too.  ``--gate`` only enqueues, behind a user event then set to an error
status, so nothing runs: it shows whether the driver takes a size at all, at no cost.

    python3 benchmarks/probes/probe_launch_limits.py [--gate] [--timeout 60] [--device 0]

Also prints whether the device has non-uniform work-groups, and what the driver answers
for a build option it does not know.  Results on PoCL 3.1 (Debian, x86-64):
``2**32 - 1`` work-groups run and ``2**32`` crash whatever the dimensions; the number of
work-items alone does not matter (``(2**32,)`` with the driver's local size of 4096 runs);
no non-uniform work-groups; an unknown option is ``INVALID_BUILD_OPTIONS``
(``Invalid build option: -no-such-option``).  On an NVIDIA H200 (OpenCL 3.0 CUDA, driver
580): every size is taken and 2**32 work-groups and more run, but kernels see their global
ids and sizes as 32-bit signed ints per dimension (``(2**32,)`` is seen as 0, ``(2**31,)``
as ``-2**31``; ``(2**31 - 1,)`` is right); no non-uniform work-groups; an unknown option
is ``BUILD_PROGRAM_FAILURE`` with ``Don't understand command line argument``.
hostarray's limits: ``LaunchLimits`` in ``hostarray/_launch.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys

CHILD = r"""
import json, sys, numpy as np, pyopencl as cl
spec = json.loads(sys.argv[1])
dev = [d for p in cl.get_platforms() for d in p.get_devices()][spec["device"]]
ctx = cl.Context([dev]); q = cl.CommandQueue(ctx)
# c[0], c[1]: work-groups run (low word, carries); c[2]: the last work-item ran; c[3..8]:
# get_global_size(0..2) as the kernel sees them, as two 32-bit words each
src = '''__kernel void cnt(__global uint *c) {
  if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0)
    if (atomic_inc(&c[0]) == 0xffffffffu) atomic_inc(&c[1]);
  if (get_global_id(0) == get_global_size(0) - 1 && get_global_id(1) == get_global_size(1) - 1
      && get_global_id(2) == get_global_size(2) - 1) c[2] = 1;
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)
    for (int d = 0; d < 3; ++d) {
      ulong g = get_global_size(d); c[3 + 2 * d] = (uint)g; c[4 + 2 * d] = (uint)(g >> 32);
    }
}'''
k = cl.Kernel(cl.Program(ctx, src).build(), "cnt")
c = np.zeros(9, np.uint32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=c)
k.set_arg(0, buf)
g = tuple(spec["global"]); l = None if spec["local"] is None else tuple(spec["local"])
gate = cl.UserEvent(ctx) if spec["gate"] else None
try:
    ev = cl.enqueue_nd_range_kernel(q, k, g, l, wait_for=[gate] if gate else None)
except cl.Error as e:
    if gate: gate.set_status(cl.command_execution_status.COMPLETE)
    print("RESULT", json.dumps({"refused": str(e).splitlines()[0]})); sys.exit(0)
if gate:
    gate.set_status(-5)  # the launch fails without running
    try: ev.wait()
    except cl.Error: pass
    print("RESULT", json.dumps({"taken": True})); sys.exit(0)
cl.enqueue_copy(q, c, buf); q.finish()
sizes = [int(c[3 + 2 * d]) + (int(c[4 + 2 * d]) << 32) for d in range(len(g))]
print("RESULT", json.dumps({"groups": int(c[0]) + (int(c[1]) << 32), "last": int(c[2]),
                            "sizes_seen": sizes}))
"""

INFO = r"""
import json, sys, pyopencl as cl
dev = [d for p in cl.get_platforms() for d in p.get_devices()][int(sys.argv[1])]
ctx = cl.Context([dev])
out = {"device": dev.name.strip(), "platform": dev.platform.name, "version": dev.version,
       "address_bits": dev.address_bits, "max_work_group_size": dev.max_work_group_size,
       "max_work_item_sizes": list(dev.max_work_item_sizes)}
try:
    out["non_uniform_work_group_support"] = bool(dev.non_uniform_work_group_support)
except Exception as e:
    out["non_uniform_work_group_support"] = f"not asked: {type(e).__name__}"
try:
    cl.Program(ctx, "__kernel void f(__global int *x) { x[0] = 1; }").build(
        options=["-no-such-option"])
    out["unknown_option"] = "built"
except cl.RuntimeError as e:
    said = [ln for ln in str(e).splitlines()
            if ln.strip() and not ln.startswith(("Build on", "(options"))]
    out["unknown_option"] = [getattr(e, "code", None)] + said[:3]
print("RESULT", json.dumps(out))
"""

# (global, local): 2**32 - 1 and 2**32 work-groups in one to three dimensions, then the
# issue's launches with the driver's own local size
CASES = [
    ([2**32 - 1], [1]), ([2**32], [1]), ([2**34], [4]), ([2**16, 2**16 - 1], [1, 1]),
    ([2**16, 2**16], [1, 1]), ([2**12, 2**10, 2**10], [1, 1, 1]),
    ([2**32], None), ([2**32 - 1], None), ([2**48], None), ([2**32, 2**32], None),
    ([2**31, 2], [1024, 1]), ([2**31 * 1024], [1024]), ([1024, 65536], [1, 1]),
    ([1024, 65535 * 2], [1, 1]), ([2**31 - 1], None), ([2**31 - 1024], [1024]),
    ([2**31], [1024]), ([2**30, 2**10], [1024, 1]),
]


def run(code: str, args: list[str], timeout: float) -> str:
    try:
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"still running after {timeout:.0f} s (taken)"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return f"exit {r.returncode}: {r.stderr.strip().splitlines()[-1:] or ''}"
    return line[7:]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gate", action="store_true", help="only enqueue (nothing runs)")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--device", type=int, default=0, help="index over all platforms' devices")
    a = p.parse_args()
    print(run(INFO, [str(a.device)], a.timeout), flush=True)
    for g, loc in CASES:
        groups = math.prod(x // y for x, y in zip(g, loc)) if loc else None
        spec = json.dumps({"device": a.device, "global": g, "local": loc, "gate": a.gate})
        print(f"global {g} local {loc} groups {groups}: {run(CHILD, [spec], a.timeout)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
