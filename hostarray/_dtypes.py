"""The standard's data types, as numpy dtype objects."""

from __future__ import annotations

import numpy as np

bool = np.dtype("bool")  # noqa: A001 - the standard's name
int8 = np.dtype("int8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
uint8 = np.dtype("uint8")
uint16 = np.dtype("uint16")
uint32 = np.dtype("uint32")
uint64 = np.dtype("uint64")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
complex64 = np.dtype("complex64")
complex128 = np.dtype("complex128")

ALL_DTYPES = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float32, float64, complex64, complex128)
DEFAULT_INT = int64
DEFAULT_FLOAT = float64
DEFAULT_COMPLEX = complex128
DEFAULT_INDEX = int64

__all__ = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64", "complex64", "complex128"]

SIGNED_INTS = (int8, int16, int32, int64)
UNSIGNED_INTS = (uint8, uint16, uint32, uint64)
INTEGRAL = SIGNED_INTS + UNSIGNED_INTS
REAL_FLOATS = (float32, float64)
COMPLEX_FLOATS = (complex64, complex128)
NUMERIC = INTEGRAL + REAL_FLOATS + COMPLEX_FLOATS

# The standard's dtype kinds (``isdtype``), as sets of dtypes.
KINDS = {
    "bool": frozenset((bool,)),
    "signed integer": frozenset(SIGNED_INTS),
    "unsigned integer": frozenset(UNSIGNED_INTS),
    "integral": frozenset(INTEGRAL),
    "real floating": frozenset(REAL_FLOATS),
    "complex floating": frozenset(COMPLEX_FLOATS),
    "numeric": frozenset(NUMERIC),
}

DTYPE_NAMES = {dt.name: dt for dt in ALL_DTYPES}
