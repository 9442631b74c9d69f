"""Hypothesis strategies for the conformance suite: dtypes by the standard's kinds, shapes,
numpy arrays full of edge values (+-0, +-inf, NaN, subnormals, extreme integers), and the
standard's type-promotion table.

Inputs are drawn as numpy arrays; tests convert them to hostarray and array_api_strict arrays
(``helpers.py``) so both see the same values.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

BOOL = ("bool",)
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTEGER = SIGNED + UNSIGNED
REAL_FLOAT = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
FLOATING = REAL_FLOAT + COMPLEX
REAL = INTEGER + REAL_FLOAT
NUMERIC = INTEGER + FLOATING
ALL = BOOL + NUMERIC

# The kinds the spec names for input data types ("should have a ... data type").
KINDS: dict[str, tuple[str, ...]] = {
    "bool": BOOL, "integer": INTEGER, "integer or boolean": BOOL + INTEGER,
    "real floating": REAL_FLOAT, "complex floating": COMPLEX, "floating": FLOATING,
    "real": REAL, "numeric": NUMERIC, "any": ALL,
}


# -- type promotion (API_specification/type_promotion.html) ------------------------------------
def _table() -> dict[tuple[str, str], str]:
    t: dict[tuple[str, str], str] = {("bool", "bool"): "bool"}
    for family in (SIGNED, UNSIGNED, REAL_FLOAT, COMPLEX):
        for i, a in enumerate(family):
            for j, b in enumerate(family):
                t[a, b] = family[max(i, j)]
    # mixed signed/unsigned: the smallest signed type holding both (uint64 + intN: unspecified)
    for u, need in (("uint8", 16), ("uint16", 32), ("uint32", 64)):
        for s in SIGNED:
            bits = int(s[3:])
            t[u, s] = t[s, u] = f"int{max(bits, need)}"
    # mixed real / complex floating: complex of the wider precision
    for f, fbits in (("float32", 32), ("float64", 64)):
        for c, cbits in (("complex64", 32), ("complex128", 64)):
            t[f, c] = t[c, f] = "complex128" if max(fbits, cbits) == 64 else "complex64"
    return t


PROMOTION: dict[tuple[str, str], str] = _table()


def promote(a: str | np.dtype, b: str | np.dtype) -> np.dtype | None:
    """The result dtype the standard gives for ``a`` and ``b``; ``None`` where unspecified."""
    r = PROMOTION.get((np.dtype(a).name, np.dtype(b).name))
    return None if r is None else np.dtype(r)


def promotable(dtype: str, within: Sequence[str]) -> tuple[str, ...]:
    """Dtypes of ``within`` whose promotion with ``dtype`` the standard defines."""
    return tuple(d for d in within if (dtype, d) in PROMOTION)


# -- dtypes, shapes, values ----------------------------------------------------------------------
def dtypes(kind: str | Sequence[str] = "any") -> st.SearchStrategy[np.dtype]:
    names = KINDS[kind] if isinstance(kind, str) else tuple(kind)
    return st.sampled_from(names).map(np.dtype)


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 0,
           max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def _float_edges(dt: np.dtype) -> list[float]:
    fi = np.finfo(dt)
    return [0.0, -0.0, np.inf, -np.inf, np.nan, float(fi.smallest_subnormal),
            -float(fi.smallest_subnormal), float(fi.max), -float(fi.max), float(fi.tiny),
            1.0, -1.0, 0.5, -0.5, 2.0]


def elements(dt: np.dtype, *, finite: bool = False, min_value: float | None = None,
             max_value: float | None = None, subnormal: bool = True) -> st.SearchStrategy:
    """Scalars of ``dt``: hypothesis' own draws mixed with the spec's edge values."""
    dt = np.dtype(dt)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        ii = np.iinfo(dt)
        lo = ii.min if min_value is None else max(ii.min, int(min_value))
        hi = ii.max if max_value is None else min(ii.max, int(max_value))
        edges = [v for v in (0, 1, -1, lo, hi, lo + 1, hi - 1) if lo <= v <= hi]
        return st.one_of(st.sampled_from(edges), st.integers(lo, hi))
    if dt.kind == "f":
        kw = dict(width=dt.itemsize * 8, allow_nan=not finite, allow_infinity=not finite,
                  allow_subnormal=subnormal, min_value=min_value, max_value=max_value)
        tiny = float(np.finfo(dt).tiny)
        edges = [v for v in _float_edges(dt)
                 if not (finite and not np.isfinite(v))
                 and (subnormal or not (0 < abs(v) < tiny))
                 and (min_value is None or v >= min_value)
                 and (max_value is None or v <= max_value)]
        return st.one_of(st.sampled_from(edges), st.floats(**kw))
    part = elements(np.dtype(f"float{dt.itemsize * 4}"), finite=finite, min_value=min_value,
                    max_value=max_value, subnormal=subnormal)
    return st.builds(complex, part, part)


def arrays(dtype: np.dtype | str | st.SearchStrategy, shape=None, *, finite: bool = False,
           min_value: float | None = None, max_value: float | None = None,
           subnormal: bool = True, **shape_kw) -> st.SearchStrategy[np.ndarray]:
    """numpy arrays of ``dtype`` (a dtype or a strategy of dtypes) and ``shape``."""
    if shape is None:
        shape = shapes(**shape_kw)
    dts = dtype if isinstance(dtype, st.SearchStrategy) else st.just(np.dtype(dtype))

    def build(dt: np.dtype) -> st.SearchStrategy[np.ndarray]:
        return hnp.arrays(dt, shape, elements=elements(dt, finite=finite, min_value=min_value,
                                                       max_value=max_value,
                                                       subnormal=subnormal))
    return dts.flatmap(build)


@st.composite
def binary_arrays(draw, kind: str | Sequence[str] = "numeric", *, finite: bool = False,
                  max_dims: int = 3, same_dtype: bool = False):
    """Two arrays of promotable dtypes of ``kind`` with broadcast-compatible shapes."""
    names = KINDS[kind] if isinstance(kind, str) else tuple(kind)
    d1 = draw(st.sampled_from(names))
    d2 = d1 if same_dtype else draw(st.sampled_from(promotable(d1, names)))
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims,
                                               max_side=4))
    a = draw(arrays(d1, s.input_shapes[0], finite=finite))
    b = draw(arrays(d2, s.input_shapes[1], finite=finite))
    return a, b


def scalar_for(dt: np.dtype, value) -> bool | int | float | complex:
    """``value`` as the Python scalar type the spec pairs with ``dt``'s kind."""
    kind = np.dtype(dt).kind
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind](value)


def python_scalars(dt: np.dtype, *, finite: bool = True) -> st.SearchStrategy:
    """Python scalars usable with an array of ``dt`` (in range, so no overflow question)."""
    dt = np.dtype(dt)
    if dt.kind == "f":  # a Python float is float64: keep it representable in float32 too
        return elements(np.dtype("float32"), finite=finite).map(float)
    if dt.kind == "c":
        return elements(np.dtype("complex64"), finite=finite).map(complex)
    return elements(dt, finite=finite).map(lambda v: scalar_for(dt, v))


def axes_for(ndim: int, *, allow_none: bool = True, allow_tuple: bool = True):
    """An ``axis`` argument for an array of ``ndim`` dimensions (negative ones too)."""
    opts: list[st.SearchStrategy] = []
    if allow_none:
        opts.append(st.none())
    if ndim:
        opts.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            opts.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)
                        .map(tuple))
    return st.one_of(opts) if opts else st.none()


@st.composite
def shapes_broadcasting_to(draw, shape: tuple[int, ...]):
    """A shape that broadcasts *to* ``shape`` (trailing dims of ``shape``, some set to 1)."""
    k = draw(st.integers(0, len(shape)))
    tail = shape[len(shape) - k:]
    return tuple(1 if draw(st.booleans()) else s for s in tail)
