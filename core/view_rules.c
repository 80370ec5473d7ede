/* view_rules.c — shape rules of the view ops and of the ops that are views
 * when the layout allows (reshape, flatten, contiguous): each computes the
 * result's sizes, strides and storage offset from its input's, following
 * PyTorch's rules and messages. cat and stack are in shape_rules.c. */
#include <string.h>

#include "core.h"

/* More outputs than this is a mistake in the caller, and would make the
 * dispatcher allocate metas for each of them. */
#define MAX_PIECES (1 << 20)

static void view_meta(tjc_meta *m, const tj_tensor *t) {
    m->kind = TJC_OUT_VIEW;
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->sizes, t->sizes, sizeof t->sizes);
    memcpy(m->strides, t->strides, sizeof t->strides);
    m->offset = t->offset;
}

static void drop_dim(tjc_meta *m, int d) {
    for (int k = d; k + 1 < m->ndim; k++) {
        m->sizes[k] = m->sizes[k + 1];
        m->strides[k] = m->strides[k + 1];
    }
    m->ndim--;
}

static tj_status need_dims(const tjc_call *c) {
    if (c->in[0]->ndim == 0)
        return tjc_error(TJ_ERR_ARG, "%s: cannot be applied to a 0-dim tensor", c->op->name);
    return TJ_OK;
}

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

/* ---- view, reshape, flatten, contiguous --------------------------------------- */

/* A requested shape resolved against numel: at most one -1, whose size is
 * inferred (PyTorch's infer_size). */
static tj_status infer_shape(const tjc_call *c, const tj_attr *a, int64_t numel, int64_t *out) {
    const char *op = c->op->name;
    char bs[TJC_SIZES_BUF];
    int n = a->ints.n;
    if (n > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: shape %s has %d dims; tjit supports at most %d", op,
                         SIZES(bs, a->ints.data, n), n, TJ_MAX_DIMS);
    int infer = -1;
    int64_t prod = 1;
    for (int i = 0; i < n; i++) {
        int64_t s = a->ints.data[i];
        out[i] = s;
        if (s == -1) {
            if (infer >= 0)
                return tjc_error(TJ_ERR_ARG, "%s: only one dimension can be inferred, shape %s "
                                 "has two -1", op, SIZES(bs, a->ints.data, n));
            infer = i;
        } else if (s < 0) {
            return tjc_error(TJ_ERR_ARG, "%s: invalid size %lld at dim %d of shape %s", op,
                             (long long)s, i, SIZES(bs, a->ints.data, n));
        } else if (__builtin_mul_overflow(prod, s, &prod)) {
            prod = -1; /* matches no tensor's numel: reported below */
            break;
        }
    }
    if (infer >= 0) {
        if (prod == 0 && numel == 0)
            return tjc_error(TJ_ERR_SHAPE, "%s: cannot reshape a tensor of 0 elements into shape "
                             "%s because the size of the -1 dim could be anything", op,
                             SIZES(bs, a->ints.data, n));
        if (prod > 0 && numel % prod == 0) {
            out[infer] = numel / prod;
            return TJ_OK;
        }
    } else if (prod == numel) {
        return TJ_OK;
    }
    char bt[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: shape %s is invalid for an input of %lld elements "
                     "(sizes %s)", op, SIZES(bs, a->ints.data, n), (long long)numel,
                     SIZES(bt, c->in[0]->sizes, c->in[0]->ndim));
}

/* Strides that let t be read with sizes shape without moving data, or false
 * when a dim of shape spans two runs of t that are not evenly strided
 * (PyTorch's computeStride: t's dims group into maximal runs of "contiguous"
 * dims, and every run must be covered by whole dims of the new shape). */
static bool view_strides(const tj_tensor *t, const int64_t *shape, int n, int64_t *strides) {
    if (t->ndim == 0) {
        for (int i = 0; i < n; i++) strides[i] = 1;
        return true;
    }
    if (tjc_numel(t->sizes, t->ndim) == 0) {
        if (n == t->ndim && memcmp(shape, t->sizes, sizeof(int64_t) * (size_t)n) == 0) {
            memcpy(strides, t->strides, sizeof(int64_t) * (size_t)n);
            return true;
        }
        tjc_contiguous_strides(shape, n, strides);
        return true;
    }
    int view_d = n - 1;
    int64_t base_stride = t->strides[t->ndim - 1], tensor_numel = 1, view_numel = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        tensor_numel *= t->sizes[d];
        bool run_ends = d == 0 || (t->sizes[d - 1] != 1 &&
                                   t->strides[d - 1] != tensor_numel * base_stride);
        if (!run_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
            strides[view_d] = view_numel * base_stride;
            view_numel *= shape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return false;
        if (d > 0) {
            base_stride = t->strides[d - 1];
            tensor_numel = view_numel = 1;
        }
    }
    return view_d == -1;
}

/* shape as a view of input 0 when possible, else (copy_ok) a new tensor. */
static tj_status reshape_meta(const tjc_call *c, const int64_t *shape, int n, bool copy_ok) {
    const tj_tensor *t = c->in[0];
    tjc_meta *m = &c->meta[0];
    int64_t strides[TJ_MAX_DIMS];
    if (view_strides(t, shape, n, strides)) {
        view_meta(m, t);
        m->ndim = n;
        if (n) {
            memcpy(m->sizes, shape, sizeof(int64_t) * (size_t)n);
            memcpy(m->strides, strides, sizeof(int64_t) * (size_t)n);
        }
        return TJ_OK;
    }
    if (copy_ok) {
        tjc_meta_new(m, t->dtype, shape, n);
        return TJ_OK;
    }
    char bs[TJC_SIZES_BUF], bt[TJC_SIZES_BUF], bn[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: view size is not compatible with input tensor's size "
                     "and stride (sizes %s, strides %s, requested %s): at least one dimension "
                     "spans across two contiguous subspaces. Use reshape instead",
                     c->op->name, SIZES(bs, t->sizes, t->ndim), SIZES(bt, t->strides, t->ndim),
                     SIZES(bn, shape, n));
}

static tj_status infer_reshape_like(const tjc_call *c, int *n_out, bool copy_ok) {
    const tj_tensor *t = c->in[0];
    int64_t shape[TJ_MAX_DIMS];
    tj_status st = infer_shape(c, &c->attr[0], tjc_numel(t->sizes, t->ndim), shape);
    if (st) return st;
    *n_out = 1;
    return reshape_meta(c, shape, c->attr[0].ints.n, copy_ok);
}

tj_status tjc_infer_view(const tjc_call *c, int *n_out) {
    return infer_reshape_like(c, n_out, false);
}

tj_status tjc_infer_reshape(const tjc_call *c, int *n_out) {
    return infer_reshape_like(c, n_out, true);
}

tj_status tjc_infer_flatten(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int start, end;
    tj_status st;
    if ((st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &start)) ||
        (st = tjc_wrap_dim(c->op->name, c->attr[1].i, t->ndim, &end)))
        return st;
    if (start > end)
        return tjc_error(TJ_ERR_ARG, "%s: start_dim %lld comes after end_dim %lld", c->op->name,
                         (long long)c->attr[0].i, (long long)c->attr[1].i);
    *n_out = 1;
    if (t->ndim == 0) {
        int64_t one = 1;
        return reshape_meta(c, &one, 1, true);
    }
    if (start == end) {
        view_meta(&c->meta[0], t);
        return TJ_OK;
    }
    int64_t shape[TJ_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < start; d++) shape[n++] = t->sizes[d];
    shape[n] = 1;
    for (int d = start; d <= end; d++) shape[n] *= t->sizes[d];
    n++;
    for (int d = end + 1; d < t->ndim; d++) shape[n++] = t->sizes[d];
    return reshape_meta(c, shape, n, true);
}

tj_status tjc_infer_contiguous(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    *n_out = 1;
    if (tj_is_contiguous(t)) view_meta(&c->meta[0], t);
    else tjc_meta_new(&c->meta[0], t->dtype, t->sizes, t->ndim);
    return TJ_OK;
}

/* ---- dims added, dropped or reordered ------------------------------------------- */

tj_status tjc_infer_squeeze(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    tjc_meta *m = &c->meta[0];
    *n_out = 1;
    view_meta(m, t);
    for (int d = m->ndim - 1; d >= 0; d--)
        if (m->sizes[d] == 1) drop_dim(m, d);
    return TJ_OK;
}

tj_status tjc_infer_squeeze_dim(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &d);
    if (st) return st;
    *n_out = 1;
    view_meta(&c->meta[0], t);
    if (t->ndim > 0 && t->sizes[d] == 1) drop_dim(&c->meta[0], d);
    return TJ_OK;
}

tj_status tjc_infer_unsqueeze(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim + 1, &d);
    if (st) return st;
    if (t->ndim == TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: the result would have %d dims; tjit supports at most %d",
                         c->op->name, t->ndim + 1, TJ_MAX_DIMS);
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    for (int k = m->ndim; k > d; k--) {
        m->sizes[k] = m->sizes[k - 1];
        m->strides[k] = m->strides[k - 1];
    }
    m->sizes[d] = 1;
    m->strides[d] = d < t->ndim ? t->sizes[d] * t->strides[d] : 1;
    m->ndim++;
    return TJ_OK;
}

static void swap_dims(tjc_meta *m, int a, int b) {
    int64_t s = m->sizes[a], st = m->strides[a];
    m->sizes[a] = m->sizes[b];
    m->strides[a] = m->strides[b];
    m->sizes[b] = s;
    m->strides[b] = st;
}

tj_status tjc_infer_transpose(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int a, b;
    tj_status st;
    if ((st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &a)) ||
        (st = tjc_wrap_dim(c->op->name, c->attr[1].i, t->ndim, &b)))
        return st;
    *n_out = 1;
    view_meta(&c->meta[0], t);
    if (t->ndim > 0) swap_dims(&c->meta[0], a, b);
    return TJ_OK;
}

tj_status tjc_infer_t(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    if (t->ndim > 2) {
        char bs[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_ARG, "%s: expects a tensor with <= 2 dims, but self has %d "
                         "(sizes %s); use transpose", c->op->name, t->ndim,
                         SIZES(bs, t->sizes, t->ndim));
    }
    *n_out = 1;
    view_meta(&c->meta[0], t);
    if (t->ndim == 2) swap_dims(&c->meta[0], 0, 1);
    return TJ_OK;
}

tj_status tjc_infer_permute(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    const tj_attr *a = &c->attr[0];
    char bs[TJC_SIZES_BUF];
    if (a->ints.n != t->ndim)
        return tjc_error(TJ_ERR_ARG, "%s: dims %s has %d entries but the tensor has %d dims",
                         c->op->name, SIZES(bs, a->ints.data, a->ints.n), a->ints.n, t->ndim);
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    bool seen[TJ_MAX_DIMS] = {false};
    for (int k = 0; k < t->ndim; k++) {
        int d;
        tj_status st = tjc_wrap_dim(c->op->name, a->ints.data[k], t->ndim, &d);
        if (st) return st;
        if (seen[d])
            return tjc_error(TJ_ERR_ARG, "%s: dims %s names dim %d twice", c->op->name,
                             SIZES(bs, a->ints.data, a->ints.n), d);
        seen[d] = true;
        m->sizes[k] = t->sizes[d];
        m->strides[k] = t->strides[d];
    }
    return TJ_OK;
}

tj_status tjc_infer_expand(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    const tj_attr *a = &c->attr[0];
    const char *op = c->op->name;
    int n = a->ints.n;
    char bs[TJC_SIZES_BUF], bt[TJC_SIZES_BUF];
    if (n < t->ndim || n > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: size %s has %d entries; it needs at least the tensor's "
                         "%d dims (sizes %s) and at most %d", op, SIZES(bs, a->ints.data, n), n,
                         t->ndim, SIZES(bt, t->sizes, t->ndim), TJ_MAX_DIMS);
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    m->ndim = n;
    int64_t numel = 1;
    for (int i = n - 1; i >= 0; i--) {
        int d = i - (n - t->ndim); /* the input's dim, < 0 for a new leading dim */
        int64_t size = d >= 0 ? t->sizes[d] : 1;
        /* a new dim of size 1 gets the stride it would have if contiguous */
        int64_t stride = d >= 0 ? t->strides[d]
                         : i + 1 < n ? m->sizes[i + 1] * m->strides[i + 1] : 1;
        int64_t want = a->ints.data[i];
        if (want == -1) {
            if (d < 0)
                return tjc_error(TJ_ERR_ARG, "%s: size -1 is not allowed at the new leading "
                                 "dim %d (size %s)", op, i, SIZES(bs, a->ints.data, n));
            want = size;
        } else if (want < 0) {
            return tjc_error(TJ_ERR_ARG, "%s: invalid size %lld at dim %d of size %s", op,
                             (long long)want, i, SIZES(bs, a->ints.data, n));
        }
        if (want != size) {
            if (size != 1)
                return tjc_error(TJ_ERR_SHAPE, "%s: the expanded size %lld must match the "
                                 "existing size %lld at non-singleton dim %d (target sizes %s, "
                                 "tensor sizes %s)", op, (long long)want, (long long)size, i,
                                 SIZES(bs, a->ints.data, n), SIZES(bt, t->sizes, t->ndim));
            size = want;
            stride = 0;
        }
        if (__builtin_mul_overflow(numel, size, &numel))
            return tjc_error(TJ_ERR_ARG, "%s: size %s has too many elements", op,
                             SIZES(bs, a->ints.data, n));
        m->sizes[i] = size;
        m->strides[i] = stride;
    }
    return TJ_OK;
}

/* ---- parts of one dim ------------------------------------------------------------ */

tj_status tjc_infer_select(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &d)))
        return st;
    int64_t n = t->sizes[d], index = c->attr[1].i;
    if (index < -n || index >= n) {
        char bs[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_ARG, "%s: index %lld is out of range for dim %d of size %lld "
                         "(tensor sizes %s)", c->op->name, (long long)index, d, (long long)n,
                         SIZES(bs, t->sizes, t->ndim));
    }
    if (index < 0) index += n;
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    m->offset += index * t->strides[d];
    drop_dim(m, d);
    return TJ_OK;
}

tj_status tjc_infer_narrow(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    const char *op = c->op->name;
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(op, c->attr[0].i, t->ndim, &d))) return st;
    int64_t n = t->sizes[d], start = c->attr[1].i, length = c->attr[2].i;
    if (length < 0)
        return tjc_error(TJ_ERR_ARG, "%s: length must be non-negative, got %lld", op,
                         (long long)length);
    /* start == n is the end, valid for an empty narrow */
    if (start != n && (start < -n || start >= n))
        return tjc_error(TJ_ERR_ARG, "%s: start %lld is out of range for dim %d of size %lld",
                         op, (long long)start, d, (long long)n);
    if (start < 0) start += n;
    if (start > n - length)
        return tjc_error(TJ_ERR_ARG, "%s: start (%lld) + length (%lld) exceeds the size %lld of "
                         "dim %d", op, (long long)start, (long long)length, (long long)n, d);
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    m->offset += start * t->strides[d];
    m->sizes[d] = length;
    return TJ_OK;
}

tj_status tjc_infer_slice(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int dim;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &dim)))
        return st;
    int64_t start = c->attr[1].i, end = c->attr[2].i, step = c->attr[3].i;
    if (step <= 0)
        return tjc_error(TJ_ERR_ARG, "%s: step must be positive, got %lld", c->op->name,
                         (long long)step);
    int64_t n = t->sizes[dim];
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    int64_t len = end == start ? 0 : (end - start - 1) / step + 1; /* no overflow for huge steps */
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    m->offset += start * t->strides[dim];
    m->sizes[dim] = len;
    if (len > 1) m->strides[dim] *= step; /* len > 1 bounds step by n */
    return TJ_OK;
}

/* Metas for count consecutive pieces of dim d: piece k has length
 * sizes[k] when given, else min(uniform, what is left). */
static tj_status pieces(const tjc_call *c, int *n_out, int d, int64_t count, int64_t uniform,
                        const int64_t *sizes) {
    const tj_tensor *t = c->in[0];
    if (count > MAX_PIECES)
        return tjc_error(TJ_ERR_ARG, "%s: would produce %lld outputs; tjit allows at most %d",
                         c->op->name, (long long)count, MAX_PIECES);
    *n_out = (int)count;
    if (count > c->meta_cap) return TJ_OK; /* the dispatcher calls again with room */
    int64_t start = 0, n = t->sizes[d];
    for (int64_t k = 0; k < count; k++) {
        int64_t len = sizes ? sizes[k] : (uniform < n - start ? uniform : n - start);
        tjc_meta *m = &c->meta[k];
        view_meta(m, t);
        m->offset += start * t->strides[d];
        m->sizes[d] = len;
        start += len;
    }
    return TJ_OK;
}

tj_status tjc_infer_chunk(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[1].i, t->ndim, &d)))
        return st;
    int64_t chunks = c->attr[0].i, n = t->sizes[d];
    if (chunks <= 0)
        return tjc_error(TJ_ERR_ARG, "%s: chunks must be greater than 0, got %lld", c->op->name,
                         (long long)chunks);
    /* PyTorch: pieces of ceil(n / chunks), so there may be fewer than chunks;
     * an empty dim still gives chunks empty pieces */
    if (n == 0) return pieces(c, n_out, d, chunks, 0, NULL);
    int64_t size = n / chunks + (n % chunks != 0);
    return pieces(c, n_out, d, n / size + (n % size != 0), size, NULL);
}

tj_status tjc_infer_split(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[1].i, t->ndim, &d)))
        return st;
    int64_t size = c->attr[0].i, n = t->sizes[d];
    if (size < 0 || (size == 0 && n != 0))
        return tjc_error(TJ_ERR_ARG, "%s: split_size must be positive (or 0 for a dim of size "
                         "0), got %lld for dim %d of size %lld", c->op->name, (long long)size, d,
                         (long long)n);
    int64_t count = size == 0 ? 1 : n / size + (n % size != 0);
    return pieces(c, n_out, d, count > 0 ? count : 1, size, NULL);
}

tj_status tjc_infer_split_with_sizes(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    const tj_attr *a = &c->attr[0];
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[1].i, t->ndim, &d)))
        return st;
    int64_t n = t->sizes[d], left = n;
    bool fits = true;
    for (int k = 0; k < a->ints.n; k++) {
        if (a->ints.data[k] < 0) {
            char bs[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_ARG, "%s: split_sizes %s has a negative entry", c->op->name,
                             SIZES(bs, a->ints.data, a->ints.n));
        }
        if (a->ints.data[k] > left) fits = false;
        else left -= a->ints.data[k];
    }
    if (!fits || left != 0) {
        char bs[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: split_sizes %s must sum exactly to %lld, the size "
                         "of dim %d", c->op->name, SIZES(bs, a->ints.data, a->ints.n),
                         (long long)n, d);
    }
    return pieces(c, n_out, d, a->ints.n, 0, a->ints.data);
}

tj_status tjc_infer_unbind(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int d;
    tj_status st;
    if ((st = need_dims(c)) || (st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &d)))
        return st;
    int64_t n = t->sizes[d];
    if (n > MAX_PIECES)
        return tjc_error(TJ_ERR_ARG, "%s: would produce %lld outputs; tjit allows at most %d",
                         c->op->name, (long long)n, MAX_PIECES);
    *n_out = (int)n;
    if (n > c->meta_cap) return TJ_OK;
    for (int64_t k = 0; k < n; k++) {
        tjc_meta *m = &c->meta[k];
        view_meta(m, t);
        m->offset += k * t->strides[d];
        drop_dim(m, d);
    }
    return TJ_OK;
}

/* attrs: offset, dim1, dim2. The diagonal's elements, offset above the main
 * one (below when negative), as a new last dim; dim1 and dim2 go. */
tj_status tjc_infer_diagonal(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    const char *op = c->op->name;
    int d1, d2;
    tj_status st;
    if ((st = tjc_wrap_dim(op, c->attr[1].i, t->ndim, &d1)) ||
        (st = tjc_wrap_dim(op, c->attr[2].i, t->ndim, &d2)))
        return st;
    if (d1 == d2)
        return tjc_error(TJ_ERR_ARG, "%s: diagonal dimensions cannot be identical: dim1=%lld and "
                         "dim2=%lld are both dim %d", op, (long long)c->attr[1].i,
                         (long long)c->attr[2].i, d1);
    int64_t k = c->attr[0].i, n1 = t->sizes[d1], n2 = t->sizes[d2];
    int64_t len = k >= 0 ? (n1 < n2 - k ? n1 : n2 - k) : (n1 + k < n2 ? n1 + k : n2);
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    /* len > 0 bounds |k| by a size, so the products cannot overflow; an empty
     * diagonal keeps the offset, as PyTorch's does */
    if (len > 0)
        m->offset += k >= 0 ? k * t->strides[d2] : -k * t->strides[d1];
    else
        len = 0;
    int64_t stride = t->strides[d1] + t->strides[d2];
    drop_dim(m, d1 > d2 ? d1 : d2);
    drop_dim(m, d1 > d2 ? d2 : d1);
    m->sizes[m->ndim] = len;
    m->strides[m->ndim] = stride;
    m->ndim++;
    return TJ_OK;
}
