"""Kernels: programs, launch checks and the ``hostptr`` API."""
