#!/bin/sh
# Builds pxl on a GPU machine that has no package registry, runs the CUDA and OpenCL
# tests and, with PXL_GPU_BENCH=1, the GPU benchmarks (bench/bench_cuda, needs NPP;
# bench/bench_backends cuda,opencl).
# Needs the Debian packages of libspng, libjpeg-turbo, cmocka, the OpenCL ICD loader and
# libtiff as .deb files in .dev/debs (apt-get download libspng0 libspng-dev libjpeg62-turbo
# libjpeg62-turbo-dev libjpeg-dev libcmocka0 libcmocka-dev ocl-icd-libopencl1 libtiff6
# libtiff-dev libwebp7 libwebp-dev libwebpmux3 libwebpdemux2 libzstd1 libzstd-dev liblzma5
# liblzma-dev libdeflate0 libdeflate-dev zlib1g-dev liblerc4 liblerc-dev libjbig0
# libjbig-dev: libtiff-4.pc requires the others' .pc files); the loader is pointed at
# NVIDIA's OpenCL library with an .icd file. Logs go to $OUT (or
# /tmp/pxl-gpu).
#   PXL_GPU_TESTS  ctest regex of the tests to run (default "cuda|opencl"; "none" for none)
#   PXL_GPU_JOBS   ctest jobs (default 8)
#   PXL_GPU_EXCLUDE  ctest regex of tests to leave out (default none)
#   PXL_SANITIZE   1: also run compute-sanitizer memcheck and racecheck over quick cases
#   BENCH_ARGS     arguments of bench_cuda
#   PXL_GPU_BENCH_BACKENDS  0: leave bench_backends out of the benchmarks (default 1)
#   PXL_GPU_GRAPH  1: run bench/graph_gpu.py (global operators vs OpenCV and NPP; needs a
#                  Python with cv2), with GRAPH_ARGS (e.g. --size 8192 --reps 10)
#   PXL_GPU_MODEL  1: run bench_model (the cost model against every example) on CUDA, with
#                  MODEL_ARGS (default --size 8192 --reps 5)
#   PXL_GPU_ALLOW_SKIP  1: a skipped test is not a failure (default: on a GPU machine every
#                  CUDA and OpenCL test must run; a skip means a device that was not found)
# Exits non-zero when the build, a test, a skip, a sanitizer run or a benchmark failed;
# each step's status is taken from the command itself, never through a pipe.
set -u
status=0
# fail WHAT: records a failure, printed at the end
fail() {
  echo "gpu-tests: FAILED: $1"
  failures="${failures:-}  $1
"
  status=1
}
OUT=${OUT:-/tmp/pxl-gpu}
export OUT
mkdir -p "$OUT" /tmp/deps
for f in .dev/debs/*.deb; do dpkg -x "$f" /tmp/deps; done
L=/tmp/deps/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=/tmp/deps LD_LIBRARY_PATH=$L:${LD_LIBRARY_PATH:-}
export PXL_CACHE_DIR=/tmp/pxl-cache
# the differential tests' whole matrix: every entry in every border mode (CI shares the
# modes out, tests/diff/diff_test.c entry_mode); PXL_TEST_FULL=0 for CI's share
export PXL_TEST_FULL=${PXL_TEST_FULL:-1}
mkdir -p /tmp/icd
for lib in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
  [ -e "$lib" ] && echo "$lib" > /tmp/icd/nvidia.icd && break
done
export OCL_ICD_VENDORS=/tmp/icd
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
# the oracles' Python: the first that has cv2, numpy, scipy, skimage and tifffile
oracle_py=/usr/bin/python3
for py in /usr/bin/python3 $(command -v python3) $(command -v python3.12) $(command -v python3.11); do
  if "$py" -c "import cv2, numpy, scipy, skimage, tifffile" 2>/dev/null; then oracle_py=$py; break; fi
done
echo "oracle python: $oracle_py" > "$OUT/oracle-python.txt"
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DPXL_BENCH=$([ "${PXL_GPU_BENCH:-0}${PXL_GPU_MODEL:-0}${PXL_GPU_GRAPH:-0}" = 000 ] && echo OFF || echo ON) \
  -DPXL_ORACLE_PYTHON="$oracle_py" \
  -DJPEG_INCLUDE_DIR=/tmp/deps/usr/include -DJPEG_LIBRARY=$L/libjpeg.so \
  -DCMAKE_C_FLAGS="-I/tmp/deps/usr/include/x86_64-linux-gnu" > "$OUT/build.log" 2>&1 &&
  cmake --build /tmp/b -j 16 >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
if [ "${PXL_GPU_TESTS:-cuda|opencl}" != none ]; then
  ctest --test-dir /tmp/b -R "${PXL_GPU_TESTS:-cuda|opencl}" ${PXL_GPU_EXCLUDE:+-E "$PXL_GPU_EXCLUDE"} -j "${PXL_GPU_JOBS:-8}" --no-tests=error --output-on-failure \
    > "$OUT/ctest.log" 2>&1
  rc=$?
  echo "ctest rc=$rc" >> "$OUT/ctest.log"
  grep -E "tests passed|rc=|FAIL|Skipped|Not Run" "$OUT/ctest.log" | head -60
  [ $rc -eq 0 ] || fail "ctest (rc=$rc)"
  if [ "${PXL_GPU_ALLOW_SKIP:-0}" != 1 ] && grep -q -E "\(Skipped\)|\*\*\*Skipped|Not Run" "$OUT/ctest.log"; then
    fail "tests were skipped on a GPU machine (no device found?)"
  fi
fi
if [ "${PXL_SANITIZE:-0}" = 1 ]; then
  # compute-sanitizer memcheck and racecheck over the quick differential cases with device
  # images (CUDA), 8 processes at a time
  S=/usr/local/cuda/bin/compute-sanitizer
  for tool in memcheck racecheck; do
    for f in examples/*.pxl tests/diff/semantics.pxl; do echo "$tool $f"; done
  done | xargs -P 8 -L 1 sh -c 'L="$OUT/san-$0-$(basename $1 .pxl).log";
    '"$S"' --tool $0 --error-exitcode 9 /tmp/b/tests/diff/diff_test cuda-resident --quick "$1" > "$L" 2>&1;
    echo "$0 $(basename $1): rc=$? $(grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|passed" "$L" | tr "\n" " ")"' > "$OUT/sanitizer.txt"
  sort "$OUT/sanitizer.txt"
  n=$(grep -c "" "$OUT/sanitizer.txt")
  [ "$n" -gt 0 ] || fail "compute-sanitizer ran nothing"
  ! grep -q -v ": rc=0 " "$OUT/sanitizer.txt" || fail "compute-sanitizer reported errors"
fi
if [ "${PXL_GPU_BENCH:-0}" = 1 ] && [ "${PXL_GPU_BENCH_BACKENDS:-1}" != 0 ]; then
  /tmp/b/bench/bench_backends --devices cuda,opencl --sizes 8192 --reps 5 > "$OUT/bench_backends.txt" 2>&1
  rc=$?
  echo "bench_backends rc=$rc"
  cat "$OUT/bench_backends.txt"
  [ $rc -eq 0 ] || fail "bench_backends (rc=$rc)"
fi
if [ "${PXL_GPU_MODEL:-0}" = 1 ]; then
  /tmp/b/bench/bench_model --device cuda ${MODEL_ARGS:---size 8192 --reps 5} > "$OUT/bench_model.txt" 2>&1
  rc=$?
  echo "bench_model rc=$rc"
  cat "$OUT/bench_model.txt"
  [ $rc -eq 0 ] || fail "bench_model (rc=$rc)"
fi
if [ "${PXL_GPU_BENCH:-0}" = 1 ]; then
  if [ -x /tmp/b/bench/bench_cuda ]; then
    /tmp/b/bench/bench_cuda ${BENCH_ARGS:-} > "$OUT/bench_cuda.txt" 2> "$OUT/bench_cuda.err"
    rc=$?
    echo "bench rc=$rc"
    cat "$OUT/bench_cuda.txt" "$OUT/bench_cuda.err"
    [ $rc -eq 0 ] || fail "bench_cuda (rc=$rc)"
  else
    echo "bench_cuda was not built:"; grep -i "bench_cuda" "$OUT/build.log"
    fail "bench_cuda was not built"
  fi
fi
if [ "${PXL_GPU_GRAPH:-0}" = 1 ]; then
  # the global operators' device passes against OpenCV on all cores and NPP (needs cv2)
  graph_py=
  for py in $oracle_py /opt/torch/.venv/bin/python3 $(command -v python3); do
    if "$py" -c "import cv2, numpy" 2>/dev/null; then graph_py=$py; break; fi
  done
  if [ -z "$graph_py" ]; then
    fail "graph benchmark: no Python with cv2 and numpy"
  else
    "$graph_py" bench/graph_gpu.py --bench /tmp/b/bench/bench_cuda ${GRAPH_ARGS:-} > "$OUT/bench_graph_gpu.txt" 2>&1
    rc=$?
    echo "graph_gpu rc=$rc"
    cat "$OUT/bench_graph_gpu.txt"
    [ $rc -eq 0 ] || fail "graph_gpu (rc=$rc)"
  fi
fi
if [ $status -ne 0 ]; then
  printf 'gpu-tests: failed:\n%s' "$failures"
else
  echo "gpu-tests: all passed"
fi
exit $status
