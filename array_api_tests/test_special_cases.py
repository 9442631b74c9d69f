"""The IEEE special cases of the elementwise functions, as each function's page of the
standard lists them ("Special Cases"), written as data: ``(inputs, expected)`` rows.

Values: Python floats, ``Z`` for a zero of either sign (where the spec leaves the sign open);
complex rows give the expected real and imaginary parts, with ``ANY_SIGN_INF`` / ``Z`` where
the spec says "sign unspecified". Each row runs for float32 and float64 (complex64 and
complex128), through the function and, for arithmetic, through the operator too.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import hostarray as ha

from .helpers import ha_fn, suite_input

INF = math.inf
NAN = math.nan
PI = math.pi


class _Token:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


Z = _Token("±0")  # zero, either sign
ANY_SIGN_INF = _Token("±inf")
NAN_SIGNED = _Token("-NaN")  # NaN with the sign bit set
NAN_UNSIGNED = _Token("+NaN")  # NaN with the sign bit clear


class OneOf:
    """Any of these results (the spec's "libraries may return ... to match Python")."""

    def __init__(self, *options: object) -> None:
        self.options = options

    def __repr__(self) -> str:
        return " or ".join(map(repr, self.options))

# -- one argument ----------------------------------------------------------------------------
_NAN_IN = [(NAN, NAN)]
UNARY_CASES: dict[str, list[tuple[float, object]]] = {
    "abs": _NAN_IN + [(-0.0, 0.0), (-INF, INF), (INF, INF), (-2.5, 2.5)],
    "acos": _NAN_IN + [(1.5, NAN), (-1.5, NAN), (1.0, 0.0), (INF, NAN)],
    "acosh": _NAN_IN + [(0.5, NAN), (1.0, 0.0), (INF, INF), (-INF, NAN)],
    "asin": _NAN_IN + [(1.5, NAN), (-1.5, NAN), (0.0, 0.0), (-0.0, -0.0)],
    "asinh": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF)],
    "atan": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, PI / 2), (-INF, -PI / 2)],
    "atanh": _NAN_IN + [(-1.5, NAN), (1.5, NAN), (-1.0, -INF), (1.0, INF), (0.0, 0.0),
                        (-0.0, -0.0)],
    "cos": _NAN_IN + [(0.0, 1.0), (-0.0, 1.0), (INF, NAN), (-INF, NAN)],
    "cosh": _NAN_IN + [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, INF)],
    "sin": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN)],
    "sinh": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -INF)],
    "tan": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, NAN), (-INF, NAN)],
    "tanh": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, 1.0), (-INF, -1.0)],
    "ceil": _NAN_IN + [(INF, INF), (-INF, -INF), (0.0, 0.0), (-0.0, -0.0), (-0.5, -0.0),
                       (1.5, 2.0)],
    "floor": _NAN_IN + [(INF, INF), (-INF, -INF), (0.0, 0.0), (-0.0, -0.0), (0.5, 0.0),
                        (-1.5, -2.0)],
    "trunc": _NAN_IN + [(INF, INF), (-INF, -INF), (0.0, 0.0), (-0.0, -0.0), (-0.5, -0.0),
                        (1.5, 1.0)],
    "round": _NAN_IN + [(INF, INF), (-INF, -INF), (0.0, 0.0), (-0.0, -0.0), (2.5, 2.0),
                        (3.5, 4.0), (-0.5, -0.0), (0.5, 0.0)],
    "exp": _NAN_IN + [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0)],
    "expm1": _NAN_IN + [(0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, -1.0)],
    "log": _NAN_IN + [(-1.0, NAN), (0.0, -INF), (-0.0, -INF), (1.0, 0.0), (INF, INF),
                      (-INF, NAN)],
    "log1p": _NAN_IN + [(-1.5, NAN), (-1.0, -INF), (-0.0, -0.0), (0.0, 0.0), (INF, INF)],
    "log2": _NAN_IN + [(-1.0, NAN), (0.0, -INF), (-0.0, -INF), (1.0, 0.0), (INF, INF)],
    "log10": _NAN_IN + [(-1.0, NAN), (0.0, -INF), (-0.0, -INF), (1.0, 0.0), (INF, INF)],
    "sqrt": _NAN_IN + [(-1.0, NAN), (0.0, 0.0), (-0.0, -0.0), (INF, INF), (-INF, NAN)],
    "sign": _NAN_IN + [(-2.0, -1.0), (0.0, Z), (-0.0, Z), (3.0, 1.0), (INF, 1.0),
                       (-INF, -1.0)],
    "reciprocal": _NAN_IN + [(0.0, INF), (-0.0, -INF), (INF, 0.0), (-INF, -0.0), (2.0, 0.5)],
    "square": _NAN_IN + [(-INF, INF), (-0.0, 0.0), (-3.0, 9.0)],
    "isfinite": [(NAN, False), (INF, False), (-INF, False), (0.0, True), (-1e30, True)],
    "isinf": [(NAN, False), (INF, True), (-INF, True), (0.0, False), (1e30, False)],
    "isnan": [(NAN, True), (INF, False), (-0.0, False), (1.0, False)],
    "signbit": [(0.0, False), (-0.0, True), (INF, False), (-INF, True), (NAN, False),
                (-NAN, True), (-1.0, True), (1.0, False)],
}

# -- two arguments -----------------------------------------------------------------------------
_NAN2 = [((NAN, 1.0), NAN), ((1.0, NAN), NAN), ((NAN, NAN), NAN)]
BINARY_CASES: dict[str, list[tuple[tuple[float, float], object]]] = {
    "add": _NAN2 + [((INF, -INF), NAN), ((-INF, INF), NAN), ((INF, INF), INF),
                    ((-INF, -INF), -INF), ((INF, 1.0), INF), ((-INF, 1.0), -INF),
                    ((1.0, INF), INF), ((1.0, -INF), -INF), ((-0.0, -0.0), -0.0),
                    ((-0.0, 0.0), 0.0), ((0.0, -0.0), 0.0), ((0.0, 0.0), 0.0),
                    ((0.0, 2.0), 2.0), ((-0.0, -2.0), -2.0), ((2.0, -0.0), 2.0),
                    ((2.0, -2.0), 0.0)],
    "subtract": _NAN2 + [((INF, INF), NAN), ((-INF, -INF), NAN), ((INF, -INF), INF),
                         ((-0.0, 0.0), -0.0), ((0.0, 0.0), 0.0), ((2.0, 2.0), 0.0)],
    "multiply": _NAN2 + [((INF, 0.0), NAN), ((-INF, -0.0), NAN), ((0.0, INF), NAN),
                         ((-0.0, -INF), NAN), ((INF, INF), INF), ((INF, -INF), -INF),
                         ((INF, 2.0), INF), ((INF, -2.0), -INF), ((-2.0, INF), -INF),
                         ((0.0, -1.0), -0.0), ((-0.0, -1.0), 0.0)],
    "divide": _NAN2 + [((INF, INF), NAN), ((-INF, INF), NAN), ((0.0, 0.0), NAN),
                       ((-0.0, 0.0), NAN), ((0.0, 2.0), 0.0), ((-0.0, 2.0), -0.0),
                       ((0.0, -2.0), -0.0), ((-0.0, -2.0), 0.0), ((2.0, 0.0), INF),
                       ((2.0, -0.0), -INF), ((-2.0, 0.0), -INF), ((-2.0, -0.0), INF),
                       ((INF, 2.0), INF), ((INF, -2.0), -INF), ((-INF, 2.0), -INF),
                       ((-INF, -2.0), INF), ((2.0, INF), 0.0), ((2.0, -INF), -0.0),
                       ((-2.0, INF), -0.0), ((-2.0, -INF), 0.0)],
    "floor_divide": _NAN2 + [((INF, INF), NAN), ((-INF, -INF), NAN), ((0.0, 0.0), NAN),
                             ((-0.0, -0.0), NAN), ((0.0, 2.0), 0.0), ((-0.0, 2.0), -0.0),
                             ((0.0, -2.0), -0.0), ((-0.0, -2.0), 0.0), ((2.0, 0.0), INF),
                             ((2.0, -0.0), -INF), ((-2.0, 0.0), -INF), ((-2.0, -0.0), INF),
                             ((INF, 2.0), OneOf(INF, NAN)), ((INF, -2.0), OneOf(-INF, NAN)),
                             ((-INF, 2.0), OneOf(-INF, NAN)), ((-INF, -2.0), OneOf(INF, NAN)),
                             ((2.0, INF), 0.0), ((2.0, -INF), OneOf(-0.0, -1.0)),
                             ((-2.0, INF), OneOf(-0.0, -1.0)), ((-2.0, -INF), 0.0),
                             ((7.0, 2.0), 3.0), ((-7.0, 2.0), -4.0), ((-7.0, -2.0), 3.0)],
    "remainder": _NAN2 + [((INF, INF), NAN), ((-INF, 2.0), NAN), ((0.0, 0.0), NAN),
                          ((-0.0, -0.0), NAN), ((0.0, 2.0), 0.0), ((-0.0, 2.0), 0.0),
                          ((0.0, -2.0), -0.0), ((-0.0, -2.0), -0.0), ((2.0, 0.0), NAN),
                          ((2.0, -0.0), NAN), ((-2.0, 0.0), NAN), ((INF, 2.0), NAN),
                          ((2.0, INF), 2.0), ((2.0, -INF), -INF), ((-2.0, INF), INF),
                          ((-2.0, -INF), -2.0), ((-7.0, 2.0), 1.0), ((7.0, -2.0), -1.0)],
    "pow": [((NAN, 0.0), 1.0), ((NAN, -0.0), 1.0), ((2.0, NAN), NAN), ((NAN, 1.0), NAN),
            ((1.0, 3.0), 1.0), ((2.0, INF), INF), ((-2.0, INF), INF), ((2.0, -INF), 0.0),
            ((1.0, INF), 1.0), ((-1.0, INF), 1.0), ((-1.0, -INF), 1.0), ((0.5, INF), 0.0),
            ((0.5, -INF), INF), ((INF, 2.0), INF), ((INF, -2.0), 0.0), ((-INF, 3.0), -INF),
            ((-INF, 2.0), INF), ((-INF, -3.0), -0.0), ((-INF, -2.0), 0.0), ((0.0, 2.0), 0.0),
            ((0.0, -2.0), INF), ((-0.0, 3.0), -0.0), ((-0.0, 2.0), 0.0),
            ((-0.0, -3.0), -INF), ((-0.0, -2.0), INF), ((-2.0, 0.5), NAN)],
    "atan2": _NAN2 + [((1.0, 0.0), PI / 2), ((1.0, -0.0), PI / 2), ((0.0, 1.0), 0.0),
                      ((0.0, 0.0), 0.0), ((0.0, -0.0), PI), ((0.0, -1.0), PI),
                      ((-0.0, 1.0), -0.0), ((-0.0, 0.0), -0.0), ((-0.0, -0.0), -PI),
                      ((-0.0, -1.0), -PI), ((-1.0, 0.0), -PI / 2), ((-1.0, -0.0), -PI / 2),
                      ((1.0, INF), 0.0), ((1.0, -INF), PI), ((-1.0, INF), -0.0),
                      ((-1.0, -INF), -PI), ((INF, 1.0), PI / 2), ((-INF, 1.0), -PI / 2),
                      ((INF, INF), PI / 4), ((INF, -INF), 3 * PI / 4),
                      ((-INF, INF), -PI / 4), ((-INF, -INF), -3 * PI / 4)],
    "hypot": [((INF, NAN), INF), ((NAN, -INF), INF), ((-INF, 1.0), INF), ((NAN, 1.0), NAN),
              ((1.0, NAN), NAN), ((0.0, -0.0), 0.0), ((-0.0, -0.0), 0.0), ((3.0, 4.0), 5.0),
              ((-0.0, -3.0), 3.0), ((-2.5, 0.0), 2.5), ((NAN, NAN), NAN)],
    "copysign": [((1.0, -0.0), -1.0), ((-1.0, 0.0), 1.0), ((INF, -1.0), -INF),
                 ((-0.0, 1.0), 0.0), ((0.0, -2.0), -0.0), ((2.0, NAN), 2.0),
                 ((2.0, -NAN), -2.0), ((-INF, INF), INF), ((NAN, -1.0), NAN_SIGNED),
                 ((NAN, -0.0), NAN_SIGNED), ((NAN, 0.0), NAN_UNSIGNED),
                 ((NAN, 1.0), NAN_UNSIGNED), ((-NAN, NAN), NAN_UNSIGNED),
                 ((NAN, -NAN), NAN_SIGNED)],
    "equal": [((NAN, NAN), False), ((NAN, 1.0), False), ((INF, INF), True),
              ((-INF, -INF), True), ((-0.0, 0.0), True), ((0.0, -0.0), True),
              ((INF, -INF), False), ((1.0, 1.0), True)],
    "not_equal": [((NAN, NAN), True), ((1.0, NAN), True), ((INF, -INF), True),
                  ((-INF, INF), True), ((-0.0, 0.0), False), ((INF, INF), False),
                  ((1.0, 2.0), True)],
    "less": [((NAN, 1.0), False), ((-0.0, 0.0), False), ((-INF, INF), True)],
    "greater_equal": [((NAN, NAN), False), ((-0.0, 0.0), True), ((INF, INF), True)],
    "maximum": _NAN2 + [((1.0, 2.0), 2.0), ((-INF, 1.0), 1.0)],
    "minimum": _NAN2 + [((1.0, 2.0), 1.0), ((INF, 1.0), 1.0)],
    "nextafter": _NAN2 + [((1.0, 1.0), 1.0), ((-0.0, 0.0), 0.0), ((0.0, -0.0), -0.0)],
    "logaddexp": _NAN2 + [((INF, 1.0), INF), ((1.0, INF), INF), ((INF, -INF), INF),
                          ((-INF, -INF), -INF)],
}

OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
             "divide": operator.truediv, "floor_divide": operator.floordiv,
             "remainder": operator.mod, "pow": operator.pow}
INPLACE_OPERATORS = {"add": operator.iadd, "subtract": operator.isub,
                     "multiply": operator.imul, "divide": operator.itruediv,
                     "floor_divide": operator.ifloordiv, "remainder": operator.imod,
                     "pow": operator.ipow}

# -- complex -----------------------------------------------------------------------------------
CN = complex(NAN, NAN)
COMPLEX_CASES: dict[str, list[tuple[complex, tuple[object, object]]]] = {
    "sqrt": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(-0.0, 0.0), (0.0, 0.0)),
             (complex(1.0, INF), (INF, INF)), (complex(NAN, INF), (INF, INF)),
             (complex(1.0, NAN), (NAN, NAN)), (complex(-INF, 1.0), (0.0, INF)),
             (complex(INF, 1.0), (INF, 0.0)), (complex(-INF, NAN), (NAN, ANY_SIGN_INF)),
             (complex(INF, NAN), (INF, NAN)), (complex(NAN, 1.0), (NAN, NAN)),
             (CN, (NAN, NAN)), (complex(-4.0, 0.0), (0.0, 2.0))],
    "exp": [(complex(0.0, 0.0), (1.0, 0.0)), (complex(-0.0, 0.0), (1.0, 0.0)),
            (complex(1.0, INF), (NAN, NAN)), (complex(1.0, NAN), (NAN, NAN)),
            (complex(INF, 0.0), (INF, 0.0)), (complex(-INF, 0.0), (0.0, 0.0)),
            (complex(-INF, INF), (Z, Z)), (complex(INF, INF), (ANY_SIGN_INF, NAN)),
            (complex(-INF, NAN), (Z, Z)), (complex(INF, NAN), (ANY_SIGN_INF, NAN)),
            (complex(NAN, 0.0), (NAN, 0.0)), (complex(NAN, 1.0), (NAN, NAN)), (CN, (NAN, NAN))],
    "expm1": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(-0.0, 0.0), (Z, 0.0)),
              (complex(1.0, INF), (NAN, NAN)), (complex(1.0, NAN), (NAN, NAN)),
              (complex(INF, 0.0), (INF, 0.0)), (complex(-INF, 1.0), (-1.0, Z)),
              (complex(-INF, INF), (-1.0, Z)), (complex(INF, INF), (ANY_SIGN_INF, NAN)),
              (complex(-INF, NAN), (-1.0, Z)), (complex(INF, NAN), (ANY_SIGN_INF, NAN)),
              (complex(NAN, 0.0), (NAN, 0.0)), (complex(NAN, 1.0), (NAN, NAN)),
              (CN, (NAN, NAN))],
    "sign": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(-0.0, -0.0), (Z, Z)),
             (complex(NAN, 1.0), (NAN, NAN)), (complex(1.0, NAN), (NAN, NAN)),
             (complex(3.0, 4.0), (0.6, 0.8)), (complex(0.0, -2.0), (Z, -1.0))],
    "log": [(complex(-0.0, 0.0), (-INF, PI)), (complex(0.0, 0.0), (-INF, 0.0)),
            (complex(1.0, INF), (INF, PI / 2)), (complex(1.0, NAN), (NAN, NAN)),
            (complex(-INF, 1.0), (INF, PI)), (complex(INF, 1.0), (INF, 0.0)),
            (complex(NAN, INF), (INF, NAN)), (CN, (NAN, NAN))],
    "tanh": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(INF, 1.0), (1.0, 0.0)),
             (complex(INF, NAN), (1.0, Z)), (complex(NAN, 0.0), (NAN, 0.0)),
             (CN, (NAN, NAN)), (complex(1.0, INF), (NAN, NAN)), (complex(1.0, NAN), (NAN, NAN)),
             (complex(INF, INF), (1.0, Z)), (complex(NAN, 1.0), (NAN, NAN)),
             # the spec's warning: +0 + NaN j, or NaN + NaN j from older C libraries
             (complex(0.0, INF), (OneOf(0.0, NAN), NAN)),
             (complex(0.0, NAN), (OneOf(0.0, NAN), NAN))],
    "cosh": [(complex(0.0, 0.0), (1.0, 0.0)), (complex(0.0, INF), (NAN, Z)),
             (complex(0.0, NAN), (NAN, Z)), (complex(1.0, INF), (NAN, NAN)),
             (complex(1.0, NAN), (NAN, NAN)), (complex(INF, 0.0), (INF, 0.0)),
             (complex(INF, 1.0), (INF, INF)), (complex(INF, INF), (ANY_SIGN_INF, NAN)),
             (complex(INF, NAN), (INF, NAN)), (complex(NAN, 0.0), (NAN, Z)),
             (complex(NAN, 1.0), (NAN, NAN)), (CN, (NAN, NAN))],
    "sinh": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(0.0, INF), (Z, NAN)),
             (complex(0.0, NAN), (Z, NAN)), (complex(1.0, INF), (NAN, NAN)),
             (complex(1.0, NAN), (NAN, NAN)), (complex(INF, 0.0), (INF, 0.0)),
             (complex(INF, 1.0), (INF, INF)), (complex(INF, INF), (ANY_SIGN_INF, NAN)),
             (complex(INF, NAN), (ANY_SIGN_INF, NAN)), (complex(NAN, 0.0), (NAN, 0.0)),
             (complex(NAN, 1.0), (NAN, NAN)), (CN, (NAN, NAN))],
    "log1p": [(complex(-1.0, 0.0), (-INF, 0.0)), (complex(1.0, INF), (INF, PI / 2)),
              (complex(1.0, NAN), (NAN, NAN)), (complex(-INF, 1.0), (INF, PI)),
              (complex(INF, 1.0), (INF, 0.0)), (complex(-INF, INF), (INF, 3 * PI / 4)),
              (complex(INF, INF), (INF, PI / 4)), (complex(INF, NAN), (INF, NAN)),
              (complex(-INF, NAN), (INF, NAN)), (complex(NAN, 1.0), (NAN, NAN)),
              (complex(NAN, INF), (INF, NAN)), (CN, (NAN, NAN))],
    "acosh": [(complex(0.0, 0.0), (0.0, PI / 2)), (complex(-0.0, 0.0), (0.0, PI / 2)),
              (complex(1.0, INF), (INF, PI / 2)), (complex(1.0, NAN), (NAN, NAN)),
              (complex(-INF, 1.0), (INF, PI)), (complex(INF, 1.0), (INF, 0.0)),
              (complex(-INF, INF), (INF, 3 * PI / 4)), (complex(INF, INF), (INF, PI / 4)),
              (complex(INF, NAN), (INF, NAN)), (complex(-INF, NAN), (INF, NAN)),
              (complex(NAN, 1.0), (NAN, NAN)), (complex(NAN, INF), (INF, NAN)),
              (CN, (NAN, NAN))],
    "asinh": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(1.0, INF), (INF, PI / 2)),
              (complex(1.0, NAN), (NAN, NAN)), (complex(INF, 1.0), (INF, 0.0)),
              (complex(INF, INF), (INF, PI / 4)), (complex(NAN, 0.0), (NAN, 0.0)),
              (complex(NAN, 1.0), (NAN, NAN)), (complex(NAN, INF), (ANY_SIGN_INF, NAN)),
              (CN, (NAN, NAN))],
    "atanh": [(complex(0.0, 0.0), (0.0, 0.0)), (complex(0.0, NAN), (0.0, NAN)),
              (complex(1.0, 0.0), (INF, 0.0)), (complex(1.0, INF), (0.0, PI / 2)),
              (complex(1.0, NAN), (NAN, NAN)), (complex(INF, 1.0), (0.0, PI / 2)),
              (complex(INF, INF), (0.0, PI / 2)), (complex(INF, NAN), (0.0, NAN)),
              (complex(NAN, 1.0), (NAN, NAN)), (complex(NAN, INF), (Z, PI / 2)),
              (CN, (NAN, NAN))],
    "acos": [(complex(0.0, 0.0), (PI / 2, -0.0)), (complex(-0.0, 0.0), (PI / 2, -0.0)),
             (complex(0.0, NAN), (PI / 2, NAN)), (complex(1.0, INF), (PI / 2, -INF)),
             (complex(1.0, NAN), (NAN, NAN)), (complex(-INF, 1.0), (PI, -INF)),
             (complex(INF, 1.0), (0.0, -INF)), (complex(-INF, INF), (3 * PI / 4, -INF)),
             (complex(INF, INF), (PI / 4, -INF)), (complex(INF, NAN), (NAN, ANY_SIGN_INF)),
             (complex(NAN, 1.0), (NAN, NAN)), (complex(NAN, INF), (NAN, -INF)),
             (CN, (NAN, NAN))],
    "abs": [(complex(INF, NAN), INF), (complex(NAN, -INF), INF), (complex(-0.0, -3.0), 3.0),
            (complex(4.0, 0.0), 4.0), (complex(NAN, 1.0), NAN), (complex(1.0, NAN), NAN),
            (CN, NAN), (complex(3.0, 4.0), 5.0)],
    "isnan": [(complex(NAN, 0.0), True), (complex(0.0, NAN), True), (complex(INF, 0.0), False)],
    "isinf": [(complex(INF, NAN), True), (complex(NAN, -INF), True), (complex(NAN, 0.0), False),
              (complex(1.0, 2.0), False)],
    "isfinite": [(complex(NAN, 0.0), False), (complex(0.0, INF), False),
                 (complex(1.0, -2.0), True)],
    "round": [(complex(2.5, -0.5), (2.0, -0.0)), (complex(NAN, 1.5), (NAN, 2.0)),
              (complex(INF, -INF), (INF, -INF))],
}


# -- checking ----------------------------------------------------------------------------------
def check_real(got: float, want: object, dt: np.dtype, what: str) -> None:
    if isinstance(want, OneOf):
        errors = []
        for option in want.options:
            try:
                check_real(got, option, dt, what)
                return
            except AssertionError as e:
                errors.append(str(e))
        raise AssertionError(f"{what}: {got!r}, expected {want!r}")
    if want is NAN_SIGNED or want is NAN_UNSIGNED:
        assert math.isnan(got), f"{what}: {got!r}, expected NaN"
        assert math.copysign(1, got) == (-1 if want is NAN_SIGNED else 1), \
            f"{what}: NaN sign bit {math.copysign(1, got) < 0}, expected {want!r}"
        return
    if isinstance(want, bool):
        assert bool(got) is want, f"{what}: {got!r}, expected {want}"
        return
    if want is Z:
        assert got == 0, f"{what}: {got!r}, expected a zero"
        return
    if want is ANY_SIGN_INF:
        assert math.isinf(got), f"{what}: {got!r}, expected an infinity"
        return
    assert isinstance(want, float)
    if math.isnan(want):
        assert math.isnan(got), f"{what}: {got!r}, expected NaN"
    elif math.isinf(want) or want == 0:
        assert got == want and math.copysign(1, got) == math.copysign(1, want), \
            f"{what}: {got!r}, expected {want!r}"
    else:
        rtol = 4 * float(np.finfo(dt).eps)
        assert math.isclose(got, want, rel_tol=rtol), f"{what}: {got!r}, expected {want!r}"


def _scalar_result(r: ha.HostPtrArray) -> np.ndarray:
    assert isinstance(r, ha.HostPtrArray), type(r)
    assert r.shape == (1,)
    return np.asarray(r)[0]


def _ids(cases: dict) -> list:
    return [pytest.param(name, args, want, id=f"{name}{args!r}->{want!r}")
            for name, rows in cases.items() for args, want in rows]


@pytest.mark.parametrize("name,x,want", _ids(UNARY_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_unary_special_case(name: str, x: float, want: object, dtype: str) -> None:
    f = ha_fn(name)
    with np.errstate(all="ignore"):
        r = f(suite_input(np.array([x], dtype=dtype)))
    assert r.dtype == (np.dtype(bool) if isinstance(want, bool) else np.dtype(dtype))
    check_real(float(_scalar_result(r)), want, np.dtype(dtype), f"{name}({x!r}) [{dtype}]")


@pytest.mark.parametrize("name,args,want", _ids(BINARY_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_special_case(name: str, args: tuple[float, float], want: object,
                             dtype: str) -> None:
    f = ha_fn(name)
    # np.array keeps a NaN's sign bit (copysign cases)
    x1, x2 = (suite_input(np.array([v], dtype=dtype)) for v in args)
    with np.errstate(all="ignore"):
        r = f(x1, x2)
    assert r.dtype == (np.dtype(bool) if isinstance(want, bool) else np.dtype(dtype))
    check_real(float(_scalar_result(r)), want, np.dtype(dtype), f"{name}{args!r} [{dtype}]")


@pytest.mark.parametrize("name,args,want",
                         [p for p in _ids(BINARY_CASES) if p.values[0] in OPERATORS])
def test_operator_special_case(name: str, args: tuple[float, float], want: object) -> None:
    # the operators follow their functions' special cases (array object page)
    x1, x2 = (suite_input(np.array([v])) for v in args)
    with np.errstate(all="ignore"):
        r = OPERATORS[name](x1, x2)
    check_real(float(_scalar_result(r)), want, np.dtype("float64"), f"{name} operator{args!r}")
    with np.errstate(all="ignore"):
        y = INPLACE_OPERATORS[name](x1, x2)  # the in-place form, on x1's own memory
    assert y is x1
    check_real(float(_scalar_result(x1)), want, np.dtype("float64"),
               f"{name} in-place operator{args!r}")


@pytest.mark.parametrize("name,z,want", _ids(COMPLEX_CASES))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_special_case(name: str, z: complex, want: tuple, dtype: str) -> None:
    f = ha_fn(name)
    with np.errstate(all="ignore"):
        r = f(suite_input(np.array([z], dtype=dtype)))
    real_dt = np.dtype(f"float{np.dtype(dtype).itemsize * 4}")
    if not isinstance(want, tuple):  # a real or boolean result (abs, isnan, ...)
        assert r.dtype == (np.dtype(bool) if isinstance(want, bool) else real_dt)
        check_real(float(_scalar_result(r)), want, real_dt, f"{name}({z!r}) [{dtype}]")
        return
    assert r.dtype == np.dtype(dtype)
    got = complex(_scalar_result(r))
    check_real(got.real, want[0], real_dt, f"{name}({z!r}).real [{dtype}]")
    check_real(got.imag, want[1], real_dt, f"{name}({z!r}).imag [{dtype}]")


@pytest.mark.parametrize("x,lo,hi", [(NAN, 0.0, 1.0), (0.5, NAN, 1.0), (0.5, 0.0, NAN),
                                     (-INF, -1.0, 1.0), (INF, None, 2.0)])
def test_clip_special_cases(x, lo, hi) -> None:
    # 2024.12: NaN in x, min or max gives NaN
    clip = ha_fn("clip")
    r = float(clip(suite_input(np.array([x])), min=lo, max=hi)[0])
    if any(v is not None and math.isnan(v) for v in (x, lo, hi)):
        assert math.isnan(r)
    else:
        assert r == min(max(x, -math.inf if lo is None else lo), math.inf if hi is None else hi)
