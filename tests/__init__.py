"""hostarray's tests, grouped by layer: coherence, array, kernels, device_compute, tooling,
reliability, interop (a package, so that ``tests.<layer>.<module>`` names are unique and
helpers import as ``tests._device_helpers``)."""
