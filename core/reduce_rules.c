/* reduce_rules.c — shape and dtype rules of the reduction rows
 * (ops_reduce.def), and the reading of their dim arguments that the CPU
 * kernels share (reduce.h). Messages follow PyTorch's where it has one. */
#include <math.h>
#include <string.h>

#include "reduce.h"

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

static int attr_index(const tjc_call *c, const char *name) {
    const tj_schema *s = &c->op->schema;
    for (int k = 0; k < s->n_attrs; k++)
        if (strcmp(s->args[s->attr_pos[k]].name, name) == 0) return k;
    return -1;
}

const tj_attr *tjc_reduce_attr(const tjc_call *c, const char *name) {
    int k = attr_index(c, name);
    return k >= 0 ? &c->attr[k] : NULL;
}

/* sum_to_size: the target must broadcast to the input, i.e. line up with
 * its trailing dims with each size equal or 1 (PyTorch's is_expandable_to). */
static tj_status sum_to_size_info(const tjc_call *c, const tj_attr *size, tjc_reduce_info *r) {
    const tj_tensor *t = c->in[0];
    int n = size->ints.n, lead = t->ndim - n;
    bool ok = n <= t->ndim;
    for (int i = 0; ok && i < n; i++) {
        int64_t want = size->ints.data[i], have = t->sizes[lead + i];
        ok = want == have || want == 1;
    }
    if (!ok) {
        char bs[TJC_SIZES_BUF], bt[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: size %s is not expandable to the input's sizes %s, "
                         "so the input cannot be summed to it", c->op->name,
                         SIZES(bs, size->ints.data, n), SIZES(bt, t->sizes, t->ndim));
    }
    for (int d = 0; d < t->ndim; d++) {
        int i = d - lead;
        r->reduced[d] = i < 0 || (size->ints.data[i] == 1 && t->sizes[d] != 1);
        r->out_dim[d] = i < 0 ? -1 : i;
    }
    r->out_ndim = n;
    if (n) memcpy(r->out_sizes, size->ints.data, sizeof(int64_t) * (size_t)n);
    return TJ_OK;
}

tj_status tjc_reduce_info_of(const tjc_call *c, tjc_reduce_info *r) {
    const tj_tensor *t = c->in[0];
    const char *op = c->op->name;
    memset(r, 0, sizeof *r);
    r->ndim = t->ndim;
    r->zero_dim = -1;
    tj_status st;
    const tj_attr *size = tjc_reduce_attr(c, "size");
    if (size) {
        if ((st = sum_to_size_info(c, size, r))) return st;
    } else {
        int k = attr_index(c, "dim");
        const tj_attr *keep = tjc_reduce_attr(c, "keepdim");
        bool keepdim = keep && keep->b;
        const int64_t *dims = NULL;
        int n_dims = 0;
        if (k >= 0 && c->op->schema.args[c->op->schema.attr_pos[k]].type == TJ_ARG_INT) {
            dims = &c->attr[k].i; /* max.dim and min.dim take one dim */
            n_dims = 1;
        } else if (k >= 0) {
            dims = c->attr[k].ints.data;
            n_dims = c->attr[k].ints.n;
        }
        bool seen[TJ_MAX_DIMS] = {false};
        for (int i = 0; i < n_dims; i++) {
            int d;
            if ((st = tjc_wrap_dim(op, dims[i], t->ndim, &d))) return st;
            if (seen[d]) {
                char bd[TJC_SIZES_BUF];
                return tjc_error(TJ_ERR_ARG, "%s: dim %lld appears multiple times in the list "
                                 "of dims %s", op, (long long)dims[i], SIZES(bd, dims, n_dims));
            }
            seen[d] = true;
        }
        int at = 0;
        for (int d = 0; d < t->ndim; d++) {
            r->reduced[d] = n_dims == 0 || seen[d];
            if (r->reduced[d] && !keepdim) {
                r->out_dim[d] = -1;
                continue;
            }
            r->out_sizes[at] = r->reduced[d] ? 1 : t->sizes[d];
            r->out_dim[d] = at++;
        }
        r->out_ndim = at;
    }
    r->n_reduce = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (!r->reduced[d]) continue;
        r->n_reduce *= t->sizes[d];
        if (t->sizes[d] == 0 && r->zero_dim < 0) r->zero_dim = d;
    }
    r->n_out = tjc_numel(r->out_sizes, r->out_ndim);
    return TJ_OK;
}

/* ---- shape rules -------------------------------------------------------------- */

typedef enum out_rule {
    OUT_SUM,   /* any input; integers and bool accumulate into i64 */
    OUT_FLOAT, /* f32 and f64 only; the input's dtype */
    OUT_FLOAT_PROMOTE, /* any input; integers and bool compute in f32 */
    OUT_SAME,  /* any input; the input's dtype; no empty reductions */
    OUT_INDEX  /* any input; i64 indices; no empty reductions */
} out_rule;

static void new_meta(tjc_meta *m, tj_dtype dtype, const tjc_reduce_info *r) {
    tjc_meta_new(m, dtype, r->out_sizes, r->out_ndim);
}

static tj_status need_nonempty(const tjc_call *c, const tjc_reduce_info *r) {
    if (r->zero_dim < 0) return TJ_OK;
    const tj_tensor *t = c->in[0];
    char bt[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: cannot reduce over a zero-size dimension (dim %d of the "
                     "input's sizes %s): the op has no identity", c->op->name, r->zero_dim,
                     SIZES(bt, t->sizes, t->ndim));
}

static tj_status reduce_infer(const tjc_call *c, int *n_out, out_rule rule, tjc_reduce_info *r) {
    const tj_tensor *t = c->in[0];
    if (rule == OUT_FLOAT && !tj_dtype_is_float(t->dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: input 'self' has dtype %s; this op needs a "
                         "floating-point input (f32 or f64)", c->op->name,
                         tj_dtype_name(t->dtype));
    tj_status st = tjc_reduce_info_of(c, r);
    if (st) return st;
    if ((rule == OUT_SAME || rule == OUT_INDEX) && (st = need_nonempty(c, r))) return st;
    tj_dtype out = t->dtype;
    if (rule == OUT_SUM && !tj_dtype_is_float(out)) out = TJ_I64;
    if (rule == OUT_FLOAT_PROMOTE && !tj_dtype_is_float(out)) out = TJ_F32;
    if (rule == OUT_INDEX) out = TJ_I64;
    new_meta(&c->meta[0], out, r);
    *n_out = 1;
    return TJ_OK;
}

tj_status tjc_infer_reduce_sum(const tjc_call *c, int *n_out) {
    tjc_reduce_info r;
    return reduce_infer(c, n_out, OUT_SUM, &r);
}

tj_status tjc_infer_reduce_float(const tjc_call *c, int *n_out) {
    tjc_reduce_info r;
    return reduce_infer(c, n_out, OUT_FLOAT, &r);
}

tj_status tjc_infer_reduce_float_promote(const tjc_call *c, int *n_out) {
    tjc_reduce_info r;
    return reduce_infer(c, n_out, OUT_FLOAT_PROMOTE, &r);
}

tj_status tjc_infer_reduce_same(const tjc_call *c, int *n_out) {
    tjc_reduce_info r;
    return reduce_infer(c, n_out, OUT_SAME, &r);
}

/* argmax/argmin: dim=[] stands for PyTorch's dim=None (the flattened input;
 * with keepdim every dim stays as size 1); otherwise one dim. */
tj_status tjc_infer_reduce_arg(const tjc_call *c, int *n_out) {
    const tj_attr *dim = tjc_reduce_attr(c, "dim");
    if (c->in[0]->dtype == TJ_BOOL)
        return tjc_error(TJ_ERR_DTYPE, "%s: bool tensors have no order here (as in PyTorch); "
                         "convert to i64 first", c->op->name);
    if (dim->ints.n > 1) {
        char bd[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_ARG, "%s: takes one dim, or [] for the flattened input; got "
                         "the dims %s", c->op->name, SIZES(bd, dim->ints.data, dim->ints.n));
    }
    tjc_reduce_info r;
    return reduce_infer(c, n_out, OUT_INDEX, &r);
}

/* max.dim/min.dim: the values and their indices along dim. */
tj_status tjc_infer_reduce_with_index(const tjc_call *c, int *n_out) {
    tjc_reduce_info r;
    tj_status st = reduce_infer(c, n_out, OUT_SAME, &r);
    if (st) return st;
    *n_out = 2;
    if (c->meta_cap < 2) return TJ_OK;
    new_meta(&c->meta[1], TJ_I64, &r);
    return TJ_OK;
}

/* linalg_vector_norm: the inf and negative norms have no identity, so an
 * empty reduction is an error for them, as in PyTorch. */
tj_status tjc_infer_reduce_norm(const tjc_call *c, int *n_out) {
    double ord = tjc_reduce_attr(c, "ord")->f;
    if (isnan(ord))
        return tjc_error(TJ_ERR_ARG, "%s: argument 'ord' is NaN", c->op->name);
    tjc_reduce_info r;
    tj_status st = reduce_infer(c, n_out, OUT_FLOAT, &r);
    if (st || (ord >= 0 && ord != INFINITY) || r.zero_dim < 0) return st;
    char bt[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: cannot compute the %g norm over a zero-size dimension "
                     "(dim %d of the input's sizes %s): the operation has no identity",
                     c->op->name, ord, r.zero_dim, SIZES(bt, c->in[0]->sizes, c->in[0]->ndim));
}
