"""Adversarial review of the device compute path (issue 12): silent differences between the
device path and the host path (numpy) for the same program.

Each test makes its inputs device-newest with a user kernel and compares what the device
path computes with what numpy computes on the same values (the host path, the device path
off, gives numpy's answer in every case below).  They need a link off ``shared``
(``HOSTARRAY_LINK=copied``, or a GPU's mapped link).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import hostarray as ha

pytestmark = pytest.mark.device

_TOUCH = "__kernel void touch(__global float *x) { int i = get_global_id(0); x[i] = x[i]; }"
MIB = 1 << 20


@pytest.fixture
def dev(off_shared: ha.Device) -> Iterator[ha.Device]:
    old = ha.set_device_compute_threshold(0)
    try:
        yield off_shared
    finally:
        ha.set_device_compute_threshold(old)


def _newest(dev: ha.Device, a: np.ndarray) -> ha.HostPtrArray:
    x = ha.asarray(np.array(a, dtype=np.float32), device=dev, copy=True)
    ha.Program(_TOUCH, device=dev).touch((x.size,), x)
    return x


def _host(f, a: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return f(np.array(a, dtype=np.float32))


def test_astype_negative_float_to_uint32_matches_host(dev: ha.Device) -> None:
    # numpy (the host path) converts -130.5 to uint32 as 4294967167 (-130 modulo 2**32), the
    # same as ha.astype on host-newest data; the device kernel saturates to 4294967295
    # (-3e9, outside uint32's range, is left out: numpy's SIMD and scalar loops disagree)
    vals = [-130.5, -1.5, -2e9, 7.0]
    x = _newest(dev, np.array(vals))
    ha.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(ha.astype(x, ha.uint32))
    assert ha.stats().device_ops == 1
    np.testing.assert_array_equal(got, _host(lambda a: a.astype(np.uint32), vals))


def test_astype_negative_float_to_uint64_matches_host(dev: ha.Device) -> None:
    # (-3e9, outside uint32's range, is left out: numpy's SIMD and scalar loops disagree)
    vals = [-130.5, -1.5, -2e9, 7.0]
    x = _newest(dev, np.array(vals))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(ha.astype(x, ha.uint64))
    np.testing.assert_array_equal(got, _host(lambda a: a.astype(np.uint64), vals))


def test_pow_half_special_values_match_host(dev: ha.Device) -> None:
    # numpy computes x ** 0.5 as sqrt: (-inf) ** 0.5 is nan, (-0.0) ** 0.5 is -0.0; the device
    # path's pow gives +inf and +0.0
    vals = [-np.inf, -0.0, 4.0]
    x = _newest(dev, np.array(vals))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = np.asarray(x ** 0.5)
    exp = _host(lambda a: a ** 0.5, vals)
    np.testing.assert_array_equal(got, exp)
    number = ~np.isnan(exp)  # a NaN's sign is left open (IEEE 754; numpy's differs by CPU)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(exp[number]))


def test_pow_minus_one_is_the_exact_reciprocal_as_on_host(dev: ha.Device) -> None:
    # numpy computes x ** -1 as 1 / x (correctly rounded); 1 / x on the device is exact too,
    # but x ** -1 goes through pow and is off in the last bit (3.5 ** -1: 0.28571427 vs 0.2857143)
    vals = [3.5, 7.0, 2.5]
    x = _newest(dev, np.array(vals))
    np.testing.assert_array_equal(np.asarray(x ** -1), _host(lambda a: a ** -1, vals))


def test_broadcast_result_over_threshold_runs_on_device(dev: ha.Device) -> None:
    # the placement rule: "the largest array involved, an operand or the result, has at least
    # device_compute_threshold() bytes" -- an outer sum whose result is 4 MiB of device-newest
    # 4 KiB operands runs on the host instead, acquiring the operands
    ha.set_device_compute_threshold(MIB)
    a = _newest(dev, np.arange(1024))
    ha.reset_stats()
    o = a[:, None] + a[None, :]
    assert o.nbytes == 4 * MIB
    s = ha.stats()
    assert (s.device_ops, s.acquires) == (1, 0)


def test_setitem_negative_float_into_uint32_matches_host(dev: ha.Device) -> None:
    # the same conversion through x[key] = value: a device-newest float32 array stored into a
    # device-newest uint32 array saturates -129.5 to 4294967295; numpy stores 4294967167
    vals = np.array([-129.5, 3.5, 7.0, 0.0], np.float32)
    f = _newest(dev, vals)
    x = ha.astype(_newest(dev, np.zeros(4)), ha.uint32)
    ha.reset_stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x[:] = f
    assert ha.stats().device_ops == 1
    expected = np.zeros(4, np.uint32)
    _host(lambda a: expected.__setitem__(slice(None), a), vals)
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_small_strided_host_operand_publishes_at_most_the_publish_limit(dev: ha.Device) -> None:
    # "newest on the host and at most 1 MiB each: those are published": a 16-element (64-byte)
    # host-newest strided view of a 16 MiB array passes as small, and the device path then
    # publishes its whole first-to-last span, 15 MiB, where the host path would have acquired
    # the 64 bytes of x
    big = ha.asarray(np.arange(4 * MIB, dtype=np.float32), device=dev, copy=True)  # host-newest
    col = big[:: (4 * MIB) // 16]
    assert col.nbytes == 64
    x = _newest(dev, np.arange(16))
    ha.reset_stats()
    y = x + col
    s = ha.stats()
    np.testing.assert_array_equal(np.asarray(y), np.arange(16, dtype=np.float32) + np.asarray(col))
    assert s.bytes_published <= MIB, s


@pytest.mark.parametrize("op", ["x -= x[3]", "x /= x[0]", "x[1:] += x[:-1]", "x[:-1] += x[1:]",
                                "x[::2] *= x[1::2]", "x[::-1] += x"])
def test_in_place_with_an_overlapping_operand_stays_on_the_device(dev: ha.Device, op: str) -> None:
    # x[3] became a view of x: x -= x[3] then fell back to the host and acquired all of x;
    # the overlapping operand is now copied on the device first, as numpy copies it
    a = np.arange(1, 65, dtype=np.float32)
    x, m = _newest(dev, a), _host(lambda v: v, a)
    ha.reset_stats()
    exec(op, {"x": x})
    exec(op, {"x": m})
    s = ha.stats()
    if dev.link in ("mapped", "copied"):
        assert s.host_fallbacks == 0 and s.bytes_acquired == 0 and s.device_ops >= 2, s
    np.testing.assert_array_equal(np.asarray(x), m)
