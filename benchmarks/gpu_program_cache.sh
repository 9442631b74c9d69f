#!/bin/sh
# The program cache on the GPU machine (see docs/gpu.md): its tests, and the load time of a
# generated kernel from the cache against a build from source, on NVIDIA's OpenCL.
set -u
export HOSTARRAY_REQUIRE_DEVICE=1
python3 -m pytest -q -p no:cacheprovider tests/kernels/test_program_cache.py tests/kernels/test_kernels.py 2>&1 | grep -v "^  " | tail -60
python3 - <<'PY'
import os, subprocess, sys, tempfile, json
code = r'''
import time, json, numpy as np, hostarray as ha
dev = ha.device("opencl"); ha.set_device_compute_threshold(0)
prg = ha.Program("__kernel void t(__global float *x){ x[get_global_id(0)] += 1; }", device=dev)
x = ha.asarray(np.arange(1 << 16, dtype=np.float32), device=dev); prg.t(x.shape, x)
t = time.perf_counter(); y = ha.sqrt(x * 3 + 1); s = float(ha.sum(y))
el = time.perf_counter() - t
st = ha.stats()
print(json.dumps({"s": s, "compiled": st.kernels_compiled, "loaded": st.kernels_loaded, "seconds": el, "compile_s": st.compile_seconds, "dev": dev.name}))
'''
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, HOSTARRAY_PROGRAM_CACHE=d)
    for i in range(4):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        print(i, r.stdout.strip()[-400:], r.stderr[-800:])
    print(sorted(os.listdir(d)))
PY
python3 - <<'PY'
import random, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
src = "__kernel void k(__global float *x){ x[get_global_id(0)] += %d; }" % random.randrange(1 << 30)
for i in range(2):
    p = cl._cl._Program(ctx, src); p._build(options=b"-cl-kernel-arg-info", devices=None)
    print("build", i, "log:", repr(p.get_build_info(ctx.devices[0], cl.program_build_info.LOG)))
PY
