/* tensor_print.c — tj_tensor_to_string: PyTorch-style text of a tensor,
 * summarised with "..." past 1000 elements. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef struct buf {
    char *s;
    size_t n, cap;
    bool failed;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)k;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

typedef struct style {
    bool sci;
    bool summarise;
} style;

static void element(buf *b, const tj_tensor *t, const int64_t *idx, style st) {
    double v = tj_get(t, idx);
    switch (t->dtype) {
    case TJ_BOOL: put(b, v != 0 ? "True" : "False"); break;
    case TJ_I64: put(b, "%lld", (long long)v); break;
    default:
        if (isnan(v)) put(b, "nan");
        else if (isinf(v)) put(b, v > 0 ? "inf" : "-inf");
        else put(b, st.sci ? "%.4e" : "%.4f", v);
    }
}

static void rows(buf *b, const tj_tensor *t, int64_t *idx, int d, style st) {
    if (d == t->ndim) {
        element(b, t, idx, st);
        return;
    }
    put(b, "[");
    int64_t n = t->sizes[d];
    for (int64_t i = 0; i < n; i++) {
        if (st.summarise && n > 6 && i == 3) {
            put(b, d + 1 == t->ndim ? "..., " : "...,\n%*s", d + 1 == t->ndim ? 0 : 8 + d, "");
            i = n - 3;
        }
        idx[d] = i;
        rows(b, t, idx, d + 1, st);
        if (i + 1 < n) {
            if (d + 1 == t->ndim) put(b, ", ");
            else put(b, ",\n%*s", 8 + d, "");
        }
    }
    idx[d] = 0;
    put(b, "]");
}

char *tj_tensor_to_string(const tj_tensor *t) {
    buf b = {.s = malloc(256), .cap = 256};
    if (!b.s) return NULL;
    b.s[0] = '\0';
    if (!t) {
        put(&b, "(null)");
        return b.s;
    }
    int64_t n = tjc_numel(t->sizes, t->ndim);
    style st = {.summarise = n > 1000};
    if (tj_dtype_is_float(t->dtype) && n <= 100000) {
        int64_t idx[TJ_MAX_DIMS] = {0};
        double lo = INFINITY, hi = 0;
        for (int64_t k = 0; k < n; k++) {
            double a = fabs(tj_get(t, idx));
            if (isfinite(a) && a > 0) {
                if (a < lo) lo = a;
                if (a > hi) hi = a;
            }
            for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--) idx[d] = 0;
        }
        st.sci = hi >= 1e5 || (lo < 1e-4 && hi > 0);
    }
    int64_t idx[TJ_MAX_DIMS] = {0};
    put(&b, "tensor(");
    if (n == 0) put(&b, "[]");
    else rows(&b, t, idx, 0, st);
    if (n == 0 && t->ndim > 1) {
        char sz[TJC_SIZES_BUF];
        put(&b, ", size=%s", tjc_fmt_sizes(sz, sizeof sz, t->sizes, t->ndim));
    }
    if (t->dtype != TJ_F32) put(&b, ", dtype=%s", tj_dtype_name(t->dtype));
    put(&b, ")");
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
