/* linalg_testing.h — helpers shared by test_matmul.c, test_conv.c and
 * test_pool.c: random tensors laid out in memory in a chosen order (transposed,
 * channels-last, strided), and the check that every op of a family has a
 * reference in the test's table. Prefix lt_. */
#ifndef TJIT_LINALG_TESTING_H
#define TJIT_LINALG_TESTING_H

#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

/* A random tensor of logical sizes `sizes` whose memory stores the dims in the
 * order perm (perm[0] outermost): perm = {1, 0} gives a transposed matrix,
 * {0, 2, 3, 1} an NCHW tensor stored channels-last. NULL perm: contiguous. */
static inline tj_tensor *lt_permuted(tj_generator *g, const int64_t *sizes, int nd,
                                     const int *perm, tj_dtype dt, double lo, double hi) {
    if (!perm) return tt_random(g, sizes, nd, dt, lo, hi);
    int64_t ssz[TJ_MAX_DIMS] = {0}, vst[TJ_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) ssz[i] = sizes[perm[i]];
    tj_tensor *base = tt_random(g, ssz, nd, dt, lo, hi);
    for (int i = 0; i < nd; i++) vst[perm[i]] = tj_strides(base)[i];
    tj_tensor *v = tjc_make_view(base, sizes, vst, nd, 0);
    assert_non_null(v);
    tj_release(base);
    return v;
}

/* Memory layouts a test case can ask for. */
typedef enum lt_layout {
    LT_CONTIGUOUS,
    LT_TRANSPOSED, /* the last two dims swapped in memory */
    LT_STRIDED,    /* every other element of a buffer twice as wide: no unit stride */
    LT_PERMUTED    /* the caller's permutation (channels-last and the like) */
} lt_layout;

static inline tj_tensor *lt_tensor(tj_generator *g, const int64_t *sizes, int nd, tj_dtype dt,
                                   lt_layout layout, const int *perm) {
    double lo = dt == TJ_I64 ? -4 : -1, hi = dt == TJ_I64 ? 4 : 1;
    int swap[TJ_MAX_DIMS];
    switch (layout) {
    case LT_TRANSPOSED:
        if (nd < 2) break;
        for (int i = 0; i < nd; i++) swap[i] = i;
        swap[nd - 2] = nd - 1, swap[nd - 1] = nd - 2;
        return lt_permuted(g, sizes, nd, swap, dt, lo, hi);
    case LT_STRIDED: {
        tj_tensor *t = tt_random(g, sizes, nd, dt, lo, hi);
        tj_tensor *v = tt_noncontiguous(g, t);
        tj_release(t);
        return v;
    }
    case LT_PERMUTED: return lt_permuted(g, sizes, nd, perm, dt, lo, hi);
    default: break;
    }
    return tt_random(g, sizes, nd, dt, lo, hi);
}

/* Ops whose results a test has compared against its reference; the coverage
 * check, run last, asks every op of the family to be among them. */
static const char *lt_marked[64];
static int lt_n_marked;

static inline void lt_mark(const char *op_name) {
    for (int i = 0; i < lt_n_marked; i++)
        if (!strcmp(lt_marked[i], op_name)) return;
    assert_true(lt_n_marked < 64);
    lt_marked[lt_n_marked++] = op_name;
}

static inline bool lt_is_marked(const char *op_name) {
    for (int i = 0; i < lt_n_marked; i++)
        if (!strcmp(lt_marked[i], op_name)) return true;
    return false;
}

/* Fails when an op of `kind` in the table (none when kind is TJ_NUM_KINDS),
 * or a name in `required`, was not checked against a reference. */
static inline void lt_check_coverage(tj_op_kind kind, const char *const *required, int n_required) {
    int missing = 0;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        if (kind == TJ_NUM_KINDS || tj_op_kind_of(op) != kind || lt_is_marked(tj_op_name(op)))
            continue;
        fprintf(stderr, "op %s (kind %s) was not checked against a reference\n", tj_op_name(op),
                tj_op_kind_name(kind));
        missing++;
    }
    for (int r = 0; r < n_required; r++) {
        if (!tj_op_find(required[r])) {
            fprintf(stderr, "op %s is not in the op table\n", required[r]);
            missing++;
        } else if (!lt_is_marked(required[r])) {
            fprintf(stderr, "op %s was not checked against a reference\n", required[r]);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
}

#endif
