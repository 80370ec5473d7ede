#!/usr/bin/python3
"""Golden data of the op conformance sweep (tests/test_conformance.c): for
every op of tjit's table, cases over dtypes (those it takes and those it must
refuse), mixed dtypes, broadcasting, 0-dim, size-0 and size-1 dims, negative
dims, attribute values and special values, each answered by PyTorch's op of
the same name (Debian's python3-torch). Run by hand from the repository root
after building, never by `make test`:

    /usr/bin/python3 tests/conformance/make_golden.py [build/tjit]

It reads the table from `tjit list` and writes tests/conformance/cases.txt:

    case OP ID                 one case; ID names what it varies
    in DTYPE [SIZES] V V ...   each tensor argument in schema order
    in none                    an absent Tensor? argument
    list N                     a Tensor[] argument of N tensors (its ins follow)
    attr NAME TEXT             an attribute, as the IR writes it (2 vs 2.)
    refused                    PyTorch refuses the call
    out DTYPE [SIZES] V V ...  each output otherwise
    seed DTYPE [SIZES] V ...   the gradient given to each output (none: not float)
    grad DTYPE [SIZES] V ...   d(sum(out_k * seed_k))/d(input) for each f64 tensor
                               input in order (none: it does not reach an output)
    end

Values are Python's repr of each element (nan, inf, -inf, -0.0 included)."""
import math
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases.txt")
A = torch.ops.aten
DT = {"f32": torch.float32, "f64": torch.float64, "i64": torch.int64, "bool": torch.bool}
DT_NAME = {v: k for k, v in DT.items()}
REDUCTION = {"none": 0, "mean": 1, "sum": 2}

# ---- the table ------------------------------------------------------------


def split_args(text):
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse_schema(schema):
    params = schema[schema.index("(") + 1:schema.rindex(") ->")]
    args = []
    for a in split_args(params):
        if a == "*":
            continue
        default = None
        if "=" in a:
            a, default = a.split("=", 1)
        typ, name = a.rsplit(" ", 1)
        args.append({"type": typ.strip(), "name": name.strip(), "default": default})
    return args


def read_table(tjit):
    text = subprocess.run([tjit, "list"], capture_output=True, text=True, check=True).stdout
    ops = []
    for line in text.split("ops (", 1)[1].splitlines()[1:]:
        m = re.match(r"\s*(\S+)\s+(\S+)\s+(\(.*)$", line)
        if m:
            ops.append({"name": m.group(1), "kind": m.group(2), "schema": m.group(3),
                        "args": parse_schema(m.group(3))})
    return ops


def is_tensor(t):
    return t.startswith("Tensor")

# ---- values -----------------------------------------------------------------


def values(rng, shape, dtype, role):
    n = int(np.prod(shape)) if shape else 1
    if role == "bool" or dtype == torch.bool:
        v = rng.integers(0, 2, n).astype(bool)
    elif role.startswith("idx"):
        hi = int(role[3:])
        v = rng.integers(0, hi, n)
    elif dtype == torch.int64:
        v = rng.integers(-4, 5, n)
    elif role == "pos":
        v = rng.uniform(0.5, 2.0, n)
    elif role == "prob":
        v = rng.uniform(0.05, 0.95, n)
    else:
        v = np.round(rng.uniform(-2, 2, n), 2)
    return torch.tensor(v.reshape(shape) if shape else v[0]).to(dtype)


SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-40, -3e-39, 1e30, -1e30, 2.5, -1.5, 3.0,
           1e-300, 0.5, -0.5, 1.0]


def special(dtype, n):
    v = [x for x in SPECIAL]
    if dtype == torch.float64:
        v[5], v[6], v[7], v[8] = 5e-324, -1e-310, 1e300, -1e300
    return torch.tensor([v[i % len(v)] for i in range(n)], dtype=dtype)


def fmt_value(x, dtype):
    if dtype == torch.bool:
        return "1" if x else "0"
    if dtype == torch.int64:
        return str(int(x))
    return repr(float(x))


def fmt_tensor(t):
    t = t.detach().contiguous()
    sizes = "[" + ",".join(str(s) for s in t.shape) + "]"
    vals = " ".join(fmt_value(x, t.dtype) for x in t.reshape(-1).tolist())
    return f"{DT_NAME[t.dtype]} {sizes} {vals}".rstrip()


def fmt_attr(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        return r[:-1] if r.endswith(".0") else r  # 2.0 -> "2." as the IR writes it
    if isinstance(v, str):
        return "'" + v + "'"
    if isinstance(v, torch.dtype):
        return DT_NAME[v]
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_attr(x) for x in v) + "]"
    raise TypeError(v)

# ---- recipes: a valid base call per op --------------------------------------
# tensors: (sizes, role) per Tensor argument in schema order; None for an
# absent Tensor?; a list of them for Tensor[]. attrs: values for attributes
# without defaults (and overrides). vary: extra attribute variants.

R = {}


def recipe(name, tensors, attrs=None, vary=(), float_only=False, extra=()):
    """extra: (id, tensors, attrs) cases of their own; a tensor there may be
    ((sizes), "x") as above or (sizes, [values]) with values given."""
    R[name] = {"tensors": tensors, "attrs": attrs or {}, "vary": list(vary),
               "float_only": float_only, "extra": list(extra)}


X = ([2, 3], "x")
recipe("aten::where.self", [([2, 3], "bool"), X, X])
recipe("aten::clamp", [X], {"min": -0.5, "max": 1.0},
       vary=[{"min": -1, "max": 1}, {"min": None, "max": 0.5}, {"min": 0, "max": None},
             {"min": None, "max": None}, {"min": 1.0, "max": -1.0}])
recipe("aten::lerp.Scalar", [X, X], {"weight": 0.25}, vary=[{"weight": 1}, {"weight": 0.75}])
recipe("aten::lerp.Tensor", [X, X, ([2, 3], "prob")])
recipe("aten::addcmul", [X, X, X], vary=[{"value": 2}, {"value": -0.5}, {"value": 2.5}])
recipe("aten::to.dtype", [X], {"dtype": torch.float64},
       vary=[{"dtype": torch.float32}, {"dtype": torch.int64}, {"dtype": torch.bool}])
recipe("aten::copy_", [X, X])
recipe("aten::sum_to_size", [X], {"size": [1, 3]}, vary=[{"size": [3]}, {"size": [2, 1]}])
recipe("aten::view", [X], {"size": [3, 2]}, vary=[{"size": [-1]}, {"size": [6, 1]}])
recipe("aten::squeeze.dim", [([2, 1, 3], "x")], {"dim": 1}, vary=[{"dim": -2}, {"dim": 0}])
recipe("aten::unsqueeze", [X], {"dim": 1}, vary=[{"dim": -1}, {"dim": 0}, {"dim": 3}])
recipe("aten::transpose.int", [X], {"dim0": 0, "dim1": 1}, vary=[{"dim0": -1, "dim1": 0}])
recipe("aten::permute", [([2, 3, 4], "x")], {"dims": [2, 0, 1]}, vary=[{"dims": [-1, 1, 0]}])
recipe("aten::expand", [([1, 3], "x")], {"size": [2, 3]}, vary=[{"size": [-1, 3]}, {"size": [4, 2, 3]}])
recipe("aten::select.int", [X], {"dim": 0, "index": 1}, vary=[{"dim": -1, "index": -1}, {"dim": 1, "index": 3}])
recipe("aten::narrow", [X], {"dim": 1, "start": 1, "length": 2}, vary=[{"dim": -1, "start": -2, "length": 1}])
recipe("aten::slice.Tensor", [X], {"dim": 1, "start": 0, "end": 2},
       vary=[{"dim": -1, "start": -2, "end": 100, "step": 2}, {"dim": 0, "start": 5, "end": 1}])
recipe("aten::chunk", [([4, 3], "x")], {"chunks": 2}, vary=[{"chunks": 3, "dim": -1}])
recipe("aten::split.Tensor", [([5, 3], "x")], {"split_size": 2}, vary=[{"split_size": 1, "dim": 1}])
recipe("aten::split_with_sizes", [([5, 3], "x")], {"split_sizes": [2, 3]}, vary=[{"split_sizes": [1, 2], "dim": -1}])
recipe("aten::unbind.int", [X], vary=[{"dim": -1}])
recipe("aten::diagonal", [([3, 4], "x")], vary=[{"offset": 1}, {"offset": -1, "dim1": 1, "dim2": 0}])
recipe("aten::reshape", [X], {"shape": [3, 2]}, vary=[{"shape": [-1]}])
recipe("aten::flatten.using_ints", [([2, 3, 4], "x")], vary=[{"start_dim": 1}, {"start_dim": -2, "end_dim": -1}])
recipe("aten::cat", [[X, X]], vary=[{"dim": 1}, {"dim": -1}])
recipe("aten::stack", [[X, X]], vary=[{"dim": 2}, {"dim": -1}])
recipe("aten::select_scatter", [X, ([3], "x")], {"dim": 0, "index": 1}, vary=[{"dim": 1, "index": -1}])
recipe("aten::slice_scatter", [X, ([2, 2], "x")], {"dim": 1, "start": 0, "end": 2})
recipe("aten::diagonal_scatter", [([3, 3], "x"), ([3], "x")], vary=[{"offset": 0}])
recipe("aten::as_strided_scatter", [X, ([2], "x")], {"size": [2], "stride": [3], "storage_offset": 1})
recipe("aten::as_strided_copy", [X], {"size": [2, 2], "stride": [1, 2], "storage_offset": 0})
recipe("aten::select_backward", [([3], "x")], {"input_sizes": [2, 3], "dim": 0, "index": 1})
recipe("aten::slice_backward", [([2, 2], "x")], {"input_sizes": [2, 3], "dim": 1, "start": 0, "end": 2, "step": 1})
recipe("aten::new_zeros", [X], {"size": [4]})
recipe("aten::mm", [([2, 3], "x"), ([3, 4], "x")])
recipe("aten::bmm", [([2, 2, 3], "x"), ([2, 3, 2], "x")])
recipe("aten::matmul", [([2, 3], "x"), ([3, 4], "x")])
recipe("aten::addmm", [([2, 4], "x"), ([2, 3], "x"), ([3, 4], "x")],
       vary=[{"beta": 0.5, "alpha": 2}, {"beta": 2, "alpha": 3}, {"beta": 0, "alpha": 1}])
recipe("aten::linear", [([2, 3], "x"), ([4, 3], "x"), ([4], "x")],
       extra=[("1-D weight", [([2, 3], "x"), ([3], "x"), None], {}),
              ("1-D weight and bias", [([2, 3], "x"), ([3], "x"), ([], "x")], {})])
recipe("aten::conv1d", [([1, 2, 6], "x"), ([3, 2, 3], "x"), ([3], "x")],
       vary=[{"stride": [2], "padding": [1]}])
recipe("aten::conv2d", [([1, 2, 5, 5], "x"), ([3, 2, 3, 3], "x"), ([3], "x")],
       vary=[{"stride": [2, 2], "padding": [1, 1]}, {"dilation": [2, 2]}])
recipe("aten::conv_transpose2d.input", [([1, 2, 4, 4], "x"), ([2, 3, 3, 3], "x"), ([3], "x")],
       vary=[{"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1]}])
recipe("aten::max_pool2d_with_indices", [([1, 2, 5, 5], "x")], {"kernel_size": [2, 2]},
       vary=[{"stride": [1, 1], "padding": [1, 1]}, {"ceil_mode": True}])
recipe("aten::max_pool2d", [([1, 2, 5, 5], "x")], {"kernel_size": [2, 2]},
       vary=[{"stride": [1, 1], "padding": [1, 1]}, {"ceil_mode": True}])
recipe("aten::avg_pool2d", [([1, 2, 5, 5], "x")], {"kernel_size": [2, 2]},
       vary=[{"stride": [1, 1], "padding": [1, 1]}, {"ceil_mode": True, "count_include_pad": False}])
recipe("aten::adaptive_avg_pool2d", [([1, 2, 5, 5], "x")], {"output_size": [2, 3]},
       vary=[{"output_size": [1, 1]}, {"output_size": [0, 2]}, {"output_size": [3]}])
recipe("aten::native_batch_norm", [([2, 3, 2], "x"), ([3], "x"), ([3], "x"), ([3], "x"), ([3], "pos")],
       {"training": True, "momentum": 0.1, "eps": 1e-5}, vary=[{"training": False}])
recipe("aten::batch_norm", [([2, 3, 2], "x"), ([3], "x"), ([3], "x"), ([3], "x"), ([3], "pos")],
       vary=[{"training": True}],
       extra=[("training, one value per channel", [([1, 3], "x"), None, None, None, None], {"training": True})])
LN_EXTRA = [("constant rows", [([2, 4], [3.0] * 4 + [-1e3] * 4), None, None], {"normalized_shape": [4]}),
            ("row with inf", [([2, 4], [1.0, math.inf, 2.0, 3.0, 1.0, 2.0, 3.0, 4.0]), None, None],
             {"normalized_shape": [4]})]
recipe("aten::native_layer_norm", [X, ([3], "x"), ([3], "x")], {"normalized_shape": [3], "eps": 1e-5},
       extra=LN_EXTRA)
recipe("aten::layer_norm", [X, ([3], "x"), ([3], "x")], {"normalized_shape": [3]}, extra=LN_EXTRA)
recipe("aten::native_group_norm", [([2, 4, 3], "x"), ([4], "x"), ([4], "x")],
       {"N": 2, "C": 4, "HxW": 3, "group": 2, "eps": 1e-5})
recipe("aten::group_norm", [([2, 4, 3], "x"), ([4], "x"), ([4], "x")], {"num_groups": 2})
recipe("aten::softmax", [X], {"dim": 1}, vary=[{"dim": -1}, {"dim": 0}])
recipe("aten::log_softmax", [X], {"dim": 1}, vary=[{"dim": -1}, {"dim": 0}])
recipe("aten::mse_loss", [X, X], vary=[{"reduction": "none"}, {"reduction": "sum"}])
recipe("aten::nll_loss", [X, ([2], "idx3"), None], vary=[{"reduction": "none"}, {"reduction": "sum"}],
       extra=[("4-D input", [([1, 3, 2, 2], "x"), ([1, 2, 2], [0, 1, 2, 1], torch.int64), None], {}),
              ("1-D input", [([3], "x"), ([], [2], torch.int64), None], {})])
F64 = torch.float64
CE_X = ([3, 4], [0.3, -1.2, 2.0, 0.7, -0.4, 1.1, 0.0, -2.3, 1.6, 0.2, -0.9, 0.5], F64)
CE_W = ([4], [0.5, 1.0, 2.0, 1.5], F64)
recipe("aten::cross_entropy_loss", [X, ([2], "idx3"), None],
       vary=[{"reduction": "none"}, {"label_smoothing": 0.1}],
       extra=[("smoothing, weights, ignore_index, mean f64", [CE_X, ([3], [0, 1, 3], torch.int64), CE_W],
               {"label_smoothing": 0.2, "ignore_index": 1}),
              ("smoothing, weights, none f64", [CE_X, ([3], [2, 1, 3], torch.int64), CE_W],
               {"label_smoothing": 0.3, "reduction": "none", "ignore_index": 1}),
              ("smoothing, no weights, ignore_index, mean f64", [CE_X, ([3], [0, 1, 3], torch.int64), None],
               {"label_smoothing": 0.25, "ignore_index": 3}),
              ("smoothing, [N, C, d], sum f64",
               [([2, 3, 2], [0.1, -0.5, 1.2, 0.4, -1.0, 0.8, 2.1, 0.0, -0.3, 0.9, 0.6, -1.4], F64),
                ([2, 2], [0, 2, 1, 1], torch.int64), None], {"label_smoothing": 0.1, "reduction": "sum"}),
              ("smoothing 1, 1-D input f64", [([4], [0.5, -0.5, 1.5, 0.0], F64), ([], [2], torch.int64), None],
               {"label_smoothing": 1.0}),
              ("smoothing, every target ignored f64", [CE_X, ([3], [1, 1, 1], torch.int64), CE_W],
               {"label_smoothing": 0.2, "ignore_index": 1}),
              ("smoothing 1.5", [CE_X, ([3], [0, 1, 3], torch.int64), None], {"label_smoothing": 1.5}),
              ("smoothing -0.1", [CE_X, ([3], [0, 1, 3], torch.int64), None], {"label_smoothing": -0.1})])
recipe("aten::binary_cross_entropy_with_logits", [X, ([2, 3], "prob"), None, None],
       vary=[{"reduction": "none"}, {"reduction": "sum"}])
recipe("aten::embedding", [([4, 3], "x"), ([2, 2], "idx4")], vary=[{"padding_idx": 1}])
recipe("aten::index_select", [X, ([2], "idx2")], {"dim": 0}, vary=[{"dim": -1}],
       extra=[("0-dim self", [([], [2.5]), ([1], [0], torch.int64)], {"dim": 0}),
              ("0-dim self, 0-dim index", [([], [2.5]), ([], [0], torch.int64)], {"dim": 0}),
              ("0-dim index", [X, ([], [1], torch.int64)], {"dim": 1})])
recipe("aten::gather", [X, ([2, 2], "idx3")], {"dim": 1}, vary=[{"dim": -1}])
recipe("aten::scatter_add", [X, ([2, 2], "idx3"), ([2, 2], "x")], {"dim": 1})
recipe("aten::one_hot", [([4], "idx3")], vary=[{"num_classes": 5}])
recipe("aten::native_dropout", [X], {"p": 0.5, "train": False})
recipe("aten::dropout", [X], {"p": 0.5, "train": False})
recipe("aten::native_dropout_backward", [X, ([2, 3], "bool")], {"scale": 2.0},
       extra=[("inf where dropped", [([4], [math.inf, -math.inf, math.nan, 1.0]), ([4], [0, 0, 1, 1], torch.bool)], {})])
recipe("aten::logsumexp", [X], {"dim": [1]}, vary=[{"dim": [-1], "keepdim": True}, {"dim": [0, 1]}])
recipe("aten::max.dim", [X], {"dim": 1}, vary=[{"dim": -1, "keepdim": True}])
recipe("aten::min.dim", [X], {"dim": 1}, vary=[{"dim": -1, "keepdim": True}])
recipe("aten::_softmax_backward_data", [X, X], {"dim": 1, "input_dtype": torch.float32})
recipe("aten::_log_softmax_backward_data", [X, X], {"dim": 1, "input_dtype": torch.float32})
recipe("aten::mse_loss_backward", [([], "x"), X, X], {"reduction": "mean"})
recipe("aten::nll_loss_backward", [([], "x"), X, ([2], "idx3"), None], {"reduction": "mean", "ignore_index": -100})
recipe("aten::avg_pool2d_backward", [([1, 2, 2, 2], "x"), ([1, 2, 5, 5], "x")],
       {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "ceil_mode": False, "count_include_pad": True})
recipe("aten::_adaptive_avg_pool2d_backward", [([1, 2, 2, 2], "x"), ([1, 2, 5, 5], "x")])
recipe("aten::embedding_dense_backward", [([2, 2, 3], "x"), ([2, 2], "idx4")],
       {"num_weights": 4, "padding_idx": -1, "scale_grad_by_freq": False})

REDUCE_DIMS = [{"dim": [1]}, {"dim": [-1], "keepdim": True}, {"dim": [0, 1]}]
for r in ["aten::argmax", "aten::argmin"]:  # PyTorch's take one dim or none
    recipe(r, [X], vary=[{"dim": [1]}, {"dim": [-1], "keepdim": True}, {"dim": [0]}])
for r in ["aten::sum.dim_IntList", "aten::mean.dim", "aten::prod.dim_IntList", "aten::amax",
          "aten::amin", "aten::var.correction", "aten::std.correction"]:
    recipe(r, [X], vary=REDUCE_DIMS + ([{"dim": [1], "correction": 0}] if "correction" in r else []))
recipe("aten::linalg_vector_norm", [X], vary=REDUCE_DIMS + [{"ord": 1}, {"ord": math.inf}, {"ord": 0.5}, {"ord": 3}])

# Derivatives at the points where PyTorch picks a convention: relu and abs at
# 0, ties of maximum/minimum, amax/amin and max/min.dim, clamp at its bounds,
# a norm of zeros. The ids end in f64, so the gradients are asked for too.
AT_ZERO = ([2, 3], [-1.0, -0.0, 0.0, 0.5, 2.0, -3.0], F64)
TIES = ([2, 3], [1.0, 2.0, 2.0, -1.0, -1.0, 0.5], F64)
TIES_OTHER = ([2, 3], [1.0, 0.0, 2.0, -1.0, 0.5, 0.5], F64)
for name in ["aten::relu", "aten::abs"]:
    recipe(name, [X], extra=[("at 0 f64", [AT_ZERO], {})])
for name in ["aten::maximum", "aten::minimum"]:
    recipe(name, [X, X], extra=[("ties f64", [TIES, TIES_OTHER], {})])
for name in ["aten::amax", "aten::amin"]:
    R[name]["extra"] += [("ties f64", [TIES], {"dim": [1]}), ("all tied f64", [([2, 2], [3.0] * 4, F64)], {})]
for name in ["aten::max.dim", "aten::min.dim"]:
    R[name]["extra"] += [("ties f64", [TIES], {"dim": 1})]
R["aten::clamp"]["extra"] += [("at the bounds f64", [([2, 3], [-0.5, 1.0, 0.3, -2.0, 2.0, 1.0], F64)],
                               {"min": -0.5, "max": 1.0})]
R["aten::linalg_vector_norm"]["extra"] += [("zeros f64", [([2, 3], [0.0] * 6, F64)], {}),
                                           ("a zero row f64", [([2, 3], [0.0] * 3 + [1.0, -2.0, 2.0], F64)],
                                            {"dim": [1]})]

# ---- calling PyTorch ------------------------------------------------------------


def torch_call(op, tensors, attrs):
    """PyTorch's op of tjit's name, with tjit's schema adapted where PyTorch's
    differs (str reductions are PyTorch enums, int[] dims of argmax are int?)."""
    name = op["name"]
    base, _, overload = name.split("::")[1].partition(".")
    kw = dict(attrs)
    if "reduction" in kw:
        kw["reduction"] = REDUCTION[kw["reduction"]]
    if name in ("aten::argmax", "aten::argmin"):
        d = kw.pop("dim", [])
        if len(d) > 1:
            raise RuntimeError("tjit: argmax over several dims has no PyTorch form")
        kw["dim"] = d[0] if d else None
    if name in ("aten::var.correction", "aten::std.correction") or name.startswith("aten::sum.") or \
            name.startswith("aten::mean.") or name == "aten::linalg_vector_norm":
        if kw.get("dim", []) == []:
            kw["dim"] = None
    if name == "aten::prod.dim_IntList":
        d = kw.pop("dim", [])
        keep = kw.pop("keepdim", False)
        x = tensors[0]
        if not d:
            r = A.prod.default(x)
            return r.reshape([1] * x.dim()) if keep else r
        for k in sorted((i % max(x.dim(), 1) for i in d), reverse=True):
            x = A.prod.dim_int(x, k, keep)
        return x
    if name == "aten::amax" or name == "aten::amin":
        kw.setdefault("dim", [])
    if name == "aten::maximum.Scalar":
        return A.maximum(tensors[0], torch.tensor(kw["other"]))
    if name == "aten::minimum.Scalar":
        return A.minimum(tensors[0], torch.tensor(kw["other"]))
    if name in ("aten::logical_and.Scalar", "aten::logical_or.Scalar"):
        f = A.logical_and if "and" in name else A.logical_or
        return f(tensors[0], torch.tensor(kw["other"]))
    if name == "aten::sum_to_size":
        return tensors[0].sum_to_size(kw["size"])
    if name == "aten::native_dropout":
        return A.native_dropout(tensors[0], kw["p"], kw["train"])
    if name == "aten::dropout":
        return A.dropout(tensors[0], kw["p"], kw["train"])
    if name == "aten::new_zeros":
        return A.new_zeros(tensors[0], kw["size"])
    if name == "aten::max_pool2d":
        return A.max_pool2d(tensors[0], **kw)
    if name in ("aten::var.correction", "aten::std.correction"):
        kw.setdefault("correction", 1)
    if name == "aten::nll_loss_backward":  # PyTorch's takes the total weight the forward summed
        tgt = tensors[2]
        kw["total_weight"] = torch.tensor(float((tgt != kw.get("ignore_index", -100)).sum()),
                                          dtype=tensors[1].dtype)
    if name == "aten::batch_norm":
        kw.setdefault("training", False)
        kw.setdefault("momentum", 0.1)
        kw.setdefault("eps", 1e-5)
        kw["cudnn_enabled"] = False
    if name == "aten::avg_pool2d_backward":
        kw["divisor_override"] = None
    # positional up to the last tensor (attributes between tensors in place), the rest by name
    last = max(i for i, a in enumerate(op["args"]) if is_tensor(a["type"]))
    pos, it = [], iter(tensors)
    for a in op["args"][:last + 1]:
        if is_tensor(a["type"]):
            pos.append(next(it))
        elif a["name"] in kw:
            pos.append(kw.pop(a["name"]))
        else:
            raise RuntimeError(f"tjit: no value for {a['name']} before a tensor")
    packet = getattr(A, base)
    fn = getattr(packet, overload) if overload else packet
    return fn(*pos, **kw)


def grad_case(op, tensors, attrs, result, rng, n_asked=None):
    """torch.autograd's gradients of sum(out_k * seed_k) for the f64 inputs,
    or None when the op is not differentiable there. In-place ops are left to
    their out-of-place forms. Where PyTorch has no derivative for some input
    (nll_loss's weight, batch_norm's running stats, written in place), the
    last f64 inputs are left out one by one until it has; theirs are none."""
    if op["name"].endswith("_") or "_." in op["name"] or not result:
        return None
    ins, flat, all_f64 = [], [], []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.dtype == torch.float64:
            u = t.clone().requires_grad_(n_asked is None or len(all_f64) < n_asked)
            all_f64.append(u)
            if u.requires_grad:
                flat.append(u)
            ins.append(u)
        elif isinstance(t, list):
            ins.append([u.clone().requires_grad_(True) if u.dtype == torch.float64 else u for u in t])
            flat += [u for u in ins[-1] if u.requires_grad]
            all_f64 += [u for u in ins[-1] if u.requires_grad]
        else:
            ins.append(t)
    if not flat:
        return None
    try:
        r = torch_call(op, ins, attrs)
        outs = [r] if isinstance(r, torch.Tensor) else list(r)
        pairs = [(o, torch.tensor(np.round(rng.uniform(-1, 1, max(o.numel(), 1)), 2)[:o.numel()],
                                  dtype=o.dtype).reshape(o.shape))
                 for o in outs if o.dtype.is_floating_point and o.requires_grad]
        if not pairs:
            return None
        grads = torch.autograd.grad([o for o, _ in pairs], flat, [g for _, g in pairs],
                                    allow_unused=True)
    except Exception:
        if len(flat) > 1:
            return grad_case(op, tensors, attrs, result, rng, n_asked=len(flat) - 1)
        return None
    seeds = [next((g for o2, g in pairs if o2 is o), None) for o in outs]
    by_input = dict(zip([id(u) for u in flat], grads))
    return seeds, [by_input.get(id(u)) for u in all_f64]


def run_case(op, tensors, attrs):
    try:
        with torch.no_grad():
            r = torch_call(op, [t.clone() if isinstance(t, torch.Tensor) else
                                [u.clone() for u in t] if isinstance(t, list) else t
                                for t in tensors], attrs)
    except Exception as e:
        if os.environ.get("GOLDEN_DEBUG"):
            print(f"{op['name']}: refused: {str(e).splitlines()[0][:160]}", file=sys.stderr)
        return None
    if isinstance(r, torch.Tensor):
        return [r]
    return list(r)

# ---- the sweep -------------------------------------------------------------------


def base_attrs(op, rec):
    attrs = {}
    for a in op["args"]:
        if is_tensor(a["type"]) or a["type"].startswith("Generator"):
            continue
        if a["name"] in rec["attrs"]:
            attrs[a["name"]] = rec["attrs"][a["name"]]
    return attrs


def make_tensors(rng, op, rec, dtype, shape_of=None, special_vals=False):
    out = []
    for k, spec in enumerate(rec["tensors"]):
        if spec is None:
            out.append(None)
            continue
        if isinstance(spec, list):
            out.append([values(rng, s, dtype, role) for s, role in spec])
            continue
        sizes, role = spec
        if shape_of:
            sizes = shape_of(k, sizes, role)
        d = dtype if role in ("x", "pos", "prob") else (torch.bool if role == "bool" else torch.int64)
        t = values(rng, sizes, d, role)
        if special_vals and role == "x" and d.is_floating_point and t.numel():
            t = special(d, t.numel()).reshape(t.shape)
        out.append(t)
    return out


def missing_attrs(op, attrs):
    return [a["name"] for a in op["args"] if not is_tensor(a["type"]) and a["default"] is None
            and not a["type"].startswith("Generator") and a["name"] not in attrs]


def cases_for(op):
    name = op["name"]
    rec = R.get(name)
    if rec is None:
        n_t = sum(1 for a in op["args"] if is_tensor(a["type"]))
        rec = {"tensors": [X] * n_t, "attrs": {}, "vary": [], "float_only": False, "extra": []}
    attrs0 = base_attrs(op, rec)
    # Scalar attributes: integer and float variants of each
    scalar_args = [a for a in op["args"] if a["type"] in ("Scalar", "Scalar?")]
    extra = []
    for a in scalar_args:
        if a["name"] in ("min", "max"):
            continue
        for v in ([2, 2.0, -1, 0.5, True] if a["name"] != "exponent" else [2, 2.0, -1, -1.0, 0.5, 3, -0.5]):
            extra.append({a["name"]: v})
    if scalar_args and not attrs0 and not rec["attrs"]:
        for a in scalar_args:
            if a["default"] is None and a["name"] not in attrs0:
                attrs0[a["name"]] = 2
    out = []
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dtypes = ["f32", "f64", "i64", "bool"]
    for dn in dtypes:
        out.append((f"dtype={dn}", make_tensors(rng, op, rec, DT[dn]), dict(attrs0)))
    for dn in ["f32", "f64"]:
        out.append((f"special {dn}", make_tensors(rng, op, rec, DT[dn], special_vals=True), dict(attrs0)))
    for i, v in enumerate(rec["vary"] + extra):
        for dn in ["f32", "i64"]:
            a = dict(attrs0)
            a.update(v)
            out.append((f"attrs#{i} {dn}", make_tensors(rng, op, rec, DT[dn]), a))
    for i, v in enumerate(extra):  # special values meet every Scalar variant
        a = dict(attrs0)
        a.update(v)
        out.append((f"special scalar#{i} f32", make_tensors(rng, op, rec, DT["f32"], special_vals=True), a))
    for cid, specs, a in rec.get("extra", []):
        ts = []
        for spec in specs:
            if spec is None:
                ts.append(None)
            elif isinstance(spec[1], str):
                ts.append(values(rng, spec[0], DT["f32"], spec[1]) if spec[1] != "idx" else None)
            else:
                dt = spec[2] if len(spec) > 2 else torch.float32
                ts.append(torch.tensor(spec[1], dtype=dt).reshape(spec[0]))
        b = dict(attrs0)
        b.update(a)
        out.append((cid, ts, b))
    # shapes: only for the simple recipes, where every tensor is a [2, 3] x
    simple = all(s == X for s in rec["tensors"])
    if simple:
        for label, shp in [("0-dim", []), ("size-0", [0, 3]), ("size-1", [1, 3])]:
            out.append((f"shape {label}", make_tensors(rng, op, rec, DT["f32"], lambda k, s, r: shp), dict(attrs0)))
        if len(rec["tensors"]) >= 2:
            out.append(("broadcast [3]", make_tensors(rng, op, rec, DT["f32"], lambda k, s, r: [3] if k == 1 else s), dict(attrs0)))
            out.append(("broadcast 0-dim", make_tensors(rng, op, rec, DT["f64"], lambda k, s, r: [] if k == 1 else s), dict(attrs0)))
            for d0, d1 in [("f32", "f64"), ("i64", "f32"), ("bool", "i64"), ("f64", "bool")]:
                ts = make_tensors(rng, op, rec, DT[d0])
                ts[1] = ts[1].to(DT[d1])
                out.append((f"mixed {d0},{d1}", ts, dict(attrs0)))
    else:
        # mixed dtypes for recipes with several floating tensors
        fl = [k for k, s in enumerate(rec["tensors"]) if isinstance(s, tuple) and s[1] in ("x", "pos", "prob")]
        if len(fl) >= 2:
            ts = make_tensors(rng, op, rec, DT["f32"])
            ts[fl[1]] = ts[fl[1]].double()
            out.append(("mixed f32,f64", ts, dict(attrs0)))
    return out


def skipped(op):
    n = op["name"]
    return n.startswith("tjit::") or op["kind"] == "random" and n not in R or \
        n in ("aten::native_batch_norm_backward", "aten::native_layer_norm_backward",
              "aten::native_group_norm_backward", "aten::max_pool2d_with_indices_backward",
              "aten::binary_cross_entropy_with_logits_backward")


def main():
    tjit = sys.argv[1] if len(sys.argv) > 1 else "build/tjit"
    ops = read_table(tjit)
    lines, n_cases, n_refused, n_grads = [], 0, 0, 0
    for op in ops:
        if skipped(op):
            continue
        for cid, tensors, attrs in cases_for(op):
            if missing_attrs(op, attrs):
                print(f"{op['name']} {cid}: no value for {missing_attrs(op, attrs)}", file=sys.stderr)
            result = run_case(op, tensors, attrs)
            lines.append(f"case {op['name']} {cid}")
            for t in tensors:
                if t is None:
                    lines.append("in none")
                elif isinstance(t, list):
                    lines.append(f"list {len(t)}")
                    lines += ["in " + fmt_tensor(u) for u in t]
                else:
                    lines.append("in " + fmt_tensor(t))
            for k, v in attrs.items():
                lines.append(f"attr {k} {fmt_attr(v)}")
            if result is None:
                lines.append("refused")
                n_refused += 1
            else:
                lines += ["out " + fmt_tensor(r) for r in result]
                g = grad_case(op, tensors, attrs, result, np.random.default_rng(n_cases)) \
                    if cid == "dtype=f64" or cid.split()[-1] == "f64" else None
                if g:
                    seeds, grads = g
                    lines += ["seed " + (fmt_tensor(t) if t is not None else "none") for t in seeds]
                    lines += ["grad " + (fmt_tensor(t) if t is not None else "none") for t in grads]
                    n_grads += 1
            lines.append("end")
            n_cases += 1
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{n_cases} cases ({n_refused} refused by PyTorch, {n_grads} with gradients) over "
          f"{len(ops)} ops -> {OUT}")


if __name__ == "__main__":
    main()
