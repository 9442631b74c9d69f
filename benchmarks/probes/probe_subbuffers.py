"""Probe: kernels on sub-buffer views and event-status queries (a crash seen on NVIDIA).

Each scenario prints before it starts, so the last line printed names the one that crashed.

    python3 -X faulthandler benchmarks/probes/probe_subbuffers.py [--device opencl:0:0]
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0])
import hostarray as ha  # noqa: E402

SRC = """
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}"""


def say(*a: object) -> None:
    print(*a, flush=True)


def main() -> None:
    spec = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else None
    dev = ha.device(spec) if spec else next(d for d in ha.devices() if d.framework == "opencl")
    say("device", dev, dev.name, "link", dev.link, "align", dev.alignment)
    ctx, q = dev.runtime.context, dev.runtime.queue
    k = cl.Kernel(cl.Program(ctx, SRC).build(), "copy")
    st = cl.command_execution_status
    g = dev.alignment // 4
    n = 1024
    host = np.asarray(ha.zeros(n, dtype=ha.float32))
    host[:] = np.arange(n)
    for flags, name in ((cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, "use_host_ptr"),
                        (cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, "plain")):
        buf = cl.Buffer(ctx, flags, hostbuf=host)
        say(f"S1 {name}: two sub-buffers of one parent in one kernel, then status")
        a = buf.get_sub_region(5 * g * 4, 47 * 4)
        b = buf.get_sub_region(7 * g * 4, 47 * 4)
        ev = k(q, (47,), None, a, b)
        say("  status", ev.command_execution_status == st.COMPLETE)
        ev.wait()
        say(f"S2 {name}: sub-buffer released right after enqueue, then status")
        a = buf.get_sub_region(2 * g * 4, 91 * 4)
        b = buf.get_sub_region(4 * g * 4, 91 * 4)
        ev = k(q, (91,), None, a, b)
        a.release()
        b.release()
        say("  status", ev.command_execution_status)
        ev.wait()
        say(f"S3 {name}: same sub-buffer as src and dst of two launches, statuses")
        a = buf.get_sub_region(0, 100 * 4)
        b = buf.get_sub_region(g * 4, 100 * 4)
        e1 = k(q, (100,), None, a, b)
        e2 = k(q, (100,), None, b, a)
        say("  status", e1.command_execution_status, e2.command_execution_status)
        q.finish()
        say(f"S4 {name}: parent released right after enqueue, then status")
        p2 = cl.Buffer(ctx, flags, hostbuf=host)
        a = p2.get_sub_region(0, 64 * 4)
        b = p2.get_sub_region(g * 4, 64 * 4)
        ev = k(q, (64,), None, a, b)
        a.release()
        b.release()
        p2.release()
        say("  status", ev.command_execution_status)
        ev.wait()
        say(f"S6 {name}: parent released before its sub-buffers (the order GC may take)")
        p3 = cl.Buffer(ctx, flags, hostbuf=host)
        a = p3.get_sub_region(g * 4, 64 * 4)
        k(q, (64,), None, p3, a).wait()
        p3.release()
        say("  parent released")
        a.release()
        say("  sub-buffer released")
        p4 = cl.Buffer(ctx, flags, hostbuf=host)
        k(q, (64,), None, p4, p4).wait()
        p4.release()
        say("  a new buffer after that works")
        buf.release()
    mode = sys.argv[sys.argv.index("--s5") + 1] if "--s5" in sys.argv else "all"
    say(f"S5 ({mode}) hostarray: random copies between views (same and other storage), Launch.done")
    rng = np.random.default_rng(1)
    prg = ha.Program(SRC, device=dev)
    xs = [ha.asarray(np.arange(n, dtype=np.float32), device=dev, copy=True) for _ in range(3)]
    for step in range(3000):
        i, j = rng.integers(0, 3, 2)
        s1, s2 = rng.integers(0, n // g, 2) * g
        length = int(rng.integers(1, n - max(s1, s2) + 1))
        if i == j and s1 < s2 + length and s2 < s1 + length:
            continue
        if step % 200 == 0:
            say("  step", step)
        launch = prg.copy(length, xs[i][s1:s1 + length], xs[j][s2:s2 + length])
        _ = launch.done
        if mode in ("all", "replace") and rng.random() < 0.05:
            xs[int(rng.integers(0, 3))] = ha.asarray(np.arange(n, dtype=np.float32),
                                                      device=dev, copy=True)
        if mode in ("all", "free") and rng.random() < 0.05:
            ha.hostptr.free_buffer(xs[int(rng.integers(0, 3))], dev)
        if rng.random() < 0.1:
            _ = np.array(xs[int(rng.integers(0, 3))][3:17], copy=True)
    q.finish()
    say("done: no crash")


if __name__ == "__main__":
    main()
