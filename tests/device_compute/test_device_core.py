"""The device compute path's launch machinery (hostarray._compute): layouts and caches.

On a shared link the device path never runs (numpy reads the device's bytes in place):
the first test checks that on the device's own link; the others make the buffers they
create copied ones (as ``HOSTARRAY_LINK=copied`` does), so they run in both CI passes.
"""

from __future__ import annotations

import numpy as np
import pytest

import hostarray as ha

pytestmark = pytest.mark.device

BUMP = "__kernel void bump(__global float *x) { size_t i = get_global_id(0); x[i] += 1; }"


@pytest.fixture
def dev(cl_device: ha.Device):
    old = ha.set_device_compute_threshold(0)
    yield cl_device
    ha.set_device_compute_threshold(old)


@pytest.fixture
def copied(dev: ha.Device):
    """``dev`` with the buffers made inside on the copied link (bytes really move)."""
    from hostarray.bench import forced_link

    with forced_link(dev, "copied"):
        yield dev
    ha.clear_pool()  # its storages have copied buffers


def device_newest(dev: ha.Device, a: np.ndarray) -> ha.HostPtrArray:
    """``a + 1`` as an array whose newest bytes a kernel wrote on ``dev``."""
    x = ha.asarray(a.copy(), device=dev)
    ha.Program(BUMP, device=dev).bump(x.size, x)
    return x


def test_the_device_path_runs_only_off_a_shared_link(dev: ha.Device) -> None:
    x = device_newest(dev, np.arange(64, dtype=np.float32))
    ha.reset_stats()
    y = x * 2
    np.testing.assert_array_equal(np.asarray(y), (np.arange(64) + 1) * 2)
    ran = ha.stats().device_ops
    assert ran == (0 if dev.link == "shared" else 1)


def test_a_strided_output_keeps_the_bytes_between_its_elements(copied: ha.Device) -> None:
    """A kernel writing ``x[::2]`` writes no odd element: where the host holds the newest
    odd elements they must reach the device before, or the whole range, recorded
    device-newest, would hand back the device's stale ones."""
    from hostarray._compute.elementwise import run

    dev = copied
    x = device_newest(dev, np.zeros(16, np.float32))
    np.asarray(x)  # the host current everywhere
    x[1] = 7.0  # the host newest at element 1 only
    y = device_newest(dev, np.full(8, 5, np.float32))
    f32 = np.dtype(np.float32)
    assert run(dev, "copy", "a", [y], f32, f32, (8,), out=x[::2]) is not None
    want = np.ones(16, np.float32)
    want[::2], want[1] = 6, 7
    np.testing.assert_array_equal(np.asarray(x), want)


def test_kernels_are_built_once_per_operation_types_and_layout(copied: ha.Device) -> None:
    dev = copied
    x = device_newest(dev, np.arange(1000, dtype=np.float32))
    first = [x - 3.0 for _ in range(3)]
    built = ha.stats().kernels_compiled
    again = [x - 3.0 for _ in range(3)]
    assert ha.stats().kernels_compiled == built  # nothing more built
    assert ha.stats().device_ops == 6
    for r in first + again:
        np.testing.assert_array_equal(np.asarray(r), np.arange(1000) + 1 - 3)


def test_functions_that_return_views_read_nothing(copied: ha.Device) -> None:
    """A view reads no byte: building one of a device-newest array acquires nothing (the
    read of the view, later, acquires what it covers)."""
    x = device_newest(copied, np.arange(12, dtype=np.float32).reshape(3, 4))
    ha.reset_stats()
    views = [ha.broadcast_to(x, (2, 3, 4)), ha.expand_dims(x, axis=0), ha.flip(x),
             ha.moveaxis(x, 0, 1), ha.squeeze(ha.expand_dims(x, axis=0), axis=0),
             *ha.unstack(x), ha.matrix_transpose(x), *ha.broadcast_arrays(x, x)]
    assert ha.stats().bytes_moved == 0
    a = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    want = [np.broadcast_to(a, (2, 3, 4)), a[None], np.flip(a), np.moveaxis(a, 0, 1), a,
            *a, a.T, a, a]
    for v, w in zip(views, want, strict=True):
        np.testing.assert_array_equal(np.asarray(v), w)


def test_a_scalar_before_an_array_operand(copied: ha.Device) -> None:
    """Reflected operators put the Python scalar first: each array operand keeps its own
    layout in the launch (a broadcast one and a strided one here)."""
    x = device_newest(copied, np.arange(12, dtype=np.float32).reshape(3, 4))
    a = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    np.testing.assert_array_equal(np.asarray(10 - x), 10 - a)
    np.testing.assert_array_equal(np.asarray(ha.subtract(2.5, x[:, ::2])), 2.5 - a[:, ::2])
    np.testing.assert_array_equal(np.asarray(ha.where(x > 5, 1.0, x[0])),
                                  np.where(a > 5, 1.0, a[0]))
    assert ha.stats().device_ops >= 3


def test_three_strided_operands(copied: ha.Device) -> None:
    """A three-operand kernel over strided views (the index temporaries must not take
    an operand's name)."""
    from hostarray._compute.elementwise import run

    x = device_newest(copied, np.arange(24, dtype=np.float32).reshape(4, 6))
    a = np.arange(24, dtype=np.float32).reshape(4, 6) + 1
    f32 = np.dtype(np.float32)
    r = run(copied, "fma", "a * b + c", [x[:, ::2], x[:, 1::2], x[::-1, ::2]],
            f32, f32, (4, 3))
    assert r is not None
    np.testing.assert_array_equal(np.asarray(r), a[:, ::2] * a[:, 1::2] + a[::-1, ::2])


def test_broadcast_arrays_leaves_the_array_writeable(copied: ha.Device) -> None:
    """numpy's broadcast_arrays returns an input that needs no broadcasting as that very
    object, marked read-only: it must not be the storage's own array (a later acquire into
    it, or a kernel writing it, would be refused)."""
    x = device_newest(copied, np.arange(4, dtype=np.float32))
    (v,) = ha.broadcast_arrays(x)
    np.testing.assert_array_equal(np.asarray(v), np.arange(4) + 1)  # the acquire works
    x[0] = 7.0  # x stays writeable
    assert float(x[0]) == 7.0
