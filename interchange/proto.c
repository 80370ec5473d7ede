/* proto.c — what export and import share: dtypes and tensors to and from
 * ONNX's TensorProto, the exporter's allocation pool, files, and a table of
 * names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tjo.h"

/* ---- dtypes ---------------------------------------------------------------------- */

int tjo_onnx_dtype(tj_dtype d) {
    switch (d) {
    case TJ_F32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case TJ_F64: return ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    case TJ_I64: return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case TJ_BOOL: return ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    default: return ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED;
    }
}

int tjo_dtype_from_onnx(int onnx_type) {
    switch (onnx_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return TJ_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return TJ_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return TJ_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return TJ_BOOL;
    default: return -1;
    }
}

const char *tjo_onnx_dtype_name(int t) {
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16",
                                        "INT32", "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE",
                                        "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "an unknown type";
}

/* ---- tensors ----------------------------------------------------------------------- */

#define MAX_ELEMENTS (INT64_C(1) << 31)

tj_tensor *tjo_tensor_from_proto(const Onnx__TensorProto *p, const char *what) {
    if (p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL || p->n_external_data) {
        tjc_error(TJ_ERR_UNSUPPORTED, "%s: data stored in an external file is not supported", what);
        return NULL;
    }
    if (p->segment) {
        tjc_error(TJ_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", what);
        return NULL;
    }
    int dt = tjo_dtype_from_onnx(p->data_type);
    if (dt < 0) {
        tjc_error(TJ_ERR_UNSUPPORTED, "%s: data_type %s (%d) has no tjit dtype (float, double, "
                  "int64 and bool do)", what, tjo_onnx_dtype_name(p->data_type), (int)p->data_type);
        return NULL;
    }
    if (p->n_dims > TJ_MAX_DIMS) {
        tjc_error(TJ_ERR_UNSUPPORTED, "%s: %zu dims, tjit takes at most %d", what, p->n_dims, TJ_MAX_DIMS);
        return NULL;
    }
    int64_t sizes[TJ_MAX_DIMS], numel = 1;
    for (size_t d = 0; d < p->n_dims; d++) {
        if (p->dims[d] < 0 || p->dims[d] > MAX_ELEMENTS) {
            tjc_error(TJ_ERR_PARSE, "%s: dims[%zu] is %lld", what, d, (long long)p->dims[d]);
            return NULL;
        }
        sizes[d] = p->dims[d];
        numel *= sizes[d];
        if (numel > MAX_ELEMENTS) {
            tjc_error(TJ_ERR_PARSE, "%s: more than 2^31 elements", what);
            return NULL;
        }
    }
    size_t esize = tj_dtype_size((tj_dtype)dt);
    size_t have = 0;
    const char *field = "raw_data";
    if (p->has_raw_data) have = p->raw_data.len / esize;
    else if (dt == TJ_F32) have = p->n_float_data, field = "float_data";
    else if (dt == TJ_F64) have = p->n_double_data, field = "double_data";
    else if (dt == TJ_I64) have = p->n_int64_data, field = "int64_data";
    else have = p->n_int32_data, field = "int32_data";
    if ((p->has_raw_data && p->raw_data.len != (size_t)numel * esize) ||
        (!p->has_raw_data && have != (size_t)numel)) {
        tjc_error(TJ_ERR_PARSE, "%s: %s holds %zu values, the dims need %lld", what, field,
                  p->has_raw_data ? p->raw_data.len / esize : have, (long long)numel);
        return NULL;
    }
    tj_tensor *t = tjc_alloc(sizes, (int)p->n_dims, (tj_dtype)dt);
    if (!t) return NULL;
    char *dst = tjc_data_ptr(t);
    if (p->has_raw_data) {
        if (numel) memcpy(dst, p->raw_data.data, (size_t)numel * esize);
        if (dt == TJ_BOOL)
            for (int64_t i = 0; i < numel; i++) ((bool *)dst)[i] = p->raw_data.data[i] != 0;
    } else if (dt == TJ_F32) {
        if (numel) memcpy(dst, p->float_data, (size_t)numel * esize);
    } else if (dt == TJ_F64) {
        if (numel) memcpy(dst, p->double_data, (size_t)numel * esize);
    } else if (dt == TJ_I64) {
        if (numel) memcpy(dst, p->int64_data, (size_t)numel * esize);
    } else {
        for (int64_t i = 0; i < numel; i++) ((bool *)dst)[i] = p->int32_data[i] != 0;
    }
    return t;
}

tj_tensor *tj_onnx_load_tensor(const char *path) {
    if (!path) return tjc_error(TJ_ERR_ARG, "tj_onnx_load_tensor: path is NULL"), NULL;
    size_t len = 0;
    void *data = tjo_read_file(path, &len);
    if (!data) return NULL;
    Onnx__TensorProto *p = onnx__tensor_proto__unpack(NULL, len, data);
    tjc_free(data);
    if (!p) {
        tjc_error(TJ_ERR_PARSE, "%s: not a serialized ONNX TensorProto", path);
        return NULL;
    }
    tj_tensor *t = tjo_tensor_from_proto(p, path);
    onnx__tensor_proto__free_unpacked(p, NULL);
    if (t && !tjc_track_created(t)) {
        tj_release(t);
        return NULL;
    }
    return t;
}

/* ---- the pool -------------------------------------------------------------------------- */

void *tjo_alloc(tjo_pool *p, size_t n) {
    if (p->failed) return NULL;
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 256;
        void **b = tjc_realloc(p->blocks, sizeof *b * (size_t)cap);
        if (!b) {
            p->failed = true;
            tjc_error(TJ_ERR_MEMORY, "out of memory");
            return NULL;
        }
        p->blocks = b;
        p->cap = cap;
    }
    void *m = tjc_calloc(1, n ? n : 1);
    if (!m) {
        p->failed = true;
        tjc_error(TJ_ERR_MEMORY, "out of memory");
        return NULL;
    }
    p->blocks[p->n++] = m;
    return m;
}

char *tjo_strdup(tjo_pool *p, const char *s) {
    size_t n = strlen(s) + 1;
    char *c = tjo_alloc(p, n);
    if (c) memcpy(c, s, n);
    return c;
}

void tjo_pool_free(tjo_pool *p) {
    for (int i = 0; i < p->n; i++) tjc_free(p->blocks[i]);
    tjc_free(p->blocks);
    memset(p, 0, sizeof *p);
}

Onnx__TensorProto *tjo_tensor_to_proto(tjo_pool *pool, const tj_tensor *t, const char *name) {
    Onnx__TensorProto *p = tjo_alloc(pool, sizeof *p);
    if (!p) return NULL;
    onnx__tensor_proto__init(p);
    p->name = name ? tjo_strdup(pool, name) : NULL;
    p->has_data_type = true;
    p->data_type = tjo_onnx_dtype(tj_tensor_dtype(t));
    int nd = tj_ndim(t);
    p->n_dims = (size_t)nd;
    p->dims = tjo_alloc(pool, sizeof(int64_t) * (size_t)(nd ? nd : 1));
    if (!p->dims) return NULL;
    for (int d = 0; d < nd; d++) p->dims[d] = tj_sizes(t)[d];
    int64_t numel = tj_numel(t);
    size_t esize = tj_dtype_size(tj_tensor_dtype(t));
    uint8_t *raw = tjo_alloc(pool, (size_t)numel * esize);
    if (!raw) return NULL;
    /* element by element in row-major order: t may be any view */
    int64_t idx[TJ_MAX_DIMS] = {0};
    const char *base = (const char *)t->storage->data;
    for (int64_t k = 0; k < numel; k++) {
        int64_t off = t->offset;
        for (int d = 0; d < nd; d++) off += idx[d] * t->strides[d];
        memcpy(raw + (size_t)k * esize, base + off * (int64_t)esize, esize);
        for (int d = nd - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--) idx[d] = 0;
    }
    p->has_raw_data = true;
    p->raw_data.data = raw;
    p->raw_data.len = (size_t)numel * esize;
    return p;
}

/* ---- files ------------------------------------------------------------------------------ */

void *tjo_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        tjc_error(TJ_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = NULL;
    for (;;) {
        char *bigger = tjc_realloc(buf, cap);
        if (!bigger) {
            tjc_free(buf);
            fclose(f);
            tjc_error(TJ_ERR_MEMORY, "out of memory reading %s", path);
            return NULL;
        }
        buf = bigger;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        tjc_free(buf);
        tjc_error(TJ_ERR_IO, "cannot read %s", path);
        return NULL;
    }
    *len = n;
    return buf;
}

tj_status tjo_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return tjc_error(TJ_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    return ok ? TJ_OK : tjc_error(TJ_ERR_IO, "cannot write %s", path);
}

/* ---- names ------------------------------------------------------------------------------- */

static size_t hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

void *tjo_names_get(const tjo_names *m, const char *key) {
    if (!m->cap) return NULL;
    for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return NULL;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

bool tjo_names_put(tjo_names *m, const char *key, void *val) {
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = tjc_calloc(cap, sizeof *keys);
        void **vals = tjc_calloc(cap, sizeof *vals);
        if (!keys || !vals) {
            tjc_free(keys);
            tjc_free(vals);
            tjc_error(TJ_ERR_MEMORY, "out of memory");
            return false;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t j = hash(m->keys[i]) & (cap - 1);
            while (keys[j]) j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            vals[j] = m->vals[i];
        }
        tjc_free(m->keys);
        tjc_free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t i = hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->used++;
    m->keys[i] = key;
    m->vals[i] = val;
    return true;
}

void tjo_names_free(tjo_names *m) {
    tjc_free(m->keys);
    tjc_free(m->vals);
    memset(m, 0, sizeof *m);
}
