#!/bin/sh
# install-torch-venv.sh BUILD_DIR — a current PyTorch 2.x from PyPI in
# BUILD_DIR/torch-venv for `make bench` (never for `make test`), made once and
# then only checked. It writes BUILD_DIR/torch-venv/bin/tjit-python, the venv's
# python with the library path PyTorch needs, which bench/torch_compare.py runs.
#
# PyPI's torch for Linux is a CUDA build. On a machine without a GPU it still
# imports, and torch.compile (Inductor) compiles for the CPU, when it finds the
# CUDA libraries it links: the toolkit's (libcudart, cuBLAS, cuDNN, ...) from
# /usr/local/cuda*/lib64 where a toolkit is installed, and those no toolkit
# ships, from PyPI's nvidia-* wheels. So torch is installed with --no-deps, then
# those wheels at the versions torch pins and its pure-Python dependencies,
# leaving out what only a GPU uses (Triton, cuDNN's and the toolkit's wheels:
# several GB). Where no toolkit is found, torch's full dependencies are
# installed instead, toolkit wheels included.
#
# Exit status: 0 when the venv works, and also when the package index cannot be
# reached (`make bench` then measures with what is there, and says so); 1 when
# an install fails although the index answers.
set -u
build="${1:-build}"
mkdir -p "$build"
build=$(cd "$build" && pwd)
venv="$build/torch-venv"
py="$venv/bin/python"
launcher="$venv/bin/tjit-python"
stamp="$venv/tjit-torch.ok"
# pip's own messages go to a log, shown when it fails: with --no-deps, it warns
# of every GPU package torch names and this script leaves out
pip_q() {
    "$venv/bin/pip" install -q --disable-pip-version-check "$@" >"$venv/pip.log" 2>&1 && return 0
    tail -n 5 "$venv/pip.log" >&2
    return 1
}
say() { echo "install-torch-venv: $*" >&2; }

# torch.compile of a pointwise function on the CPU, checked against eager
probe() {
    "$launcher" - <<'EOF' >/dev/null 2>"$venv/probe.log"
import warnings
warnings.filterwarnings("ignore")
import torch
f = lambda x: torch.tanh(x * 2 + 1) * torch.sigmoid(x)
x = torch.randn(1000)
assert torch.allclose(torch.compile(f)(x), f(x), atol=1e-6)
print(torch.__version__)
EOF
}

# the launcher: the venv's python with the nvidia wheels' lib folders and the
# CUDA toolkit's on LD_LIBRARY_PATH (the loader reads it at process start only)
write_launcher() {
    site=$("$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    dirs=$(find "$site/nvidia" -type d -name lib 2>/dev/null | sort | tr '\n' ':')
    cuda=""
    for d in /usr/local/cuda/lib64 $(ls -d /usr/local/cuda-*/lib64 2>/dev/null | sort -rV) \
             /usr/local/cuda/targets/x86_64-linux/lib; do
        if [ -e "$d/libcudart.so.13" ] || ls "$d"/libcudart.so.* >/dev/null 2>&1; then
            cuda="$d"
            break
        fi
    done
    cat >"$launcher" <<EOF
#!/bin/sh
# written by tools/install-torch-venv.sh: PyTorch 2.x's python with its libraries
LD_LIBRARY_PATH="${dirs}${cuda}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$py" "\$@"
EOF
    chmod +x "$launcher"
    echo "$cuda"
}

# torch's Requires-Dist that a CPU run needs: the pure-Python ones and the
# nvidia wheels named below, with torch's version specifiers
cpu_requirements() {
    "$py" - <<'EOF'
import importlib.metadata as md
import re
gpu_only = ("cuda-toolkit", "cuda-bindings", "nvidia-cudnn", "triton")
wanted = ("nvidia-cusparselt", "nvidia-nvshmem", "nvidia-nccl")
for req in md.requires("torch") or []:
    spec, _, marker = req.partition(";")
    if "extra ==" in marker:
        continue
    name = re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower()
    if name.startswith("nvidia-") and not name.startswith(wanted):
        continue
    if not name.startswith(gpu_only):
        print(spec.replace(" ", ""))
# what torch imports without naming it, and the cuFile wheel of its cuda-toolkit extra
print("nvidia-cufile\nnumpy\nmarkupsafe\nmpmath")
EOF
}

index_reachable() {
    rm -rf "$venv/probe-dl"
    "$venv/bin/pip" download -q --no-deps --disable-pip-version-check -d "$venv/probe-dl" pip \
        >/dev/null 2>&1
    ok=$?
    rm -rf "$venv/probe-dl"
    return $ok
}

give_up() {  # $1: what failed
    if index_reachable; then
        say "$1 although the package index answers (see $venv/probe.log); no PyTorch 2.x"
        exit 1
    fi
    say "the package index cannot be reached ($1): make bench measures without PyTorch 2.x"
    exit 0
}

if [ -x "$launcher" ] && [ -f "$stamp" ] && "$launcher" -c "import torch" 2>/dev/null; then
    exit 0  # installed and probed before
fi
rm -f "$stamp"
if [ ! -x "$py" ]; then
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv" || { say "cannot make a venv (python3-venv)"; exit 1; }
fi
say "installing PyTorch 2.x from PyPI into $venv (about 2 GB)"
pip_q --no-deps torch || give_up "pip install --no-deps torch failed"
reqs=$(cpu_requirements) || give_up "reading torch's requirements failed"
# shellcheck disable=SC2086 # one requirement a word
pip_q $reqs || give_up "pip install $(echo $reqs) failed"
cuda=$(write_launcher)
if ! probe; then
    [ -z "$cuda" ] && say "no CUDA toolkit found in /usr/local/cuda*: installing torch's CUDA wheels"
    version=$("$py" -c "import importlib.metadata as m; print(m.version('torch'))")
    pip_q "torch==$version" || give_up "pip install torch==$version failed"
    write_launcher >/dev/null
    probe || { say "torch.compile does not run (see $venv/probe.log; it needs g++ and python3-dev)"
               exit 1; }
fi
version=$("$launcher" -c "import torch; print(torch.__version__)" 2>/dev/null)
echo "$version" >"$stamp"
say "PyTorch $version ready; torch.compile ran on the CPU (launcher: $launcher)"
