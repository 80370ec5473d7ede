/* op_pointwise.c — the CUDA kernels of core/ops_pointwise.def: every
 * pointwise row (tensor, .Scalar and in-place forms) through the generated
 * sources of pw_codegen.c, and the copies (clone, to.dtype, copy_,
 * zeros_like), which tjcu_copy also offers the other families.
 *
 * A call is typed as on the CPU (tjc_pw_types): inputs not already in the
 * compute dtype, or overlapping the output without being it, are first
 * copied into contiguous tensors of that dtype; an in-place output of another
 * dtype than the result gets the result through a temporary (the CPU's
 * kernel does the same, so the roundings agree). The launch picks a layout:
 * the vectorised or plain contiguous kernel when every operand is contiguous
 * with the output's sizes (or a single broadcast element), else the strided
 * kernel over dims coalesced as the CPU's iterator does, with 32-bit index
 * arithmetic when every offset fits. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cuda/cuda.h"
#include "backends/cuda/pointwise.h"

typedef struct pw_launch {
    const char *what;
    const char *key, *source;
    tj_tensor *out;
    tj_tensor *in[3]; /* NULL: that operand is the scalar s */
    int arity;
    tjcu_pw_scalar p0, p1, s;
} pw_launch;

static int64_t numel(const tj_tensor *t) { return tjc_numel(t->sizes, t->ndim); }

static bool aligned(const void *p, tj_dtype d) {
    return (uintptr_t)p % (4 * tj_dtype_size(d)) == 0;
}

/* Drops size-1 dims of the n_ops operands (sizes shared, strides per
 * operand) and merges neighbours that are contiguous in every operand;
 * returns the new ndim. */
static int coalesce(int ndim, int n_ops, int64_t *sizes, int64_t strides[][TJCU_MAX_DIMS]) {
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] == 1) continue;
        bool merge = nd > 0;
        for (int k = 0; merge && k < n_ops; k++)
            merge = strides[k][nd - 1] == strides[k][d] * sizes[d];
        if (merge) {
            sizes[nd - 1] *= sizes[d];
            for (int k = 0; k < n_ops; k++) strides[k][nd - 1] = strides[k][d];
            continue;
        }
        sizes[nd] = sizes[d];
        for (int k = 0; k < n_ops; k++) strides[k][nd] = strides[k][d];
        nd++;
    }
    return nd;
}

static bool fits_32(int64_t n, int nd, int n_ops, const int64_t *sizes,
                    int64_t strides[][TJCU_MAX_DIMS]) {
    if (n > INT32_MAX) return false;
    for (int k = 0; k < n_ops; k++) {
        int64_t reach = 0;
        for (int d = 0; d < nd; d++) {
            int64_t s = strides[k][d] < 0 ? -strides[k][d] : strides[k][d];
            if (s > INT32_MAX) return false;
            reach += (sizes[d] - 1) * s;
            if (reach > INT32_MAX) return false;
        }
    }
    return true;
}

static atomic_bool wide_index;

void tjcu_pw_set_wide_index(bool always) { atomic_store(&wide_index, always); }

static tj_status pw_run(const pw_launch *L) {
    tj_tensor *out = L->out;
    int64_t n = numel(out);
    if (n == 0) return TJ_OK;
    tj_device dev = out->storage->device;
    tjcu_tensor_arg a[4];
    memset(a, 0, sizeof a);
    a[0] = tjcu_arg(out);
    int flags = 0;
    bool contig = tj_is_contiguous(out), vec = n >= 4 && aligned(a[0].data, out->dtype);
    for (int k = 0; k < L->arity; k++) {
        tj_tensor *t = L->in[k];
        if (!t) {
            flags |= TJCU_PW_PARAM(k);
            continue;
        }
        a[k + 1] = tjcu_arg_broadcast(t, out->sizes, out->ndim);
        int64_t m = numel(t);
        if (m == 1 && n > 1) {
            flags |= TJCU_PW_BCAST(k);
        } else {
            contig = contig && m == n && tj_is_contiguous(t);
            vec = vec && aligned(a[k + 1].data, t->dtype);
        }
    }
    const char *kernel;
    int64_t work = n;
    if (contig) {
        kernel = vec ? "tjpw_vec" : "tjpw_contig";
        work = vec ? n / 4 : n;
    } else {
        flags &= ~(TJCU_PW_BCAST(0) | TJCU_PW_BCAST(1) | TJCU_PW_BCAST(2));
        int64_t sizes[TJCU_MAX_DIMS], strides[4][TJCU_MAX_DIMS];
        int n_ops = L->arity + 1;
        memcpy(sizes, a[0].sizes, sizeof sizes);
        for (int k = 0; k < n_ops; k++) memcpy(strides[k], a[k].strides, sizeof strides[k]);
        int nd = coalesce(out->ndim, n_ops, sizes, strides);
        for (int k = 0; k < n_ops; k++) {
            memcpy(a[k].sizes, sizes, sizeof sizes);
            memcpy(a[k].strides, strides[k], sizeof strides[k]);
            a[k].ndim = nd;
            a[k].contiguous = 0;
        }
        bool narrow = !atomic_load(&wide_index) && fits_32(n, nd, n_ops, sizes, strides);
        kernel = narrow ? "tjpw_strided32" : "tjpw_strided64";
    }
    long long count = n;
    tjcu_pw_scalar p0 = L->p0, p1 = L->p1, s = L->s;
    void *args[] = {&a[0], &a[1], &a[2], &a[3], &count, &flags, &p0, &p1, &s};
    tjcu_dim3 block = {256, 1, 1};
    return tjcu_launch_source(L->what, dev, L->key, L->source, kernel,
                              tjcu_grid_for(dev, work, block.x), block, 0, args);
}

/* ---- copies ------------------------------------------------------------------------ */

tj_status tjcu_copy(const char *what, tj_tensor *dst, tj_tensor *src) {
    if (dst == src || numel(dst) == 0) return TJ_OK;
    tj_device dev = dst->storage->device;
    tj_tensor *tmp = NULL;
    if (tjc_may_overlap(dst, src)) { /* read everything before writing anything */
        if (!(tmp = tjcu_contiguous(what, src, src->dtype))) return tj_last_status();
        src = tmp;
    }
    tj_status st;
    if (src->dtype == dst->dtype && numel(src) == numel(dst) && tj_is_contiguous(src) &&
        tj_is_contiguous(dst)) {
        st = tjcu_copy_d2d(dev, tjc_data_ptr(dst), tjc_data_ptr(src),
                           (size_t)numel(dst) * tj_dtype_size(dst->dtype));
    } else {
        char key[64];
        tjcu_pw_copy_key(key, sizeof key, dst->dtype, src->dtype);
        pw_launch L = {.what = what, .key = key, .out = dst, .in = {src}, .arity = 1};
        L.source = tjcu_pw_copy_source(dst->dtype, src->dtype);
        st = L.source ? pw_run(&L) : tj_last_status();
    }
    tj_release(tmp);
    return st;
}

tj_tensor *tjcu_contiguous(const char *what, tj_tensor *t, tj_dtype dtype) {
    tj_tensor *out = tjc_alloc_on(t->storage->device, t->sizes, t->ndim, dtype);
    if (out && tjcu_copy(what, out, t) != TJ_OK) {
        tj_release(out);
        return NULL;
    }
    return out;
}

tj_status tjcu_zero(const char *what, tj_tensor *t) {
    (void)what; /* tjcu_memset names the failing call itself */
    int64_t n = numel(t);
    if (n == 0) return TJ_OK;
    return tjcu_memset(t->storage->device, tjc_data_ptr(t), 0, (size_t)n * tj_dtype_size(t->dtype));
}

/* clone, to.dtype (input 0) and copy_ (input 1 into self) */
static tj_status copy_kernel(const tjc_call *c) {
    return tjcu_copy(c->op->name, c->out[0], c->n_in > 1 ? c->in[1] : c->in[0]);
}

/* zeros_like: a fresh contiguous output */
static tj_status zeros_kernel(const tjc_call *c) { return tjcu_zero(c->op->name, c->out[0]); }

/* ---- pointwise rows ------------------------------------------------------------------ */

/* backends/cpu/pointwise.c's test for an input that the output may clobber
 * before it is read */
static bool same_layout(const tj_tensor *a, const tj_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim ||
        a->dtype != b->dtype)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || (a->sizes[d] > 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

static tj_status pointwise_kernel(const tjc_call *c) {
    const tj_op_info *op = c->op;
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    const tj_op_info *base = tjc_pw_expr_op(op, c->attr);
    bool scalar_form = form->scalar_base >= 0 && base->id == form->scalar_base; /* not sqrt's */
    tj_dtype compute, result;
    tj_status st = tjc_pw_types(op, c->in, c->n_in, c->attr, &compute, &result);
    if (st) return st;
    if (!tjcu_pw_takes(base, compute))
        return tjc_error(TJ_ERR_INTERNAL, "%s: no CUDA kernel for compute dtype %s", op->name,
                         tj_dtype_name(compute));
    tj_tensor *out = c->out[0];
    if (numel(out) == 0) return TJ_OK;

    char key[96];
    tjcu_pw_key(key, sizeof key, base, compute);
    pw_launch L = {.what = op->name, .key = key, .arity = base->pw_arity};
    if (!(L.source = tjcu_pw_source(base, compute))) return tj_last_status();
    double prm[2];
    tjcpu_pw_params(op, c->attr, prm);
    L.p0 = tjcu_pw_param(compute, prm[0]);
    L.p1 = tjcu_pw_param(compute, prm[1]);
    if (scalar_form) L.s = tjcu_pw_operand(compute, c->attr[0].f);

    tj_tensor *owned[4] = {NULL};
    for (int i = 0; i < c->n_in && st == TJ_OK; i++) {
        tj_tensor *t = c->in[i];
        tj_dtype want = base->pw_rule == TJC_PW_SELECT && i == 0 ? TJ_BOOL : compute;
        bool clobbered = t != out && tjc_may_overlap(t, out) && !same_layout(t, out);
        if (t->dtype != want || clobbered) {
            if (!(owned[i] = tjcu_contiguous(op->name, t, want))) st = tj_last_status();
            t = owned[i];
        }
        L.in[i] = t;
    }
    L.out = out;
    if (st == TJ_OK && out->dtype != result) { /* in place into a narrower float dtype */
        if (!(owned[3] = tjc_alloc_on(c->device, out->sizes, out->ndim, result)))
            st = tj_last_status();
        L.out = owned[3];
    }
    if (st == TJ_OK) st = pw_run(&L);
    if (st == TJ_OK && L.out != out) st = tjcu_copy(op->name, out, L.out);
    for (int i = 0; i < 4; i++) tj_release(owned[i]);
    return st;
}

void tjcu_register_pointwise(tjc_kernel_fn *kernels) {
#define TJ_OP(id, name, schema, kind, infer, cpu)
#define TJ_POINTWISE(id, name, schema, rule, arity, expr) kernels[TJ_OP_##id] = pointwise_kernel;
#define TJ_POINTWISE_SCALAR(id, name, schema, base) kernels[TJ_OP_##id] = pointwise_kernel;
#define TJ_INPLACE(id, name, base) /* the base's kernel, given by the registry */
#include "core/ops_pointwise.def"
#undef TJ_OP
#undef TJ_POINTWISE
#undef TJ_POINTWISE_SCALAR
#undef TJ_INPLACE
    kernels[TJ_OP_clone] = copy_kernel;
    kernels[TJ_OP_to_dtype] = copy_kernel;
    kernels[TJ_OP_copy_] = copy_kernel;
    kernels[TJ_OP_zeros_like] = zeros_kernel;
}
