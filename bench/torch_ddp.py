#!/usr/bin/env python3
"""torch_ddp.py — PyTorch's half of `make bench-ddp` (bench/ddp_report.py): the
training steps of bench/ddp.c in PyTorch 2.x with DistributedDataParallel over
Gloo on this machine, to be run with build/torch-venv's python
(build/torch-venv/bin/tjit-python).

The same models as tjit's (bench/torch_models.py: MLPLoss with nll, the
transformer block with the mean square of its output as the loss), the same
batch per rank (MLP 256 rows, transformer 1 sequence of 128: weak scaling), the
same step (forward, backward through DDP, SGD p -= lr * grad, gradients
dropped), one thread per rank (OMP_NUM_THREADS=1 and torch.set_num_threads(1)),
and the same timing: 3 + 3 warm-up steps, rank 0's time of the last 3 sets the
steps per window (broadcast), a barrier before each window, the median of the
windows' steps/s; then the same windows without DDP (no communication, every
rank at once). The ranks are processes started here (torch.multiprocessing,
MASTER_ADDR=127.0.0.1 and a free port). Rank 0 prints one line per workload
and bucket size, as bench_ddp does:
  ddp {"impl": "torch", "workload": "mlp", "ranks": 2, "steps_per_s": ..., ...}
Usage: torch_ddp.py --world N [--budget S] [--windows K] [--only mlp,transformer]
                    [--bucket-bytes B[,B...]]   (0: DDP's default 25 MB)
"""
import argparse
import json
import math
import os
import socket
import statistics
import sys
import time
import warnings

# one thread per rank: OpenMP and the BLAS size their pools when torch loads
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import torch_models as tm  # noqa: E402

DEFAULT_BUCKET = 25 << 20


def mlp_weights(rng):
    """examples/models/mlp.c's parameters: names, shapes, scale 1/sqrt(fan_in)."""
    width = (784, 256, 256, 10)
    w = {}
    for i in range(3):
        w[f"fc{i + 1}.weight"] = rng.standard_normal((width[i + 1], width[i])) / math.sqrt(width[i])
        w[f"fc{i + 1}.bias"] = np.zeros(width[i + 1])
    return {k: v.astype(np.float32) for k, v in w.items()}


def transformer_weights(rng):
    """examples/models/transformer.c's parameters (width 256, hidden 1024)."""
    d, h = 256, 1024
    s, sh = 1 / math.sqrt(d), 1 / math.sqrt(h)
    w = {"attn.in_proj_weight": rng.standard_normal((3 * d, d)) * s,
         "attn.in_proj_bias": np.zeros(3 * d),
         "attn.out_proj.weight": rng.standard_normal((d, d)) * s,
         "attn.out_proj.bias": np.zeros(d),
         "norm1.weight": np.ones(d), "norm1.bias": np.zeros(d),
         "linear1.weight": rng.standard_normal((h, d)) * s, "linear1.bias": np.zeros(h),
         "linear2.weight": rng.standard_normal((d, h)) * sh, "linear2.bias": np.zeros(d),
         "norm2.weight": np.ones(d), "norm2.bias": np.zeros(d)}
    return {k: v.astype(np.float32) for k, v in w.items()}


class SquareLoss(torch.nn.Module):
    """The mean square of a model's output: examples/models/training.c's "square"."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return (y * y).mean()


# name -> (batch per rank, lr, model and this rank's inputs)
def make_mlp(rank, batch):
    model = tm.MLPLoss(mlp_weights(np.random.default_rng(3)))
    g = torch.Generator().manual_seed(1000 + rank)
    x = torch.randn(batch, 784, generator=g)
    target = torch.floor(torch.rand(batch, generator=g, dtype=torch.float64) * 10).long()
    return model, (x, target)


def make_transformer(rank, batch):
    model = SquareLoss(tm.Transformer(transformer_weights(np.random.default_rng(3))))
    g = torch.Generator().manual_seed(1000 + rank)
    return model, (torch.randn(batch, 128, 256, generator=g),)


WORKLOADS = {"mlp": (256, 0.01, make_mlp), "transformer": (1, 0.01, make_transformer)}


def run(rank, world, name, bucket_bytes, args):
    batch, lr, make = WORKLOADS[name]
    model, inputs = make(rank, batch)
    cap = bucket_bytes or DEFAULT_BUCKET
    # parameters broadcast from rank 0; the default row leaves bucket_cap_mb
    # unset, as a user would, so that DDP keeps its first bucket at 1 MiB (it
    # does so only with its defaults, as tjit does)
    ddp = DDP(model, bucket_cap_mb=cap / (1 << 20)) if bucket_bytes else DDP(model)
    params = list(ddp.parameters())

    def step(m):
        m(*inputs).backward()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=lr)
        for p in params:
            p.grad = None

    def steps(n, m=ddp):
        for _ in range(n):
            step(m)

    def windows(n, m=ddp):
        rates = []
        for _ in range(args.windows):
            dist.barrier()
            t0 = time.perf_counter()
            steps(n, m)
            rates.append(n / (time.perf_counter() - t0))
        return rates

    steps(3)
    t0 = time.perf_counter()
    steps(3)
    per_step = (time.perf_counter() - t0) / 3
    n = torch.tensor([max(2.0, args.budget / args.windows / per_step)], dtype=torch.float64)
    dist.broadcast(n, 0)  # every rank runs the same steps: each all-reduces
    n = int(n.item())
    rates = windows(n)
    # the same steps without DDP, every rank at once: what the ranks' sharing of
    # the machine leaves of one rank's speed, with no communication
    steps(2, model)
    alone = windows(n, model)
    if rank == 0:
        grad_bytes = sum(p.numel() * p.element_size() for p in params)
        line = {"impl": "torch", "workload": name, "ranks": world, "batch_per_rank": batch,
                "global_batch": batch * world, "threads_per_rank": torch.get_num_threads(),
                "bucket_bytes": cap, "parameters": len(params), "grad_bytes": grad_bytes,
                "windows": args.windows, "steps_per_window": n,
                "steps_per_s": statistics.median(rates), "steps_per_s_min": min(rates),
                "steps_per_s_max": max(rates), "steps_per_s_mean": statistics.mean(rates),
                "no_comm_steps_per_s": statistics.median(alone),
                "comm_ms_per_step": None, "exposed_ms_per_step": None, "hidden": None,
                "version": torch.__version__, "backend": "gloo"}
        print("ddp " + json.dumps(line), flush=True)
    del ddp
    dist.barrier()


def rank_main(rank, world, port, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        if rank == 0:
            cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
            print(f"PyTorch {torch.__version__}, DistributedDataParallel over Gloo, {world} ranks, "
                  f"{torch.get_num_threads()} thread(s) per rank, CPU capability "
                  f"{cap() if cap else '?'}", flush=True)
        for name in WORKLOADS:
            if args.only and name not in args.only.split(","):
                continue
            for b in args.bucket_bytes:
                run(rank, world, name, b, args)
    finally:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--budget", type=float, default=3.0,
                    help="seconds of timed steps per workload and bucket size")
    ap.add_argument("--windows", type=int, default=5)
    ap.add_argument("--only", default="")
    ap.add_argument("--bucket-bytes", default="0",
                    type=lambda s: [int(x) for x in s.split(",")])
    args = ap.parse_args()
    if args.world < 1 or args.budget <= 0 or args.windows < 1:
        ap.error("world, budget and windows must be positive")
    mp.spawn(rank_main, args=(args.world, free_port(), args), nprocs=args.world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
