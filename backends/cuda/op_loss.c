/* op_loss.c — CUDA kernels of mse_loss, nll_loss, cross_entropy_loss,
 * binary_cross_entropy_with_logits and their backward ops (rows of
 * core/ops_nn.def; device code in kernels/loss.cu).
 *
 * Reduced losses are a partial-sum kernel (one double per block) and
 * loss_finish (one block). nll targets are checked on the device by index.cu's
 * index_check, queued before the loss's kernels and read back after them:
 * a bad target fails the call with the CPU's message, naming the value and
 * its element. */
#include <string.h>

#include "backends/cuda/op_nn.h"
#include "core/nn_rules.h"

/* loss.cu's Nll and Bce, member for member */
typedef struct nll_arg {
    tjcu_tensor_arg x, t, w;
    int32_t xd, wd;
    int64_t C, S, ignore;
} nll_arg;

typedef struct bce_arg {
    tjcu_tensor_arg x, y, w, pw;
    int32_t xd, yd, wd, pwd;
} bce_arg;

/* The scalar or per-element factor of a backward op (loss.cu's grad_at). */
typedef struct grad_arg {
    tjcu_tensor_arg g;
    int32_t gd, per_element;
    double divisor;
} grad_arg;

static grad_arg grad_of(const tj_tensor *g, int red, double count) {
    grad_arg a = {tjcu_arg(g), (int32_t)g->dtype, red == TJC_RED_NONE,
                  red == TJC_RED_MEAN ? count : 1.0};
    return a;
}

static const tjcu_dim3 block = {TJCU_NN_THREADS, 1, 1};

/* ---- reductions -------------------------------------------------------------------------- */

/* Partial sums of a reduction: one double per block of the grid (and as many
 * for weights when the loss has them). */
typedef struct partials {
    tjcu_dim3 grid;
    double *part, *wpart;
} partials;

static tj_status partials_alloc(const tjc_call *c, int64_t n, bool weights, partials *p) {
    p->grid = tjcu_nn_grid(c, n);
    size_t count = (size_t)p->grid.x * (weights ? 2 : 1);
    p->part = tjcu_nn_scratch(c, sizeof(double) * count);
    p->wpart = p->part && weights ? p->part + p->grid.x : NULL;
    return p->part ? TJ_OK : tj_last_status();
}

/* Runs kernel (whose arguments point at p->part and p->wpart), then
 * out[0] = sum(part) / (by_weight ? sum(wpart) : divisor) in dtype od; frees p. */
static tj_status partials_reduce(const tjc_call *c, partials *p, const char *kernel, void **args,
                                 bool by_weight, double divisor, void *out, tj_dtype od) {
    tj_status st = tjcu_launch(c->op->name, c->device, "loss", kernel, p->grid, block, 0, args);
    if (!st) {
        const double *wpart = by_weight ? p->wpart : NULL;
        int32_t np = (int32_t)p->grid.x, odc = (int32_t)od;
        void *fargs[] = {&p->part, &wpart, &np, &divisor, &out, &odc};
        st = tjcu_launch(c->op->name, c->device, "loss", "loss_finish", (tjcu_dim3){1, 1, 1},
                         block, 0, fargs);
    }
    tjcu_free(c->device, p->part);
    return st;
}

/* ---- mse_loss ------------------------------------------------------------------------------ */

tj_status tjcu_mse_loss(const tjc_call *c) {
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if (tjc_inputs_broadcast(c, 0, 2, sizes, &nd)) /* target and self broadcast */
        return tjc_kernel_with_inputs_expanded(c, 0, 2, sizes, nd, tjcu_mse_loss);
    int red = tjc_nn_reduction(c, 0);
    const tj_tensor *x = c->in[0], *t = c->in[1];
    tjcu_tensor_arg xa = tjcu_arg(x), ta = tjcu_arg(t);
    int32_t xd = x->dtype, td = t->dtype, od = c->out[0]->dtype;
    int64_t n = tjc_numel(x->sizes, x->ndim);
    void *out = tjc_data_ptr(c->out[0]);
    if (red == TJC_RED_NONE) {
        void *args[] = {&xa, &xd, &ta, &td, &out, &od, &n};
        return tjcu_nn_launch(c, "loss", "mse_loss_none", n, args);
    }
    partials p;
    tj_status st = partials_alloc(c, n, false, &p);
    if (st) return st;
    void *args[] = {&xa, &xd, &ta, &td, &n, &p.part};
    return partials_reduce(c, &p, "mse_loss_partial", args, false,
                           red == TJC_RED_MEAN ? (double)n : 1.0, out, (tj_dtype)od);
}

/* in: grad_output, self, target; attrs: reduction */
tj_status tjcu_mse_loss_backward(const tjc_call *c) {
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if (tjc_inputs_broadcast(c, 1, 2, sizes, &nd)) /* target broadcasts to self */
        return tjc_kernel_with_inputs_expanded(c, 2, 1, sizes, nd, tjcu_mse_loss_backward);
    const tj_tensor *x = c->in[1], *t = c->in[2];
    int64_t n = tjc_numel(x->sizes, x->ndim);
    grad_arg g = grad_of(c->in[0], tjc_nn_reduction(c, 0), (double)n);
    tjcu_tensor_arg xa = tjcu_arg(x), ta = tjcu_arg(t);
    int32_t xd = x->dtype, td = t->dtype, od = c->out[0]->dtype;
    void *out = tjc_data_ptr(c->out[0]);
    void *args[] = {&g.g, &g.gd, &g.per_element, &g.divisor, &xa, &xd, &ta, &td, &out, &od, &n};
    return tjcu_nn_launch(c, "loss", "mse_loss_backward", n, args);
}

/* ---- nll_loss -------------------------------------------------------------------------------- */

/* self [N, C, S] (a 1-D self is N = S = 1) */
static void nll_sizes(const tj_tensor *x, int64_t *N, int64_t *C, int64_t *S) {
    if (x->ndim == 1) {
        *N = 1, *C = x->sizes[0], *S = 1;
        return;
    }
    *N = x->sizes[0], *C = x->sizes[1], *S = 1;
    for (int d = 2; d < x->ndim; d++) *S *= x->sizes[d];
}

static nll_arg nll_of(const tj_tensor *x, const tj_tensor *t, const tj_tensor *w,
                      int64_t ignore) {
    nll_arg a;
    memset(&a, 0, sizeof a);
    int64_t N;
    nll_sizes(x, &N, &a.C, &a.S);
    a.x = tjcu_arg(x);
    a.t = tjcu_arg(t);
    a.xd = x->dtype;
    if (w) {
        a.w = tjcu_arg(w);
        a.wd = w->dtype;
    }
    a.ignore = ignore;
    return a;
}

/* Ends the check of the targets: the CPU's message for the first bad one. */
static tj_status targets_checked(const tjc_call *c, tjcu_nn_check *chk, int64_t C,
                                 int64_t ignore) {
    int64_t element, value;
    tj_status st = tjcu_nn_check_end(c, chk, &element, &value);
    if (st || element < 0) return st;
    return tjc_error(TJ_ERR_ARG, "%s: target %lld is out of bounds for %lld classes (target "
                     "element %lld; ignore_index is %lld)", c->op->name, (long long)value,
                     (long long)C, (long long)element, (long long)ignore);
}

/* in: self, target, weight; attrs: reduction, ignore_index */
tj_status tjcu_nll_loss(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    int64_t ignore = c->attr[1].i;
    nll_arg a = nll_of(c->in[0], c->in[1], c->in[2], ignore);
    int64_t n = tjc_numel(c->in[1]->sizes, c->in[1]->ndim);
    int32_t od = c->out[0]->dtype;
    void *out = tjc_data_ptr(c->out[0]);
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, c->in[1], a.C, true, ignore, &chk);
    if (st) return st;
    if (red == TJC_RED_NONE) {
        void *args[] = {&a, &out, &od, &n};
        st = tjcu_nn_launch(c, "loss", "nll_loss_none", n, args);
    } else {
        partials p;
        st = partials_alloc(c, n, true, &p);
        void *args[] = {&a, &n, &p.part, &p.wpart};
        /* mean divides by the summed weights of the targets not ignored
         * (0/0 = NaN when every target is ignored, as on the CPU) */
        if (!st)
            st = partials_reduce(c, &p, "nll_loss_partial", args, red == TJC_RED_MEAN, 1.0, out,
                                 (tj_dtype)od);
    }
    if (st) {
        tjcu_nn_check_drop(c, &chk);
        return st;
    }
    return targets_checked(c, &chk, a.C, ignore);
}

/* in: grad_output, self, target, weight; attrs: reduction, ignore_index.
 * gi[n, t, s] = -w[t] g', zero elsewhere and at ignored targets. */
tj_status tjcu_nll_loss_backward(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    int64_t ignore = c->attr[1].i;
    nll_arg a = nll_of(c->in[1], c->in[2], c->in[3], ignore);
    int64_t n = tjc_numel(c->in[2]->sizes, c->in[2]->ndim);
    tj_tensor *out = c->out[0];
    int32_t od = out->dtype;
    void *o = tjc_data_ptr(out);
    grad_arg g = grad_of(c->in[0], red, 1.0);
    double *total = NULL; /* mean: the summed weights, on the device */
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, c->in[2], a.C, true, ignore, &chk);
    if (st) return st;
    st = tjcu_memset(c->device, o, 0,
                     (size_t)tjc_numel(out->sizes, out->ndim) * tj_dtype_size(out->dtype));
    if (!st && red == TJC_RED_MEAN) {
        partials p;
        st = partials_alloc(c, n, false, &p);
        if (!st && !(total = tjcu_nn_scratch(c, sizeof(double)))) st = tj_last_status();
        void *args[] = {&a, &n, &p.part};
        if (!st) st = partials_reduce(c, &p, "nll_weight_partial", args, false, 1.0, total, TJ_F64);
        else if (p.part) tjcu_free(c->device, p.part);
    }
    if (!st) {
        void *args[] = {&g.g, &g.gd, &g.per_element, &g.divisor, &total, &a, &o, &od, &n};
        st = tjcu_nn_launch(c, "loss", "nll_loss_backward", n, args);
    }
    if (total) tjcu_free(c->device, total);
    if (st) {
        tjcu_nn_check_drop(c, &chk);
        return st;
    }
    return targets_checked(c, &chk, a.C, ignore);
}

/* ---- cross_entropy_loss ------------------------------------------------------------------- */

/* in: self, target, weight; attrs: reduction, ignore_index, label_smoothing.
 * As on the CPU: the targets are checked first (so that an error names this
 * op), then log_softmax over the class dim and nll_loss, each dispatched to
 * its own CUDA kernel. */
tj_status tjcu_cross_entropy_loss(const tjc_call *c) {
    tj_tensor *x = c->in[0];
    int64_t N, C, S, ignore = c->attr[1].i;
    nll_sizes(x, &N, &C, &S);
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, c->in[1], C, true, ignore, &chk);
    if (!st) st = targets_checked(c, &chk, C, ignore);
    if (st) return st;
    tj_tensor *loss = tjc_cross_entropy(c); /* log_softmax, nll_loss, smoothing: CUDA kernels */
    st = loss ? tjcu_nn_copy(c, c->out[0], loss) : tj_last_status();
    tj_release(loss);
    return st;
}

/* ---- binary_cross_entropy_with_logits ------------------------------------------------------ */

/* weight and pos_weight broadcast to self's sizes; absent ones stay null */
static bce_arg bce_of(const tj_tensor *x, const tj_tensor *y, const tj_tensor *w,
                      const tj_tensor *pw) {
    bce_arg a;
    memset(&a, 0, sizeof a);
    a.x = tjcu_arg(x);
    a.y = tjcu_arg(y);
    a.xd = x->dtype;
    a.yd = y->dtype;
    if (w) {
        a.w = tjcu_arg_broadcast(w, x->sizes, x->ndim);
        a.wd = w->dtype;
    }
    if (pw) {
        a.pw = tjcu_arg_broadcast(pw, x->sizes, x->ndim);
        a.pwd = pw->dtype;
    }
    return a;
}

/* in: self, target, weight, pos_weight; attrs: reduction */
tj_status tjcu_bce_with_logits(const tjc_call *c) {
    int red = tjc_nn_reduction(c, 0);
    const tj_tensor *x = c->in[0];
    bce_arg a = bce_of(x, c->in[1], c->in[2], c->in[3]);
    int64_t n = tjc_numel(x->sizes, x->ndim);
    int32_t od = c->out[0]->dtype;
    void *out = tjc_data_ptr(c->out[0]);
    if (red == TJC_RED_NONE) {
        void *args[] = {&a, &out, &od, &n};
        return tjcu_nn_launch(c, "loss", "bce_loss_none", n, args);
    }
    partials p;
    tj_status st = partials_alloc(c, n, false, &p);
    if (st) return st;
    void *args[] = {&a, &n, &p.part};
    return partials_reduce(c, &p, "bce_loss_partial", args, false,
                           red == TJC_RED_MEAN ? (double)n : 1.0, out, (tj_dtype)od);
}

/* in: grad_output, self, target, weight, pos_weight; attrs: reduction */
tj_status tjcu_bce_with_logits_backward(const tjc_call *c) {
    const tj_tensor *x = c->in[1];
    bce_arg a = bce_of(x, c->in[2], c->in[3], c->in[4]);
    int64_t n = tjc_numel(x->sizes, x->ndim);
    grad_arg g = grad_of(c->in[0], tjc_nn_reduction(c, 0), (double)n);
    int32_t od = c->out[0]->dtype;
    void *out = tjc_data_ptr(c->out[0]);
    void *args[] = {&g.g, &g.gd, &g.per_element, &g.divisor, &a, &out, &od, &n};
    return tjcu_nn_launch(c, "loss", "bce_loss_backward", n, args);
}
