"""Does releasing an unrelated buffer block while a kernel runs?  (raw pyopencl)

NVIDIA's OpenCL driver was seen to finish a long launch before ``del x`` of an unrelated
array returned.  This probe times ``clReleaseMemObject`` of an idle ``USE_HOST_PTR`` buffer
while a ~0.5 s kernel runs on another buffer, against the kernel's own time.  hostarray
keeps such buffers (``DeviceRuntime.bury``) until the queue is idle.

    python3 benchmarks/probes/probe_release_blocking.py
"""

import time

import numpy as np
import pyopencl as cl

SRC = """__kernel void spin(__global float *x, const int n) {
    float acc = 1.0f;
    if (get_global_id(0) == 0) for (int k = 0; k < n; ++k) acc = acc * 1.0000001f;
    x[get_global_id(0)] += (acc > 1e30f ? 1.0f : 0.0f);
}"""

for platform in cl.get_platforms():
    for dev in platform.get_devices():
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx)
        spin = cl.Kernel(cl.Program(ctx, SRC).build(), "spin")
        a = np.zeros(1024, np.float32)
        buf_a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=a)
        n = 1_000_000
        for _ in range(2):  # the second run is timed (the first may compile)
            t0 = time.perf_counter()
            spin(q, (1024,), None, buf_a, np.int32(n)).wait()
            unit = time.perf_counter() - t0
        n = max(1, int(n * 0.5 / max(unit, 1e-4)))  # about half a second
        for kind in ("USE_HOST_PTR", "device"):
            b = np.zeros(1 << 20, np.float32)
            flags = cl.mem_flags.READ_WRITE
            buf_b = (cl.Buffer(ctx, flags | cl.mem_flags.USE_HOST_PTR, hostbuf=b)
                     if kind == "USE_HOST_PTR" else cl.Buffer(ctx, flags, b.nbytes))
            t0 = time.perf_counter()
            ev = spin(q, (1024,), None, buf_a, np.int32(n))
            t1 = time.perf_counter()
            buf_b.release()
            t2 = time.perf_counter()
            running = ev.command_execution_status > 0
            ev.wait()
            t3 = time.perf_counter()
            print(f"{dev.name.strip()}: release of an idle {kind} buffer took "
                  f"{(t2 - t1) * 1e3:.1f} ms while a {(t3 - t0) * 1e3:.0f} ms kernel ran "
                  f"(kernel still running after the release: {running})")
