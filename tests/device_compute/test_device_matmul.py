"""The device path of ``matmul``, ``tensordot``, ``linalg.matmul`` and ``@`` (issue 12).

Differential tests against numpy (hypothesis draws the data types, shapes, views and
values) and transfer-counter tests.  On a mapped or copied link (CI runs this file with
``HOSTARRAY_LINK=copied``) every product of device-newest operands must run on the device:
``device_ops`` counts it and nothing moves; on a shared link it must not (by design) and
the values must be the same.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostarray as ha
from hostarray import _settings
from hostarray._array import _view
from hostarray._compute import matmul_tune
from hostarray._compute.launch import supports
from hostarray._compute.matmul_source import Config
from hostarray._introspect import state
from tests._device_helpers import DTYPES, device_newest, on_device

pytestmark = pytest.mark.device

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "@": lambda x, y: x @ y, "matmul": ha.matmul, "linalg.matmul": ha.linalg.matmul}
_SCALE = 10 if os.environ.get("HOSTARRAY_THOROUGH") == "1" else 1  # thorough: 10x examples
# (30 examples: each is a kernel build or more on a fresh machine; thorough: 300)
SETTINGS = settings(max_examples=30 * _SCALE, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@pytest.fixture
def dev(cl_device: ha.Device) -> Any:
    """The OpenCL device, with the device path taken at every size."""
    old = ha.set_device_compute_threshold(0)
    yield cl_device
    ha.set_device_compute_threshold(old)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A tuning cache of the test's own (never the user's), and no tuning of this process
    before or after the test (built programs stay in the run's program cache: moving it
    too would compile every kernel anew in each test)."""
    from hostarray import _settings

    programs = _settings.program_cache()
    monkeypatch.setenv("HOSTARRAY_PROGRAM_CACHE", programs or "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("HOSTARRAY_MATMUL_TUNE", raising=False)
    matmul_tune.forget()
    yield tmp_path / "cache" / "hostarray" / "matmul-tuning.json"
    matmul_tune.forget()


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


@pytest.mark.slow
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


@pytest.mark.slow
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
        assert r.device == dev and state(r).host_stale
        got = np.asarray(r)
        s = ha.stats()
        assert s.bytes_acquired == r.nbytes == 70 * 33 * 8 and s.acquires == 1, name
        check(got, a @ b, lambda: np.abs(a) @ np.abs(b), 45)
    ha.reset_stats()
    r = ha.tensordot(x, y, axes=1)
    s = ha.stats()
    assert s.device_ops == (1 if on_device(dev) else 0)
    if on_device(dev):
        assert s.bytes_acquired == 0 and state(r).host_stale
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
        assert s.device_ops >= 1 and s.bytes_acquired == 0 and state(x).host_stale
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


# -- every tile configuration, forced ----------------------------------------------------


@pytest.fixture
def forced(dev: ha.Device) -> Any:
    """``forced(cfg)``: every product on ``dev`` takes ``cfg`` (as a tuning whose one probe
    size it won), until the test ends."""
    def force(cfg: Any) -> None:
        with matmul_tune._lock:
            matmul_tune._tuned[dev] = {1: cfg}

    yield force
    matmul_tune.forget(dev)


def _fits(dev: ha.Device, cfg: Any, itemsize: int) -> bool:
    d = dev._cl_device
    return cfg.local_size <= d.max_work_group_size and \
        cfg.local_bytes(itemsize) <= d.local_mem_size


def _ran(dev: ha.Device, cfg: Any, **layout: Any) -> bool:
    """Whether a kernel of ``cfg`` whose layout has ``layout``'s values was built."""
    from hostarray._compute import launch

    head = f"#define TM {cfg.tm}\n#define TN {cfg.tn}\n#define TK {cfg.tk}\n" \
           f"#define WM {cfg.wm}\n#define WN {cfg.wn}\n"
    return any(d == dev and head in src and all(_marks(src, k, v) for k, v in layout.items())
               for d, src in launch._programs)


def _marks(src: str, what: str, value: Any) -> bool:
    if what == "vector_loads":  # a vector load from global memory
        return ("*(__global const float4 *)" in src) == value
    if what == "double_buffered":
        return ("cur ^ 1" in src) == value
    raise AssertionError(what)


def _all_configs() -> list[Any]:
    return list(matmul_tune._CANDIDATES)


# the layouts each configuration is checked on: (A's shape, view, B's shape, view); sizes
# that cut every tile (edges) and sizes that are multiples of every tile (no bounds checks,
# vector loads), plain, transposed, strided and reversed operands, a batch with broadcasting
_LAYOUTS = [((131, 37), "plain", (37, 133), "plain"),
            ((128, 64), "plain", (64, 128), "plain"),
            ((256, 32), "T", (32, 128), "T"),
            ((2, 70, 36), "plain", (36, 68), "T"),
            ((3, 1, 33, 40), "strided", (2, 40, 9), "reversed"),
            ((64,), "plain", (64, 128), "plain")]


@pytest.mark.parametrize("key", [c.key() for c in _all_configs()])
def test_every_configuration_matches_numpy(dev: ha.Device, forced: Any, key: str) -> None:
    """Each candidate of the tuner, forced, on edges, full tiles, views, batches, and the
    data types whose loads differ (float32: vector loads; float64: 8-byte vectors; int64
    and uint8: wrapping products, converted loads; bool: or of ands)."""
    cfg = Config.parse(key)
    rng = np.random.default_rng(abs(hash(key)) % 2**32)
    dts = ["float32", "float64", "int16", "bool"] if _SCALE > 1 else ["float32", "int16"]
    for dt in dts:
        if not _fits(dev, cfg, np.dtype(dt).itemsize) or not supports(dev, np.dtype(dt)):
            continue
        forced(cfg)
        # (each layout is a build, a second or more on a CPU device: unless thorough,
        # float32 on the two that make the kernel's variants - full tiles with vector
        # loads, and a broadcast batch of strided and reversed views, cut at every edge,
        # without them - and the other type on plain operands cut at every edge)
        for s1, v1, s2, v2 in (_LAYOUTS if _SCALE > 1 else
                               _LAYOUTS[1:2] + _LAYOUTS[4:5] if dt == "float32" else
                               _LAYOUTS[:1]):
            a, x = view_of(rng, dt, s1, v1, dev)
            b, y = view_of(rng, dt, s2, v2, dev)
            ref = np.matmul(a, b)
            ha.reset_stats()
            r = x @ y
            assert ha.stats().device_ops == (1 if on_device(dev) else 0)
            check(r, ref, lambda a=a, b=b: np.matmul(np.abs(a.astype(np.float64)),
                                                     np.abs(b.astype(np.float64))), s1[-1])
    if on_device(dev):  # the configuration's kernels ran, with and without vector loads
        assert _ran(dev, cfg, double_buffered=cfg.db)
        assert _ran(dev, cfg, vector_loads=False)
        if (cfg.tm * cfg.tk) % (4 * cfg.local_size) == 0 and \
                (cfg.tn * cfg.tk) % (4 * cfg.local_size) == 0:
            assert _ran(dev, cfg, vector_loads=True)


@st.composite
def configured_cases(draw: Any) -> dict[str, Any]:
    """A case of :func:`matmul_cases` with a configuration drawn from the candidates and
    sizes around its tiles (float32 and int32: the tuned type and a wrapping one)."""
    cfg = draw(st.sampled_from(_all_configs()))
    case = draw(matmul_cases())
    dt = draw(st.sampled_from(["float32", "int32"]))

    def side(t: int) -> int:
        return draw(st.one_of(st.integers(1, 2 * t + 5), st.sampled_from([t, 2 * t])))

    m, n, k = side(cfg.tm), side(cfg.tn), draw(st.integers(1, 3 * cfg.tk + 5))
    s1 = case["s1"][:-2] + (m, k) if len(case["s1"]) >= 2 else (k,)
    s2 = case["s2"][:-2] + (k, n) if len(case["s2"]) >= 2 else (k,)
    return {**case, "cfg": cfg, "dt1": dt, "dt2": dt, "s1": s1, "s2": s2, "k": k}


@pytest.mark.slow
@settings(SETTINGS, max_examples=25 * _SCALE)
@given(case=configured_cases())
def test_configurations_match_numpy(dev: ha.Device, forced: Any, case: dict[str, Any]) -> None:
    if not _fits(dev, case["cfg"], 4):
        return
    forced(case["cfg"])
    rng = np.random.default_rng(case["seed"])
    a, x = view_of(rng, case["dt1"], case["s1"], case["v1"], dev)
    b, y = view_of(rng, case["dt2"], case["s2"], case["v2"], dev)
    ref = np.matmul(a, b)
    ha.reset_stats()
    r = OPS[case["op"]](x, y)
    assert ha.stats().device_ops == (1 if on_device(dev) else 0)
    check(r, ref, lambda: np.matmul(np.abs(a.astype(np.float64)),
                                    np.abs(b.astype(np.float64))), case["k"])


def test_misaligned_operands_load_element_by_element(dev: ha.Device, forced: Any) -> None:
    """Views whose first element, row stride or size is not a multiple of 4 elements:
    the vector loads' alignment does not hold, the element loads run (right values)."""
    forced(Config.parse("64x64x16/4x4/db"))
    rng = np.random.default_rng(3)
    base_a = rng.standard_normal((130, 129)).astype(np.float32)
    base_b = rng.standard_normal((129, 130)).astype(np.float32)
    x, y = device_newest(base_a, dev), device_newest(base_b, dev)
    for sa, sb in (((slice(1, 129), slice(1, 129)), (slice(1, 129), slice(2, 130))),
                   ((slice(0, 128), slice(0, 128)), (slice(0, 128), slice(0, 128))),
                   ((slice(2, 130), slice(0, 128)), (slice(0, 128), slice(1, 129)))):
        a, b = base_a[sa], base_b[sb]
        check(x[sa] @ y[sb], a @ b, lambda a=a, b=b: np.abs(a) @ np.abs(b), 128)


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "uint8", "bool"])
@pytest.mark.parametrize("v1,v2", [("plain", "plain"), ("T", "T"), ("strided", "reversed")])
def test_default_large_tiles_match_numpy(dev: ha.Device, dt: str, v1: str, v2: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Untuned (``HOSTARRAY_MATMUL_TUNE=off``), products large enough for the default's
    128 x 128 tiles (taken where every compute unit gets a group), edges cutting them."""
    monkeypatch.setenv("HOSTARRAY_MATMUL_TUNE", "off")
    matmul_tune.forget(dev)
    cpu = dev._cl_device.type & cl.device_type.CPU
    cfg = (matmul_tune._CPU_DEFAULTS if cpu else matmul_tune._DEFAULTS)[0]
    units = dev._cl_device.max_compute_units
    side = cfg.tm + 3  # two tiles a side, the second one 3 wide
    nb = -(-units // 4)  # a batch that makes a group per compute unit at least
    assert matmul_tune.default_config(dev, side, side + 1, nb, 4) == cfg or \
        not _fits(dev, cfg, 4)
    rng = np.random.default_rng(7)
    a, x = view_of(rng, dt, (nb, side, 37), v1, dev)
    b, y = view_of(rng, dt, (nb, 37, side + 1), v2, dev)
    ref = np.matmul(a, b)
    check(x @ y, ref, lambda: np.matmul(np.abs(a.astype(np.float64)),
                                        np.abs(b.astype(np.float64))), 37)
    if on_device(dev) and _fits(dev, cfg, np.dtype(dt).itemsize):
        assert _ran(dev, cfg)
    matmul_tune.forget(dev)


# -- the tuner ----------------------------------------------------------------------------

_SMALL = [Config.parse("32x32x8/4x4/db"), Config.parse("32x32x16/4x4/sb")]


def test_tune_checks_times_and_caches(dev: ha.Device, own_cache: Any) -> None:
    lines: list[str] = []
    r = matmul_tune.tune(dev, sizes=(64,), configs=_SMALL, repeat=2, report=lines.append)
    assert set(r.timings) == {c.key() for c in _SMALL} and not r.rejected and not r.cut
    assert all(t > 0 for v in r.timings.values() for t in v.values())
    assert r.winners[64] == min(_SMALL, key=lambda c: r.timings[c.key()][64])
    assert len(lines) == 2
    saved = json.loads(own_cache.read_text())[matmul_tune.device_key(dev)]
    assert saved["winners"] == {"64": r.winners[64].key()}
    # a later process reads the cache: this entry's winner is taken, whatever the size
    other = _SMALL[1] if r.winners[64] == _SMALL[0] else _SMALL[0]
    saved["winners"] = {"64": other.key()}
    own_cache.write_text(json.dumps({matmul_tune.device_key(dev): saved}))
    matmul_tune.forget()
    assert matmul_tune.choose(dev, 3000, 3000, 8, 1, 4) == other
    # another driver version is another key: not this entry
    assert matmul_tune.device_key(dev).count("|") == 3


def test_reset_drops_the_cached_tuning_and_off_ignores_it(
        dev: ha.Device, own_cache: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = matmul_tune.device_key(dev)
    default = matmul_tune.default_config(dev, 64, 64, 1, 4)
    cached = _SMALL[0] if default == _SMALL[1] else _SMALL[1]  # a winner that isn't the default
    entry = {"winners": {"64": cached.key()}}
    own_cache.parent.mkdir(parents=True)
    own_cache.write_text(json.dumps({key: entry, "another device": entry}))
    monkeypatch.setenv("HOSTARRAY_MATMUL_TUNE", "off")
    assert matmul_tune.choose(dev, 64, 64, 64, 1, 4) == default
    assert key in json.loads(own_cache.read_text())  # off reads nothing, writes nothing
    monkeypatch.setenv("HOSTARRAY_MATMUL_TUNE", "auto")
    matmul_tune.forget()
    assert matmul_tune.choose(dev, 64, 64, 64, 1, 4) == cached
    monkeypatch.setenv("HOSTARRAY_MATMUL_TUNE", " Reset ")
    matmul_tune.forget()
    assert matmul_tune.choose(dev, 64, 64, 64, 1, 4) == default  # small: not tuned anew
    assert set(json.loads(own_cache.read_text())) == {"another device"}
    monkeypatch.setenv("HOSTARRAY_MATMUL_TUNE", "later")
    matmul_tune.forget()
    with pytest.raises(ValueError, match="HOSTARRAY_MATMUL_TUNE='later'"):
        matmul_tune.choose(dev, 64, 64, 64, 1, 4)


def test_first_large_product_tunes_once(dev: ha.Device, own_cache: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first float32 product of at least TUNE_MIN_WORK multiply-adds tunes its device
    (once, while other threads' products wait for the winners), then takes the winner."""
    calls: list[Any] = []
    real = matmul_tune.tune

    def counted(d: Any, *args: Any, **kw: Any) -> Any:
        calls.append(d)
        return real(d, *args, **kw)

    monkeypatch.setattr(matmul_tune, "TUNE_MIN_WORK", 40 ** 3)
    monkeypatch.setattr(matmul_tune, "tune", counted)
    monkeypatch.setattr(matmul_tune, "probe_sizes", lambda d: (64,))
    monkeypatch.setattr(matmul_tune, "candidates", lambda *a, **k: list(_SMALL))
    rng = np.random.default_rng(5)
    small = rng.standard_normal((30, 30)).astype(np.float32)
    x = device_newest(small, dev)
    np.testing.assert_allclose(np.asarray(x @ x), small @ small, rtol=1e-5, atol=1e-5)
    assert calls == [] and not own_cache.exists()  # below the size: no tuning
    a = rng.standard_normal((40, 41)).astype(np.float32)
    b = rng.standard_normal((41, 40)).astype(np.float32)
    x, y = device_newest(a, dev), device_newest(b, dev)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(np.asarray(x @ y)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        check(r, a @ b, lambda: np.abs(a) @ np.abs(b), 41)
    assert len(results) == 3
    if not on_device(dev):  # the host computes on a shared link: nothing to tune
        assert calls == []
        return
    assert calls == [dev]
    winner = Config.parse(json.loads(own_cache.read_text())[
        matmul_tune.device_key(dev)]["winners"]["64"])
    assert winner in _SMALL and matmul_tune.choose(dev, 40, 40, 41, 1, 4) == winner
    if on_device(dev):
        assert _ran(dev, winner)


def test_a_wrong_kernel_is_rejected(dev: ha.Device, own_cache: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration whose kernel computes a wrong value (here: one whose products are
    halved, as a miscompiled kernel might) never wins; with no other, nothing is cached."""
    real = matmul_tune.source

    def wrong(cfg: Any, lay: Any) -> str:
        src = real(cfg, lay)
        if cfg != _SMALL[0]:
            return src
        halved = src.replace("acc[i][j] + a * b", "acc[i][j] + a * b * 0.5f").replace(
            "fma(a, b, acc[i][j])", "fma(a, b * 0.5f, acc[i][j])")
        assert halved != src
        return halved

    monkeypatch.setattr(matmul_tune, "source", wrong)
    r = matmul_tune.tune(dev, sizes=(64,), configs=list(_SMALL), repeat=1)
    assert "wrong value" in r.rejected[_SMALL[0].key()]
    assert r.winners == {64: _SMALL[1]}
    own_cache.unlink()
    matmul_tune.forget()
    r = matmul_tune.tune(dev, sizes=(32,), configs=[_SMALL[0]], repeat=1)
    assert not r.winners and not own_cache.exists()


def test_budget_cuts_the_tuning(dev: ha.Device) -> None:
    r = matmul_tune.tune(dev, max_seconds=0.0, sizes=(64,), configs=list(_SMALL),
                         save=False)
    assert r.cut and not r.timings and not r.winners


def test_candidates_fit_the_device() -> None:
    for mem, group in ((1 << 20, 4096), (49152, 1024), (32768, 256), (16384, 64)):
        got = matmul_tune.candidates(local_mem=mem, max_group=group)
        assert got and all(c.local_size <= group and c.local_bytes(4) <= mem for c in got)
        assert all(c.valid() for c in got)
    assert len(matmul_tune.candidates(1 << 20, 4096)) == len(matmul_tune._CANDIDATES)
    assert matmul_tune.candidates(32768, 256, itemsize=8) != \
        matmul_tune.candidates(32768, 256, itemsize=4)
    with pytest.raises(ValueError):
        Config.parse("128x128x8/8x8")
    with pytest.raises(ValueError):
        Config.parse("128x128x8/3x8/db")  # not whole vectors of 4
    assert _settings.matmul_tune({"HOSTARRAY_MATMUL_TUNE": ""}) == "auto"
    assert _settings.check({"HOSTARRAY_MATMUL_TUNE": "x"}) == [
        "HOSTARRAY_MATMUL_TUNE='x': use one of auto, off, reset"]


def test_bench_matmul_runs(dev: ha.Device, tmp_path: Any, capsys: Any) -> None:
    """benchmarks/bench_matmul.py tunes and measures in one run (tiny sizes here) and
    writes its JSON; every value checked."""
    import importlib.util

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location(
        "bench_matmul", os.path.join(root, "benchmarks", "bench_matmul.py"))
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--device", str(dev), "--sizes", "64,40", "--repeat", "2",
                       "--max-seconds", "20", "--probe-sizes", "64", "--no-cupy",
                       "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| 64 |" in out and "| 40 |" in out
    data = json.loads((tmp_path / "bench_matmul.json").read_text())
    assert data["tuning"]["winners"]["64"] and data["cupy_tf32"] == "0"
    for n in ("64", "40"):
        assert not data["results"][n]["ha"]["error"]
        assert data["results"][n]["ha"]["wall_s"] > 0
        assert data["results"][n]["ha"]["device_ops"] == (1 if on_device(dev) else 0)


def test_a_kernel_the_driver_refuses_leaves_the_product_to_the_host(
        dev: ha.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the driver refuses to build a product's kernel (here: a broken source), the
    host computes it (a counted host fallback, numpy's value), now and for the next such
    product, instead of raising an error the user's product did not cause."""
    from hostarray._compute import matmul as mm

    real = mm.source
    monkeypatch.setattr(mm, "source", lambda cfg, lay: real(cfg, lay) + "\nnot C;\n")
    a = np.arange(35 * 36, dtype=np.float32).reshape(35, 36) % 5
    for _ in range(2):
        x = device_newest(a, dev)
        ha.reset_stats()
        r = x @ x.mT
        s = ha.stats()
        assert (s.device_ops, s.host_fallbacks) == ((0, 1) if on_device(dev) else (0, 0))
        np.testing.assert_array_equal(np.asarray(r), a @ a.T)
