/* tensor.c — tensors: allocation, views, creation functions, accessors,
 * names and overlap queries (storage blocks come from storage.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core.h"
#include "storage.h"

/* ---- tensors --------------------------------------------------------------- */

int64_t tjc_numel(const int64_t *sizes, int ndim) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= sizes[d];
    return n;
}

int64_t tjc_contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides) {
    int64_t n = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = n;
        n *= sizes[d] > 0 ? sizes[d] : 1;
    }
    return tjc_numel(sizes, ndim);
}

static tj_status check_sizes(const char *fn, const int64_t *sizes, int ndim) {
    if (ndim < 0 || ndim > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: %d dims requested; tjit supports 0 to %d", fn, ndim,
                         TJ_MAX_DIMS);
    if (ndim > 0 && !sizes) return tjc_error(TJ_ERR_ARG, "%s: sizes is NULL", fn);
    int64_t n = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] < 0)
            return tjc_error(TJ_ERR_ARG, "%s: size %lld at dim %d is negative", fn,
                             (long long)sizes[d], d);
        overflow = overflow || __builtin_mul_overflow(n, sizes[d], &n);
    }
    /* numel times the widest element must stay a valid byte count */
    if (overflow || n > INT64_MAX / 8) {
        char buf[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_MEMORY, "%s: sizes %s hold more elements than can be addressed",
                         fn, tjc_fmt_sizes(buf, sizeof buf, sizes, ndim));
    }
    return TJ_OK;
}

static tj_status check_dtype(const char *fn, tj_dtype dtype) {
    if ((unsigned)dtype >= TJ_NUM_DTYPES)
        return tjc_error(TJ_ERR_DTYPE, "%s: invalid dtype %d", fn, (int)dtype);
    return TJ_OK;
}

/* A contiguous tensor on device; fn names the caller in messages. */
static tj_tensor *alloc_on(const char *fn, tj_device device, const int64_t *sizes, int ndim,
                           tj_dtype dtype) {
    if (check_sizes(fn, sizes, ndim) || check_dtype(fn, dtype)) return NULL;
    if (device.type != TJ_CPU) {
        char dev[TJC_DEVICE_BUF];
        const tjc_device_backend *b = tjc_device_backend_of(device.type);
        if (!b || !b->alloc)
            return tjc_error(TJ_ERR_DEVICE, "%s: no backend for device %s is built into this "
                             "library", fn, tjc_fmt_device(dev, sizeof dev, device)), NULL;
        if (device.index < 0 || device.index >= b->device_count())
            return tjc_error(TJ_ERR_DEVICE, "%s: device %s does not exist (%d %s device%s)", fn,
                             tjc_fmt_device(dev, sizeof dev, device), b->device_count(), b->name,
                             b->device_count() == 1 ? "" : "s"), NULL;
    }
    tj_tensor *t = tjc_calloc(1, sizeof *t);
    tjc_count_header();
    int64_t n = t ? tjc_contiguous_strides(sizes, ndim, t->strides) : 0;
    if (t) t->storage = tjc_storage_new_on(device, (size_t)n * tj_dtype_size(dtype));
    if (!t || !t->storage) {
        tjc_free(t);
        char buf[TJC_SIZES_BUF], dev[TJC_DEVICE_BUF];
        if (device.type == TJ_CPU || !tj_last_status())
            tjc_error(TJ_ERR_MEMORY, "%s: out of memory allocating a %s tensor of sizes %s on %s",
                      fn, tj_dtype_name(dtype), tjc_fmt_sizes(buf, sizeof buf, sizes, ndim),
                      tjc_fmt_device(dev, sizeof dev, device));
        return NULL;
    }
    atomic_init(&t->refcount, 1);
    t->ndim = ndim;
    t->dtype = dtype;
    if (ndim) memcpy(t->sizes, sizes, (size_t)ndim * sizeof *sizes);
    return t;
}

static tj_tensor *alloc_as(const char *fn, const int64_t *sizes, int ndim, tj_dtype dtype) {
    return alloc_on(fn, (tj_device){TJ_CPU, 0}, sizes, ndim, dtype);
}

tj_tensor *tjc_alloc(const int64_t *sizes, int ndim, tj_dtype dtype) {
    return alloc_as("tjit", sizes, ndim, dtype);
}

tj_tensor *tjc_alloc_on(tj_device device, const int64_t *sizes, int ndim, tj_dtype dtype) {
    return alloc_on("tjit", device, sizes, ndim, dtype);
}

void tjc_view_on_stack(tj_tensor *view, const tj_tensor *base, const int64_t *sizes,
                       const int64_t *strides, int ndim, int64_t offset) {
    memset(view, 0, sizeof *view);
    atomic_init(&view->refcount, 1);
    view->storage = base->storage;
    view->offset = offset;
    view->ndim = ndim;
    view->dtype = base->dtype;
    if (ndim) {
        memcpy(view->sizes, sizes, (size_t)ndim * sizeof *sizes);
        memcpy(view->strides, strides, (size_t)ndim * sizeof *strides);
    }
}

tj_tensor *tjc_make_view(tj_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim,
                         int64_t offset) {
    tj_tensor *t = tjc_malloc(sizeof *t);
    tjc_count_header();
    if (!t) {
        tjc_error(TJ_ERR_MEMORY, "out of memory creating a view");
        return NULL;
    }
    tjc_view_on_stack(t, base, sizes, strides, ndim, offset); /* then it takes a reference */
    atomic_fetch_add_explicit(&t->storage->refcount, 1, memory_order_relaxed);
    return t;
}

tj_tensor *tj_retain(tj_tensor *t) {
#ifdef TJIT_DEBUG_REFCOUNT
    if (t && atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed) <= 0)
        tjc_refcount_misuse(t, "tj_retain");
#else
    if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
#endif
    return t;
}

void tj_release(tj_tensor *t) {
    if (!t) return;
    long before = atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel);
#ifdef TJIT_DEBUG_REFCOUNT
    if (before <= 0) tjc_refcount_misuse(t, "tj_release");
#endif
    if (before == 1) {
        tjc_storage_release(t->storage);
#ifdef TJIT_DEBUG_REFCOUNT
        tjc_refcount_retire(t);
#else
        tjc_free(t->name);
        tjc_free(t);
#endif
    }
}

/* ---- creation -------------------------------------------------------------- */

static void fill(tj_tensor *t, double v) {
    int64_t n = tjc_numel(t->sizes, t->ndim);
    char *p = tjc_data_ptr(t);
    switch (t->dtype) {
    case TJ_F32: for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)v; break;
    case TJ_F64: for (int64_t i = 0; i < n; i++) ((double *)p)[i] = v; break;
    case TJ_I64: for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] = (int64_t)v; break;
    case TJ_BOOL: memset(p, v != 0, (size_t)n); break;
    default: break;
    }
}

static tj_tensor *created(tj_tensor *t) {
    if (t && !tjc_track_created(t)) {
        tj_release(t);
        return NULL;
    }
    return t;
}

tj_tensor *tj_empty(const int64_t *sizes, int ndim, tj_dtype dtype) {
    return created(alloc_as("tj_empty", sizes, ndim, dtype));
}

/* A filled host tensor not yet given to a scope. */
static tj_tensor *filled(const char *fn, const int64_t *sizes, int ndim, double value,
                         tj_dtype dtype) {
    if (dtype == TJ_I64 && !(value >= -0x1p63 && value < 0x1p63))
        return tjc_error(TJ_ERR_ARG, "%s: value %g does not fit in i64", fn, value), NULL;
    tj_tensor *t = alloc_as(fn, sizes, ndim, dtype);
    if (t) fill(t, value);
    return t;
}

static tj_tensor *full_as(const char *fn, const int64_t *sizes, int ndim, double value,
                          tj_dtype dtype) {
    return created(filled(fn, sizes, ndim, value, dtype));
}

tj_tensor *tj_empty_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device) {
    return created(alloc_on("tj_empty_on", device, sizes, ndim, dtype));
}

/* A device tensor filled on the host and copied over: creation is rare next
 * to the work done on it. */
static tj_tensor *full_on(const char *fn, const int64_t *sizes, int ndim, double value,
                          tj_dtype dtype, tj_device device) {
    tj_tensor *host = filled(fn, sizes, ndim, value, dtype);
    if (!host || device.type == TJ_CPU) return created(host);
    tj_tensor *t = alloc_on(fn, device, sizes, ndim, dtype);
    size_t nbytes = (size_t)tjc_numel(sizes, ndim) * tj_dtype_size(dtype);
    if (t && tjc_copy_bytes(tjc_data_ptr(t), device, tjc_data_ptr(host), host->storage->device,
                            nbytes) != TJ_OK) {
        tj_release(t);
        t = NULL;
    }
    tj_release(host);
    return created(t);
}

tj_tensor *tj_full_on(const int64_t *sizes, int ndim, double value, tj_dtype dtype,
                      tj_device device) {
    return full_on("tj_full_on", sizes, ndim, value, dtype, device);
}
tj_tensor *tj_zeros_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device) {
    return full_on("tj_zeros_on", sizes, ndim, 0.0, dtype, device);
}
tj_tensor *tj_ones_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device) {
    return full_on("tj_ones_on", sizes, ndim, 1.0, dtype, device);
}

tj_tensor *tj_full(const int64_t *sizes, int ndim, double value, tj_dtype dtype) {
    return full_as("tj_full", sizes, ndim, value, dtype);
}

tj_tensor *tj_zeros(const int64_t *sizes, int ndim, tj_dtype dtype) {
    return full_as("tj_zeros", sizes, ndim, 0.0, dtype);
}
tj_tensor *tj_ones(const int64_t *sizes, int ndim, tj_dtype dtype) {
    return full_as("tj_ones", sizes, ndim, 1.0, dtype);
}
tj_tensor *tj_scalar_tensor(double value, tj_dtype dtype) {
    return full_as("tj_scalar_tensor", NULL, 0, value, dtype);
}

tj_tensor *tj_arange(double start, double end, double step, tj_dtype dtype) {
    if (step == 0 || !isfinite(step) || !isfinite(start) || !isfinite(end))
        return tjc_error(TJ_ERR_ARG, "tj_arange: step must be nonzero and all of start, end "
                         "and step finite (start=%g, end=%g, step=%g)", start, end, step), NULL;
    if ((end - start) / step < 0)
        return tjc_error(TJ_ERR_ARG, "tj_arange: step %g has the wrong sign for start=%g, "
                         "end=%g", step, start, end), NULL;
    if ((unsigned)dtype >= TJ_NUM_DTYPES)
        return tjc_error(TJ_ERR_DTYPE, "tj_arange: invalid dtype %d", (int)dtype), NULL;
    if (dtype == TJ_BOOL)
        return tjc_error(TJ_ERR_DTYPE, "tj_arange: bool is not a dtype for a range"), NULL;
    double count = ceil((end - start) / step);
    if (!(count < 0x1p62)) /* also catches an overflow of end - start to infinity */
        return tjc_error(TJ_ERR_ARG, "tj_arange: [%g, %g) in steps of %g has too many "
                         "elements", start, end, step), NULL;
    int64_t n = (int64_t)count;
    double last = start + (double)(n - 1) * step;
    if (dtype == TJ_I64 && n > 0 &&
        !(fabs(start) < 0x1p63 && fabs(last) < 0x1p63))
        return tjc_error(TJ_ERR_ARG, "tj_arange: values from %g to %g do not fit in i64", start,
                         last), NULL;
    tj_tensor *t = alloc_as("tj_arange", &n, 1, dtype);
    if (!t) return NULL;
    char *p = tjc_data_ptr(t);
    for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * step;
        if (dtype == TJ_F32) ((float *)p)[i] = (float)v;
        else if (dtype == TJ_F64) ((double *)p)[i] = v;
        else ((int64_t *)p)[i] = (int64_t)v;
    }
    return created(t);
}

tj_tensor *tj_from_array(const void *data, const int64_t *sizes, int ndim, tj_dtype dtype) {
    tj_tensor *t = alloc_as("tj_from_array", sizes, ndim, dtype);
    if (!t) return NULL;
    size_t nbytes = (size_t)tjc_numel(sizes, ndim) * tj_dtype_size(dtype);
    if (nbytes && !data) {
        tj_release(t);
        tjc_error(TJ_ERR_ARG, "tj_from_array: data is NULL");
        return NULL;
    }
    if (nbytes) memcpy(tjc_data_ptr(t), data, nbytes);
    if (dtype == TJ_BOOL) { /* normalise to 0/1: other bytes are not valid bools */
        unsigned char *b = (unsigned char *)tjc_data_ptr(t);
        for (size_t i = 0; i < nbytes; i++) b[i] = b[i] != 0;
    }
    return created(t);
}

/* ---- accessors ------------------------------------------------------------- */

/* A NULL tensor given to an accessor: keeps an error already pending (it
 * names the op that returned the NULL), else names this call. */
#define TENSOR_GET(fn, expr, bad) \
    do {                             \
        if (!t) return tjc_last_or(TJ_ERR_ARG, fn ": tensor is NULL"), bad; \
        return expr;                 \
    } while (0)
int tj_ndim(const tj_tensor *t) { TENSOR_GET("tj_ndim", t->ndim, -1); }
const int64_t *tj_sizes(const tj_tensor *t) { TENSOR_GET("tj_sizes", t->sizes, NULL); }
const int64_t *tj_strides(const tj_tensor *t) { TENSOR_GET("tj_strides", t->strides, NULL); }
int64_t tj_numel(const tj_tensor *t) { TENSOR_GET("tj_numel", tjc_numel(t->sizes, t->ndim), -1); }
int64_t tj_storage_offset(const tj_tensor *t) { TENSOR_GET("tj_storage_offset", t->offset, -1); }
tj_dtype tj_tensor_dtype(const tj_tensor *t) {
    TENSOR_GET("tj_tensor_dtype", t->dtype, TJ_NUM_DTYPES);
}
tj_device tj_tensor_device(const tj_tensor *t) {
    TENSOR_GET("tj_tensor_device", t->storage->device, ((tj_device){TJ_NUM_DEVICE_TYPES, -1}));
}

int64_t tj_size(const tj_tensor *t, int dim) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_size: tensor is NULL"), -1;
    if (t->ndim == 0)
        return tjc_error(TJ_ERR_ARG, "tj_size: a 0-dim tensor has no dim %d", dim), -1;
    int d;
    if (tjc_wrap_dim("tj_size", dim, t->ndim, &d)) return -1;
    return t->sizes[d];
}

bool tj_is_contiguous(const tj_tensor *t) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_is_contiguous: tensor is NULL"), false;
    if (tjc_numel(t->sizes, t->ndim) == 0) return true; /* no element to be out of place */
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] != expected) return false;
        expected *= t->sizes[d];
    }
    return true;
}

bool tj_shares_storage(const tj_tensor *a, const tj_tensor *b) {
    if (!a || !b) return tjc_last_or(TJ_ERR_ARG, "tj_shares_storage: a tensor is NULL"), false;
    return a->storage == b->storage;
}

void *tj_data(tj_tensor *t) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_data: tensor is NULL"), NULL;
    const tj_record_hook *h = tjc_record_hook();
    if (h && h->host_read && tjc_op_depth() == 0) h->host_read(h->ctx, t, "tj_data");
    return tjc_data_ptr(t);
}

double tj_get(const tj_tensor *t, const int64_t *index) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_get: tensor is NULL"), NAN;
    return tj_get_n(t, index, t->ndim);
}

double tj_get_n(const tj_tensor *t, const int64_t *index, int n_index) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_get_n: tensor is NULL"), NAN;
    if (n_index != t->ndim) {
        char buf[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_ARG, "tj_get: %d indices given for a tensor of %d dims (sizes %s)",
                         n_index, t->ndim, tjc_fmt_sizes(buf, sizeof buf, t->sizes, t->ndim)),
               NAN;
    }
    if (t->ndim > 0 && !index) return tjc_error(TJ_ERR_ARG, "tj_get: index is NULL"), NAN;
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (index[d] < 0 || index[d] >= t->sizes[d]) {
            char buf[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_ARG, "tj_get: index %lld at dim %d is out of range for sizes "
                             "%s", (long long)index[d], d,
                             tjc_fmt_sizes(buf, sizeof buf, t->sizes, t->ndim)),
                   NAN;
        }
        off += index[d] * t->strides[d];
    }
    const char *p = tjc_data_ptr(t) + off * (int64_t)tj_dtype_size(t->dtype);
    double element[1]; /* a device's element is copied over first */
    if (t->storage->device.type != TJ_CPU) {
        if (tjc_copy_bytes(element, (tj_device){TJ_CPU, 0}, p, t->storage->device,
                           tj_dtype_size(t->dtype)) != TJ_OK)
            return NAN;
        p = (const char *)element;
    }
    switch (t->dtype) {
    case TJ_F32: return *(const float *)p;
    case TJ_F64: return *(const double *)p;
    case TJ_I64: return (double)*(const int64_t *)p;
    case TJ_BOOL: return *(const bool *)p;
    default: return 0;
    }
}

tj_status tj_item(const tj_tensor *t, double *value) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_item: tensor is NULL");
    if (!value) return tjc_error(TJ_ERR_ARG, "tj_item: value is NULL");
    int64_t n = tjc_numel(t->sizes, t->ndim);
    if (n != 1) {
        char buf[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "tj_item: a tensor with %lld elements (sizes %s) "
                         "cannot be read as one number", (long long)n,
                         tjc_fmt_sizes(buf, sizeof buf, t->sizes, t->ndim));
    }
    const tj_record_hook *h = tjc_record_hook();
    if (h && h->host_read && tjc_op_depth() == 0) h->host_read(h->ctx, t, "tj_item");
    int64_t zero[TJ_MAX_DIMS] = {0};
    *value = tj_get(t, zero);
    return TJ_OK;
}

tj_status tj_tensor_set_name(tj_tensor *t, const char *name) {
    if (!t) return tjc_error(TJ_ERR_ARG, "tj_tensor_set_name: tensor is NULL");
    char *copy = NULL;
    if (name) {
        copy = tjc_strdup(name);
        if (!copy) return tjc_error(TJ_ERR_MEMORY, "tj_tensor_set_name: out of memory");
    }
    tjc_free(t->name);
    t->name = copy;
    return TJ_OK;
}

const char *tj_tensor_name(const tj_tensor *t) { TENSOR_GET("tj_tensor_name", t->name, NULL); }

/* ---- overlap --------------------------------------------------------------- */

static void extent(const tj_tensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        int64_t span = (t->sizes[d] - 1) * t->strides[d];
        if (span < 0) *lo += span;
        else *hi += span;
    }
}

bool tjc_may_overlap(const tj_tensor *a, const tj_tensor *b) {
    if (a->storage != b->storage) return false;
    if (!tjc_numel(a->sizes, a->ndim) || !tjc_numel(b->sizes, b->ndim)) return false;
    int64_t alo, ahi, blo, bhi;
    extent(a, &alo, &ahi);
    extent(b, &blo, &bhi);
    int64_t ea = (int64_t)tj_dtype_size(a->dtype), eb = (int64_t)tj_dtype_size(b->dtype);
    return alo * ea < (bhi + 1) * eb && blo * eb < (ahi + 1) * ea;
}

bool tjc_has_internal_overlap(const tj_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] > 1 && t->strides[d] == 0) return true;
    return false;
}
