/* graph_fuzz_ops.c — the models of the whole-table graph fuzzer
 * (graph_fuzz.h): each step picks an op of the table and the builder of its
 * family chooses operands from the values made so far (reshaped to the rank
 * the op wants), parameters cut from the bank input, index and target
 * constants in range, and attributes the op accepts. Calls the op refuses
 * are skipped, so the draws only have to be plausible, not always valid. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/graph_fuzz.h"

enum { POOL = 48, STEPS_MAX = 16 };

typedef struct gf {
    uint64_t s;
    const tt_gf_model *m;
    tj_tensor *bank;
    tj_tensor *v[POOL];
    int n;
} gf;

static int64_t pick(gf *f, int64_t n) { return n <= 0 ? 0 : (int64_t)(tt_splitmix64(&f->s) % (uint64_t)n); }
static bool coin(gf *f, int in) { return pick(f, in) == 0; }

static void push(gf *f, tj_tensor *t) {
    if (t && f->n < POOL) f->v[f->n++] = t;
}
static void push_all(gf *f, tj_tensor **t, int n) {
    for (int i = 0; i < n; i++) push(f, t[i]);
}

/* A value of the pool, mostly a recent one (chains), of a float dtype. */
static tj_tensor *floaty(gf *f) {
    for (int tries = 0; tries < 8; tries++) {
        tj_tensor *t = f->v[coin(f, 3) ? pick(f, f->n) : f->n - 1 - pick(f, f->n < 4 ? f->n : 4)];
        if (tj_dtype_is_float(tj_tensor_dtype(t))) return t;
    }
    return f->v[0]; /* an input: always float */
}
static tj_tensor *any_value(gf *f) {
    if (f->m->smooth) return floaty(f);
    return f->v[coin(f, 2) ? pick(f, f->n) : f->n - 1 - pick(f, f->n < 4 ? f->n : 4)];
}

static int64_t numel_of(const int64_t *sz, int nd) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sz[d];
    return n;
}

/* A parameter of the given sizes: a piece of the bank (a graph value, with a
 * gradient), or a constant when the bank is too small. */
static tj_tensor *param_or_constant(gf *f, const int64_t *sz, int nd, bool constant) {
    int64_t n = numel_of(sz, nd), bank = tj_sizes(f->bank)[0];
    if (n <= bank && !constant) {
        tj_tensor *piece = tj_narrow(f->bank, 0, pick(f, bank - n + 1), n);
        return tj_view(piece, sz, nd);
    }
    double vals[4096];
    if (n > 4096) return NULL;
    for (int64_t i = 0; i < n; i++) vals[i] = (double)pick(f, 2001) / 1000.0 - 1.0;
    tj_tensor *c = tj_from_array(vals, sz, nd, TJ_F64);
    return f->m->dt == TJ_F64 ? c : tj_to_dtype(c, f->m->dt);
}
static tj_tensor *param(gf *f, const int64_t *sz, int nd) { return param_or_constant(f, sz, nd, false); }

/* An i64 constant with values in [lo, hi]. */
static tj_tensor *ints(gf *f, const int64_t *sz, int nd, int64_t lo, int64_t hi) {
    int64_t n = numel_of(sz, nd), vals[1024];
    if (n > 1024) return NULL;
    for (int64_t i = 0; i < n; i++) vals[i] = lo + pick(f, hi - lo + 1);
    return tj_from_array(vals, sz, nd, TJ_I64);
}

/* t with rank r: leading dims merged, or size-1 dims put in front. */
static tj_tensor *as_rank(tj_tensor *t, int r) {
    while (t && tj_ndim(t) < r) t = tj_unsqueeze(t, 0);
    if (t && tj_ndim(t) > r) t = tj_flatten(t, 0, tj_ndim(t) - r);
    return t;
}

/* A random set of distinct dims of t (possibly none: all of them). */
static int some_dims(gf *f, tj_tensor *t, int64_t *dims) {
    int nd = tj_ndim(t), n = 0;
    for (int d = 0; d < nd; d++)
        if (coin(f, 2)) dims[n++] = coin(f, 3) ? d - nd : d;
    return n;
}
static int64_t a_dim(gf *f, tj_tensor *t) {
    int nd = tj_ndim(t) ? tj_ndim(t) : 1;
    return pick(f, 2 * nd) - nd; /* negative dims too */
}
static const char *reduction(gf *f) {
    static const char *r[] = {"none", "mean", "sum"};
    return r[pick(f, 3)];
}

/* ---- pointwise, scalar forms and in-place forms ------------------------------ */

static bool smooth_pointwise(const tj_op_info *op) {
    /* autodiff takes no in-place op on a value that needs a gradient */
    if (op->inplace_of >= 0 || tj_op_schema(op)->mutates_self) return false;
    switch (op->inplace_of >= 0 ? op->inplace_of : op->id) {
    case TJ_OP_neg: case TJ_OP_exp: case TJ_OP_sin: case TJ_OP_cos: case TJ_OP_tanh:
    case TJ_OP_sigmoid: case TJ_OP_silu: case TJ_OP_gelu: case TJ_OP_erf: case TJ_OP_add:
    case TJ_OP_sub: case TJ_OP_mul: case TJ_OP_add_scalar: case TJ_OP_sub_scalar:
    case TJ_OP_mul_scalar: case TJ_OP_div_scalar: case TJ_OP_pow_scalar: case TJ_OP_lerp:
    case TJ_OP_lerp_tensor: case TJ_OP_addcmul: case TJ_OP_clone: case TJ_OP_where:
    case TJ_OP_zeros_like: case TJ_OP_copy_: case TJ_OP_to_dtype:
        return true;
    default: return false;
    }
}

/* A second operand for a: one of the same shape when the pool has it. */
static tj_tensor *partner(gf *f, tj_tensor *a) {
    for (int tries = 0; tries < 6; tries++) {
        tj_tensor *b = any_value(f);
        if (tj_ndim(b) == tj_ndim(a) && !memcmp(tj_sizes(a), tj_sizes(b), sizeof(int64_t) * (size_t)tj_ndim(a)))
            return b;
    }
    return coin(f, 2) ? any_value(f) : a;
}

static void pointwise(gf *f, const tj_op_info *op) {
    const tj_schema *sc = tj_op_schema(op);
    bool inplace = op->inplace_of >= 0 || sc->mutates_self;
    tj_tensor *args[3];
    args[0] = any_value(f);
    for (int i = 1; i < sc->n_tensor_args; i++) args[i] = partner(f, args[0]);
    if (op->id == TJ_OP_where) args[0] = tj_gt_scalar(args[1], (double)pick(f, 3) - 1.0);
    tj_attr attrs[4];
    for (int a = 0; a < sc->n_attrs; a++) {
        const tj_arg *arg = &sc->args[sc->attr_pos[a]];
        attrs[a] = arg->def;
        if (arg->type == TJ_ARG_FLOAT) attrs[a].f = coin(f, 2) ? 0.5 : (double)(pick(f, 5) - 2);
        if (arg->type == TJ_ARG_FLOAT_OPT) attrs[a].f = coin(f, 3) ? TJ_NONE : (double)pick(f, 3) - 1.0;
        if (arg->type == TJ_ARG_SCALAR || arg->type == TJ_ARG_SCALAR_OPT) {
            /* integers and floats alike: they type the result differently */
            int64_t whole = pick(f, 5) - 2;
            attrs[a].scalar = coin(f, 2) ? tj_scalar_float(coin(f, 2) ? 0.5 : (double)whole) : tj_scalar_int(whole);
            if (arg->type == TJ_ARG_SCALAR_OPT && coin(f, 3)) attrs[a].scalar = tj_scalar_none();
            if (f->m->smooth && (op->id == TJ_OP_div_scalar || op->id == TJ_OP_div_scalar_))
                attrs[a].scalar = tj_scalar_int(2);
            if (f->m->smooth && (op->id == TJ_OP_pow_scalar || op->id == TJ_OP_pow_scalar_))
                attrs[a].scalar = tj_scalar_int(pick(f, 3) + 1);
        }
        if (arg->type == TJ_ARG_STR && arg->choices) attrs[a].s = coin(f, 2) ? "tanh" : "none";
        if (arg->type == TJ_ARG_DTYPE) {
            static const tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
            attrs[a].dtype = f->m->smooth ? f->m->dt : dts[pick(f, 4)];
        }
    }
    tj_tensor *target = NULL;
    if (inplace) {
        /* on a copy (never on an input), often through a view of it, or a
         * view of a view: the tracer records those as scatters */
        target = tj_clone(args[0]);
        args[0] = target;
        for (int depth = 0; args[0] && depth < 2 && coin(f, 2); depth++) {
            tj_tensor *v = args[0];
            int nd = tj_ndim(v);
            int64_t n0 = nd ? tj_sizes(v)[0] : 0;
            switch (pick(f, 4)) {
            case 0: if (nd >= 2) v = tj_transpose(v, 0, 1); break;
            case 1: if (n0 > 1) v = tj_select(v, 0, pick(f, n0)); break;
            case 2: if (n0 > 1) v = tj_slice(v, 0, pick(f, n0), INT64_MAX, 1 + pick(f, 2)); break;
            default: if (nd >= 2) v = tj_diagonal(v, 0, 0, 1); break;
            }
            args[0] = v;
        }
        if (!args[0]) return;
    }
    tj_tensor *res;
    if (tj_invoke(op->id, args, sc->n_tensor_args, attrs, sc->n_attrs, &res, 1) == 1) {
        push(f, res);
        /* the base read after a write through its view */
        if (target && res != target && coin(f, 2)) push(f, target);
    }
}

/* ---- reductions ---------------------------------------------------------------- */

static void reduce(gf *f, const tj_op_info *op) {
    tj_tensor *x = f->m->smooth ? floaty(f) : any_value(f), *r = NULL, *two[2];
    int64_t dims[TJ_MAX_DIMS];
    int nd = some_dims(f, x, dims);
    bool keep = coin(f, 2);
    switch (op->id) {
    case TJ_OP_sum: r = tj_sum(x, dims, nd, keep); break;
    case TJ_OP_mean: r = tj_mean(x, dims, nd, keep); break;
    case TJ_OP_prod: r = tj_prod(x, dims, nd, keep); break;
    case TJ_OP_amax: r = tj_amax(x, dims, nd, keep); break;
    case TJ_OP_amin: r = tj_amin(x, dims, nd, keep); break;
    case TJ_OP_argmax: r = tj_argmax(x, dims, nd > 1 ? 1 : nd, keep); break;
    case TJ_OP_argmin: r = tj_argmin(x, dims, nd > 1 ? 1 : nd, keep); break;
    case TJ_OP_var: r = tj_var(x, dims, nd, f->m->smooth ? 0 : pick(f, 2), keep); break;
    case TJ_OP_std: r = tj_std(x, dims, nd, pick(f, 2), keep); break;
    case TJ_OP_linalg_vector_norm: {
        static const double ords[] = {2, 1, 3, INFINITY, 0, -INFINITY};
        r = tj_linalg_vector_norm(x, f->m->smooth ? 2 : ords[pick(f, 6)], dims, nd, keep);
        break;
    }
    case TJ_OP_logsumexp: r = tj_logsumexp(x, dims, nd, keep); break;
    case TJ_OP_sum_to_size: {
        int xd = tj_ndim(x), drop = (int)pick(f, xd + 1);
        int64_t sz[TJ_MAX_DIMS];
        for (int d = drop; d < xd; d++) sz[d - drop] = coin(f, 2) ? 1 : tj_sizes(x)[d];
        r = tj_sum_to_size(x, sz, xd - drop);
        break;
    }
    case TJ_OP_max_dim:
    case TJ_OP_min_dim: {
        int n = (op->id == TJ_OP_max_dim ? tj_max_dim : tj_min_dim)(x, a_dim(f, x), keep, two, 2);
        if (n == 2) push_all(f, two, f->m->smooth ? 1 : 2);
        return;
    }
    default: return;
    }
    push(f, r);
}

/* ---- views and shape ops ------------------------------------------------------- */

static void view_or_shape(gf *f, const tj_op_info *op) {
    tj_tensor *x = any_value(f), *r = NULL, *many[8];
    int xd = tj_ndim(x), n;
    const int64_t *xs = tj_sizes(x);
    int64_t sz[TJ_MAX_DIMS + 1], d = a_dim(f, x);
    switch (op->id) {
    case TJ_OP_view:
    case TJ_OP_reshape: { /* merge two neighbours, or split one into (1, n), or -1 */
        int k = 0;
        for (int i = 0; i < xd; i++) sz[k++] = xs[i];
        if (k >= 2 && coin(f, 2)) {
            int at = (int)pick(f, k - 1);
            sz[at] *= sz[at + 1];
            memmove(sz + at + 1, sz + at + 2, sizeof(int64_t) * (size_t)(k - at - 2));
            k--;
        } else if (k < TJ_MAX_DIMS) {
            int at = (int)pick(f, k + 1);
            memmove(sz + at + 1, sz + at, sizeof(int64_t) * (size_t)(k - at));
            sz[at] = 1;
            k++;
        }
        if (k && coin(f, 3)) sz[pick(f, k)] = -1;
        r = op->id == TJ_OP_view ? tj_view(x, sz, k) : tj_reshape(x, sz, k);
        break;
    }
    case TJ_OP_squeeze: r = tj_squeeze(x); break;
    case TJ_OP_squeeze_dim: r = tj_squeeze_dim(x, d); break;
    case TJ_OP_unsqueeze: r = tj_unsqueeze(x, pick(f, 2 * xd + 2) - xd - 1); break;
    case TJ_OP_transpose: r = tj_transpose(x, d, a_dim(f, x)); break;
    case TJ_OP_t: r = tj_t(x); break;
    case TJ_OP_permute: {
        for (int i = 0; i < xd; i++) sz[i] = i;
        for (int i = xd - 1; i > 0; i--) {
            int j = (int)pick(f, i + 1);
            int64_t tmp = sz[i];
            sz[i] = sz[j];
            sz[j] = tmp;
        }
        r = tj_permute(x, sz, xd);
        break;
    }
    case TJ_OP_expand: {
        int lead = xd < TJ_MAX_DIMS && coin(f, 2);
        if (lead) sz[0] = 2;
        for (int i = 0; i < xd; i++) sz[lead + i] = xs[i] == 1 && coin(f, 2) ? 3 : coin(f, 4) ? -1 : xs[i];
        r = tj_expand(x, sz, xd + lead);
        break;
    }
    case TJ_OP_select: r = tj_select(x, d, xd ? pick(f, 2 * xs[(d + xd) % xd] + 1) - xs[(d + xd) % xd] : 0); break;
    case TJ_OP_narrow: {
        int64_t s = xd ? xs[(d + xd) % xd] : 0, start = pick(f, s + 1);
        r = tj_narrow(x, d, start, pick(f, s - start + 1));
        break;
    }
    case TJ_OP_slice: {
        int64_t s = xd ? xs[(d + xd) % xd] : 0;
        int64_t end = coin(f, 3) ? INT64_MAX : pick(f, 2 * s + 2) - s;
        r = tj_slice(x, d, pick(f, 2 * s + 1) - s, end, 1 + pick(f, 3));
        break;
    }
    case TJ_OP_chunk: n = tj_chunk(x, 1 + pick(f, 3), d, many, 8); goto list;
    case TJ_OP_split: n = tj_split(x, 1 + pick(f, 3), d, many, 8); goto list;
    case TJ_OP_unbind: n = tj_unbind(x, d, many, 8); goto list;
    case TJ_OP_split_with_sizes: {
        int64_t s = xd ? xs[(d + xd) % xd] : 0, parts[8];
        int k = 0;
        while (s > 0 && k < 7) {
            parts[k] = 1 + pick(f, s);
            s -= parts[k++];
        }
        if (s > 0) parts[k++] = s;
        n = tj_split_with_sizes(x, parts, k, d, many, 8);
        goto list;
    }
    case TJ_OP_flatten: r = tj_flatten(x, d, a_dim(f, x)); break;
    case TJ_OP_contiguous: r = tj_contiguous(coin(f, 2) && xd >= 2 ? tj_transpose(x, 0, -1) : x); break;
    case TJ_OP_cat:
    case TJ_OP_stack: {
        tj_tensor *list[3] = {x, partner(f, x), coin(f, 2) ? x : partner(f, x)};
        int k = 1 + (int)pick(f, 3);
        r = op->id == TJ_OP_cat ? tj_cat(list, k, d) : tj_stack(list, k, pick(f, 2 * xd + 2) - xd - 1);
        break;
    }
    case TJ_OP_select_backward: {
        if (!xd) return;
        int64_t dd = (d + xd) % xd, idx = pick(f, xs[dd]);
        tj_tensor *g = tj_select(x, dd, idx);
        if (g) r = tj_select_backward(g, xs, xd, dd, idx);
        break;
    }
    case TJ_OP_slice_backward: {
        if (!xd) return;
        int64_t dd = (d + xd) % xd, start = pick(f, xs[dd] + 1), end = start + pick(f, xs[dd] - start + 1),
                step = 1 + pick(f, 2);
        tj_tensor *g = tj_slice(x, dd, start, end, step);
        if (g) r = tj_slice_backward(g, xs, xd, dd, start, end, step);
        break;
    }
    case TJ_OP_diagonal:
    case TJ_OP_diagonal_scatter: {
        if (xd < 2) return;
        int64_t d1 = (d + xd) % xd, d2 = (d1 + 1 + pick(f, xd - 1)) % xd, k = pick(f, 5) - 2;
        if (op->id == TJ_OP_diagonal) {
            r = tj_diagonal(x, k, d1, d2);
            break;
        }
        tj_tensor *src = tj_diagonal(partner(f, x), k, d1, d2); /* the written part's sizes */
        if (src) r = tj_diagonal_scatter(x, src, k, d1, d2);
        break;
    }
    case TJ_OP_select_scatter: {
        if (!xd) return;
        int64_t dd = (d + xd) % xd, idx = pick(f, 2 * xs[dd]) - xs[dd];
        tj_tensor *src = xs[dd] ? tj_select(partner(f, x), dd, idx) : NULL;
        if (src) r = tj_select_scatter(x, src, dd, idx);
        break;
    }
    case TJ_OP_slice_scatter: {
        if (!xd) return;
        int64_t dd = (d + xd) % xd, start = pick(f, xs[dd] + 1), end = start + pick(f, xs[dd] - start + 1),
                step = 1 + pick(f, 2);
        tj_tensor *src = tj_slice(partner(f, x), dd, start, end, step);
        if (src) r = tj_slice_scatter(x, src, dd, start, end, step);
        break;
    }
    case TJ_OP_as_strided_copy:
    case TJ_OP_as_strided_scatter: {
        /* a window of rows: size [r, c] with strides [c_x, 1] from a row-major
         * offset, picked to stay inside x */
        int64_t n = tj_numel(x), cols = xd ? xs[xd - 1] : 1;
        if (!n || !cols) return;
        int64_t rows = n / cols, nr = 1 + pick(f, rows), nc = 1 + pick(f, cols);
        int64_t size[2] = {nr, nc}, stride[2] = {cols, 1};
        int64_t off = pick(f, cols - nc + 1) + cols * pick(f, rows - nr + 1);
        if (op->id == TJ_OP_as_strided_copy) {
            r = tj_as_strided_copy(x, size, 2, stride, 2, off);
            break;
        }
        tj_tensor *src = tj_as_strided_copy(partner(f, x), size, 2, stride, 2, off);
        if (src) r = tj_as_strided_scatter(x, src, size, 2, stride, 2, off);
        break;
    }
    case TJ_OP_new_zeros: {
        int k = (int)pick(f, 4);
        for (int i = 0; i < k; i++) sz[i] = 1 + pick(f, 3);
        r = tj_new_zeros(x, sz, k);
        break;
    }
    default: return;
    }
    push(f, r);
    return;
list:
    if (n > 0) push_all(f, many, n < 3 ? n : 3);
}

/* ---- matmul, linear, convolutions ----------------------------------------------- */

static void matmul_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = floaty(f), *r = NULL;
    int64_t n = 1 + pick(f, 4);
    switch (op->id) {
    case TJ_OP_mm:
    case TJ_OP_addmm: {
        tj_tensor *a = as_rank(x, 2);
        int64_t w[2] = {tj_sizes(a)[1], n}, b[2] = {tj_sizes(a)[0], n};
        tj_tensor *wt = param(f, w, 2);
        if (op->id == TJ_OP_mm) r = tj_mm(a, wt);
        else {
            bool row = coin(f, 2); /* a bias [n], broadcast, or a whole [m, n] */
            tj_tensor *bias = param(f, row ? b + 1 : b, row ? 1 : 2);
            double beta = (double)pick(f, 3) * 0.5, alpha = coin(f, 2) ? 1.0 : -0.5;
            r = tj_addmm(bias, a, wt, beta, alpha);
        }
        break;
    }
    case TJ_OP_bmm: {
        tj_tensor *a = as_rank(x, 3);
        int64_t w[3] = {tj_sizes(a)[0], tj_sizes(a)[2], n};
        r = tj_bmm(a, param(f, w, 3));
        break;
    }
    case TJ_OP_matmul: {
        int xd = tj_ndim(x);
        if (!xd) x = tj_unsqueeze(x, 0), xd = 1;
        int wd = 1 + (int)pick(f, 3);
        int64_t w[3], k = tj_sizes(x)[xd - 1];
        if (wd == 1) w[0] = k;
        else if (wd == 2) w[0] = k, w[1] = n;
        else w[0] = xd >= 3 ? tj_sizes(x)[xd - 3] : 2, w[1] = k, w[2] = n;
        r = tj_matmul(x, param(f, w, wd));
        break;
    }
    case TJ_OP_linear: {
        int xd = tj_ndim(x);
        if (!xd) x = tj_unsqueeze(x, 0), xd = 1;
        int64_t w[2] = {n, tj_sizes(x)[xd - 1]};
        r = tj_linear(x, param(f, w, 2), coin(f, 2) ? param(f, &n, 1) : NULL);
        break;
    }
    default: return;
    }
    push(f, r);
}

static void conv_family(gf *f, const tj_op_info *op) {
    bool one = op->id == TJ_OP_conv1d;
    tj_tensor *x = as_rank(floaty(f), one ? 3 : 4);
    if (!x) return;
    const int64_t *xs = tj_sizes(x);
    int64_t c = xs[1], groups = c % 2 == 0 && coin(f, 2) ? 2 : 1, cout = groups * (1 + pick(f, 2));
    int64_t stride[2] = {1 + pick(f, 2), 1 + pick(f, 2)}, pad[2] = {pick(f, 2), pick(f, 2)},
            dil[2] = {1 + pick(f, 2), 1 + pick(f, 2)}, k[2] = {1 + pick(f, 3), 1 + pick(f, 3)};
    int ns = one ? 1 : 2;
    tj_tensor *r = NULL;
    if (op->id == TJ_OP_conv_transpose2d) {
        int64_t w[4] = {c, cout / groups, k[0], k[1]}, op_pad[2] = {pick(f, stride[0]), pick(f, stride[1])};
        r = tj_conv_transpose2d(x, param(f, w, 4), coin(f, 2) ? param(f, &cout, 1) : NULL, stride, 2,
                                pad, 2, op_pad, 2, groups, dil, 2);
        push(f, r);
        return;
    }
    int64_t w[4] = {cout, c / groups, k[0], k[1]};
    tj_tensor *wt = param(f, w, ns + 2), *b = coin(f, 2) ? param(f, &cout, 1) : NULL;
    if (one) {
        push(f, tj_conv1d(x, wt, b, stride, 1, pad, 1, dil, 1, groups));
        return;
    }
    tj_tensor *y = tj_conv2d(x, wt, b, stride, 2, pad, 2, dil, 2, groups);
    if (!y || op->id == TJ_OP_conv2d) {
        push(f, y);
        return;
    }
    if (op->id == TJ_OP_conv2d_backward_input)
        r = tj_conv2d_backward_input(y, wt, xs, 4, stride, 2, pad, 2, dil, 2, groups);
    else
        r = tj_conv2d_backward_weight(y, x, w, 4, stride, 2, pad, 2, dil, 2, groups);
    push(f, r);
}

/* ---- pooling ------------------------------------------------------------------ */

static void pool_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = as_rank(floaty(f), 3 + (int)pick(f, 2)), *r = NULL, *two[2];
    if (!x) return;
    int64_t k[2] = {1 + pick(f, 3), 1 + pick(f, 3)}, st[2] = {1 + pick(f, 2), 1 + pick(f, 2)},
            pad[2] = {pick(f, k[0] / 2 + 1), pick(f, k[1] / 2 + 1)}, dil[2] = {1 + pick(f, 2), 1};
    int nst = coin(f, 3) ? 0 : 2;
    bool ceil_mode = coin(f, 3), incl = coin(f, 2);
    switch (op->id) {
    case TJ_OP_max_pool2d: r = tj_max_pool2d(x, k, 2, st, nst, pad, 2, dil, 2, ceil_mode); break;
    case TJ_OP_max_pool2d_with_indices:
    case TJ_OP_max_pool2d_with_indices_backward:
    case TJ_OP_max_pool2d_gather:
        if (tj_max_pool2d_with_indices(x, k, 2, st, nst, pad, 2, dil, 2, ceil_mode, two, 2) != 2) return;
        if (op->id == TJ_OP_max_pool2d_with_indices) {
            push_all(f, two, 2);
            return;
        }
        if (op->id == TJ_OP_max_pool2d_gather)
            r = tj_max_pool2d_gather(x, k, 2, st, nst, pad, 2, dil, 2, ceil_mode, two[1]);
        else
            r = tj_max_pool2d_with_indices_backward(two[0], x, k, 2, st, nst, pad, 2, dil, 2, ceil_mode, two[1]);
        break;
    case TJ_OP_avg_pool2d:
    case TJ_OP_avg_pool2d_backward: {
        tj_tensor *y = tj_avg_pool2d(x, k, 2, st, nst, pad, 2, ceil_mode, incl);
        r = !y || op->id == TJ_OP_avg_pool2d ? y : tj_avg_pool2d_backward(y, x, k, 2, st, nst, pad, 2, ceil_mode, incl);
        break;
    }
    case TJ_OP_adaptive_avg_pool2d:
    case TJ_OP_adaptive_avg_pool2d_backward: {
        int64_t o[2] = {1 + pick(f, 3), 1 + pick(f, 3)};
        tj_tensor *y = tj_adaptive_avg_pool2d(x, o, 2);
        r = !y || op->id == TJ_OP_adaptive_avg_pool2d ? y : tj_adaptive_avg_pool2d_backward(y, x);
        break;
    }
    default: return;
    }
    push(f, r);
}

/* ---- normalisation -------------------------------------------------------------- */

/* A positive parameter (variances, weights of losses). */
static tj_tensor *positive(gf *f, const int64_t *sz, int nd) {
    tj_tensor *p = param(f, sz, nd);
    return p ? tj_add_scalar(tj_mul(p, p), 0.5, 1) : NULL;
}

static void norm_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = as_rank(floaty(f), 2 + (int)pick(f, 3)), *three[3], *r = NULL;
    if (!x) return;
    int xd = tj_ndim(x);
    const int64_t *xs = tj_sizes(x);
    int64_t c = xs[1], hxw = 1;
    for (int d = 2; d < xd; d++) hxw *= xs[d];
    double eps = coin(f, 2) ? 1e-5 : 0.1;
    bool train = f->m->smooth || coin(f, 2);
    switch (op->id) {
    case TJ_OP_native_batch_norm:
    case TJ_OP_batch_norm:
    case TJ_OP_native_batch_norm_backward:
    case TJ_OP_batch_norm_stats: {
        tj_tensor *w = coin(f, 2) ? param(f, &c, 1) : NULL, *b = coin(f, 2) ? param(f, &c, 1) : NULL;
        /* running statistics are updated in place: fresh copies at every call */
        bool stats = !train || coin(f, 2);
        tj_tensor *rm = stats ? tj_clone(param(f, &c, 1)) : NULL, *rv = stats ? tj_clone(positive(f, &c, 1)) : NULL;
        double momentum = coin(f, 2) ? 0.1 : 0.5;
        if (op->id == TJ_OP_batch_norm) {
            r = tj_batch_norm(x, w, b, rm, rv, train, momentum, eps);
            push(f, r);
            if (r && rm && !f->m->smooth) push(f, rm);
            return;
        }
        if (op->id == TJ_OP_batch_norm_stats) {
            tj_tensor *four[4];
            if (tj_batch_norm_stats(x, w, b, rm, rv, momentum, eps, four, 4) != 4) return;
            push_all(f, four, 4);
            if (rm && !f->m->smooth) push(f, rm);
            return;
        }
        if (tj_native_batch_norm(x, w, b, rm, rv, train, momentum, eps, three, 3) != 3) return;
        if (op->id == TJ_OP_native_batch_norm) {
            push_all(f, three, f->m->smooth ? 1 : 3);
            return;
        }
        tj_tensor *g[3];
        if (tj_native_batch_norm_backward(three[0], x, w, rm, rv, three[1], three[2], train, eps, g, 3) == 3)
            push_all(f, g, 3);
        return;
    }
    case TJ_OP_native_layer_norm:
    case TJ_OP_layer_norm:
    case TJ_OP_native_layer_norm_backward: {
        int k = 1 + (int)pick(f, xd);
        const int64_t *shape = xs + xd - k;
        tj_tensor *w = coin(f, 2) ? param(f, shape, k) : NULL, *b = coin(f, 2) ? param(f, shape, k) : NULL;
        if (op->id == TJ_OP_layer_norm) {
            r = tj_layer_norm(x, shape, k, w, b, eps);
            break;
        }
        if (tj_native_layer_norm(x, shape, k, w, b, eps, three, 3) != 3) return;
        if (op->id == TJ_OP_native_layer_norm) {
            push_all(f, three, f->m->smooth ? 1 : 3);
            return;
        }
        tj_tensor *g[3];
        int n = tj_native_layer_norm_backward(three[0], x, shape, k, three[1], three[2], w, b, g, 3);
        if (n == 3) push_all(f, g, 3);
        return;
    }
    default: { /* group norm */
        int64_t groups = c % 2 == 0 && coin(f, 2) ? 2 : 1;
        tj_tensor *w = coin(f, 2) ? param(f, &c, 1) : NULL, *b = coin(f, 2) ? param(f, &c, 1) : NULL;
        if (op->id == TJ_OP_group_norm) {
            r = tj_group_norm(x, groups, w, b, eps);
            break;
        }
        if (tj_native_group_norm(x, w, b, xs[0], c, hxw, groups, eps, three, 3) != 3) return;
        if (op->id == TJ_OP_native_group_norm) {
            push_all(f, three, f->m->smooth ? 1 : 3);
            return;
        }
        tj_tensor *g[3];
        if (tj_native_group_norm_backward(three[0], x, three[1], three[2], w, xs[0], c, hxw, groups, g, 3) == 3)
            push_all(f, g, 3);
        return;
    }
    }
    push(f, r);
}

/* ---- softmax, losses, indexing, dropout ------------------------------------------ */

static void softmax_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = floaty(f);
    int64_t d = a_dim(f, x);
    bool log = op->id == TJ_OP_log_softmax || op->id == TJ_OP_log_softmax_backward_data;
    tj_tensor *y = log ? tj_log_softmax(x, d) : tj_softmax(x, d);
    if (!y || op->id == TJ_OP_softmax || op->id == TJ_OP_log_softmax) {
        push(f, y);
        return;
    }
    tj_tensor *g = partner(f, y);
    push(f, log ? tj_log_softmax_backward_data(g, y, d, tj_tensor_dtype(x))
                : tj_softmax_backward_data(g, y, d, tj_tensor_dtype(x)));
}

static void loss_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = floaty(f), *r = NULL;
    const char *red = reduction(f);
    switch (op->id) {
    case TJ_OP_mse_loss:
    case TJ_OP_mse_loss_backward: {
        tj_tensor *t = param(f, tj_sizes(x), tj_ndim(x)), *y = tj_mse_loss(x, t, red);
        r = !y || op->id == TJ_OP_mse_loss ? y : tj_mse_loss_backward(y, x, t, red);
        break;
    }
    case TJ_OP_binary_cross_entropy_with_logits:
    case TJ_OP_binary_cross_entropy_with_logits_backward: {
        tj_tensor *t = param(f, tj_sizes(x), tj_ndim(x));
        t = t ? tj_sigmoid(t) : NULL;
        int xd = tj_ndim(x);
        tj_tensor *w = coin(f, 2) ? positive(f, tj_sizes(x), xd) : NULL;
        tj_tensor *pw = coin(f, 2) && xd ? positive(f, tj_sizes(x) + xd - 1, 1) : NULL;
        tj_tensor *y = tj_binary_cross_entropy_with_logits(x, t, w, pw, red);
        r = !y || op->id == TJ_OP_binary_cross_entropy_with_logits
                ? y
                : tj_binary_cross_entropy_with_logits_backward(y, x, t, w, pw, red);
        break;
    }
    default: { /* nll_loss, its backward, cross_entropy_loss: [N, C] or [C] scores */
        tj_tensor *s = as_rank(x, 1 + (int)pick(f, 2));
        if (!s) return;
        int sd = tj_ndim(s);
        int64_t c = tj_sizes(s)[sd - 1], n = sd == 2 ? tj_sizes(s)[0] : 1;
        if (sd == 2) s = tj_transpose(tj_contiguous(tj_t(s)), 0, 1); /* rows stay rows */
        int64_t ignore = coin(f, 3) ? pick(f, c) : -100;
        tj_tensor *t = ints(f, &n, sd - 1, 0, c - 1);
        /* the class weights get no gradient (as in PyTorch): constants in smooth graphs */
        tj_tensor *w = NULL;
        if (coin(f, 2)) {
            w = param_or_constant(f, &c, 1, f->m->smooth);
            w = w ? tj_add_scalar(tj_mul(w, w), 0.5, 1) : NULL;
        }
        if (op->id == TJ_OP_cross_entropy_loss) {
            r = tj_cross_entropy_loss(s, t, w, red, ignore, coin(f, 2) ? 0.0 : 0.1);
            break;
        }
        tj_tensor *y = tj_nll_loss(s, t, w, red, ignore);
        r = !y || op->id == TJ_OP_nll_loss ? y : tj_nll_loss_backward(y, s, t, w, red, ignore);
        break;
    }
    }
    push(f, r);
}

static void index_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = floaty(f), *r = NULL;
    int xd = tj_ndim(x);
    const int64_t *xs = tj_sizes(x);
    int64_t d = a_dim(f, x), dd = xd ? (d + xd) % xd : 0, s = xd ? xs[dd] : 1;
    switch (op->id) {
    case TJ_OP_embedding:
    case TJ_OP_embedding_dense_backward: {
        int64_t w[2] = {1 + pick(f, 5), 1 + pick(f, 3)}, isz[2] = {1 + pick(f, 3), 1 + pick(f, 3)};
        tj_tensor *idx = ints(f, isz, (int)pick(f, 3), 0, w[0] - 1);
        /* the padding row gets no gradient (as in PyTorch): none in smooth graphs */
        int64_t pad = coin(f, 2) || f->m->smooth ? -1 : pick(f, w[0]);
        bool scale = !f->m->smooth && coin(f, 2);
        tj_tensor *y = tj_embedding(param(f, w, 2), idx, pad, scale);
        r = !y || op->id == TJ_OP_embedding ? y : tj_embedding_dense_backward(y, idx, w[0], pad, scale);
        break;
    }
    case TJ_OP_index_select: {
        int64_t n = pick(f, 4) + f->m->smooth;
        r = tj_index_select(x, d, ints(f, &n, 1, 0, s - 1));
        break;
    }
    case TJ_OP_gather:
    case TJ_OP_scatter_add: {
        int64_t isz[TJ_MAX_DIMS];
        for (int i = 0; i < xd; i++) isz[i] = i == dd ? 1 + pick(f, 3) : 1 + pick(f, xs[i]);
        tj_tensor *idx = ints(f, isz, xd, 0, s - 1);
        if (op->id == TJ_OP_gather) r = tj_gather(x, d, idx);
        else r = tj_scatter_add(x, d, idx, param(f, isz, xd));
        break;
    }
    case TJ_OP_one_hot: {
        int64_t isz[2] = {1 + pick(f, 3), 1 + pick(f, 3)}, c = 1 + pick(f, 4);
        r = tj_one_hot(ints(f, isz, (int)pick(f, 3), 0, c - 1), coin(f, 2) ? -1 : c);
        break;
    }
    default: return;
    }
    push(f, r);
}

static void dropout_family(gf *f, const tj_op_info *op) {
    tj_tensor *x = floaty(f), *two[2];
    double p = f->m->smooth ? 0.0 : (double)pick(f, 4) * 0.25;
    bool train = !f->m->smooth && coin(f, 3) != 0;
    if (op->id == TJ_OP_dropout) {
        push(f, tj_dropout(x, p, train, f->m->gen));
        return;
    }
    if (tj_native_dropout(x, p, train, f->m->gen, two, 2) != 2) return;
    if (op->id == TJ_OP_native_dropout) {
        push_all(f, two, f->m->smooth ? 1 : 2);
        return;
    }
    push(f, tj_native_dropout_backward(two[0], two[1], p < 1 ? 1 / (1 - p) : 0.0));
}

/* ---- the model ---------------------------------------------------------------- */

static bool smooth_op(const tj_op_info *op) {
    switch (op->kind) {
    case TJ_KIND_POINTWISE: return smooth_pointwise(op);
    case TJ_KIND_REDUCTION:
        return op->id == TJ_OP_sum || op->id == TJ_OP_mean || op->id == TJ_OP_prod ||
               op->id == TJ_OP_logsumexp || op->id == TJ_OP_sum_to_size;
    case TJ_KIND_VIEW: case TJ_KIND_SHAPE: return op->id != TJ_OP_new_zeros;
    case TJ_KIND_MATMUL: return true;
    case TJ_KIND_CONV: return op->id == TJ_OP_conv1d || op->id == TJ_OP_conv2d || op->id == TJ_OP_conv_transpose2d;
    default:
        return op->id == TJ_OP_batch_norm || op->id == TJ_OP_native_batch_norm || op->id == TJ_OP_layer_norm ||
               op->id == TJ_OP_native_layer_norm || op->id == TJ_OP_group_norm ||
               op->id == TJ_OP_native_group_norm || op->id == TJ_OP_softmax || op->id == TJ_OP_log_softmax ||
               op->id == TJ_OP_mse_loss || op->id == TJ_OP_cross_entropy_loss || op->id == TJ_OP_nll_loss ||
               op->id == TJ_OP_binary_cross_entropy_with_logits || op->id == TJ_OP_embedding ||
               op->id == TJ_OP_index_select || op->id == TJ_OP_gather || op->id == TJ_OP_scatter_add ||
               op->id == TJ_OP_avg_pool2d || op->id == TJ_OP_adaptive_avg_pool2d;
    }
}

static void call_one(gf *f, const tj_op_info *op) {
    switch (op->kind) {
    case TJ_KIND_POINTWISE: pointwise(f, op); return;
    case TJ_KIND_REDUCTION: reduce(f, op); return;
    case TJ_KIND_VIEW:
    case TJ_KIND_SHAPE: view_or_shape(f, op); return;
    case TJ_KIND_MATMUL: matmul_family(f, op); return;
    case TJ_KIND_CONV: conv_family(f, op); return;
    case TJ_KIND_RANDOM: dropout_family(f, op); return;
    default: break;
    }
    const char *name = op->name + 6; /* after aten:: */
    if (strstr(name, "pool")) pool_family(f, op);
    else if (strstr(name, "norm")) norm_family(f, op);
    else if (strstr(name, "softmax")) softmax_family(f, op);
    else if (strstr(name, "loss") || strstr(name, "cross_entropy")) loss_family(f, op);
    else if (op->id == TJ_OP_native_dropout_backward) dropout_family(f, op);
    else index_family(f, op);
}

tj_status tt_gf_model_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    const tt_gf_model *m = ctx;
    /* the state mixed from the seed: seed * golden ratio would make case
     * k + 1's draws case k's shifted by one */
    uint64_t mix = m->seed ^ 0x5851F42D4C957F2Dull;
    gf f = {.s = tt_splitmix64(&mix), .m = m, .bank = in[n_in - 1]};
    static const tj_op_info *smooth[TT_GF_MAX_OPS];
    static int n_smooth = -1;
    if (n_smooth < 0) { /* the first call is on the test's thread: no race */
        int k = 0;
        for (int i = 0; i < tj_op_count(); i++)
            if (smooth_op(tj_op_at(i))) smooth[k++] = tj_op_at(i);
        n_smooth = k;
    }
    tj_scope_begin();
    for (int i = 0; i < n_in - 1; i++) push(&f, in[i]);
    int first_made = f.n, steps = 2 + (int)pick(&f, STEPS_MAX - 1);
    for (int t = 0; t < steps * 6 && steps > 0 && f.n < POOL - 4; t++) {
        const tj_op_info *op = m->smooth ? smooth[pick(&f, n_smooth)] : tj_op_at((int)pick(&f, tj_op_count()));
        int before = f.n;
        call_one(&f, op);
        if (m->verbose && *tj_last_error()) fprintf(stderr, "  %s: %s\n", tj_op_name(op), tj_last_error());
        tj_clear_error();
        if (m->trail) *m->trail = (*m->trail ^ (uint64_t)(op->id * 2 + (f.n > before))) * 0x100000001B3ull;
        if (f.n > before) {
            steps--;
            if (m->calls) m->calls[op->id]++;
        }
    }
    /* outputs are values made here: the last, then random earlier ones
     * (an input returned as it is says nothing about the program) */
    for (int o = 0; o < n_out; o++) {
        tj_tensor *t = f.n > first_made ? f.v[o == 0 ? f.n - 1 : first_made + pick(&f, f.n - first_made)]
                                        : tj_clone(f.v[0]);
        out[o] = tj_keep(t);
    }
    tj_scope_end();
    return TJ_OK;
}
