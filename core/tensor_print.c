/* tensor_print.c — tj_tensor_to_string: the text PyTorch prints for a tensor
 * (torch/_tensor_str.py with the default print options), so that output reads
 * the same in both: elements padded to one width; floats with 4 decimals, as
 * "1." when every value is whole, or in scientific notation when magnitudes
 * are far apart; rows wrapped at 80 columns; tensors of more than 1000
 * elements summarised to 3 items at each edge of every dim. dtypes print by
 * tjit's names ("dtype=f64"); f32, and i64 and bool when not empty, go
 * without, since the values show them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core.h"

enum { PRECISION = 4, EDGE_ITEMS = 3, THRESHOLD = 1000, LINE_WIDTH = 80, INDENT = 7 };

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
        char *s = tjc_realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static void put_spaces(buf *b, int n) { put(b, "%*s", n, ""); }

/* How every element is written, decided from the elements shown. */
typedef struct formatter {
    tj_dtype dtype;
    bool int_mode; /* floats that are all whole: "3." */
    bool sci;      /* "1.0000e-05" */
    int width;     /* every element is right-aligned to this */
} formatter;

/* The element's text without padding; returns its length. */
static int format_value(const formatter *f, double v, char *out, size_t n) {
    switch (f->dtype) {
    case TJ_BOOL: return snprintf(out, n, "%s", v != 0 ? "True" : "False");
    case TJ_I64: return snprintf(out, n, "%lld", (long long)v);
    default: break;
    }
    if (isnan(v)) return snprintf(out, n, "nan");
    if (isinf(v)) return snprintf(out, n, v > 0 ? "inf" : "-inf");
    if (f->sci) return snprintf(out, n, "%.*e", PRECISION, v);
    if (f->int_mode) return snprintf(out, n, "%.0f.", v);
    return snprintf(out, n, "%.*f", PRECISION, v);
}

static void put_value(buf *b, const formatter *f, double v) {
    char s[64];
    int len = format_value(f, v, s, sizeof s);
    put(b, "%*s%s", f->width > len ? f->width - len : 0, "", s);
}

/* Whether index i of a dim of size n is printed. */
static bool shown(bool summarise, int64_t i, int64_t n) {
    return !summarise || n <= 2 * EDGE_ITEMS || i < EDGE_ITEMS || i >= n - EDGE_ITEMS;
}

/* Calls fn on every printed element (row-major), stopping when it returns false. */
static void for_shown(const tj_tensor *t, bool summarise, bool (*fn)(void *, double), void *ctx) {
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (;;) {
        if (!fn(ctx, tj_get(t, idx))) return;
        int d = t->ndim - 1;
        for (; d >= 0; d--) {
            int64_t n = t->sizes[d];
            do idx[d]++;
            while (idx[d] < n && !shown(summarise, idx[d], n));
            if (idx[d] < n) break;
            idx[d] = 0;
        }
        if (d < 0) return;
    }
}

typedef struct scan {
    const formatter *f;
    int width;
    double lo, hi;
    bool any, whole;
} scan;

static bool scan_range(void *ctx, double v) {
    scan *s = ctx;
    if (s->f->dtype == TJ_I64 || s->f->dtype == TJ_BOOL) {
        char tmp[64];
        int len = format_value(s->f, v, tmp, sizeof tmp);
        if (len > s->width) s->width = len;
        return true;
    }
    if (!isfinite(v) || v == 0) return true;
    double a = fabs(v);
    s->lo = s->any && s->lo < a ? s->lo : a;
    s->hi = s->any && s->hi > a ? s->hi : a;
    s->any = true;
    if (v != ceil(v)) s->whole = false;
    return true;
}

static bool scan_width(void *ctx, double v) {
    scan *s = ctx;
    if (!isfinite(v) || v == 0) return true; /* PyTorch sizes by nonzero finite values only */
    char tmp[64];
    int len = format_value(s->f, v, tmp, sizeof tmp);
    if (len > s->width) s->width = len;
    return true;
}

static formatter make_formatter(const tj_tensor *t, bool summarise) {
    formatter f = {.dtype = t->dtype, .int_mode = true, .width = 1};
    scan s = {.f = &f, .width = 1, .whole = true};
    for_shown(t, summarise, scan_range, &s);
    if (tj_dtype_is_float(t->dtype) && s.any) {
        f.int_mode = s.whole;
        f.sci = s.hi / s.lo > 1000.0 || s.hi > 1.0e8 || (!s.whole && s.lo < 1.0e-4);
        for_shown(t, summarise, scan_width, &s);
    }
    f.width = s.width;
    return f;
}

/* The innermost dim: values wrapped to lines of LINE_WIDTH. */
static void vector_str(buf *b, const tj_tensor *t, int64_t *idx, int indent, bool summarise,
                       const formatter *f) {
    int d = t->ndim - 1;
    int64_t n = t->sizes[d];
    int per_line = (LINE_WIDTH - indent) / (f->width + 2);
    if (per_line < 1) per_line = 1;
    put(b, "[");
    int on_line = 0;
    for (int64_t i = 0, k = 0; i < n; i++, k++) {
        bool ellipsis = summarise && n > 2 * EDGE_ITEMS && i == EDGE_ITEMS;
        if (k > 0) {
            if (on_line == per_line) {
                put(b, ",\n");
                put_spaces(b, indent + 1);
                on_line = 0;
            } else {
                put(b, ", ");
            }
        }
        on_line++;
        if (ellipsis) {
            put(b, " ...");
            i = n - EDGE_ITEMS - 1;
            continue;
        }
        idx[d] = i;
        put_value(b, f, tj_get(t, idx));
    }
    idx[d] = 0;
    put(b, "]");
}

static void tensor_str(buf *b, const tj_tensor *t, int64_t *idx, int d, int indent, bool summarise,
                       const formatter *f) {
    int left = t->ndim - d;
    if (left == 1) {
        vector_str(b, t, idx, indent, summarise, f);
        return;
    }
    int64_t n = t->sizes[d];
    put(b, "[");
    for (int64_t i = 0; i < n; i++) {
        if (i > 0) { /* blank lines between blocks of higher dims, as PyTorch */
            put(b, ",");
            for (int k = 0; k < left - 1; k++) put(b, "\n");
            put_spaces(b, indent + 1);
        }
        if (summarise && n > 2 * EDGE_ITEMS && i == EDGE_ITEMS) {
            put(b, "...,");
            for (int k = 0; k < left - 1; k++) put(b, "\n");
            put_spaces(b, indent + 1);
            i = n - EDGE_ITEMS;
        }
        idx[d] = i;
        tensor_str(b, t, idx, d + 1, indent + 1, summarise, f);
    }
    idx[d] = 0;
    put(b, "]");
}

/* ", size=(2, 0)" and the like, on a new line when the current one is full;
 * *line tracks the current line's length the way PyTorch's _add_suffixes
 * counts it (from one past the last newline, plus one). */
static void put_suffix(buf *b, const char *suffix, size_t *line) {
    if (b->failed) return;
    if (*line == 0) {
        const char *nl = strrchr(b->s, '\n');
        *line = nl ? b->n - (size_t)(nl - b->s) + 1 : b->n + 2;
    }
    size_t len = strlen(suffix);
    if (*line + len + 2 > LINE_WIDTH) {
        put(b, ",\n");
        put_spaces(b, INDENT);
        put(b, "%s", suffix);
        *line = INDENT + len;
    } else {
        put(b, ", %s", suffix);
        *line += len + 2;
    }
}

char *tj_tensor_to_string(const tj_tensor *t) {
    buf b = {.s = tjc_malloc(256), .cap = 256};
    if (!b.s) return NULL;
    b.s[0] = '\0';
    if (!t) { /* printed as printf prints it, and the caller told */
        tjc_last_or(TJ_ERR_ARG, "tj_tensor_to_string: tensor is NULL");
        put(&b, "(null)");
        return b.s;
    }
    tj_tensor *host = NULL; /* a device tensor is printed from a host copy */
    if (t->storage->device.type != TJ_CPU) {
        host = tjc_to_device((tj_tensor *)t, (tj_device){TJ_CPU, 0});
        if (!host) {
            tjc_free(b.s);
            return NULL;
        }
    }
    tj_device device = t->storage->device;
    if (host) t = host;
    int64_t n = tjc_numel(t->sizes, t->ndim);
    put(&b, "tensor(");
    char suffix[TJC_SIZES_BUF + 16];
    size_t line = 0;
    if (n == 0) {
        put(&b, "[]");
        if (t->ndim != 1) { /* PyTorch writes the sizes as a Python tuple */
            char sz[TJC_SIZES_BUF];
            tjc_fmt_sizes(sz, sizeof sz, t->sizes, t->ndim);
            sz[0] = '(';
            sz[strlen(sz) - 1] = ')';
            snprintf(suffix, sizeof suffix, "size=%s", sz);
            put_suffix(&b, suffix, &line);
        }
        if (t->dtype != TJ_F32) {
            snprintf(suffix, sizeof suffix, "dtype=%s", tj_dtype_name(t->dtype));
            put_suffix(&b, suffix, &line);
        }
    } else {
        bool summarise = n > THRESHOLD;
        formatter f = make_formatter(t, summarise);
        int64_t idx[TJ_MAX_DIMS] = {0};
        if (t->ndim == 0) put_value(&b, &f, tj_get(t, idx));
        else tensor_str(&b, t, idx, 0, INDENT, summarise, &f);
        if (t->dtype == TJ_F64) {
            snprintf(suffix, sizeof suffix, "dtype=%s", tj_dtype_name(t->dtype));
            put_suffix(&b, suffix, &line);
        }
    }
    if (device.type != TJ_CPU) {
        char dev[TJC_DEVICE_BUF];
        snprintf(suffix, sizeof suffix, "device='%s'", tjc_fmt_device(dev, sizeof dev, device));
        put_suffix(&b, suffix, &line);
    }
    tj_release(host);
    put(&b, ")");
    if (b.failed) {
        tjc_free(b.s);
        return NULL;
    }
    return b.s;
}
