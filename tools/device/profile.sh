#!/bin/sh
# Profiles pxl's CUDA kernels with Nsight Compute on a GPU machine: builds pxl the way
# gpu-tests.sh does (PXL_GPU_TESTS=none), makes an N x N image of random bytes
# (PXL_PROF_SIZE, default 8192) and runs each case of PXL_PROF_CASES through `pxl run
# --device cuda` under `ncu --set full`, one report per case in $OUT/ncu-CASE.txt.
# A case is NAME:FILE.pxl:ENTRY[:PARAMS], PARAMS as "r=15,t=40" (--param each); cases
# are separated by spaces. The tile shape is forced (PXL_CUDA_TILE_ROWS/BYTES, default
# 4 and 4) so that no autotuning launch is profiled.
set -u
OUT=${OUT:-/tmp/pxl-gpu}
PXL_GPU_TESTS=none sh tools/device/gpu-tests.sh || exit 1
export PXL_CACHE_DIR=/tmp/pxl-cache PXL_CUDA_TILE_ROWS=${PXL_CUDA_TILE_ROWS:-4} PXL_CUDA_TILE_BYTES=${PXL_CUDA_TILE_BYTES:-4}
L=/tmp/deps/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$L:${LD_LIBRARY_PATH:-}
n=${PXL_PROF_SIZE:-8192}
python3 -c "import numpy as np, cv2; cv2.imwrite('/tmp/prof.png', np.random.default_rng(1).integers(0, 256, ($n, $n), dtype=np.uint8))" || exit 1
for c in ${PXL_PROF_CASES:-boxr:examples/boxr.pxl:boxr:r=15}; do
  name=${c%%:*}; rest=${c#*:}; file=${rest%%:*}; rest=${rest#*:}; entry=${rest%%:*}; params=
  [ "$rest" != "$entry" ] && params=${rest#*:}
  set --
  for p in $(echo "$params" | tr ',' ' '); do set -- "$@" --param "$p"; done
  /usr/local/cuda/bin/ncu --set full -k regex:pxl --launch-count ${PXL_PROF_LAUNCHES:-12} \
    /tmp/b/pxl run "$file" "$entry" --in /tmp/prof.png --out "/tmp/prof-$name.tiff" --device cuda "$@" \
    > "$OUT/ncu-$name.txt" 2>&1
  echo "$name: rc=$?"
  grep -E "pxl_stage|Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|No Eligible" "$OUT/ncu-$name.txt" | head -40
done
