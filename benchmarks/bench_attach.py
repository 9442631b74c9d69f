"""Attach vs copy: making host data usable by a kernel, 4 KiB ... --max-size.

hostarray's attach (lazy ``to_device``; eager ``hostptr.of_numpy``, which
creates the buffer over the numpy memory) against ``cl.Buffer(COPY_HOST_PTR)``
and ``pyopencl.array.to_device``; then each followed by a first kernel that
reads the data.  On a shared link attach stays flat (O(1)); copies grow
with the size.

    python3 benchmarks/bench_attach.py [--max-size 1GiB] [--device opencl:0:0]
"""

from _common import run

if __name__ == "__main__":
    run(("attach",), __doc__.splitlines()[0])
