#!/bin/sh
# Builds pxl twice - a release build and an ASan+UBSan build - and runs the whole test
# suite (ctest) in each. Exit status: non-zero if anything fails.
#   --full  the differential tests' whole matrix: every entry in every border mode
#           (PXL_TEST_FULL=1; by default each entry takes two of the six modes, one on
#           OpenCL device images, and the files' entries share all six out, so that CI's
#           2 cores finish well inside 20 minutes; tools/device/gpu-tests.sh always runs
#           the whole matrix), and the oracles on OpenCL too (-DPXL_TEST_FULL=ON)
set -eu
cd "$(dirname "$0")/.."
full=OFF
case "${1:-}" in
--full) export PXL_TEST_FULL=1 full=ON ;;
"") ;;
*) echo "usage: tools/test.sh [--full]" >&2; exit 2 ;;
esac
JOBS=$(nproc 2>/dev/null || echo 2)
# compiled kernels are cached here, shared by both builds (the key is the generated code)
export PXL_CACHE_DIR="${PXL_CACHE_DIR:-$PWD/build/pxl-cache}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPXL_TEST_FULL=$full >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j "$JOBS"
# tests that cannot run here (no GPU) say why; show it
grep -h "^skipped:" build/Testing/Temporary/LastTest.log | sort | uniq -c || true
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPXL_SANITIZE=ON -DPXL_BENCH=OFF >/dev/null
cmake --build build-asan
# (the OpenCL differential tests ran in the release suite: under the sanitizers they would
# only compile the same kernels with PoCL again; opencl_runtime still runs here. The
# oracle tests compare results with OpenCV, SciPy and scikit-image, which the release
# suite did; the examples' code paths run here under the sanitizers in diff_cpu_* and
# the api tests, on smaller inputs. The photo-like inputs look for races and lost
# updates on devices, which the release suite did; here the same code runs on random
# inputs. diff_cpu_boxwin is left to the release suite too: under the sanitizers its
# interpreter reference, 961 reads per pixel, took three minutes; the generator's
# sliding-window code runs here in diff_cpu_boxr and diff_cpu_boxsum. Fusion: the
# interpreter on the examples' fused kernels (diff_ref_fused, 92 s here) and the random
# pipelines of seeds 3 to 6 are the release suite's; seeds 1 and 2 run fuse.c's code
# paths here. cuda_steps_emulated runs generated CUDA compiled apart from the build, on a
# thread per CUDA thread: its generator runs here in cuda_nvrtc. python_module loads the
# extension into Debian's uninstrumented python3, where an ASan library cannot load; the
# C API it calls runs here in the api tests)
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 PXL_TEST_QUICK=1 \
  ctest --test-dir build-asan --output-on-failure -j "$JOBS" \
  -E "^diff_opencl|^oracle_|^diff_cpu_photo_|^diff_cpu_boxwin$|^diff_ref_fused$|_fuse(d)?_random_[3-6]$|^cuda_steps_emulated$|^python_module$"
grep -h "^skipped:" build-asan/Testing/Temporary/LastTest.log | sort | uniq -c || true
echo "test.sh: release and sanitizer suites passed"
