#!/bin/sh
# Installs what tjit needs to build and test on Debian 12, only what is
# missing, without prompting. Run by `make demo`, `make test` and `make bench`.
set -e
# a GPU node or cluster machine without apt (and often without network) brings
# its own toolchain: the build is then configured with paths (docs/cuda.md)
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
    echo "tjit: no apt-get here; skipping the package check"
    exit 0
fi
# llvm-19-dev: the LLVM backend (backends/llvm/), pinned to LLVM 19 (bookworm main)
# g++: the CUDA backend's host execution harness compiles kernels as C++ (build-essential
# brings it too; named so that it stays)
# ONNX interchange (interchange/): protobuf-c and its compiler, ONNX's onnx.proto (libonnx-dev),
# ONNX's conformance data (libonnx-testdata), its checker (python3-onnx), and python3-venv
# for the ONNX Runtime that the round-trip test installs from PyPI into build/onnx-venv
# distributed/: Open MPI (libopenmpi-dev to build the MPI plugin, openmpi-bin for mpirun)
pkgs="build-essential g++ cmake ninja-build pkg-config libcmocka-dev libopenblas-openmp-dev llvm-19-dev"
pkgs="$pkgs libprotobuf-c-dev protobuf-c-compiler libonnx-dev libonnx-testdata python3-onnx python3-venv"
pkgs="$pkgs libopenmpi-dev openmpi-bin"
[ -n "$TJIT_EXTRA_PACKAGES" ] && pkgs="$pkgs $TJIT_EXTRA_PACKAGES"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "tjit: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
