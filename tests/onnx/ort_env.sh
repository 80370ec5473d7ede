#!/bin/sh
# ort_env.sh BUILD_DIR — a virtual environment with ONNX Runtime under
# BUILD_DIR/onnx-venv, made once per build directory; prints its python.
# Exits 77 (skip) only when the package index cannot be reached, 1 when the
# install fails otherwise.
set -u
venv="$1/onnx-venv"
py="$venv/bin/python"
if [ -x "$py" ] && "$py" -c "import onnxruntime, numpy" 2>/dev/null; then
    echo "$py"
    exit 0
fi
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv" >&2 || { echo "ort_env: cannot make a venv (python3-venv)" >&2; exit 1; }
if "$venv/bin/pip" install -q --disable-pip-version-check onnxruntime numpy >&2; then
    echo "$py"
    exit 0
fi
if ! "$venv/bin/pip" download -q --no-deps -d "$venv/probe" --disable-pip-version-check pip >/dev/null 2>&1; then
    echo "ort_env: the package index cannot be reached; ONNX Runtime round trips skipped" >&2
    rm -rf "$venv"
    exit 77
fi
echo "ort_env: installing onnxruntime failed although the package index answers" >&2
rm -rf "$venv"
exit 1
