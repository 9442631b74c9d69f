"""The device path of ``matmul``, ``tensordot``, ``linalg.matmul`` and ``@`` (issue 12).

Differential tests against numpy (hypothesis draws the data types, shapes, views and
values) and transfer-counter tests.  On a mapped or copied link (CI runs this file with
``HOSTARRAY_LINK=copied``) every product of device-newest operands must run on the device:
``device_ops`` counts it and nothing moves; on a shared link it must not (by design) and
the values must be the same.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _device_helpers import DTYPES, device_newest, on_device
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostarray as ha
from hostarray._array import _view

pytestmark = pytest.mark.device

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "@": lambda x, y: x @ y, "matmul": ha.matmul, "linalg.matmul": ha.linalg.matmul}
_SCALE = 10 if os.environ.get("HOSTARRAY_THOROUGH") == "1" else 1  # thorough: 10x examples
SETTINGS = settings(max_examples=60 * _SCALE, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture
def dev(cl_device: ha.Device) -> Any:
    """The OpenCL device, with the device path taken at every size."""
    old = ha.set_device_compute_threshold(0)
    yield cl_device
    ha.set_device_compute_threshold(old)


def values(rng: np.random.Generator, dt: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of ``dt``: integers over their whole range (products wrap)."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    return rng.standard_normal(shape).astype(dt)


def check(got: Any, ref: np.ndarray, bound: Callable[[], np.ndarray], k: int) -> None:
    """``got`` equals numpy's ``ref`` (type, shape, values); floating values within
    the error bound of two sums of ``k`` products (``bound()``: the sum of ``|a||b|``)."""
    g = np.asarray(got)
    assert g.dtype == ref.dtype and g.shape == ref.shape
    if ref.dtype.kind != "f":
        np.testing.assert_array_equal(g, ref)
        if ref.dtype == bool:  # stored as bytes 0 and 1 only (numpy's own bools)
            assert g.view(np.uint8).max(initial=0) <= 1
        return
    eps = np.finfo(ref.dtype).eps
    tol = 4 * max(k, 1) * eps * bound() + np.finfo(ref.dtype).tiny
    err = np.abs(g.astype(np.float64) - ref.astype(np.float64))
    assert np.all(err <= tol), (err.max(), tol.max())


def view_of(rng: np.random.Generator, dt: Any, shape: tuple[int, ...], kind: str,
            dev: ha.Device) -> tuple[np.ndarray, Any]:
    """A ``shape`` view of a device-newest array (``kind``: plain, transposed, strided,
    reversed or broadcast) and the same view of its numpy original."""
    if kind == "T" and len(shape) >= 2:
        base = values(rng, dt, shape[:-2] + (shape[-1], shape[-2]))
        x = device_newest(base, dev)
        return np.swapaxes(base, -1, -2), x.mT
    if kind == "strided":
        base = values(rng, dt, (*shape[:-1], 2 * shape[-1] + 1))
        x = device_newest(base, dev)
        return base[..., 1::2], x[..., 1::2]
    if kind == "broadcast":  # every row the same: a stride of 0
        base = values(rng, dt, (*shape[:-2], 1, shape[-1]) if len(shape) >= 2 else shape)
        x = device_newest(base, dev)
        # ha.broadcast_to reads x on the host first (an acquire a view doesn't need): the
        # view is made here from the array's own numpy view instead
        return np.broadcast_to(base, shape), _view(x, np.broadcast_to(x._a, shape))
    base = values(rng, dt, shape)
    x = device_newest(base, dev)
    if kind == "reversed":
        return base[::-1], x[::-1]
    return base, x


@st.composite
def matmul_cases(draw: Any) -> dict[str, Any]:
    """Data types, shapes (1-D promotion, broadcast stacks, sizes across the 64-wide
    tiles), operand views and a seed for the values."""
    dt1 = draw(st.sampled_from(DTYPES))
    dt2 = draw(st.one_of(st.just(dt1), st.sampled_from(DTYPES)))
    form = draw(st.sampled_from(["2x2", "1x2", "2x1", "1x1", "batch"]))
    dim = st.integers(1, 24 if form == "batch" else 70)
    m, k, n = draw(dim), draw(dim), draw(dim)
    s1: tuple[int, ...] = (k,) if form in ("1x2", "1x1") else (m, k)
    s2: tuple[int, ...] = (k,) if form in ("2x1", "1x1") else (k, n)
    if form == "batch":
        stack = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        b1 = [d if draw(st.booleans()) else 1 for d in stack][draw(st.integers(0, len(stack))):]
        b2 = [d if draw(st.booleans()) else 1 for d in stack][draw(st.integers(0, len(stack))):]
        s1, s2 = tuple(b1) + s1, tuple(b2) + s2
    views = st.sampled_from(["plain", "T", "strided", "reversed", "broadcast"])
    return {"dt1": dt1, "dt2": dt2, "s1": s1, "s2": s2, "k": k, "v1": draw(views),
            "v2": draw(views), "op": draw(st.sampled_from(sorted(OPS))),
            "seed": draw(st.integers(0, 2**32 - 1))}


@SETTINGS
@given(case=matmul_cases())
def test_matmul_matches_numpy(dev: ha.Device, case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    a, x = view_of(rng, case["dt1"], case["s1"], case["v1"], dev)
    b, y = view_of(rng, case["dt2"], case["s2"], case["v2"], dev)
    ref = np.matmul(a, b)
    ha.reset_stats()
    r = OPS[case["op"]](x, y)
    s = ha.stats()
    assert s.device_ops == (1 if on_device(dev) else 0)
    assert s.host_fallbacks == 0 and s.bytes_acquired == 0 and s.bytes_published == 0 or \
        not on_device(dev)
    check(r, ref, lambda: np.matmul(np.abs(a.astype(np.float64)),
                                    np.abs(b.astype(np.float64))), case["k"])


@st.composite
def tensordot_cases(draw: Any) -> dict[str, Any]:
    """Operands of 1 to 3 axes, 0 to all of them contracted, ``axes`` as an int or as
    pairs (negative axes included)."""
    n1, n2 = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    nk = draw(st.integers(0, min(n1, n2)))
    size = st.integers(1, 12)
    shared = [draw(size) for _ in range(nk)]
    c1 = draw(st.permutations(range(n1)))[:nk]
    c2 = draw(st.permutations(range(n2)))[:nk]
    s1 = [draw(size) for _ in range(n1)]
    s2 = [draw(size) for _ in range(n2)]
    for i, j, d in zip(c1, c2, shared):
        s1[i] = s2[j] = d
    axes: Any
    if draw(st.booleans()):  # the int form: the last nk axes of x1 with the first of x2
        axes, c1, c2 = nk, list(range(n1 - nk, n1)), list(range(nk))
        for i, j, d in zip(c1, c2, shared):
            s1[i] = s2[j] = d
    else:
        neg = draw(st.booleans())
        axes = ([i - n1 if neg else i for i in c1], [j - n2 if neg else j for j in c2])
    # the order the operands' axes have in memory (a permuted view unless 0, 1, ...)
    p1 = draw(st.one_of(st.just(list(range(n1))), st.permutations(range(n1))))
    p2 = draw(st.one_of(st.just(list(range(n2))), st.permutations(range(n2))))
    return {"dt1": draw(st.sampled_from(DTYPES)), "dt2": draw(st.sampled_from(DTYPES)),
            "s1": tuple(s1), "s2": tuple(s2), "axes": axes, "p1": p1, "p2": p2,
            "k": int(np.prod(shared)), "seed": draw(st.integers(0, 2**32 - 1))}


def permuted(rng: np.random.Generator, dt: Any, shape: tuple[int, ...], order: list[int],
             dev: ha.Device) -> tuple[np.ndarray, Any]:
    """A ``shape`` view of a device-newest array whose axes lie in memory in ``order``,
    and the same view of its numpy original."""
    base = values(rng, dt, tuple(shape[i] for i in order))
    back = tuple(int(i) for i in np.argsort(order))
    return base.transpose(back), ha.permute_dims(device_newest(base, dev), back)


@SETTINGS
@given(case=tensordot_cases())
def test_tensordot_matches_numpy(dev: ha.Device, case: dict[str, Any]) -> None:
    rng = np.random.default_rng(case["seed"])
    a, x = permuted(rng, case["dt1"], case["s1"], case["p1"], dev)
    b, y = permuted(rng, case["dt2"], case["s2"], case["p2"], dev)
    axes = case["axes"]
    plain = case["p1"] == sorted(case["p1"]) and case["p2"] == sorted(case["p2"])
    ref = np.tensordot(a, b, axes=axes)
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=axes)
    s = ha.stats()
    if not on_device(dev):
        assert s.device_ops == 0
    elif isinstance(axes, int) and plain:  # contiguous operands: views of two matrices
        assert s.device_ops == 1 and s.bytes_acquired == 0
    else:  # the operands may need a copy to be matrices: then the host computes (counted)
        assert s.device_ops + s.host_fallbacks == 1
    check(r, ref, lambda: np.tensordot(np.abs(a.astype(np.float64)),
                                       np.abs(b.astype(np.float64)), axes=axes), case["k"])


def test_product_moves_nothing_and_reading_acquires_the_result(dev: ha.Device) -> None:
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((70, 45)), rng.standard_normal((45, 33))
    x, y = device_newest(a, dev), device_newest(b, dev)
    for name, op in OPS.items():
        ha.reset_stats()
        r = op(x, y)
        s = ha.stats()
        if not on_device(dev):
            assert s.device_ops == 0 and s.bytes_acquired == 0  # shared: the host reads in place
            continue
        assert (s.device_ops, s.host_fallbacks, s.bytes_acquired, s.bytes_published) == \
            (1, 0, 0, 0), name
        assert r.device == dev and r._s.host_stale
        got = np.asarray(r)
        s = ha.stats()
        assert s.bytes_acquired == r.nbytes == 70 * 33 * 8 and s.acquires == 1, name
        check(got, a @ b, lambda: np.abs(a) @ np.abs(b), 45)
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=1)
    s = ha.stats()
    assert s.device_ops == (1 if on_device(dev) else 0)
    if on_device(dev):
        assert s.bytes_acquired == 0 and r._s.host_stale
    np.asarray(r)
    assert ha.stats().bytes_acquired - s.bytes_acquired == (r.nbytes if on_device(dev) else 0)


def test_a_device_result_feeds_the_next_product(dev: ha.Device) -> None:
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7 - 3
    x = device_newest(a, dev)
    ha.reset_stats()
    r = (x @ x) @ x.mT
    s = ha.stats()
    assert s.device_ops == (2 if on_device(dev) else 0)
    assert s.bytes_acquired == 0  # on a shared link the host reads the device's bytes in place
    np.testing.assert_array_equal(np.asarray(r), (a @ a) @ a.T)


def test_small_host_operand_is_published(dev: ha.Device) -> None:
    a = np.ones((40, 50), np.float32)
    b = np.arange(50, dtype=np.float32)
    x = device_newest(a, dev)
    y = ha.asarray(b, device=dev, copy=True)  # host-newest, small: published
    ha.reset_stats()
    r = x @ y
    s = ha.stats()
    if on_device(dev):
        assert s.device_ops == 1 and s.bytes_published == b.nbytes and s.bytes_acquired == 0
    np.testing.assert_array_equal(np.asarray(r), a @ b)


def test_inplace_matmul(dev: ha.Device) -> None:
    a = np.arange(36 * 36, dtype=np.int32).reshape(36, 36) % 11
    b = (np.arange(36 * 36, dtype=np.int16).reshape(36, 36) % 5 - 2).T
    x, y = device_newest(a, dev), device_newest(b.copy(), dev).mT.mT
    ha.reset_stats()
    x @= y
    s = ha.stats()
    if on_device(dev):
        assert s.device_ops >= 1 and s.bytes_acquired == 0 and x._s.host_stale
    np.testing.assert_array_equal(np.asarray(x), a @ b)
    z = device_newest(a.astype(np.int8), dev)
    with pytest.raises(Exception, match="[Cc]ast"):
        z @= device_newest(np.ones((36, 36)), dev)  # float64 into int8: numpy refuses


def test_shape_errors_are_numpys(dev: ha.Device) -> None:
    x, y = device_newest(np.ones((3, 4)), dev), device_newest(np.ones((5, 6)), dev)
    with pytest.raises(ValueError):
        np.matmul(np.ones((3, 4)), np.ones((5, 6)))
    for op in OPS.values():
        with pytest.raises(ValueError):
            op(x, y)
    with pytest.raises(ValueError):
        ha.matmul(device_newest(np.ones((2, 3, 4)), dev), device_newest(np.ones((3, 4, 5)), dev))
    with pytest.raises((TypeError, ValueError)):
        x @ 2


@pytest.mark.parametrize("op", sorted(OPS))
def test_threshold_counts_the_result(dev: ha.Device, op: str) -> None:
    # an outer product: the result (64 KiB) is much larger than the operands (1.5 KiB)
    for limit, runs in ((64 * 128 * 8, on_device(dev)), (64 * 128 * 8 + 1, False)):
        ha.set_device_compute_threshold(limit)
        x, y = device_newest(np.ones((128, 1)), dev), device_newest(np.ones((1, 64)), dev)
        ha.reset_stats()
        r = OPS[op](x, y)
        assert ha.stats().device_ops == int(runs)
        np.testing.assert_array_equal(np.asarray(r), np.ones((128, 64)))


def test_tensordot_needing_a_copy_falls_back(dev: ha.Device) -> None:
    a, b = np.ones((6, 7, 8), np.float32), np.ones((8, 7, 5), np.float32)
    x, y = device_newest(a, dev), device_newest(b, dev)
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=([1, 2], [1, 0]))  # b's (7, 8) axes don't merge as a view
    s = ha.stats()
    assert (s.device_ops, s.host_fallbacks) == ((0, 1) if on_device(dev) else (0, 0))
    np.testing.assert_array_equal(np.asarray(r), np.tensordot(a, b, axes=([1, 2], [1, 0])))
    x, y = device_newest(a, dev), device_newest(b, dev)  # the host path acquired them
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=([2], [0]))
    assert ha.stats().device_ops == (1 if on_device(dev) else 0)
    np.testing.assert_array_equal(np.asarray(r), np.tensordot(a, b, axes=([2], [0])))
    # the pairs in the given order need copies; taken in a's memory order, both are views
    a, b = np.arange(120.0).reshape(4, 5, 6), np.arange(90.0).reshape(5, 6, 3)
    x, y = device_newest(a, dev), device_newest(b, dev)
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=([2, 1], [1, 0]))
    assert ha.stats().device_ops == (1 if on_device(dev) else 0)
    np.testing.assert_array_equal(np.asarray(r), np.tensordot(a, b, axes=([2, 1], [1, 0])))


def test_wrapping_and_bool(dev: ha.Device) -> None:
    a = np.full((33, 40), 127, np.int8)
    x = device_newest(a, dev)
    np.testing.assert_array_equal(np.asarray(x @ x.mT), a @ a.T)  # wraps in int8
    u = np.full((3, 50), 2**63 + 5, np.uint64)
    np.testing.assert_array_equal(np.asarray(device_newest(u, dev) @ device_newest(u.T, dev)),
                                  u @ u.T)
    p = np.eye(40, dtype=bool)[:, ::-1]
    q = np.zeros((40, 3), bool)
    q[0, 1] = q[39, 2] = True
    r = device_newest(p, dev) @ device_newest(q, dev)
    check(r, p @ q, lambda: p @ q, 40)
    # 256 true products: or, not a byte-sized sum (that would wrap to false)
    t = np.ones((2, 256), bool)
    check(device_newest(t, dev) @ device_newest(t.T, dev), t @ t.T, lambda: t, 256)


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "uint8", "bool"])
@pytest.mark.parametrize("v1,v2", [("plain", "plain"), ("T", "T"), ("strided", "reversed")])
def test_large_tiles_match_numpy(dev: ha.Device, dt: str, v1: str, v2: str) -> None:
    """Products large enough for the 128 x 128 tiles (8 x 8 outputs per work-item: they
    are taken where every compute unit gets a group), with edges that cut the tiles."""
    from hostarray._compute import matmul as mm

    units = mm._units(dev)
    side = mm.TS_LARGE + 3  # two tiles a side, the second one 3 wide
    nb = -(-units // 4)  # a batch that makes a group per compute unit at least
    rng = np.random.default_rng(7)
    a, x = view_of(rng, dt, (nb, side, 37), v1, dev)
    b, y = view_of(rng, dt, (nb, 37, side + 1), v2, dev)
    assert -(-side // mm.TS_LARGE) * -(-(side + 1) // mm.TS_LARGE) * nb >= units
    ref = np.matmul(a, b)
    check(x @ y, ref, lambda: np.matmul(np.abs(a.astype(np.float64)),
                                        np.abs(b.astype(np.float64))), 37)
    if on_device(dev):  # the large tiles' kernel ran
        from hostarray._compute import launch

        assert any(d == dev and f"#define TS {mm.TS_LARGE}\n" in src
                   for d, src in launch._programs)
