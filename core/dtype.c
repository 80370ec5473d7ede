/* dtype.c — dtype facts and PyTorch's type promotion. */
#include <math.h>

#include "core.h"

static const struct {
    const char *name;
    size_t size;
    int category;
} dtype_facts[TJ_NUM_DTYPES] = {
    [TJ_F32] = {"f32", 4, 2},
    [TJ_F64] = {"f64", 8, 2},
    [TJ_I64] = {"i64", 8, 1},
    [TJ_BOOL] = {"bool", 1, 0},
};

static bool valid_dtype(const char *fn, tj_dtype d) {
    if ((unsigned)d < TJ_NUM_DTYPES) return true;
    tjc_error(TJ_ERR_DTYPE, "%s: invalid dtype %d (expected 0 to %d)", fn, (int)d,
              TJ_NUM_DTYPES - 1);
    return false;
}

const char *tj_dtype_name(tj_dtype d) {
    return valid_dtype("tj_dtype_name", d) ? dtype_facts[d].name : "invalid";
}
size_t tj_dtype_size(tj_dtype d) { return valid_dtype("tj_dtype_size", d) ? dtype_facts[d].size : 0; }
/* A predicate, also asked of unknown dtypes (TJ_UNKNOWN in graph types): no error. */
bool tj_dtype_is_float(tj_dtype d) { return d == TJ_F32 || d == TJ_F64; }
int tjc_dtype_category(tj_dtype d) { return dtype_facts[d].category; }

tj_dtype tjc_promote(tj_dtype a, tj_dtype b) {
    if (a == b) return a;
    int ca = dtype_facts[a].category, cb = dtype_facts[b].category;
    if (ca != cb) return ca > cb ? a : b;
    /* same category, different dtypes: only f32/f64 remain */
    return TJ_F64;
}

tj_dtype tjc_promote_scalar(tj_dtype d, const tj_scalar *s) {
    tj_scalar_kind k = tjc_scalar_kind(s);
    tj_dtype wrapped = k == TJ_SCALAR_FLOAT ? TJ_F32 : k == TJ_SCALAR_INT ? TJ_I64 : TJ_BOOL;
    return dtype_facts[wrapped].category > dtype_facts[d].category ? wrapped : d;
}

bool tj_is_none(double v) { return isnan(v); }
