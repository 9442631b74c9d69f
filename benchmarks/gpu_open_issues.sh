#!/usr/bin/env bash
# The H200 figures the open issues ask for, in one call per part (each fits the device tool's
# 10-minute command limit). Set up the machine as docs/gpu.md ("Running on a GPU") says
# (pyopencl wheels, NVIDIA's ICD file, PYTHONPATH=$PWD), then, from the repository root:
#
#   bash benchmarks/gpu_open_issues.sh pipeline   # issue 22: numpy spelling vs namespace vs CuPy
#   bash benchmarks/gpu_open_issues.sh fusion     # issue 23: node/launch host cost, fused chains
#   bash benchmarks/gpu_open_issues.sh born       # issue 23: device-born results, pool at 1 GiB
#   bash benchmarks/gpu_open_issues.sh matmul     # issue 23: tuned matmul vs cuBLAS (tunes first)
#   bash benchmarks/gpu_open_issues.sh compute    # issue 23: the namespace workloads vs CuPy
#
# Results go under $OUT (default gpu_out/) as one tarball per part (the device tool brings
# back at most 8 files).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:?"which part: pipeline, fusion, born, matmul or compute"}
OUT=${OUT:-gpu_out}
dir=$OUT/$part
mkdir -p "$dir"
case $part in
  pipeline) python3 benchmarks/bench_pipeline.py --sizes 1MiB,16MiB,64MiB,256MiB,1GiB --repeat 5 \
              --out "$dir" ;;
  fusion)   python3 benchmarks/bench_fusion.py --sizes 1MiB,16MiB,64MiB,256MiB,1GiB --repeat 7 \
              --json "$dir/fusion.json" --profile ;;
  born)     python3 benchmarks/bench_device_born.py --max-size 1GiB --json "$dir/device_born.json" ;;
  matmul)   python3 benchmarks/bench_matmul.py --sizes 1024,2048,4096 --max-seconds 60 --repeat 10 \
              --out "$dir" ;;
  compute)  python3 benchmarks/bench_compute.py --max-size 1GiB --out "$dir" ;;
  *) echo "unknown part $part: pipeline, fusion, born, matmul or compute" >&2; exit 2 ;;
esac 2>&1 | tee "$dir/log.txt"
tar czf "$OUT/$part.tgz" -C "$OUT" "$part" && rm -rf "$dir"
