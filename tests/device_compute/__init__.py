"""The device compute path: the namespace's functions run as OpenCL kernels."""
