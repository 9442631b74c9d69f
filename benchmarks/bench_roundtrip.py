"""Round trip: host write -> kernel -> host read, 1 MiB ... --max-size.

hostarray (``x[...] = src``; kernel; ``np.asarray(x)``: one publish and one
acquire, both free on a shared link) against pyopencl with explicit
``enqueue_copy`` both ways and against ``pyopencl.array`` ``set()``/``get()``.

    python3 benchmarks/bench_roundtrip.py [--max-size 1GiB] [--device opencl:0:0]
"""

from _common import run

if __name__ == "__main__":
    run(("roundtrip",), __doc__.splitlines()[0])
