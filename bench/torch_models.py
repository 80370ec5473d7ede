"""torch_models.py — the PyTorch side's models for bench/torch_compare.py: the
same math as the C models (examples/models/) and bench/suite.c's workloads,
built from the weights tjit exported, and the switch of torch.jit's CPU fuser.
Imported once the thread count is known (torch_compare.py sets
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS first: PyTorch's BLAS reads them at
load time).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


# ---- models: the same math as the C models in examples/models/ ----------------------

class Params(nn.Module):
    """Holds named weights (numpy arrays loaded from param_<name>.npy, or
    tensors); dots in names become nested modules so that 'fc1.weight' is
    self.fc1.weight."""

    def __init__(self, weights):
        super().__init__()
        for name, value in weights.items():
            owner = self
            *path, leaf = name.split(".")
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, nn.Module())
                owner = getattr(owner, part)
            data = value.clone() if torch.is_tensor(value) else torch.from_numpy(value.copy())
            owner.register_parameter(leaf, nn.Parameter(data))


class LSTMCell(Params):
    """examples/models/lstm.c: gates i, f, g, o from one chunk of two linears."""

    def forward(self, x, h, c):
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h2 = torch.sigmoid(o) * torch.tanh(c2)
        return h2, c2


class LSTMCellLoss(LSTMCell):
    """bench/bench_util.h's bench_lstm_cell_loss: sum(h') + sum(c')."""

    def forward(self, x, h, c):
        h2, c2 = super().forward(x, h, c)
        return h2.sum() + c2.sum()


class Pointwise(Params):
    def forward(self, x, a, b):
        return torch.tanh(x * a + b) * torch.sigmoid(x) + 1


class ScaledSoftmax(Params):
    def forward(self, x):
        return torch.softmax(x * 0.125, -1)


class ResidualLayerNorm(Params):
    def forward(self, x, y, w, b):
        return F.layer_norm(x + y, (x.shape[-1],), w, b, 1e-5)


class AddChain(Params):
    """100 adds on 1-element tensors: per-op overhead."""

    def forward(self, x, b):
        for _ in range(100):
            x = x + b
        return x


class MatMul(Params):
    def forward(self, a, b):
        return torch.mm(a, b)


class MLPLoss(Params):
    """examples/models/mlp.c under bench/suite.c's mlp_loss: nll of log_softmax."""

    def forward(self, x, target):
        h = F.relu(F.linear(x, self.fc1.weight, self.fc1.bias))
        h = F.relu(F.linear(h, self.fc2.weight, self.fc2.bias))
        y = F.log_softmax(F.linear(h, self.fc3.weight, self.fc3.bias), 1)
        return F.nll_loss(y, target)


class CNN(Params):
    """examples/models/cnn.c: (conv3x3 - batch_norm (training mode) - relu -
    max_pool 2x2) x 2, linear. Running statistics start at 0 and 1, as there."""

    def __init__(self, weights):
        super().__init__(weights)
        for i, ch in ((1, 16), (2, 32)):
            bn = getattr(self, f"bn{i}")
            bn.register_buffer("running_mean", torch.zeros(ch))
            bn.register_buffer("running_var", torch.ones(ch))

    def forward(self, x):
        for i in (1, 2):
            conv, bn = getattr(self, f"conv{i}"), getattr(self, f"bn{i}")
            x = F.conv2d(x, conv.weight, conv.bias, 1, 1)
            x = F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, True, 0.1, 1e-5)
            x = F.max_pool2d(F.relu(x), 2, 2)
        return F.linear(torch.flatten(x, 1), self.fc.weight, self.fc.bias)


class Transformer(Params):
    """examples/models/transformer.c: post-norm encoder block, in_proj as one
    linear then chunk, 4 heads, softmax attention, exact (erf) gelu."""

    heads = 4

    def forward(self, x):
        b, s, w = x.shape
        dh = w // self.heads
        q, k, v = F.linear(x, self.attn.in_proj_weight, self.attn.in_proj_bias).chunk(3, -1)
        q, k, v = (t.view(b, s, self.heads, dh).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        attn = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape(b, s, w)
        proj = F.linear(attn, self.attn.out_proj.weight, self.attn.out_proj.bias)
        x1 = F.layer_norm(x + proj, (w,), self.norm1.weight, self.norm1.bias, 1e-5)
        mlp = F.linear(F.gelu(F.linear(x1, self.linear1.weight, self.linear1.bias)),
                       self.linear2.weight, self.linear2.bias)
        return F.layer_norm(x1 + mlp, (w,), self.norm2.weight, self.norm2.bias, 1e-5)


MODELS = {"lstm_cell": LSTMCell, "lstm_cell_loss": LSTMCellLoss, "pointwise": Pointwise,
          "scaled_softmax": ScaledSoftmax, "residual_layer_norm": ResidualLayerNorm,
          "add_chain": AddChain, "mm": MatMul, "mlp_train": MLPLoss, "cnn": CNN,
          "transformer": Transformer}


# ---- the CPU fuser ----------------------------------------------------------------------

class Fuser:
    """Switches torch.jit's CPU fuser on and off around the fused variant's calls.

    PyTorch 1.13's default fuser, NNC (torch._C._jit_override_can_fuse_on_cpu(True)
    with torch._C._jit_set_texpr_fuser_enabled(True), the profiling executor),
    compiles CPU kernels only through LLVM; a build without LLVM (Debian's
    python3-torch) raises "LLVM Backend not found" on the first fused call, and
    with _jit_set_te_must_use_llvm_cpu(False) runs NNC's IR interpreter, orders
    of magnitude slower than eager. There the legacy fuser is used instead:
    torch._C._jit_override_can_fuse_on_cpu_legacy(True) with the legacy
    executor (_jit_set_profiling_executor(False), _jit_set_profiling_mode(False)),
    which compiles fused kernels with the system C++ compiler."""

    def __init__(self):
        self.nnc = bool(torch._C._llvm_enabled())
        self.name = ("NNC (texpr) fuser" if self.nnc else
                     "legacy fuser, legacy executor (no LLVM in this PyTorch build, so no NNC)")

    def on(self):
        if self.nnc:
            torch._C._jit_override_can_fuse_on_cpu(True)
            torch._C._jit_set_texpr_fuser_enabled(True)
        else:
            torch._C._jit_set_profiling_executor(False)
            torch._C._jit_set_profiling_mode(False)
            torch._C._jit_override_can_fuse_on_cpu_legacy(True)

    def off(self):
        """Back to PyTorch's defaults: profiling executor, no CPU fusion."""
        if self.nnc:
            torch._C._jit_override_can_fuse_on_cpu(False)
        else:
            torch._C._jit_override_can_fuse_on_cpu_legacy(False)
            torch._C._jit_set_profiling_executor(True)
            torch._C._jit_set_profiling_mode(True)


def count_groups():
    """Fusion groups in the graph torch.jit executed last."""
    text = str(torch.jit.last_executed_optimized_graph())
    return text.count("= prim::FusionGroup") + text.count("= prim::TensorExprGroup")


def make_step(model, inputs, w, run=None):
    """One step of workload w on model, as tjit's benchmarks take it:
    run(*inputs) (the model itself unless a compiled form is given); for
    backward workloads, backward of its output, the SGD update when
    w["lr"] > 0, and dropping the gradients."""
    run = model if run is None else run  # a compiled module has no truth value
    params = list(model.parameters())
    lr = w["lr"]

    def forward():
        return run(*inputs)

    def train():
        run(*inputs).backward()
        if lr > 0:
            with torch.no_grad():
                for p in params:
                    p.sub_(p.grad, alpha=lr)
        for p in params:
            p.grad = None

    return train if w["backward"] else forward
