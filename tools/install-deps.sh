#!/bin/sh
# Installs what pxl needs to build, test and benchmark on Debian or Ubuntu.
# Runs apt-get directly as root, through sudo otherwise.
set -eu
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# build + run: compiler (also the JIT's), CMake, image libraries, cmocka, the OpenCL
# loader and PoCL (a CPU OpenCL device for the OpenCL tests), python3-opencv (the
# OpenCV oracle of tests/cli/opencv_test.py) (tools/deps.txt)
$SUDO apt-get install -y -qq --no-install-recommends $(cat "$(dirname "$0")/deps.txt") >/dev/null
# benchmarks' peers (optional: pass --no-bench to skip these large packages)
if [ "${1:-}" != "--no-bench" ]; then
  $SUDO apt-get install -y -qq --no-install-recommends libopencv-dev libhalide14-0-dev >/dev/null || \
    echo "install-deps: OpenCV/Halide not installed; benchmarks will be skipped" >&2
fi
echo "install-deps: done"
