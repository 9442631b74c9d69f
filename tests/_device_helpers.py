"""Shared by the device compute tests (``tests/test_device_*.py``): the real data types and
their OpenCL C names (``bool`` is stored as ``uchar``)."""

from __future__ import annotations

import numpy as np

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.float32, np.float64]
C_TYPES = {"bool": "uchar", "int8": "char", "uint8": "uchar", "int16": "short",
           "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long",
           "uint64": "ulong", "float32": "float", "float64": "double"}
