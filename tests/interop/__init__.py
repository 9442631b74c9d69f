"""Interop tests (a package, so that test modules share ``_scipy_calls``)."""
