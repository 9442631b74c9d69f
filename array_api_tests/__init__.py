"""hostarray's own conformance suite for the array API standard 2025.12.

One module per section of the standard, hypothesis-driven, differential against
array_api_strict (the standard's reference) and numpy; the names and signatures the standard
specifies are in ``spec_signatures.py``, the IEEE special cases in ``test_special_cases.py``.

Run::

    python -m pytest array_api_tests                       # fast (CI) profile
    python -m pytest array_api_tests --thorough            # 10x the examples
    HOSTARRAY_THOROUGH=1 python -m pytest array_api_tests  # the same
    HOSTARRAY_LINK=copied python -m pytest array_api_tests -m device  # bytes really move
    HOSTARRAY_SUITE_DEVICE=opencl python -m pytest array_api_tests    # inputs on the device
    HOSTARRAY_LINK=copied HOSTARRAY_TEST_DEVICE_COMPUTE=1 python -m pytest array_api_tests

Tests that need the OpenCL device are marked ``device``; without one they skip, unless
``HOSTARRAY_REQUIRE_DEVICE=1``. With ``HOSTARRAY_SUITE_DEVICE`` every differential call puts its
inputs on that device and checks the results are there too. ``HOSTARRAY_TEST_DEVICE_COMPUTE=1``
(copied link only) tests the device compute path: every size runs on the device, and each input
of a differential call, an operator or a special case goes to the OpenCL device and is made
device-newest by a kernel first (``conftest.py``). The summary lists tests whose drawn inputs
array_api_strict mostly rejected (``HOSTARRAY_REJECT_SHARE``, default 0.5).
"""
