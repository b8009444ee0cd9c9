#!/bin/sh
# Builds pxl on a GPU machine that has no package registry and runs the CUDA tests.
# Needs the Debian packages of libspng, libjpeg-turbo and cmocka as .deb files in
# .dev/debs (apt-get download libspng0 libspng-dev libjpeg62-turbo libjpeg62-turbo-dev
# libjpeg-dev libcmocka0 libcmocka-dev). Logs go to $OUT (or /tmp/pxl-gpu).
set -u
OUT=${OUT:-/tmp/pxl-gpu}
mkdir -p "$OUT" /tmp/deps
for f in .dev/debs/*.deb; do dpkg -x "$f" /tmp/deps; done
L=/tmp/deps/usr/lib/x86_64-linux-gnu
export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=/tmp/deps LD_LIBRARY_PATH=$L:${LD_LIBRARY_PATH:-}
export PXL_CACHE_DIR=/tmp/pxl-cache
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
cmake -S . -B /tmp/b -G Ninja -DCMAKE_BUILD_TYPE=Release -DPXL_BENCH=OFF \
  -DJPEG_INCLUDE_DIR=/tmp/deps/usr/include -DJPEG_LIBRARY=$L/libjpeg.so > "$OUT/build.log" 2>&1 &&
  cmake --build /tmp/b -j 16 >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
ctest --test-dir /tmp/b -R "${PXL_GPU_TESTS:-cuda}" -j 8 --output-on-failure > "$OUT/ctest.log" 2>&1
echo "ctest rc=$?" >> "$OUT/ctest.log"
tail -25 "$OUT/ctest.log"
