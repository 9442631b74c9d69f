"""The Parameters and Returns sections of the namespace's reference, written once.

The array API standard gives its parameters one meaning across functions (``axis``,
``keepdims``, ``dtype``, ``device`` ...); so does this module: :data:`PARAMETERS`
describes each name once, :data:`OVERRIDES` where one function means something else,
and :data:`RETURNS` what each function gives back.  The element-wise functions are
built from one table (:data:`hostarray._api.elementwise.TABLE`), and their sections
come from that table's rows here.  :func:`complete` adds the sections a docstring
lacks, before its Raises / Notes / Examples, once, at import (``hostarray/__init__.py``);
a docstring that has its own keeps it.  ``tests/tooling/test_docstrings.py`` fails for a
public callable whose sections are missing, and runs their examples.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

__all__ = ["complete", "complete_namespace", "PARAMETERS", "OVERRIDES", "RETURNS"]

_ARRAY = "HostPtrArray"
_AXIS = ("int or tuple of int, optional",
         "The axis or axes to work along (negative counts from the last); ``None`` (the "
         "default) means all of them.")

# name -> (type, description)
PARAMETERS: dict[str, tuple[str, str]] = {
    "x": (_ARRAY, "The input array."),
    "x1": (f"{_ARRAY} or Python scalar", "The first operand (broadcast against ``x2``)."),
    "x2": (f"{_ARRAY} or Python scalar", "The second operand (broadcast against ``x1``)."),
    "axis": _AXIS,
    "axes": ("tuple of int, optional", "The axes to work along, in order."),
    "keepdims": ("bool, optional", "Keep the reduced axes, with length 1, so that the result "
                                   "broadcasts against ``x``."),
    "dtype": ("dtype, optional", "The result's data type (a hostarray or numpy data type, or "
                                 "its name); ``None``: the default for the inputs."),
    "device": ("Device or str, optional", "Where the result lives (a :class:`Device` or its "
                                          "name: ``\"cpu\"``, ``\"opencl:0:0\"``, "
                                          "``\"gpu\"``); ``None``: the default device "
                                          "(:func:`default_device`), or the input's."),
    "copy": ("bool, optional", "``True``: always copy; ``False``: never (``ValueError`` where "
                               "a copy is needed); ``None``: copy only where needed."),
    "shape": ("int or tuple of int", "The shape of the result."),
    "arrays": (f"sequence of {_ARRAY}", "The input arrays."),
    "n": ("int, optional", "The length of the transformed axis (the input is cut or padded "
                           "with zeros); ``None``: its length in ``x``."),
    "norm": ("{'backward', 'ortho', 'forward'}, optional",
             "Which direction is scaled by ``1/n`` (``'ortho'``: both by ``1/sqrt(n)``)."),
    "s": ("tuple of int, optional", "The length of each transformed axis (see ``n``)."),
    "k": ("int, optional", "The diagonal: 0 the main one, positive above it, negative below."),
    "start": ("int or float", "The first value."),
    "stop": ("int or float, optional", "The end of the interval."),
    "step": ("int or float, optional", "The spacing between values."),
    "fill_value": ("bool, int, float or complex", "The value of every element."),
    "type": ("dtype or HostPtrArray", "A data type, or an array of that type."),
    "indices": (_ARRAY, "Integer indices into ``x`` along ``axis``."),
    "descending": ("bool, optional", "Sort in descending order."),
    "stable": ("bool, optional", "Keep equal elements in their order (the default)."),
    "include_initial": ("bool, optional",
                        "Start the result with the empty accumulation (0 or 1)."),
    "correction": ("int or float, optional", "Degrees of freedom subtracted from the number "
                                             "of elements (0: population; 1: sample)."),
    "offset": ("int, optional", "The diagonal: 0 the main one, positive above, negative "
                                "below."),
    "ord": ("int, float or str, optional", "Which norm (as numpy's ``linalg.norm``)."),
    "rtol": ("float or HostPtrArray, optional", "Relative tolerance for small singular "
                                                "values; ``None``: ``max(M, N) * eps``."),
    "d": ("float, optional", "The sample spacing."),
    "reason": ("Refusal", "A refusal (``Refused.reason``)."),
    "err": ("BaseException", "Any exception."),
    "obj": ("array_like", "A HostPtrArray, numpy array, an object with ``__array__`` or "
                          "DLPack, a buffer, nested sequences or a Python scalar."),
    "spec": ("Device, str or None", "The device or its name (see the list above)."),
    "nbytes": ("int or None", "The size in bytes from which device-newest operands are "
                              "computed on the device (``0``: every size; ``None``: never)."),
    "n_rows": ("int", "The number of rows."),
    "n_cols": ("int, optional", "The number of columns; ``None``: ``n_rows``."),
    "num": ("int", "The number of values."),
    "endpoint": ("bool, optional", "Whether ``stop`` is the last value."),
    "indexing": ("{'xy', 'ij'}, optional", "Cartesian (``'xy'``) or matrix (``'ij'``) "
                                           "indexing."),
    "from_": ("dtype or HostPtrArray", "The data type (or array) cast from."),
    "to": ("dtype", "The data type cast to."),
    "kind": ("dtype, str or tuple", "A data type or one of the standard's kinds "
                                    "(``'bool'``, ``'signed integer'``, "
                                    "``'unsigned integer'``, ``'integral'``, "
                                    "``'real floating'``, ``'complex floating'``, "
                                    "``'numeric'``), or a tuple of those."),
    "dtype_": ("dtype", "A data type."),
    "arrays_and_dtypes": ("HostPtrArray, dtype or Python scalar", "The arrays, data types "
                                                                  "and scalars to promote."),
    "min": ("HostPtrArray or Python scalar, optional", "The lower bound; ``None``: none."),
    "max": ("HostPtrArray or Python scalar, optional", "The upper bound; ``None``: none."),
    "shapes": ("tuple of int", "The shapes to broadcast."),
    "source": ("int or tuple of int", "The axes to move."),
    "destination": ("int or tuple of int", "Where they go."),
    "repeats": ("int or HostPtrArray", "How often each element is repeated."),
    "shift": ("int or tuple of int", "By how many places elements move along ``axis``."),
    "repetitions": ("tuple of int", "How often ``x`` is repeated along each axis."),
    "side": ("{'left', 'right'}, optional", "Which index an equal element gives."),
    "sorter": ("HostPtrArray, optional", "Indices that sort ``x1``."),
    "condition": (_ARRAY, "Where to take ``x1`` (true) or ``x2`` (false)."),
    "invert": ("bool, optional", "Return where ``x1`` is *not* in ``x2``."),
    "prepend": ("HostPtrArray or Python scalar, optional", "Values put before ``x`` along "
                                                           "``axis`` first."),
    "append": ("HostPtrArray or Python scalar, optional", "Values put after ``x`` along "
                                                          "``axis`` first."),
    "upper": ("bool, optional", "Return the upper factor (``U`` with ``x = U^H U``)."),
    "mode": ("{'reduced', 'complete'}, optional", "The shapes of ``Q`` and ``R``."),
    "full_matrices": ("bool, optional", "Full-size ``U`` and ``Vh``, else reduced."),
    "stream": ("None", "Must be ``None`` (hostarray's devices have one queue each)."),
    "host": ("numpy.ndarray", "The host memory the array is to use."),
    "a": ("numpy.ndarray", "A numpy array."),
    "access": ("{'r', 'w', 'rw'}", "What the raw code does with the buffer: read it, "
                                   "overwrite all of it, or both."),
    "*args, **kwargs": ("", "As numpy's ``ndarray`` method of the same name takes them."),
    "*args": ("int, optional", "As numpy's: none for an array of one element, a flat index, "
                               "or one index per axis."),
    "wide": ("bool, optional", "Names in full, lines not wrapped (``hostarray config "
                               "--wide``)."),
    "file": ("file, optional", "Where to print (default ``sys.stdout``)."),
}

# (function, parameter) -> (type, description), where a function means something else
OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("diff", "n"): ("int, optional", "How often to difference (default 1)."),
    ("matrix_power", "n"): ("int", "The power (negative: of the inverse)."),
    ("tensordot", "axes"): ("int or tuple of two sequences of int, optional",
                            "The last ``axes`` axes of ``x1`` with the first of ``x2`` "
                            "(default 2), or the two lists of axes to contract."),
    ("fftfreq", "n"): ("int", "The window length."),
    ("rfftfreq", "n"): ("int", "The window length."),
    ("fftshift", "axes"): ("int or tuple of int, optional", "The axes to shift; ``None``: "
                                                            "all."),
    ("ifftshift", "axes"): ("int or tuple of int, optional", "The axes to shift; ``None``: "
                                                             "all."),
    ("permute_dims", "axes"): ("tuple of int", "The new order of ``x``'s axes."),
    ("reshape", "shape"): ("tuple of int", "The new shape (one entry may be -1)."),
    ("broadcast_to", "shape"): ("tuple of int", "The shape to broadcast to."),
    ("take", "axis"): ("int, optional", "The axis to index (optional for a 1-D ``x``)."),
    ("take_along_axis", "axis"): ("int, optional", "The axis to index (default -1)."),
    ("vecdot", "axis"): ("int, optional", "The axis of the vectors (default -1)."),
    ("linalg.vecdot", "axis"): ("int, optional", "The axis of the vectors (default -1)."),
    ("concat", "axis"): ("int or None, optional", "The axis to join along; ``None``: the "
                                                  "arrays flattened."),
    ("stack", "axis"): ("int, optional", "The new axis's place in the result."),
    ("expand_dims", "axis"): ("int or tuple of int", "Where the new axes go."),
    ("squeeze", "axis"): ("int or tuple of int", "The axes of length 1 to remove."),
    ("unstack", "axis"): ("int, optional", "The axis to split along (default 0)."),
    ("roll", "axis"): _AXIS,
    ("repeat", "axis"): ("int, optional", "The axis to repeat along; ``None``: the array "
                                          "flattened."),
    ("cumulative_sum", "axis"): ("int, optional", "The axis (optional for a 1-D ``x``)."),
    ("cumulative_prod", "axis"): ("int, optional", "The axis (optional for a 1-D ``x``)."),
    ("argsort", "axis"): ("int, optional", "The axis to sort along (default -1)."),
    ("sort", "axis"): ("int, optional", "The axis to sort along (default -1)."),
    ("argmax", "axis"): ("int, optional", "The axis; ``None``: the array flattened."),
    ("argmin", "axis"): ("int, optional", "The axis; ``None``: the array flattened."),
    ("diff", "axis"): ("int, optional", "The axis to difference along (default -1)."),
    ("moveaxis", "source"): ("int or tuple of int", "The axes to move."),
    ("flip", "axis"): _AXIS,
    ("linalg.cross", "axis"): ("int, optional", "The axis of the 3-vectors (default -1)."),
    ("matrix_norm", "ord"): ("{'fro', 'nuc', 1, 2, inf, -1, -2, -inf}, optional",
                             "Which matrix norm (default Frobenius)."),
    ("vector_norm", "ord"): ("int, float or inf, optional", "Which vector norm (default 2)."),
    ("searchsorted", "x1"): (_ARRAY, "A 1-D array sorted ascending (or by ``sorter``)."),
    ("searchsorted", "x2"): ("HostPtrArray or Python scalar", "The values to place."),
    ("isin", "x1"): ("HostPtrArray or Python scalar", "The values to look up."),
    ("isin", "x2"): ("HostPtrArray or Python scalar", "The values to look them up in."),
    ("where", "x1"): ("HostPtrArray or Python scalar", "The values where ``condition``."),
    ("where", "x2"): ("HostPtrArray or Python scalar", "The values elsewhere."),
    ("arange", "stop"): ("int or float, optional", "The end (not included); ``None``: "
                                                   "``start`` is the end and 0 the start."),
    ("linspace", "stop"): ("int, float or complex", "The last value (see ``endpoint``)."),
    ("linspace", "start"): ("int, float or complex", "The first value."),
    ("isdtype", "dtype"): ("dtype", "The data type to test."),
    ("astype", "device"): ("Device or str, optional", "Where the result lives; ``None``: "
                                                      "``x``'s device."),
    ("astype", "dtype"): ("dtype", "The data type to convert to."),
    ("astype", "copy"): ("bool, optional", "``False``: return ``x`` itself where it has "
                                           "``dtype`` already."),
    ("reshape", "copy"): ("bool, optional", "``True``: always copy; ``False``: never "
                                            "(``ValueError`` where a view is impossible)."),
    ("to_device", "device"): ("Device or str", "Where the result lives."),
    ("of_numpy", "device"): ("Device or str", "The device to attach the array to."),
    ("install", "device"): ("Device or str", "The OpenCL device."),
    ("install", "x"): (_ARRAY, "The array to give the buffer (see above)."),
    ("from_dlpack", "x"): ("object", "A DLPack producer (an object with ``__dlpack__``)."),
    ("from_dlpack", "copy"): ("bool, optional", "``True``: always copy; ``False``: never "
                                                "(``BufferError`` where a copy is needed); "
                                                "``None``: copy only where needed."),
    ("from_dlpack", "device"): ("Device or str, optional", "Where the result lives; "
                                                           "``None``: the host."),
    ("attach", "device"): ("Device or str", "The OpenCL device."),
    ("cl_buffer", "device"): ("Device or str", "The OpenCL device."),
    ("queue", "device"): ("Device or str", "The OpenCL device."),
    ("host_link", "device"): ("Device or str", "The OpenCL device."),
    ("free_buffer", "device"): ("Device or str", "The device whose buffer goes."),
    ("publish_host_writes", "device"): ("Device or str", "The OpenCL device."),
    ("acquire_device_writes", "device"): ("Device or str", "The OpenCL device."),
    ("attach", "x"): (_ARRAY, "A HostPtrArray (a view attaches its array's memory)."),
    ("host_link", "x"): (_ARRAY, "A HostPtrArray."),
    ("publish_host_writes", "x"): (_ARRAY, "A HostPtrArray (a view: only its bytes)."),
    ("acquire_device_writes", "x"): (_ARRAY, "A HostPtrArray (a view: only its bytes)."),
    ("free_buffer", "x"): (_ARRAY, "A HostPtrArray."),
    ("cl_buffer", "x"): (_ARRAY, "A HostPtrArray over one contiguous range of its memory."),
    ("read", "x"): (_ARRAY, "A kernel argument."),
    ("write", "x"): (_ARRAY, "A kernel argument."),
    ("readwrite", "x"): (_ARRAY, "A kernel argument."),
    ("show_config", "mode"): ("{'stdout', 'dicts'}, optional",
                              "Print the report, or return it as a dict."),
    ("finfo", "type"): ("dtype or HostPtrArray", "A floating-point data type or array."),
    ("iinfo", "type"): ("dtype or HostPtrArray", "An integer data type or array."),
}

_VIEW = f"{_ARRAY}\n    A view of ``x``'s memory (see above)."
_NEW = f"{_ARRAY}\n    A new array on ``x``'s device."
_REDUCED = (f"{_ARRAY}\n    The reduction, a 0-d array for the whole array, on ``x``'s device "
            f"(nothing is acquired where that device computes it).")

# function -> "type\n    description" (the whole Returns entry)
RETURNS: dict[str, str] = {
    "asarray": f"{_ARRAY}\n    ``obj`` as an array, over its memory where it can be shared.",
    "empty": f"{_ARRAY}\n    An uninitialised array on ``device``.",
    "empty_like": f"{_ARRAY}\n    An uninitialised array of ``x``'s shape.",
    "zeros": f"{_ARRAY}\n    An array of zeros on ``device``.",
    "zeros_like": f"{_ARRAY}\n    Zeros of ``x``'s shape.",
    "ones": f"{_ARRAY}\n    An array of ones on ``device``.",
    "ones_like": f"{_ARRAY}\n    Ones of ``x``'s shape.",
    "full": f"{_ARRAY}\n    An array of ``fill_value`` on ``device``.",
    "full_like": f"{_ARRAY}\n    ``fill_value`` in ``x``'s shape.",
    "arange": f"{_ARRAY}\n    The 1-D array of values.",
    "linspace": f"{_ARRAY}\n    ``num`` evenly spaced values.",
    "eye": f"{_ARRAY}\n    Ones on diagonal ``k``, zeros elsewhere.",
    "tril": f"{_ARRAY}\n    ``x`` with the elements above diagonal ``k`` zeroed.",
    "triu": f"{_ARRAY}\n    ``x`` with the elements below diagonal ``k`` zeroed.",
    "meshgrid": f"list of {_ARRAY}\n    One coordinate array per input.",
    "from_dlpack": f"{_ARRAY}\n    The producer's memory, shared where the host can reach it.",
    "astype": f"{_ARRAY}\n    ``x`` as ``dtype`` (``x`` itself for ``copy=False`` and the "
              f"same type).",
    "can_cast": "bool\n    Whether the cast is allowed.",
    "finfo": "finfo_object\n    ``bits``, ``eps``, ``max``, ``min``, ``smallest_normal``, "
             "``dtype``.",
    "iinfo": "iinfo_object\n    ``bits``, ``max``, ``min``, ``dtype``.",
    "isdtype": "bool\n    Whether ``dtype`` is of ``kind``.",
    "result_type": "dtype\n    The promoted data type.",
    "broadcast_arrays": f"list of {_ARRAY}\n    Read-only views of the inputs, broadcast.",
    "broadcast_shapes": "tuple of int\n    The broadcast shape.",
    "broadcast_to": f"{_ARRAY}\n    A read-only view of ``x`` in ``shape``.",
    "concat": f"{_ARRAY}\n    The arrays joined.",
    "stack": f"{_ARRAY}\n    The arrays stacked along a new axis.",
    "unstack": f"tuple of {_ARRAY}\n    Views of ``x``, one per index along ``axis``.",
    "expand_dims": _VIEW, "flip": _VIEW, "moveaxis": _VIEW, "permute_dims": _VIEW,
    "squeeze": _VIEW, "matrix_transpose": _VIEW,
    "reshape": f"{_ARRAY}\n    A view where one is possible, else a copy (see ``copy``).",
    "repeat": _NEW, "roll": _NEW, "tile": _NEW, "take": _NEW, "take_along_axis": _NEW,
    "sort": _NEW, "diff": _NEW,
    "argsort": f"{_ARRAY}\n    The indices that sort ``x`` (default integer type).",
    "all": f"{_ARRAY}\n    A boolean reduction (0-d for the whole array).",
    "any": f"{_ARRAY}\n    A boolean reduction (0-d for the whole array).",
    "argmax": f"{_ARRAY}\n    Indices of the first maximum (0-d for the flattened array).",
    "argmin": f"{_ARRAY}\n    Indices of the first minimum (0-d for the flattened array).",
    "count_nonzero": f"{_ARRAY}\n    The counts (default integer type).",
    "nonzero": f"tuple of {_ARRAY}\n    The indices of the non-zero elements, one array "
               f"per axis.",
    "searchsorted": f"{_ARRAY}\n    Indices into ``x1`` (default integer type).",
    "where": f"{_ARRAY}\n    The chosen elements, broadcast.",
    "isin": f"{_ARRAY}\n    Booleans of ``x1``'s shape.",
    "unique_all": "UniqueAllResult\n    ``values``, ``indices``, ``inverse_indices``, "
                  "``counts``.",
    "unique_counts": "UniqueCountsResult\n    ``values``, ``counts``.",
    "unique_inverse": "UniqueInverseResult\n    ``values``, ``inverse_indices``.",
    "unique_values": f"{_ARRAY}\n    The distinct values.",
    "max": _REDUCED, "min": _REDUCED, "mean": _REDUCED, "prod": _REDUCED, "std": _REDUCED,
    "sum": _REDUCED, "var": _REDUCED,
    "cumulative_sum": f"{_ARRAY}\n    The running sums.",
    "cumulative_prod": f"{_ARRAY}\n    The running products.",
    "matmul": f"{_ARRAY}\n    The matrix product.",
    "tensordot": f"{_ARRAY}\n    The tensor contraction.",
    "vecdot": f"{_ARRAY}\n    The dot products of the vectors along ``axis``.",
    "device": "Device\n    The device (one object per device: ``is`` compares them).",
    "devices": "tuple of Device\n    The host first, then every OpenCL device that passed its "
               "probe.",
    "stats": "Stats\n    A snapshot of the counters.",
    "device_compute_threshold": "int\n    The threshold in bytes.",
    "read": "Access\n    ``x`` marked: published before the launch, not acquired after.",
    "write": "Access\n    ``x`` marked: not published (the kernel overwrites it), acquired "
             "after.",
    "readwrite": "Access\n    ``x`` marked: published before, acquired after.",
    "error_message": "str\n    The message.",
    "refusal_message": "str\n    The message.",
    "of_numpy": f"{_ARRAY}\n    The array, over ``a``'s memory where it can be used.",
    "install": "HostLink\n    The buffer's link (``kind``: shared, mapped or copied).",
    "attach": "HostLink\n    The buffer's link (``kind``: shared, mapped or copied).",
    "host_link": "HostLink or None\n    The link, or ``None`` where ``x`` has no buffer "
                 "there.",
    "queue": "pyopencl.CommandQueue\n    The device's in-order queue.",
    "cl_buffer": "context manager\n    Gives the ``pyopencl.Buffer`` over ``x``'s bytes.",
    "matrix_rank": f"{_ARRAY}\n    The ranks (default integer type).",
    "slogdet": "SlogdetResult\n    ``sign`` and ``logabsdet``.",
    "eig": "EigResult\n    ``eigenvalues`` and ``eigenvectors``.",
    "eigh": "EighResult\n    ``eigenvalues`` (ascending) and ``eigenvectors``.",
    "qr": "QRResult\n    ``Q`` and ``R``.",
    "svd": "SVDResult\n    ``U``, ``S``, ``Vh``.",
    "fftfreq": f"{_ARRAY}\n    The sample frequencies.",
    "rfftfreq": f"{_ARRAY}\n    The sample frequencies.",
    "to_device": f"{_ARRAY}\n    ``self`` on ``device`` (``self`` itself where it is "
                 f"there already).",
    "tolist": "list or Python scalar\n    The elements as Python objects.",
    "item": "Python scalar\n    The one element.",
    "__array_namespace__": "module\n    ``hostarray``.",
    "clear_pool": "int\n    The number of bytes let go.",
    "free_buffer": "bool\n    Whether ``x`` had a buffer there.",
    "set_device_compute_threshold": "int or None\n    The threshold before the call.",
    "__array_namespace_info__": "Info\n    The inspection namespace (``capabilities()``, "
                                "``default_device()``, ``devices()``, ``dtypes()``, "
                                "``default_dtypes()``).",
    "show_config": "dict or None\n    The report as a dict for ``mode='dicts'``, else "
                   "``None`` (printed).",
}

# function -> the Raises entries its own checks give (the text of the section)
RAISES: dict[str, str] = {
    "to_device": "ValueError\n    ``stream`` is not ``None``.\n"
                 "InvalidDevice, UnknownFramework, DeviceUnavailable\n"
                 "    ``device`` names no working device (see :func:`device`).",
    "asarray": "ValueError\n    ``copy=False`` where a copy is needed (another data type, "
               "memory the device can't use).\nTypeError\n    A data type hostarray does "
               "not hold (strings, objects).",
    "astype": "TypeError\n    ``x`` is not a HostPtrArray, or complex to a real type (take "
              "``real`` or ``abs`` first).",
    "expand_dims": "IndexError\n    An axis out of bounds for the result.\nValueError\n"
                   "    An axis given twice.",
    "finfo": "TypeError\n    ``type`` is not a floating-point type.",
    "iinfo": "TypeError\n    ``type`` is not an integer type.",
    "isdtype": "TypeError\n    ``dtype`` is not a data type, or ``kind`` not a kind.\n"
               "ValueError\n    An unknown kind name.",
    "from_dlpack": "AttributeError\n    ``x`` has no ``__dlpack__``.\nBufferError\n    The "
                   "data is not in host memory, or can't be shared without a copy where "
                   "``copy=False``, or ``device`` is neither the host nor an OpenCL "
                   "device.\nTypeError\n    A data type hostarray does not hold.",
    "cross": "ValueError\n    The vectors along ``axis`` are not of size 3.",
    "matrix_rank": "ValueError\n    ``x`` has fewer than two dimensions.",
    "matrix_transpose": "ValueError\n    ``x`` has fewer than two dimensions.",
    "qr": "ValueError\n    ``mode`` is neither ``'reduced'`` nor ``'complete'``.",
    "meshgrid": "ValueError\n    ``indexing`` is neither ``'xy'`` nor ``'ij'``.",
    "nonzero": "ValueError\n    ``x`` is 0-d.",
    "result_type": "ValueError\n    No array or data type is given (only scalars, or none).",
    "searchsorted": "ValueError\n    ``side`` is neither ``'left'`` nor ``'right'``.",
    "set_device_compute_threshold": "TypeError\n    ``nbytes`` is not an integer or None "
                                    "(a bool is refused).\nValueError\n    ``nbytes`` is "
                                    "negative.",
    "show_config": "ValueError\n    ``mode`` is neither ``'stdout'`` nor ``'dicts'``.",
    "take": "ValueError\n    ``axis`` is ``None`` for an array of more than one dimension.",
    "unstack": "ValueError\n    ``x`` is 0-d.",
    # the creation functions' refusals
    **{name: "ValueError\n    A negative dimension in ``shape``.\nTypeError\n    A data type "
             "hostarray does not hold (strings, objects).\nInvalidDevice, UnknownFramework, "
             "DeviceUnavailable\n    ``device`` names no working device (see :func:`device`)."
       for name in ("empty", "zeros", "ones", "full")},
    "eye": "ValueError\n    A negative number of rows or columns.",
    "linspace": "ValueError\n    A negative ``num``.",
    "arange": "ZeroDivisionError\n    ``step`` is 0.",
    # numpy's own refusals, which the host path passes on unchanged
    "inv": "numpy.linalg.LinAlgError\n    ``x`` is singular, or its last two dimensions "
           "are not square.",
    "solve": "numpy.linalg.LinAlgError\n    ``x1`` is singular, or not square.\n"
             "ValueError\n    The shapes of ``x1`` and ``x2`` do not match.",
    "cholesky": "numpy.linalg.LinAlgError\n    ``x`` is not positive definite, or not "
                "square.",
    "det": "numpy.linalg.LinAlgError\n    The last two dimensions of ``x`` are not square.",
    "slogdet": "numpy.linalg.LinAlgError\n    The last two dimensions of ``x`` are not "
               "square.",
    "eigh": "numpy.linalg.LinAlgError\n    ``x`` is not square, or the computation does "
            "not converge.",
    "eigvalsh": "numpy.linalg.LinAlgError\n    ``x`` is not square, or the computation does "
                "not converge.",
    "svd": "numpy.linalg.LinAlgError\n    The computation does not converge.",
    "svdvals": "numpy.linalg.LinAlgError\n    The computation does not converge.",
    "pinv": "numpy.linalg.LinAlgError\n    The computation does not converge.",
    "matrix_power": "numpy.linalg.LinAlgError\n    A negative power of a singular matrix, "
                    "or ``x`` is not square.",
    "reshape": "ValueError\n    The new shape has another number of elements (or more than "
               "one -1), or ``copy=False`` where only a copy can have that shape.",
    "concat": "ValueError\n    The arrays' shapes differ other than along ``axis``.\n"
              "numpy.exceptions.AxisError\n    ``axis`` is out of bounds.",
    "stack": "ValueError\n    The arrays' shapes differ.",
    "matmul": "ValueError\n    The operands' inner dimensions do not match, or one is 0-d.",
    "tensordot": "ValueError\n    The contracted dimensions do not match.",
    "vecdot": "ValueError\n    The vectors along ``axis`` are of different lengths.",
    "squeeze": "ValueError\n    An axis in ``axis`` does not have length 1.",
    "max": "ValueError\n    ``x`` is empty (along ``axis``): a maximum has no identity.",
    "min": "ValueError\n    ``x`` is empty (along ``axis``): a minimum has no identity.",
    "argmax": "ValueError\n    ``x`` is empty (along ``axis``).",
    "argmin": "ValueError\n    ``x`` is empty (along ``axis``).",
    "broadcast_to": "ValueError\n    ``x``'s shape does not broadcast to ``shape``.",
    "broadcast_arrays": "ValueError\n    The shapes do not broadcast together.",
    "permute_dims": "ValueError\n    ``axes`` is not a permutation of the dimensions.",
    "flip": "numpy.exceptions.AxisError\n    An axis out of bounds.",
    "roll": "numpy.exceptions.AxisError\n    An axis out of bounds.",
    "moveaxis": "numpy.exceptions.AxisError\n    An axis out of bounds.",
    "tile": "ValueError\n    A negative repetition.",
    "repeat": "ValueError\n    A negative repetition.",
}

_DEFAULT_ARRAY_RETURN = f"{_ARRAY}\n    The result, on the operands' device."
_METHOD_RETURN = (f"{_ARRAY} or Python scalar\n    As numpy's method gives, with array "
                  f"results as HostPtrArrays on this array's device.")

# the element-wise functions whose results are booleans / real for complex input
_BOOL_RESULT = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                "isfinite", "isinf", "isnan", "signbit", "logical_and", "logical_or",
                "logical_xor", "logical_not"}
_REAL_RESULT = {"abs", "real", "imag"}
# the array's methods that are its own (the others are numpy's, and return as numpy's do)
_OWN_METHODS = {"to_device", "tolist", "item", "__array_namespace__"}
_LATER = ("Raises", "Warns", "See Also", "Notes", "References", "Examples")


def _sections(doc: str) -> set[str]:
    lines = doc.splitlines()
    return {ln.strip() for ln, under in zip(lines, lines[1:])
            if under.strip() and set(under.strip()) == {"-"}}


def _entries(items: Iterable[tuple[str, tuple[str, str]]]) -> str:
    out = []
    for name, (typ, text) in items:
        out.append(f"{name} : {typ}" if typ else name)
        out.append(f"    {text}")
    return "\n".join(out)


def _insert(doc: str, block: str) -> str:
    """``block`` (whole sections) put before the first of :data:`_LATER` in ``doc``."""
    lines = doc.splitlines()
    for i, (ln, under) in enumerate(zip(lines, lines[1:])):
        if ln.strip() in _LATER and under.strip() and set(under.strip()) == {"-"}:
            return "\n".join(lines[:i] + block.splitlines() + [""] + lines[i:])
    return doc.rstrip() + "\n\n" + block


def _parameters(func: Any, short: str) -> list[tuple[str, tuple[str, str]]] | None:
    """The Parameters entries of ``func`` (``None`` where a name has no description)."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    out: list[tuple[str, tuple[str, str]]] = []
    params = [p for p in sig.parameters.values() if p.name != "self"]
    kinds = {p.kind for p in params}
    if inspect.Parameter.VAR_POSITIONAL in kinds and inspect.Parameter.VAR_KEYWORD in kinds \
            and len(params) == 2:
        return [("*args, **kwargs", PARAMETERS["*args, **kwargs"])]
    for p in params:
        name = p.name
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            name = f"*{p.name}"
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            name = f"**{p.name}"
        entry = OVERRIDES.get((short, p.name)) or PARAMETERS.get(name) \
            or PARAMETERS.get(p.name)
        if entry is None:
            return None
        out.append((name, entry))
    return out


# -- the families of functions whose refusals are numpy's (the host path passes them on) -----
_R_AXIS = ("numpy.exceptions.AxisError\n    An axis out of range for ``x`` (an ``IndexError`` "
           "and a ``ValueError``).")
_R_TWICE = "ValueError\n    An axis given twice."
_R_NOT_ARRAY = ("TypeError\n    ``x`` is not a HostPtrArray (a list, say: make it one with "
                "``ha.asarray`` first).")
_R_DEVICE = ("InvalidDevice, UnknownFramework, DeviceUnavailable\n    ``device`` names no "
             "working device (see :func:`device`).")
_R_FFT_AXES = ("IndexError\n    An axis out of range for ``x``.\nValueError\n    ``s`` and "
               "``axes`` of different lengths, a size below 1, or ``norm`` not one of "
               "``'backward'``, ``'ortho'``, ``'forward'``.\n" + _R_NOT_ARRAY)
_R_FFT_AXIS = (_R_AXIS + "\nValueError\n    ``n`` below 1, or ``norm`` not one of "
               "``'backward'``, ``'ortho'``, ``'forward'``.\n" + _R_NOT_ARRAY)
_R_HOSTPTR = ("TypeError\n    ``x`` is not a HostPtrArray (wrap numpy memory with "
              "``ha.asarray`` or ``hostptr.of_numpy``).\n" + _R_DEVICE)
RAISES.update({
    **{name: f"{_R_AXIS}\n{_R_TWICE}\n{_R_NOT_ARRAY}"
       for name in ("all", "any", "sum", "prod", "mean", "std", "var", "count_nonzero")},
    **{name: f"{_R_AXIS}\n{_R_NOT_ARRAY}"
       for name in ("cumulative_sum", "cumulative_prod", "argsort", "sort", "diff")},
    "vector_norm": f"{_R_AXIS}\n{_R_TWICE}\n{_R_NOT_ARRAY}",
    "matrix_norm": ("numpy.exceptions.AxisError\n    ``x`` has fewer than two dimensions.\n"
                    "ValueError\n    ``ord`` is not a matrix norm order.\n" + _R_NOT_ARRAY),
    **{name: _R_FFT_AXIS for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")},
    **{name: _R_FFT_AXES for name in ("fftn", "ifftn", "rfftn", "irfftn")},
    **{name: ("ValueError\n    ``n`` is not an integer.\nZeroDivisionError\n    ``n`` or ``d`` "
              "is 0.\n" + _R_DEVICE) for name in ("fftfreq", "rfftfreq")},
    **{name: "IndexError\n    An axis out of range for ``x``.\n" + _R_NOT_ARRAY
       for name in ("fftshift", "ifftshift")},
    **{name: ("TypeError\n    ``x`` is not a HostPtrArray, or ``dtype`` is one hostarray does "
              "not hold (strings, objects).\n" + _R_DEVICE)
       for name in ("empty_like", "zeros_like", "ones_like")},
    "full_like": ("TypeError\n    ``x`` is not a HostPtrArray, or ``dtype`` is one hostarray "
                  "does not hold.\nValueError\n    ``fill_value`` does not convert to the data "
                  "type.\n" + _R_DEVICE),
    **{name: _R_NOT_ARRAY
       for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values")},
    "where": ("ValueError\n    ``condition``, ``x1`` and ``x2`` do not broadcast together.\n"
              "TypeError\n    ``condition`` is not a HostPtrArray."),
    "take_along_axis": ("ValueError\n    ``indices`` and ``x`` have different numbers of "
                        "dimensions.\nIndexError\n    An index out of range, or ``indices`` "
                        "not of an integer data type."),
    "isin": "TypeError\n    An operand of a data type hostarray does not hold.",
    "diagonal": "ValueError\n    ``x`` has fewer than two dimensions.",
    "trace": "ValueError\n    ``x`` has fewer than two dimensions.",
    "eig": "numpy.linalg.LinAlgError\n    The last two dimensions of ``x`` are not square, or "
           "the computation does not converge.",
    "eigvals": "numpy.linalg.LinAlgError\n    The last two dimensions of ``x`` are not square, "
               "or the computation does not converge.",
    "outer": "ValueError\n    ``x1`` or ``x2`` is not one-dimensional.",
    "broadcast_shapes": "ValueError\n    The shapes do not broadcast together.",
    "can_cast": "TypeError\n    ``from_`` or ``to`` is not a data type.",
    **{name: _R_HOSTPTR for name in ("free_buffer", "host_link", "publish_host_writes",
                                     "acquire_device_writes")},
    "cl_buffer": (_R_HOSTPTR + "\nInUse\n    In the block, a write to the array's bytes "
                  "from the host or from a launch on another device."),
    **{name: f"TypeError\n    ``x`` is not a HostPtrArray (``ha.{name}()`` marks an array)."
       for name in ("read", "write", "readwrite")},
    **{name: ("TypeError\n    ``x`` is not a HostPtrArray, or is 0-d (numpy's message; a "
              "1-D ``x`` is taken as numpy takes it).") for name in ("tril", "triu")},
})
# the array's methods of those names: ``self`` is an array, numpy's refusals remain
METHOD_RAISES: dict[str, str] = {
    **{name: f"{_R_AXIS}\n{_R_TWICE}"
       for name in ("all", "any", "sum", "prod", "mean", "std", "var")},
    **{name: _R_AXIS for name in ("cumsum", "cumprod", "argsort", "sort", "compress")},
    "swapaxes": _R_AXIS,
    "transpose": "ValueError\n    An axis given twice, or not every axis.",
    "diagonal": "ValueError\n    The array has fewer than two dimensions.",
    "trace": "ValueError\n    The array has fewer than two dimensions.",
    "dot": "ValueError\n    The shapes do not match as a product's must.",
    "clip": "TypeError\n    ``min`` or ``max`` of a type the array's data type does not take.",
    "fill": "ValueError\n    ``value`` does not convert to the array's data type.",
    "flatten": "ValueError\n    ``order`` is not one of ``'C'``, ``'F'``, ``'A'``, ``'K'``.",
    "ravel": "ValueError\n    ``order`` is not one of ``'C'``, ``'F'``, ``'A'``, ``'K'``.",
    "item": "ValueError\n    The array has more than one element (and no index is given).",
    "round": "TypeError\n    ``decimals`` is not an integer.",
    "view": ("ValueError\n    A data type whose size does not divide the last axis's bytes "
             "(numpy's rule)."),
}


def complete(func: Any, short: str, returns: str | None = None,
             parameters: list[tuple[str, tuple[str, str]]] | None = None,
             raises: str | None = None) -> None:
    """Give ``func``'s docstring the Parameters and Returns sections it lacks (from
    :data:`PARAMETERS`, :data:`OVERRIDES` and :data:`RETURNS`, or as given), before its
    Raises / Notes / Examples.  ``short``: the name the tables know it by.  A name with no
    description leaves the section out (the docstring test then names it)."""
    if func.__doc__ is None:  # python -OO: no docstrings to complete
        return
    doc = inspect.cleandoc(func.__doc__)
    have = _sections(doc)
    blocks = []
    if "Parameters" not in have:
        entries = parameters if parameters is not None else _parameters(func, short)
        if entries:
            blocks.append("Parameters\n----------\n" + _entries(entries))
    if "Returns" not in have and "Yields" not in have:
        ret = returns or RETURNS.get(short) or RETURNS.get(short.rpartition(".")[2])
        if ret is None:
            try:
                ann = inspect.signature(func).return_annotation
            except (TypeError, ValueError):
                ann = inspect.Signature.empty
            if ann in (_ARRAY, "HostPtrArray") or getattr(ann, "__name__", "") == _ARRAY:
                ret = _DEFAULT_ARRAY_RETURN
        if ret:
            blocks.append("Returns\n-------\n" + ret)
    raises = raises or RAISES.get(short.rpartition(".")[2])
    if "Raises" not in have and raises:
        blocks.append("Raises\n------\n" + raises)
    if blocks:
        try:
            func.__doc__ = _insert(doc, "\n\n".join(blocks))
        except (AttributeError, TypeError):  # a builtin's docstring can't be set
            pass


def _elementwise_sections(name: str, params: str) -> tuple[list[Any], str]:
    """The Parameters entries and the Returns entry of element-wise function ``name``,
    from its row of the table (its parameter list)."""
    if params.startswith("x1"):
        entries = [("x1", PARAMETERS["x1"]), ("x2", PARAMETERS["x2"])]
    else:
        entries = [("x", (_ARRAY, "The input array."))]
        if "min=" in params:
            entries += [("min", PARAMETERS["min"]), ("max", PARAMETERS["max"])]
    if name in _BOOL_RESULT:
        kind = "booleans"
    elif name in _REAL_RESULT:
        kind = "the real type of complex input, else the input's type"
    elif name == "clip":
        kind = "``x``'s data type"
    else:
        kind = "the data type numpy gives the same operation (the standard's promotion " \
               "within its table)"
    shape = "the broadcast shape" if params.startswith("x1") else "``x``'s shape"
    ret = (f"{_ARRAY}\n    The result element by element, in {shape}, of {kind}; on the "
           f"operands' device (computed by it where their newest bytes are there).")
    return entries, ret


def _elementwise_raises(params: str) -> str:
    """The Raises section of an element-wise function with parameter list ``params``."""
    if params.startswith("x1"):
        return ("TypeError\n    The operands' data types are not ones this function takes "
                "(numpy's message: for example a floating operand of a bitwise function, or a "
                "string), or an operand is of no kind it takes (a string beside a HostPtrArray; "
                "numpy arrays and Python scalars are taken).\nValueError\n"
                "    ``x1`` and ``x2`` do not broadcast together.")
    text = ("TypeError\n    ``x`` is neither an array (a HostPtrArray, or a numpy array, taken "
            "as one) nor a Python scalar (a list or a string, say), or its data type is not "
            "one this function takes (numpy's message: for example a floating array for "
            "``bitwise_invert``).")
    if "min=" in params:
        text += "\nValueError\n    ``min`` or ``max`` does not broadcast to ``x``'s shape."
    return text


def complete_namespace(namespace: Any) -> None:
    """Complete the docstrings of every public callable of the ``hostarray`` package that
    is loaded with it: the namespace (element-wise functions from their table rows),
    ``linalg``, ``fft``, ``hostptr``, ``errors`` and the array's methods."""
    from ._api import elementwise

    done: set[int] = set()
    for name, _, params, _, _ in elementwise.TABLE:
        entries, ret = _elementwise_sections(name, params)
        complete(getattr(namespace, name), name, ret, entries, _elementwise_raises(params))
        done.add(id(getattr(namespace, name)))
    for module, prefix in ((namespace, ""), (namespace.linalg, "linalg."),
                           (namespace.fft, ""), (namespace.hostptr, ""),
                           (namespace.errors, "")):
        for name in getattr(module, "__all__", ()):
            obj = vars(module).get(name)  # (not the kernels hostarray loads on first use)
            if obj is None or id(obj) in done or isinstance(obj, type) \
                    or not callable(obj):
                continue
            done.add(id(obj))
            own = prefix + name
            complete(obj, own if any(k[0] == own for k in OVERRIDES) else name)
    for cls in namespace.HostPtrArray.__mro__[:-1]:  # the array and its computing half
        for name, member in vars(cls).items():
            if name.startswith("_") and name != "__array_namespace__":
                continue
            if inspect.isfunction(member) and id(member) not in done:
                done.add(id(member))
                own = RETURNS.get(name) if name in _OWN_METHODS else None
                complete(member, name, own or _METHOD_RETURN,
                         raises=METHOD_RAISES.get(name))
