"""Every name of the array API standard 2025.12, with its signature as the spec writes it.

Written from the specification's pages (API_specification/*, extensions/linear_algebra_functions,
extensions/fourier_transform_functions, inspection) with type annotations left out: only the
parameter names, their kinds (positional-only before ``/``, keyword-only after ``*``) and the
defaults are normative here. ``test_signatures.py`` compares each against ``inspect.signature``.
"""

from __future__ import annotations

_SAME_ARGS_UNARY = "(x, /)"
_BINARY = "(x1, x2, /)"
_REDUCTION = "(x, /, *, axis=None, keepdims=False)"

CREATION: dict[str, str] = {
    "arange": "(start, /, stop=None, step=1, *, dtype=None, device=None)",
    "asarray": "(obj, /, *, dtype=None, device=None, copy=None)",
    "empty": "(shape, *, dtype=None, device=None)",
    "empty_like": "(x, /, *, dtype=None, device=None)",
    "eye": "(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None)",
    "from_dlpack": "(x, /, *, device=None, copy=None)",
    "full": "(shape, fill_value, *, dtype=None, device=None)",
    "full_like": "(x, /, fill_value, *, dtype=None, device=None)",
    "linspace": "(start, stop, /, num, *, dtype=None, device=None, endpoint=True)",
    "meshgrid": "(*arrays, indexing='xy')",
    "ones": "(shape, *, dtype=None, device=None)",
    "ones_like": "(x, /, *, dtype=None, device=None)",
    "tril": "(x, /, *, k=0)",
    "triu": "(x, /, *, k=0)",
    "zeros": "(shape, *, dtype=None, device=None)",
    "zeros_like": "(x, /, *, dtype=None, device=None)",
}

# Elementwise functions: one argument ``(x, /)`` or two ``(x1, x2, /)``; clip is the exception.
UNARY_ELEMENTWISE = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj",
    "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log1p",
    "log2", "log10", "logical_not", "negative", "positive", "real", "reciprocal", "round", "sign",
    "signbit", "sin", "sinh", "square", "sqrt", "tan", "tanh", "trunc",
)
BINARY_ELEMENTWISE = (
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
    "hypot", "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract",
)
ELEMENTWISE: dict[str, str] = {
    **{n: _SAME_ARGS_UNARY for n in UNARY_ELEMENTWISE},
    **{n: _BINARY for n in BINARY_ELEMENTWISE},
    "clip": "(x, /, min=None, max=None)",
}

DATA_TYPE_FUNCTIONS: dict[str, str] = {
    "astype": "(x, dtype, /, *, copy=True, device=None)",
    "can_cast": "(from_, to, /)",
    "finfo": "(type, /)",
    "iinfo": "(type, /)",
    "isdtype": "(dtype, kind)",
    "result_type": "(*arrays_and_dtypes)",
}

INDEXING: dict[str, str] = {
    "take": "(x, indices, /, *, axis=None)",
    "take_along_axis": "(x, indices, /, *, axis=-1)",
}

LINEAR_ALGEBRA: dict[str, str] = {
    "matmul": _BINARY,
    "matrix_transpose": "(x, /)",
    "tensordot": "(x1, x2, /, *, axes=2)",
    "vecdot": "(x1, x2, /, *, axis=-1)",
}

MANIPULATION: dict[str, str] = {
    "broadcast_arrays": "(*arrays)",
    "broadcast_shapes": "(*shapes)",
    "broadcast_to": "(x, /, shape)",
    "concat": "(arrays, /, *, axis=0)",
    "expand_dims": "(x, /, axis)",
    "flip": "(x, /, *, axis=None)",
    "moveaxis": "(x, source, destination, /)",
    "permute_dims": "(x, /, axes)",
    "repeat": "(x, repeats, /, *, axis=None)",
    "reshape": "(x, /, shape, *, copy=None)",
    "roll": "(x, /, shift, *, axis=None)",
    "squeeze": "(x, /, axis)",
    "stack": "(arrays, /, *, axis=0)",
    "tile": "(x, repetitions, /)",
    "unstack": "(x, /, *, axis=0)",
}

SEARCHING: dict[str, str] = {
    "argmax": "(x, /, *, axis=None, keepdims=False)",
    "argmin": "(x, /, *, axis=None, keepdims=False)",
    "count_nonzero": "(x, /, *, axis=None, keepdims=False)",
    "nonzero": "(x, /)",
    "searchsorted": "(x1, x2, /, *, side='left', sorter=None)",
    "where": "(condition, x1, x2, /)",
}

SETS: dict[str, str] = {
    "isin": "(x1, x2, /, *, invert=False)",
    "unique_all": "(x, /)",
    "unique_counts": "(x, /)",
    "unique_inverse": "(x, /)",
    "unique_values": "(x, /)",
}

SORTING: dict[str, str] = {
    "argsort": "(x, /, *, axis=-1, descending=False, stable=True)",
    "sort": "(x, /, *, axis=-1, descending=False, stable=True)",
}

STATISTICAL: dict[str, str] = {
    "cumulative_prod": "(x, /, *, axis=None, dtype=None, include_initial=False)",
    "cumulative_sum": "(x, /, *, axis=None, dtype=None, include_initial=False)",
    "max": _REDUCTION,
    "mean": _REDUCTION,
    "min": _REDUCTION,
    "prod": "(x, /, *, axis=None, dtype=None, keepdims=False)",
    "std": "(x, /, *, axis=None, correction=0.0, keepdims=False)",
    "sum": "(x, /, *, axis=None, dtype=None, keepdims=False)",
    "var": "(x, /, *, axis=None, correction=0.0, keepdims=False)",
}

UTILITY: dict[str, str] = {
    "all": _REDUCTION,
    "any": _REDUCTION,
    "diff": "(x, /, *, axis=-1, n=1, prepend=None, append=None)",
}

INSPECTION: dict[str, str] = {"__array_namespace_info__": "()"}

MAIN_NAMESPACE: dict[str, dict[str, str]] = {
    "creation": CREATION,
    "elementwise": ELEMENTWISE,
    "data_type_functions": DATA_TYPE_FUNCTIONS,
    "indexing": INDEXING,
    "linear_algebra": LINEAR_ALGEBRA,
    "manipulation": MANIPULATION,
    "searching": SEARCHING,
    "sets": SETS,
    "sorting": SORTING,
    "statistical": STATISTICAL,
    "utility": UTILITY,
    "inspection": INSPECTION,
}

CONSTANTS = ("e", "inf", "nan", "newaxis", "pi")

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64", "complex64", "complex128")

_FFT_1D = "(x, /, *, n=None, axis=-1, norm='backward')"
_FFT_ND = "(x, /, *, s=None, axes=None, norm='backward')"
_FFT_FREQ = "(n, /, *, d=1.0, dtype=None, device=None)"
FFT: dict[str, str] = {
    "fft": _FFT_1D, "ifft": _FFT_1D, "fftn": _FFT_ND, "ifftn": _FFT_ND,
    "rfft": _FFT_1D, "irfft": _FFT_1D, "rfftn": _FFT_ND, "irfftn": _FFT_ND,
    "hfft": _FFT_1D, "ihfft": _FFT_1D,
    "fftfreq": _FFT_FREQ, "rfftfreq": _FFT_FREQ,
    "fftshift": "(x, /, *, axes=None)", "ifftshift": "(x, /, *, axes=None)",
}

LINALG: dict[str, str] = {
    "cholesky": "(x, /, *, upper=False)",
    "cross": "(x1, x2, /, *, axis=-1)",
    "det": "(x, /)",
    "diagonal": "(x, /, *, offset=0)",
    "eig": "(x, /)",
    "eigh": "(x, /)",
    "eigvals": "(x, /)",
    "eigvalsh": "(x, /)",
    "inv": "(x, /)",
    "matmul": _BINARY,
    "matrix_norm": "(x, /, *, keepdims=False, ord='fro')",
    "matrix_power": "(x, n, /)",
    "matrix_rank": "(x, /, *, rtol=None)",
    "matrix_transpose": "(x, /)",
    "outer": _BINARY,
    "pinv": "(x, /, *, rtol=None)",
    "qr": "(x, /, *, mode='reduced')",
    "slogdet": "(x, /)",
    "solve": _BINARY,
    "svd": "(x, /, *, full_matrices=True)",
    "svdvals": "(x, /)",
    "tensordot": "(x1, x2, /, *, axes=2)",
    "trace": "(x, /, *, offset=0, dtype=None)",
    "vecdot": "(x1, x2, /, *, axis=-1)",
    "vector_norm": "(x, /, *, axis=None, keepdims=False, ord=2)",
}

# Methods of the object __array_namespace_info__() returns.
INFO: dict[str, str] = {
    "capabilities": "()",
    "default_device": "()",
    "default_dtypes": "(*, device=None)",
    "devices": "()",
    "dtypes": "(*, device=None, kind=None)",
}

ARRAY_ATTRIBUTES = ("dtype", "device", "mT", "ndim", "shape", "size", "T")

# Operators with a reflected (``__radd__``) and an in-place (``__iadd__``) form.
ARITHMETIC_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")
BITWISE_OPERATORS = ("and", "or", "xor", "lshift", "rshift")
COMPARISON_OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge")

ARRAY_METHODS: dict[str, str] = {
    **{f"__{op}__": "(self, other, /)"
       for op in ARITHMETIC_OPERATORS + BITWISE_OPERATORS + COMPARISON_OPERATORS},
    **{f"__r{op}__": "(self, other, /)" for op in ARITHMETIC_OPERATORS + BITWISE_OPERATORS},
    **{f"__i{op}__": "(self, other, /)" for op in ARITHMETIC_OPERATORS + BITWISE_OPERATORS},
    **{f"__{op}__": "(self, /)"
       for op in ("abs", "neg", "pos", "invert", "bool", "complex", "float", "int", "index",
                  "dlpack_device")},
    "__array_namespace__": "(self, /, *, api_version=None)",
    "__dlpack__": "(self, /, *, stream=None, max_version=None, dl_device=None, copy=None)",
    "__getitem__": "(self, key, /)",
    "__setitem__": "(self, key, value, /)",
    "to_device": "(self, device, /, *, stream=None)",
}


def all_main_functions() -> dict[str, str]:
    """Every function of the main namespace, name -> signature."""
    out: dict[str, str] = {}
    for section in MAIN_NAMESPACE.values():
        out.update(section)
    return out
