"""The array API namespace, one module per section of the standard.

:data:`DEVIATIONS` lists, per name, where hostarray knowingly differs from the
2025.12 standard or fixes a choice the standard leaves open (the docs' coverage
table shows it).  Everywhere, numpy arrays and Python scalars are accepted where
the standard asks for arrays (the result is then on the host).
"""

_VIEW = ("Returns a view that shares memory with ``x`` (the standard leaves this open): "
         "a write through either is seen through both.")

DEVIATIONS: dict[str, str] = {
    "floor_divide": (
        "With an infinite operand the result is ``floor(x1 / x2)``, the standard's "
        "preferred rule (``inf // 2`` is ``inf``, ``1 // -inf`` is ``-0``), where numpy "
        "follows Python (``nan``, ``-1``)."),
    "remainder": "Follows numpy (Python's sign rules), which the standard allows.",
    "sign": (
        "Complex ``x / |x|`` is computed scaled by the larger component, so subnormal and "
        "huge inputs give the exact unit result (numpy loses them); an infinite component "
        "gives ``NaN + NaN j``."),
    "can_cast": (
        "Across kinds (left to the implementation) ``True`` exactly where hostarray's "
        "own promotion gives ``to`` (numpy's safe casting): ``bool`` to any numeric type, "
        "``int16`` to ``float32``, ``int32``, ``int64`` and ``uint64`` to ``float64`` and "
        "``complex128`` (``int64`` to ``float64`` rounds beyond 2**53, as ``int64 + "
        "float64`` does); ``int32`` to ``float32`` is ``False``."),
    "result_type": "Mixed kinds (integer with floating), unspecified by the standard, "
                   "give numpy's answer.",
    "astype": (
        "Complex to real raises ``TypeError`` (take ``real`` or ``abs`` first); complex to "
        "``bool`` follows the standard (``0 + 0j`` is ``False``). Any numpy bool or numeric "
        "data type is accepted as a target (e.g. ``float16``)."),
    "reciprocal": "Integer input gives numpy's integer result (``1 // x``: ``0`` for "
                  "``|x| > 1``); the standard asks for floating input.",
    "unique_values": "Values come out sorted ascending (the standard leaves the order "
                     "open); each NaN is a distinct value.",
    "unique_all": "Values sorted ascending; each NaN is distinct.",
    "unique_counts": "Values sorted ascending; each NaN is distinct.",
    "unique_inverse": "Values sorted ascending; each NaN is distinct.",
    "clip": "The result keeps ``x``'s data type also when ``min``/``max`` arrays have "
            "another (unspecified by the standard).",
    "mean": "Integer input gives ``float64`` (numpy); the standard asks for floating input.",
    "std": "Integer input gives ``float64`` (numpy); the standard asks for floating input.",
    "var": "Integer input gives ``float64`` (numpy); the standard asks for floating input.",
    "repeat": "``repeats`` may be ``uint64`` (cast to ``int64``; numpy refuses it).",
    "reshape": _VIEW + " ``copy=False`` raises ``ValueError`` where a view is impossible.",
    "permute_dims": _VIEW,
    "expand_dims": _VIEW,
    "squeeze": _VIEW,
    "flip": _VIEW,
    "moveaxis": _VIEW,
    "broadcast_to": _VIEW + " The view is read-only.",
    "broadcast_arrays": _VIEW + " The views are read-only.",
    "unstack": _VIEW,
    "matrix_transpose": _VIEW,
    "linalg.matrix_transpose": _VIEW,
    "diff": ("Signature exactly as specified (``n`` and ``axis`` keyword-only): "
             "``diff(x, 2)``, as scikit-learn's ``roc_curve`` calls it, raises ``TypeError``."),
    "HostPtrArray.__setitem__": (
        "Values are cast as numpy casts them where the standard leaves non-promotable "
        "values unspecified (e.g. a float into an integer array)."),
    "HostPtrArray.__getitem__": (
        "Accepts every key numpy accepts; basic indexing returns a view, a full integer "
        "index the element's 0-D view."),
    "HostPtrArray.__bool__": "Any size-1 array converts (numpy), not only 0-D ones.",
    "HostPtrArray.__rshift__": "The result's data type follows type promotion (as "
                               "``bitwise_right_shift``), not always ``self``'s.",
    "HostPtrArray.__lshift__": "The result's data type follows type promotion (as "
                               "``bitwise_left_shift``), not always ``self``'s.",
}
for _name in ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_norm",
              "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
              "vector_norm"):
    DEVIATIONS[f"linalg.{_name}"] = ("Integer and bool input is computed in ``float64`` (the "
                                     "standard asks for floating input).")
for _name in ("fft", "ifft", "fftn", "ifftn"):
    DEVIATIONS[f"fft.{_name}"] = ("Real input is accepted and transformed as complex of the "
                                  "same precision (the standard asks for complex input).")
del _name
