"""The array API namespace, one module per section of the standard."""
