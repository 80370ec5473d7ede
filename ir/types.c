/* types.c — value types: constructors, equality, validity, and their text
 * form, plus the literal writers (floats, strings) the printer shares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir_internal.h"

/* In tj_dtype order: the names PyTorch's IR uses for scalar types. */
static const char *const dtype_ir_names[TJ_NUM_DTYPES] = {"Float", "Double", "Long", "Bool"};

const char *tjir_dtype_ir_name(int dtype) {
    return dtype >= 0 && dtype < TJ_NUM_DTYPES ? dtype_ir_names[dtype] : NULL;
}

int tjir_dtype_from_ir_name(const char *s, size_t n) {
    for (int d = 0; d < TJ_NUM_DTYPES; d++)
        if (strlen(dtype_ir_names[d]) == n && strncmp(dtype_ir_names[d], s, n) == 0) return d;
    return -1;
}

/* ---- constructors -------------------------------------------------------------- */

static tj_type blank(tj_type_kind kind) {
    tj_type t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.elem = TJ_TYPE_TENSOR;
    t.dtype = TJ_UNKNOWN;
    t.ndim = TJ_UNKNOWN;
    for (int d = 0; d < TJ_MAX_DIMS; d++) t.sizes[d] = t.strides[d] = TJ_UNKNOWN_DIM;
    t.device_type = TJ_UNKNOWN;
    t.device_index = 0;
    t.requires_grad = 0;
    return t;
}

tj_type tj_type_tensor(void) { return blank(TJ_TYPE_TENSOR); }

tj_type tj_type_tensor_of(tj_dtype dtype, const int64_t *sizes, int ndim) {
    tj_type t = blank(TJ_TYPE_TENSOR);
    t.dtype = dtype;
    if ((unsigned)dtype >= TJ_NUM_DTYPES)
        tjc_error(TJ_ERR_DTYPE, "tj_type_tensor_of: invalid dtype %d", (int)dtype);
    if (ndim < 0 || ndim > TJ_MAX_DIMS || (ndim > 0 && !sizes)) { /* the rank stays unknown */
        tjc_error(TJ_ERR_ARG, "tj_type_tensor_of: %s",
                  ndim > 0 && ndim <= TJ_MAX_DIMS ? "sizes is NULL" : "the rank is out of range");
        return t;
    }
    t.ndim = ndim;
    for (int d = 0; d < ndim; d++) t.sizes[d] = sizes[d];
    t.device_type = TJ_CPU;
    return t;
}

tj_type tj_type_contiguous(tj_dtype dtype, const int64_t *sizes, int ndim) {
    tj_type t = tj_type_tensor_of(dtype, sizes, ndim);
    if (t.ndim == ndim) {
        int64_t known = 1; /* strides past an unknown size stay unknown */
        for (int d = ndim - 1; d >= 0; d--) {
            t.strides[d] = known > 0 ? known : TJ_UNKNOWN_DIM;
            if (sizes[d] == TJ_UNKNOWN_DIM || sizes[d] < 0) known = -1;
            else if (known > 0) known *= sizes[d] > 0 ? sizes[d] : 1;
        }
    }
    return t;
}

tj_type tj_type_of_tensor(const tj_tensor *x) {
    tj_type t = blank(TJ_TYPE_TENSOR);
    if (!x) return tjc_last_or(TJ_ERR_ARG, "tj_type_of_tensor: tensor is NULL"), t;
    t.dtype = x->dtype;
    t.ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++) {
        t.sizes[d] = x->sizes[d];
        t.strides[d] = x->strides[d];
    }
    tj_device dev = tj_tensor_device(x);
    t.device_type = dev.type;
    t.device_index = dev.type == TJ_CPU ? 0 : dev.index;
    return t;
}

tj_type tj_type_scalar(tj_type_kind kind) {
    if (kind == TJ_TYPE_TENSOR || kind == TJ_TYPE_LIST || (unsigned)kind >= TJ_NUM_TYPE_KINDS)
        tjc_error(TJ_ERR_ARG, "tj_type_scalar: kind %d is not int, float, bool, str or NoneType",
                  (int)kind);
    return blank(kind);
}

tj_type tj_type_list(tj_type_kind elem) {
    if (elem == TJ_TYPE_LIST || elem == TJ_TYPE_NONE || (unsigned)elem >= TJ_NUM_TYPE_KINDS)
        tjc_error(TJ_ERR_ARG, "tj_type_list: %d is not a kind of list element", (int)elem);
    tj_type t = blank(TJ_TYPE_LIST);
    t.elem = elem;
    return t;
}

bool tj_type_equal(const tj_type *a, const tj_type *b) {
    if (!a || !b) return tjc_error(TJ_ERR_ARG, "tj_type_equal: a type is NULL"), false;
    if (a->kind != b->kind) return false;
    if (a->kind == TJ_TYPE_LIST) return a->elem == b->elem;
    if (a->kind != TJ_TYPE_TENSOR) return true;
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->device_type != b->device_type ||
        a->device_index != b->device_index || a->requires_grad != b->requires_grad)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || a->strides[d] != b->strides[d]) return false;
    return true;
}

tj_status tj_type_check(const tj_type *t) {
    if (!t) return tjc_error(TJ_ERR_ARG, "type: the type is NULL");
    if ((unsigned)t->kind >= TJ_NUM_TYPE_KINDS)
        return tjc_error(TJ_ERR_ARG, "type: invalid kind %d", (int)t->kind);
    if (t->kind == TJ_TYPE_LIST && ((unsigned)t->elem >= TJ_NUM_TYPE_KINDS ||
                                    t->elem == TJ_TYPE_LIST || t->elem == TJ_TYPE_NONE))
        return tjc_error(TJ_ERR_ARG, "type: invalid list element kind %d", (int)t->elem);
    if (t->kind != TJ_TYPE_TENSOR) return TJ_OK;
    if (t->dtype != TJ_UNKNOWN && (t->dtype < 0 || t->dtype >= TJ_NUM_DTYPES))
        return tjc_error(TJ_ERR_ARG, "type: invalid dtype %d", t->dtype);
    if (t->ndim != TJ_UNKNOWN && (t->ndim < 0 || t->ndim > TJ_MAX_DIMS))
        return tjc_error(TJ_ERR_ARG, "type: invalid rank %d (tjit has at most %d dims)", t->ndim,
                         TJ_MAX_DIMS);
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] < 0 && t->sizes[d] != TJ_UNKNOWN_DIM)
            return tjc_error(TJ_ERR_ARG, "type: negative size %lld at dim %d",
                             (long long)t->sizes[d], d);
    if (t->device_type != TJ_UNKNOWN && t->device_type != TJ_CPU && t->device_type != TJ_CUDA)
        return tjc_error(TJ_ERR_ARG, "type: invalid device type %d", t->device_type);
    if (t->device_index < 0 || (t->device_type != TJ_CUDA && t->device_index != 0) ||
        t->device_index > 65535)
        return tjc_error(TJ_ERR_ARG, "type: invalid device index %d", t->device_index);
    if (t->requires_grad != 0 && t->requires_grad != 1 && t->requires_grad != TJ_UNKNOWN)
        return tjc_error(TJ_ERR_ARG, "type: invalid requires_grad %d", t->requires_grad);
    return TJ_OK;
}

/* ---- text form ---------------------------------------------------------------------- */

static const char *scalar_name(tj_type_kind k) {
    switch (k) {
    case TJ_TYPE_TENSOR: return "Tensor";
    case TJ_TYPE_INT: return "int";
    case TJ_TYPE_FLOAT: return "float";
    case TJ_TYPE_BOOL: return "bool";
    case TJ_TYPE_STR: return "str";
    case TJ_TYPE_NONE: return "NoneType";
    default: return "?";
    }
}

static void put_dim(tjir_buf *b, int64_t v) {
    if (v == TJ_UNKNOWN_DIM) tjir_buf_put(b, "*");
    else tjir_buf_printf(b, "%lld", (long long)v);
}

void tjir_put_type(tjir_buf *b, const tj_type *t, unsigned flags) {
    if (t->kind == TJ_TYPE_LIST) {
        tjir_buf_put(b, scalar_name(t->elem));
        tjir_buf_put(b, "[]");
        return;
    }
    if (t->kind != TJ_TYPE_TENSOR) {
        tjir_buf_put(b, scalar_name(t->kind));
        return;
    }
    const char *dt = tjir_dtype_ir_name(t->dtype);
    tjir_buf_put(b, dt ? dt : "Tensor");
    bool strides = false;
    for (int d = 0; d < t->ndim && !(flags & TJ_PRINT_NO_STRIDES); d++)
        if (t->strides[d] != TJ_UNKNOWN_DIM) strides = true;
    bool rg = t->requires_grad != 0, dev = t->device_type != TJ_UNKNOWN;
    if (t->ndim == TJ_UNKNOWN && !rg && !dev) return;
    tjir_buf_put(b, "(");
    const char *sep = "";
    if (t->ndim == TJ_UNKNOWN) {
        tjir_buf_put(b, "...");
        sep = ", ";
    }
    for (int d = 0; d < t->ndim; d++, sep = ", ") {
        tjir_buf_put(b, sep);
        put_dim(b, t->sizes[d]);
    }
    if (strides) {
        tjir_buf_put(b, sep);
        tjir_buf_put(b, "strides=[");
        for (int d = 0; d < t->ndim; d++) {
            if (d) tjir_buf_put(b, ", ");
            put_dim(b, t->strides[d]);
        }
        tjir_buf_put(b, "]");
        sep = ", ";
    }
    if (rg) {
        tjir_buf_printf(b, "%srequires_grad=%s", sep, t->requires_grad == 1 ? "1" : "*");
        sep = ", ";
    }
    if (dev) {
        if (t->device_type == TJ_CPU) tjir_buf_printf(b, "%sdevice=cpu", sep);
        else tjir_buf_printf(b, "%sdevice=cuda:%d", sep, t->device_index);
    }
    tjir_buf_put(b, ")");
}

char *tj_type_to_string(const tj_type *t, unsigned flags) {
    if (tj_type_check(t)) return NULL;
    tjir_buf b = {0};
    tjir_put_type(&b, t, flags);
    return tjir_buf_finish(&b);
}

void tjir_put_float(tjir_buf *b, double v, bool single) {
    if (isnan(v)) {
        tjir_buf_put(b, "nan");
        return;
    }
    if (isinf(v)) {
        tjir_buf_put(b, v > 0 ? "inf" : "-inf");
        return;
    }
    char text[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, v);
        if (single ? strtof(text, NULL) == (float)v : strtod(text, NULL) == v) break;
    }
    tjir_buf_put(b, text);
    if (!strpbrk(text, ".e")) tjir_buf_put(b, ".");
}

void tjir_put_string(tjir_buf *b, const char *s) {
    tjir_buf_put(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': tjir_buf_put(b, "\\\""); break;
        case '\\': tjir_buf_put(b, "\\\\"); break;
        case '\n': tjir_buf_put(b, "\\n"); break;
        case '\t': tjir_buf_put(b, "\\t"); break;
        case '\r': tjir_buf_put(b, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f) tjir_buf_printf(b, "\\x%02x", *p);
            else tjir_buf_putn(b, (const char *)p, 1);
        }
    }
    tjir_buf_put(b, "\"");
}
