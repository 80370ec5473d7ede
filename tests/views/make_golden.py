#!/usr/bin/python3
"""Golden data for tests/test_view_writes.c: models that write in place
through views, run by PyTorch (Debian's python3-torch). Run by hand from the
repository root, never by `make test`:

    /usr/bin/python3 tests/views/make_golden.py

Writes tests/views/data/NAME/{inK,outK,afterK,goutK,gradK}.npy: the inputs,
the outputs, the inputs after the call (a model may write into an input),
the output gradients that seed backward and the gradients of the inputs that
require them (for a loss of sum(out_k * gout_k)). Each model is the PyTorch
twin of the C function of the same name in tests/test_view_writes.c."""
import os
import zlib

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
MODELS = []


def model(shapes, grad, seed=0):
    """shapes: the inputs' sizes; grad: which inputs require a gradient."""
    def register(fn):
        MODELS.append((fn.__name__, fn, shapes, grad, seed))
        return fn
    return register


@model([(3, 4)], [True])
def select_mul(x):                     # a row scaled through select
    b = x.clone()
    b.select(0, 1).mul_(2.0)
    return [b]


@model([(3, 4), (3, 4)], [True, True])
def slice_add(x, y):                   # a column block added to through slice
    b = x * 1.0
    b[:, 1:3].add_(y[:, :2])
    return [b]


@model([(3, 4), (3, 2)], [True, True])
def narrow_copy(x, y):                 # copy_ into a narrowed view
    b = x.clone()
    b.narrow(1, 0, 2).copy_(y)
    return [b + 1.0]


@model([(4, 4)], [True])
def diagonal_add(x):                   # the diagonal shifted in place
    b = x.clone()
    b.diagonal().add_(1.0)
    return [b]


@model([(3, 4)], [True])
def transpose_select(x):               # a write through t() then select
    b = x.clone()
    b.t().select(0, 2).mul_(3.0)
    return [b]


@model([(3, 4)], [True])
def view_slice(x):                     # a write through view then slice
    b = x.clone()
    b.view(6, 2)[1:4].mul_(0.5)
    return [b]


@model([(3, 4)], [True])
def two_views(x):                      # two views of one base written, all three read
    b = x.clone()
    v1 = b[0]
    v2 = b[:, 1]
    v1.add_(1.0)
    v2.mul_(2.0)
    return [b, v1, v2]


@model([(3, 4)], [True])
def base_then_view(x):                 # the base written, a view made before read
    b = x.clone()
    v = b[1]
    b.mul_(2.0)
    return [v * 1.0]


@model([(3, 4)], [False])
def chunk_write(x):                    # a piece of chunk written (no gradient: PyTorch refuses it)
    b = x.clone()
    c = b.chunk(2, dim=1)
    c[1].mul_(-1.0)
    return [b]


@model([(3, 4)], [False])
def unbind_write(x):                   # a piece of unbind written
    b = x.clone()
    rows = b.unbind(0)
    rows[2].add_(10.0)
    return [b, rows[0] * 1.0]


@model([(5, 2)], [False])
def split_copy(x):                     # copy_ into a piece of split_with_sizes
    b = x.clone()
    parts = b.split([2, 3], dim=0)
    parts[1].copy_(torch.ones(3, 2))
    return [b]


@model([(3, 4)], [True])
def unsqueeze_write(x):                # a write through unsqueeze and select
    b = x.clone()
    b.unsqueeze(0)[0, 1].mul_(0.0)
    return [b]


@model([(2, 3, 4), (3, 2)], [True, True])
def permute_add(x, y):                 # a write through permute
    b = x.clone()
    b.permute(2, 1, 0)[1].add_(y)
    return [b]


@model([(3, 4)], [True])
def loop_rows(x):                      # writes inside a loop
    b = x.clone()
    for i in range(3):
        b[i].mul_(i + 1.0)
    return [b.sum(0)]


@model([(4, 3), (3,)], [True, True])
def rnn_buffer(x, h0):                 # an RNN filling its output buffer step by step
    out = torch.zeros(4, 3)
    h = h0
    for t in range(4):
        h = torch.tanh(x[t] + h)
        out[t].copy_(h)
    return [out]


@model([(3, 4), (3, 4)], [True, True])
def masked_scale(x, m):                # a column scaled by a mask column
    b = x.clone()
    b[:, 0].mul_(m[:, 0])
    return [b]


@model([(3, 4)], [True])
def select_slice(x):                   # a view of a view
    b = x.clone()
    b[1][2:].add_(5.0)
    return [b]


@model([(3, 5)], [True])
def overlapping_views(x):              # one view written, an overlapping one read
    b = x.clone()
    v = b[:, 1:3]
    w = b[:, 2:4]
    v.mul_(2.0)
    return [w * 1.0]


@model([(3, 4), (2, 4)], [True, False])
def running_stats(x, buf):             # a buffer input updated through views
    buf[0].mul_(0.9).add_(0.1 * x.mean(0))
    buf[1].mul_(0.9).add_(0.1 * x.var(0, unbiased=False))
    return [x * 2.0]


@model([(3, 4), (1,)], [True, True])
def copy_broadcast(x, y):              # copy_ of a one-element tensor into a row
    b = x.clone()
    b[0].copy_(y)
    return [b]


@model([(3, 4), (4,)], [True, False])
def copy_dtype(x, y):                  # copy_ of a float64 tensor into a float32 row
    b = x.clone()
    b[1].copy_(y.double())
    return [b]


@model([(2, 3, 3)], [True])
def diagonal_offset(x):                # an offset diagonal of the last two dims
    b = x.clone()
    b.diagonal(1, 1, 2).mul_(2.0)
    return [b]


@model([(3, 4)], [True])
def reshape_slice(x):                  # a write through reshape (a view) and slice
    b = x.clone()
    b.reshape(12)[3:7].mul_(-1.0)
    return [b]


@model([(2, 2, 3)], [True])
def flatten_select(x):                 # a write through flatten and select
    b = x.clone()
    b.flatten(1)[0].add_(1.0)
    return [b]


@model([(2, 3), (3, 4)], [True, True])
def write_then_matmul(x, w):           # the written base goes on to a matmul
    b = x.clone()
    b[0].mul_(2.0)
    return [b @ w]


@model([(4, 3)], [True])
def narrow_returned(x):                # the written view and its base both returned
    b = x.clone()
    v = b.narrow(0, 1, 2)
    v.mul_(3.0)
    return [v, b]


@model([(3, 4)], [True])
def chained_inplace(x):                # in-place ops chained on one view
    b = x.clone()
    b[:, 2].mul_(2.0).add_(1.0).sub_(0.5)
    return [torch.relu(b)]


@model([(3, 4), (3, 4)], [True, False])
def input_written(x, y):               # an input written through a view: the caller sees it
    x2 = x * 1.0
    y[0].add_(x2[0])
    return [y * 1.0]


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, fn, shapes, grad, seed in MODELS:
        rng = np.random.default_rng(zlib.crc32(name.encode()) + seed)
        ins = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        for k, a in enumerate(ins):
            np.save(os.path.join(d, f"in{k}.npy"), a)
        ts = [torch.tensor(a, requires_grad=g) for a, g in zip(ins, grad)]
        # a leaf that needs a gradient cannot be written in place: the models write clones
        call = [t if g else t.detach().clone() for t, g in zip(ts, grad)]
        outs = fn(*call)
        gouts = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in outs]
        for k, o in enumerate(outs):
            np.save(os.path.join(d, f"out{k}.npy"), o.detach().numpy().astype(np.float32))
            np.save(os.path.join(d, f"gout{k}.npy"), gouts[k])
        for k, t in enumerate(call):
            np.save(os.path.join(d, f"after{k}.npy"), t.detach().numpy().astype(np.float32))
        if any(grad):
            loss = sum((o * torch.tensor(g)).sum() for o, g in zip(outs, gouts))
            loss.backward()
            for k, t in enumerate(ts):
                if grad[k]:
                    np.save(os.path.join(d, f"grad{k}.npy"), t.grad.numpy().astype(np.float32))
    print(f"{len(MODELS)} models written to {OUT}")


if __name__ == "__main__":
    main()
