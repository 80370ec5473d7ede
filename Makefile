# tjit — two commands do all the set-up and work on a fresh Debian 12 machine:
#   make demo   trace an example model, print its IR, replay it, show timings
#   make test   build and run the whole test suite, normally (with the LLVM backend)
#               and under ASan+UBSan (without it: the portable-only configuration),
#               then the concurrency tests under ThreadSanitizer
#   make install PREFIX=DIR   the library, headers, tjit, CMake package and tjit.pc into DIR
#   make bench  one table: tjit eager/replay/fused/LLVM beside PyTorch 2.x (eager,
#               jit.trace, its CPU fuser, torch.compile) and Debian's PyTorch 1.13
#               (eager, jit.trace) (docs/performance.md)
#   make bench-ddp  the data-parallel table: tjit DDP under mpirun beside PyTorch DDP (Gloo)
BUILD_DIR ?= build
ASAN_DIR ?= build-asan
TSAN_DIR ?= build-tsan
CMAKE_FLAGS ?=
# the normal build has the LLVM backend (deps installs LLVM 19); the ASan build has not,
# so `make test` runs the suite in both configurations (and the TSan build's few tests)
TJIT_LLVM ?= ON

.PHONY: all deps build build-asan demo test test-release test-asan install bench bench-deps bench-ddp bench-detail clean \
	build-gpu test-gpu bench-gpu

all: build

deps:
	@sh tools/install-deps.sh

build: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTJIT_LLVM=$(TJIT_LLVM) $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR)

# its tests on the CUDA host harness read the plain build's kernel cache (the
# host compiler's modules do not depend on the sanitizers; CMakeLists.txt)
build-asan: deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJIT_SANITIZE=ON -DTJIT_LLVM=OFF \
		-DTJIT_TEST_KERNEL_CACHE=$(abspath $(BUILD_DIR))/kernel-cache $(CMAKE_FLAGS)
	cmake --build $(ASAN_DIR)

# the library and its concurrency tests alone, under ThreadSanitizer
build-tsan: deps
	cmake -S . -B $(TSAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTJIT_TSAN=ON -DTJIT_LLVM=OFF \
		-DTJIT_CUDA=OFF -DTJIT_ONNX=OFF $(CMAKE_FLAGS)
	cmake --build $(TSAN_DIR)

demo: build
	$(BUILD_DIR)/example_demo
	$(BUILD_DIR)/example_train mlp 30

# after a passing run, the counts the CUDA and distributed tests print (cases
# on the host harness, NVRTC sources compiled, the CUDA fuser's random graphs,
# collectives and DDP checks under mpirun) and the op conformance sweep's,
# which ctest keeps in its log; in
# braces, so that its `|| true` cannot hide ctest's failure
TEST_COUNTS = { grep -h -E "cases on cuda|NVRTC .*compiled|cuda fuser:|row groups|collective cases|^test_ddp:|^op conformance:" \
	Testing/Temporary/LastTest.log | sort -u || true; }

test-release: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j2 && $(TEST_COUNTS)

test-asan: build-asan
	cd $(ASAN_DIR) && ctest --output-on-failure -j2 && $(TEST_COUNTS)

test-tsan: build-tsan
	cd $(TSAN_DIR) && ctest --output-on-failure -j2

test: test-release test-asan test-tsan

# lib/libtjit.so.0 and libtjit.a, include/tjit/, bin/tjit, lib/cmake/tjit/, lib/pkgconfig/tjit.pc
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

# the comparison's PyTorches and gnuplot, installed only when missing: Debian's
# PyTorch 1.13 (python3-torch) for /usr/bin/python3, and a current PyTorch 2.x from
# PyPI in $(BUILD_DIR)/torch-venv (without the package index, make bench goes on
# without it and says so); python3-dev: torch.compile's C++ kernels include Python.h
BENCH_PYTHON ?= /usr/bin/python3
TORCH2_PYTHON ?= $(BUILD_DIR)/torch-venv/bin/tjit-python
bench-deps: deps
	@TJIT_EXTRA_PACKAGES="python3-torch python3-numpy python3-dev gnuplot-nox" sh tools/install-deps.sh
	@sh tools/install-torch-venv.sh $(BUILD_DIR)

# every workload, tjit and PyTorch side by side, one table (build/bench/results.md),
# then the replay memory of each example model (bench_memory);
# BENCH_BUDGET: timed seconds per workload and side; BENCH_ARGS: e.g. --threads 1 --only ID,ID,
# --compile-modes default,max-autotune-no-cudagraphs, --isa avx2 (both sides on their AVX2 code
# on an AVX-512 machine: TJIT_ISA, ATEN_CPU_CAPABILITY, MKL/oneDNN limits, OPENBLAS_CORETYPE)
BENCH_BUDGET ?= 4
BENCH_ARGS ?=
bench: build bench-deps
	$(BENCH_PYTHON) bench/torch_compare.py --suite $(BUILD_DIR)/bench_suite --out $(BUILD_DIR)/bench \
		--torch2 $(TORCH2_PYTHON) --budget $(BENCH_BUDGET) $(BENCH_ARGS)
	$(BENCH_PYTHON) bench/report.py --out $(BUILD_DIR)/bench --suite $(BUILD_DIR)/bench_suite
	$(BUILD_DIR)/bench_memory

# the data-parallel training table (build/bench/ddp.md): bench_ddp under mpirun and
# PyTorch 2.x's DistributedDataParallel over Gloo at 1, 2 and 4 ranks, one thread per
# rank; DDP_BUDGET: timed seconds per row and side; DDP_ARGS: e.g. --ranks 1,2 --only mlp
# --bucket-bytes 0,65536 (docs/performance.md, "Data-parallel training")
DDP_BUDGET ?= 2
DDP_ARGS ?=
bench-ddp: build bench-deps
	$(BENCH_PYTHON) bench/ddp_report.py --bench $(BUILD_DIR)/bench_ddp --torch2 $(TORCH2_PYTHON) \
		--out $(BUILD_DIR)/bench --budget $(DDP_BUDGET) $(DDP_ARGS)

# the detailed benchmarks, each printing its own table (bench_ddp runs under mpirun: bench-ddp)
bench-detail: build
	@for b in $(BUILD_DIR)/bench_*; do case $$b in */bench_suite|*/bench_ddp) continue;; esac; echo "== $$b"; $$b || exit 1; done

# On a machine with an NVIDIA GPU: the CUDA tests against the device (label gpu),
# and the GPU benchmark table. Without apt, deps skips itself; give OpenBLAS and
# cmocka by path in CMAKE_FLAGS (docs/cuda.md).
GPU_DIR ?= build-gpu
build-gpu: deps
	cmake -S . -B $(GPU_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTJIT_LLVM=OFF -DTJIT_NATIVE=OFF \
		-DTJIT_CUDA=ON $(CMAKE_FLAGS)
	cmake --build $(GPU_DIR)

test-gpu: build-gpu
	cd $(GPU_DIR) && ctest -L gpu --output-on-failure

# bench_cuda's table beside cuBLAS/cuDNN and PyTorch's rows for it, then issue 22's
# table (bench/gpu_report.py: tjit unfused/fused/CUDA graph beside PyTorch eager and
# torch.compile, ratios and the targets' verdicts); GPU_BUDGET: timed seconds per row
GPU_BUDGET ?= 0.5
bench-gpu: build-gpu
	$(GPU_DIR)/bench_cuda
	-python3 bench/torch_cuda.py
	python3 bench/gpu_report.py --bench $(GPU_DIR)/bench_cuda --budget $(GPU_BUDGET)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(GPU_DIR)
