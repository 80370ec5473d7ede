#!/usr/bin/env python3
"""PyTorch's CUDA rows for the GPU table of bench_cuda (make bench-gpu): the same
workloads on the same GPU, eager and (for the add chain) torch.compile, as
medians of synchronised repetitions. Needs torch with CUDA; says so otherwise."""
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print("torch_cuda: PyTorch is not installed here")
    sys.exit(0)

if not torch.cuda.is_available():
    print("torch_cuda: PyTorch sees no GPU")
    sys.exit(0)

torch.backends.cuda.matmul.allow_tf32 = False  # tjit's default: full f32
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda:0")
REPS = 15


def timed(fn):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def chain(x, y):
    for _ in range(100):
        x = x + y
    return x


def main():
    print(f"| workload ({torch.cuda.get_device_name(0)}) | PyTorch {torch.__version__} | |")
    print("|---|---|---|")
    x = torch.ones(1, device=dev)
    y = torch.ones(1, device=dev)
    print(f"| per-op overhead, eager (100 adds, 1 element) | {timed(lambda: chain(x, y)) * 1e6 / 100:.2f} us/op | |")
    try:
        compiled = torch.compile(chain)
        print(f"| per-op overhead, torch.compile (100 adds) | {timed(lambda: compiled(x, y)) * 1e6 / 100:.2f} us/op | |")
    except Exception as e:  # no Triton or no compiler on the machine
        print(f"| per-op overhead, torch.compile | n/a: {type(e).__name__} | |")
    n = 4096
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    t = timed(lambda: a @ b)
    print(f"| sgemm {n} | {2 * n ** 3 / t * 1e-12:.1f} TFLOP/s | |")
    xc = torch.randn(32, 64, 56, 56, device=dev, requires_grad=True)
    w = torch.randn(64, 64, 3, 3, device=dev, requires_grad=True)
    gy = torch.randn(32, 64, 56, 56, device=dev)
    conv = torch.nn.functional.conv2d
    print(f"| conv2d [32,64,56,56] x 64 3x3, forward | {timed(lambda: conv(xc, w, padding=1)) * 1e3:.3f} ms | |")
    gi = torch.ops.aten.convolution_backward
    print(f"| conv2d, backward input | {timed(lambda: gi(gy, xc, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False])) * 1e3:.3f} ms | |")
    print(f"| conv2d, backward weight | {timed(lambda: gi(gy, xc, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])) * 1e3:.3f} ms | |")
    s = torch.randn(4096, 4096, device=dev)
    t = timed(lambda: torch.softmax(s, -1))
    print(f"| softmax [4096, 4096] | {2 * 4096 * 4096 * 4 / t * 1e-9:.0f} GB/s | |")


if __name__ == "__main__":
    main()
