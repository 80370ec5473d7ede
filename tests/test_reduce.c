/* test_reduce.c — the reduction rows of ops.def (kind TJ_KIND_REDUCTION)
 * against references written here in plain loops over long double: random
 * shapes (0-dim, size-0 and size-1 dims), dim lists (all, one, several,
 * negative), keepdim, every dtype (with the dtype errors where an op refuses
 * one), contiguous, strided, permuted and expanded inputs, NaN and inf.
 * Every reduction in the table must have a reference here. Also: argument
 * errors and their messages, the accuracy of long sums and of f64 norms, and
 * bit-identical results with one and two threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

/* ---- references over one output's inputs, in row-major order ------------------- */

typedef struct rargs {
    tj_dtype dtype;
    int64_t correction;
    double ord;
} rargs;

typedef struct rres {
    double v;    /* the value */
    double mag;  /* the scale its rounding error is measured against */
    int64_t idx; /* max/min forms: the index of the value */
} rres;

typedef void (*ref_fn)(const double *x, int64_t n, const rargs *a, rres *r);

static bool is_int(tj_dtype d) { return d == TJ_I64 || d == TJ_BOOL; }

static void ref_sum(const double *x, int64_t n, const rargs *a, rres *r) {
    if (is_int(a->dtype)) { /* i64 arithmetic wraps */
        uint64_t s = 0;
        for (int64_t i = 0; i < n; i++) s += (uint64_t)(int64_t)x[i];
        r->v = (double)(int64_t)s;
        return;
    }
    long double s = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        m += fabs(x[i]);
    }
    r->v = (double)s;
    r->mag = (double)m;
}

static void ref_mean(const double *x, int64_t n, const rargs *a, rres *r) {
    ref_sum(x, n, a, r);
    r->v /= (double)n;
    r->mag /= (double)n;
}

static void ref_prod(const double *x, int64_t n, const rargs *a, rres *r) {
    if (is_int(a->dtype)) {
        uint64_t p = 1;
        for (int64_t i = 0; i < n; i++) p *= (uint64_t)(int64_t)x[i];
        r->v = (double)(int64_t)p;
        return;
    }
    long double p = 1;
    for (int64_t i = 0; i < n; i++) p *= x[i];
    r->v = (double)p;
    r->mag = fabs(r->v);
}

/* The first NaN wins; otherwise the first of the largest (smallest). */
static void ref_ext(const double *x, int64_t n, rres *r, int sign) {
    r->idx = 0;
    r->v = x[0];
    for (int64_t i = 0; i < n && !isnan(r->v); i++)
        if (isnan(x[i]) || sign * x[i] > sign * r->v) {
            r->v = x[i];
            r->idx = i;
        }
}
static void ref_max(const double *x, int64_t n, const rargs *a, rres *r) {
    (void)a;
    ref_ext(x, n, r, 1);
}
static void ref_min(const double *x, int64_t n, const rargs *a, rres *r) {
    (void)a;
    ref_ext(x, n, r, -1);
}

static void ref_var(const double *x, int64_t n, const rargs *a, rres *r) {
    long double s = 0, sq = 0, m2 = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    long double mean = s / n;
    for (int64_t i = 0; i < n; i++) {
        m2 += (x[i] - mean) * (x[i] - mean);
        sq += (long double)x[i] * x[i];
    }
    double div = (double)(n - a->correction);
    if (div < 0) div = 0;
    r->v = (double)(m2 / div);
    r->mag = (double)(sq / (div > 1 ? div : 1));
}

static void ref_std(const double *x, int64_t n, const rargs *a, rres *r) {
    ref_var(x, n, a, r);
    r->v = sqrt(r->v);
    r->mag = sqrt(r->mag);
}

static void ref_norm(const double *x, int64_t n, const rargs *a, rres *r) {
    double p = a->ord;
    long double acc = p == -INFINITY ? INFINITY : 0;
    bool nan = false;
    for (int64_t i = 0; i < n; i++) {
        long double ax = fabsl((long double)x[i]);
        nan |= isnan(x[i]);
        if (p == INFINITY) acc = ax > acc ? ax : acc;
        else if (p == -INFINITY) acc = ax < acc ? ax : acc;
        else if (p == 0) acc += x[i] != 0;
        else acc += powl(ax, p);
    }
    if (p != 0 && p != INFINITY && p != -INFINITY) acc = powl(acc, 1 / (long double)p);
    r->v = nan && p != 0 ? NAN : (double)acc;
    r->mag = fabs(r->v);
}

static void ref_lse(const double *x, int64_t n, const rargs *a, rres *r) {
    (void)a;
    long double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i])) {
            r->v = NAN;
            return;
        }
        if (x[i] > m) m = x[i];
    }
    if (isinf(m)) {
        r->v = (double)m;
        return;
    }
    for (int64_t i = 0; i < n; i++) s += expl(x[i] - m);
    r->v = (double)(m + logl(s));
    r->mag = 1;
}

/* ---- the reference table ------------------------------------------------------------ */

typedef enum dimform { DIMS, ONE_DIM, ARG_DIM, SIZE } dimform; /* int[], int, int[] of <= 1, size */
typedef enum outform { OUT_VALUE, OUT_INDEX, OUT_BOTH } outform;
typedef enum outdt { DT_SAME, DT_SUM, DT_INDEX, DT_FLOAT /* integers and bool: f32 */ } outdt;

#define B(d) (1u << (d))
#define ALL (B(TJ_F32) | B(TJ_F64) | B(TJ_I64) | B(TJ_BOOL))
#define FLOATS (B(TJ_F32) | B(TJ_F64))

typedef struct ref_op {
    const char *name;
    ref_fn fn;
    dimform dims;
    outform out;
    unsigned dtypes; /* the dtypes it takes; the others must fail naming the dtype */
    outdt out_dtype;
    bool no_identity; /* refuses empty reductions */
    double lo, hi;    /* random float inputs in [lo, hi) */
} ref_op;

static const ref_op refs[] = {
    {"aten::sum.dim_IntList", ref_sum, DIMS, OUT_VALUE, ALL, DT_SUM, false, -1, 1},
    {"aten::mean.dim", ref_mean, DIMS, OUT_VALUE, FLOATS, DT_SAME, false, -1, 1},
    {"aten::prod.dim_IntList", ref_prod, DIMS, OUT_VALUE, ALL, DT_SUM, false, -1.5, 1.5},
    {"aten::amax", ref_max, DIMS, OUT_VALUE, ALL, DT_SAME, true, -1, 1},
    {"aten::amin", ref_min, DIMS, OUT_VALUE, ALL, DT_SAME, true, -1, 1},
    {"aten::max.dim", ref_max, ONE_DIM, OUT_BOTH, ALL, DT_SAME, true, -1, 1},
    {"aten::min.dim", ref_min, ONE_DIM, OUT_BOTH, ALL, DT_SAME, true, -1, 1},
    {"aten::argmax", ref_max, ARG_DIM, OUT_INDEX, B(TJ_F32) | B(TJ_F64) | B(TJ_I64), DT_INDEX, true, -1, 1},
    {"aten::argmin", ref_min, ARG_DIM, OUT_INDEX, B(TJ_F32) | B(TJ_F64) | B(TJ_I64), DT_INDEX, true, -1, 1},
    {"aten::var.correction", ref_var, DIMS, OUT_VALUE, FLOATS, DT_SAME, false, -1, 1},
    {"aten::std.correction", ref_std, DIMS, OUT_VALUE, FLOATS, DT_SAME, false, -1, 1},
    {"aten::linalg_vector_norm", ref_norm, DIMS, OUT_VALUE, FLOATS, DT_SAME, false, -2, 2},
    {"aten::logsumexp", ref_lse, DIMS, OUT_VALUE, ALL, DT_FLOAT, false, -5, 5},
    {"aten::sum_to_size", ref_sum, SIZE, OUT_VALUE, ALL, DT_SUM, false, -1, 1},
};
enum { N_REFS = sizeof refs / sizeof refs[0] };

static const ref_op *ref_of(const char *name) {
    for (int i = 0; i < N_REFS; i++)
        if (strcmp(refs[i].name, name) == 0) return &refs[i];
    return NULL;
}

/* ---- one call ----------------------------------------------------------------------- */

typedef struct tcase {
    const ref_op *ref;
    const tj_op_info *op;
    int64_t dims[TJ_MAX_DIMS]; /* or the sum_to_size target */
    int n_dims;
    bool keepdim;
    int64_t correction;
    double ord;
} tcase;

static int n_attrs_of(const tcase *tc, tj_attr *at) {
    const tj_schema *s = tj_op_schema(tc->op);
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        memset(&at[k], 0, sizeof at[k]);
        if (strcmp(arg->name, "dim") == 0 && arg->type == TJ_ARG_INT) at[k].i = tc->dims[0];
        else if (strcmp(arg->name, "dim") == 0 || strcmp(arg->name, "size") == 0) {
            at[k].ints.data = tc->dims;
            at[k].ints.n = tc->n_dims;
        } else if (strcmp(arg->name, "keepdim") == 0) at[k].b = tc->keepdim;
        else if (strcmp(arg->name, "correction") == 0) at[k].i = tc->correction;
        else if (strcmp(arg->name, "ord") == 0) at[k].f = tc->ord;
        else fail_msg("%s: the test does not know argument '%s'", tc->ref->name, arg->name);
    }
    return s->n_attrs;
}

static int call(const tcase *tc, tj_tensor *x, tj_tensor **out) {
    tj_attr at[TJ_MAX_ARGS];
    int n = n_attrs_of(tc, at);
    out[0] = out[1] = NULL;
    tj_clear_error();
    return tj_invoke(tj_op_id(tc->op), &x, 1, at, n, out, 2);
}

/* ---- checking one call against the reference ------------------------------------------ */

static double round_to(double v, tj_dtype d) { return d == TJ_F32 ? (double)(float)v : v; }

static void check_value(const tcase *tc, double got, double want, double mag, tj_dtype d,
                        int64_t o) {
    want = round_to(want, d);
    bool ok;
    if (isnan(want)) ok = isnan(got);
    else if (isinf(want) || is_int(d)) ok = got == want;
    else {
        double tol = d == TJ_F32 ? 4e-6 : 1e-12, tiny = d == TJ_F32 ? 1.2e-38 : 2.3e-308;
        ok = fabs(got - want) <= tol * (fabs(want) + mag) + tiny;
    }
    if (!ok)
        fail_msg("%s (ord %g, correction %lld): output %lld is %.17g, expected %.17g",
                 tc->ref->name, tc->ord, (long long)tc->correction, (long long)o, got, want);
}

/* Which dims are reduced, the output sizes, and the error the call must give. */
typedef struct expect {
    bool red[TJ_MAX_DIMS];
    int64_t out_sizes[TJ_MAX_DIMS];
    int out_ndim;
    int64_t n_reduce;
    const char *error; /* NULL when the call must work */
} expect;

static expect expect_of(const tcase *tc, const tj_tensor *x) {
    expect e = {.n_reduce = 1};
    int nd = tj_ndim(x);
    const int64_t *sz = tj_sizes(x);
    if (tc->ref->dims == SIZE) {
        int lead = nd - tc->n_dims;
        for (int d = 0; d < nd; d++)
            e.red[d] = d < lead || (tc->dims[d - lead] == 1 && sz[d] != 1);
        e.out_ndim = tc->n_dims;
        memcpy(e.out_sizes, tc->dims, sizeof(int64_t) * (size_t)tc->n_dims);
    } else {
        for (int k = 0; k < tc->n_dims; k++)
            if (nd > 0) e.red[tc->dims[k] < 0 ? tc->dims[k] + nd : tc->dims[k]] = true;
        for (int d = 0; d < nd; d++) {
            if (tc->n_dims == 0) e.red[d] = true;
            if (!e.red[d] || tc->keepdim) e.out_sizes[e.out_ndim++] = e.red[d] ? 1 : sz[d];
        }
    }
    for (int d = 0; d < nd; d++)
        if (e.red[d]) e.n_reduce *= sz[d];
    bool norm_no_identity = strcmp(tc->ref->name, "aten::linalg_vector_norm") == 0 &&
                            (tc->ord < 0 || tc->ord == INFINITY);
    if (!(tc->ref->dtypes & B(tj_tensor_dtype(x)))) e.error = tj_dtype_name(tj_tensor_dtype(x));
    else if ((tc->ref->no_identity || norm_no_identity) && e.n_reduce == 0) e.error = "zero-size";
    return e;
}

static tj_dtype out_dtype_of(const ref_op *r, tj_dtype in) {
    if (r->out_dtype == DT_INDEX) return TJ_I64;
    if (r->out_dtype == DT_SUM && is_int(in)) return TJ_I64;
    if (r->out_dtype == DT_FLOAT && is_int(in)) return TJ_F32;
    return in;
}

static void check_case(const tcase *tc, tj_tensor *x) {
    expect e = expect_of(tc, x);
    tj_tensor *out[2];
    int n = call(tc, x, out);
    if (e.error) {
        if (n != -1) fail_msg("%s: expected an error mentioning '%s'", tc->ref->name, e.error);
        tt_assert_error(tc->ref->name);
        tt_assert_error(e.error);
        return;
    }
    if (n != (tc->ref->out == OUT_BOTH ? 2 : 1))
        fail_msg("%s: returned %d (%s)", tc->ref->name, n, tj_last_error());
    tj_dtype in_dt = tj_tensor_dtype(x);
    for (int k = 0; k < n; k++) {
        tt_assert_sizes(out[k], e.out_sizes, e.out_ndim);
        tj_dtype want = k == 1 ? TJ_I64 : out_dtype_of(tc->ref, in_dt);
        assert_int_equal(tj_tensor_dtype(out[k]), want);
    }
    /* gather each output's inputs in row-major order: positions are indices */
    tt_ref xin = tt_ref_of(x);
    int nd = tj_ndim(x);
    int64_t ksz[TJ_MAX_DIMS], M = 1, N = e.n_reduce;
    for (int d = 0; d < nd; d++) M *= ksz[d] = e.red[d] ? 1 : tj_sizes(x)[d];
    double *vals = malloc(sizeof(double) * (size_t)(M * N + 1));
    int64_t *fill = calloc((size_t)M + 1, sizeof(int64_t));
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (int64_t i = 0; i < xin.numel; i++, tt_next_index(idx, xin.sizes, nd)) {
        int64_t o = 0;
        for (int d = 0; d < nd; d++) o = o * ksz[d] + (e.red[d] ? 0 : idx[d]);
        vals[o * N + fill[o]++] = xin.v[i];
    }
    tt_ref got0 = tt_ref_of(out[0]), got1 = n > 1 ? tt_ref_of(out[1]) : (tt_ref){0};
    rargs ra = {in_dt, tc->correction, tc->ord};
    for (int64_t o = 0; o < M; o++) {
        rres r = {0, 0, 0};
        tc->ref->fn(vals + o * N, N, &ra, &r);
        if (tc->ref->out == OUT_INDEX) {
            check_value(tc, got0.v[o], (double)r.idx, 0, TJ_I64, o);
        } else {
            check_value(tc, got0.v[o], r.v, r.mag, tj_tensor_dtype(out[0]), o);
            if (n > 1) check_value(tc, got1.v[o], (double)r.idx, 0, TJ_I64, o);
        }
    }
    tt_ref_free(&got0);
    if (n > 1) tt_ref_free(&got1);
    tt_ref_free(&xin);
    free(vals);
    free(fill);
    tj_release(out[0]);
    tj_release(out[1]);
}

/* ---- random cases ------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int rnd(int n) { /* uniform in [0, n) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int)(rng_state % (uint64_t)n);
}

static void random_dims(tcase *tc, const int64_t *sizes, int nd) {
    int64_t perm[TJ_MAX_DIMS];
    int want;
    switch (tc->ref->dims) {
    case ONE_DIM: want = 1; break;
    case ARG_DIM: want = rnd(2); break;
    case SIZE: { /* trailing dims, each kept or summed to 1 */
        tc->n_dims = nd ? rnd(nd + 1) : 0;
        for (int i = 0; i < tc->n_dims; i++) {
            int64_t s = sizes[nd - tc->n_dims + i];
            tc->dims[i] = rnd(2) ? s : 1;
        }
        return;
    }
    default: want = rnd(3) == 0 ? 0 : nd ? 1 + rnd(nd) : 1; break;
    }
    int span = nd ? nd : 1;
    for (int d = 0; d < span; d++) perm[d] = d;
    for (int d = span - 1; d > 0; d--) {
        int j = rnd(d + 1);
        int64_t t = perm[d];
        perm[d] = perm[j];
        perm[j] = t;
    }
    tc->n_dims = want;
    for (int k = 0; k < want; k++) tc->dims[k] = rnd(2) ? perm[k] : perm[k] - span;
}

static const double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3, 0.5, -1, -2.5};

/* NaN, infinities, zeros and repeats, for float inputs now and then. */
static void sprinkle(tj_tensor *t) {
    int64_t n = tj_numel(t);
    if (n == 0 || !tj_dtype_is_float(tj_tensor_dtype(t)) || rnd(5)) return;
    static const double special[] = {NAN, INFINITY, -INFINITY, 0, 1, 1};
    for (int k = 0; k < 2; k++) {
        int64_t i = rnd((int)n);
        double v = special[rnd(6)];
        if (tj_tensor_dtype(t) == TJ_F32) ((float *)tj_data(t))[i] = (float)v;
        else ((double *)tj_data(t))[i] = v;
    }
}

/* x with the given sizes in one of four layouts: contiguous, a strided slice,
 * permuted dims, or a size-1 dim expanded with stride 0. */
static tj_tensor *make_input(tj_generator *g, const int64_t *sizes, int nd, tj_dtype dt,
                             const ref_op *r) {
    int layout = nd ? rnd(4) : 0, ex = -1;
    int64_t gen[TJ_MAX_DIMS];
    memcpy(gen, sizes, sizeof(int64_t) * (size_t)nd);
    if (layout == 3) {
        for (int d = 0; d < nd; d++)
            if (sizes[d] > 1 && (ex < 0 || rnd(2))) ex = d;
        if (ex < 0) layout = 0;
        else gen[ex] = 1;
    }
    bool is_prod = strcmp(r->name, "aten::prod.dim_IntList") == 0;
    double lo = dt == TJ_I64 ? (is_prod ? -3 : -5) : r->lo, hi = dt == TJ_I64 ? -lo : r->hi;
    tj_tensor *src = tt_random(g, gen, nd, dt, lo, hi);
    sprinkle(src);
    if (layout == 0) return src;
    tj_tensor *x = NULL;
    if (layout == 1) {
        x = tt_noncontiguous(g, src);
    } else if (layout == 2) {
        int perm[TJ_MAX_DIMS];
        for (int d = 0; d < nd; d++) perm[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int j = rnd(d + 1), t = perm[d];
            perm[d] = perm[j];
            perm[j] = t;
        }
        int64_t bs[TJ_MAX_DIMS], bst[TJ_MAX_DIMS], vst[TJ_MAX_DIMS];
        for (int k = 0; k < nd; k++) bs[k] = sizes[perm[k]];
        tjc_contiguous_strides(bs, nd, bst);
        for (int k = 0; k < nd; k++) vst[perm[k]] = bst[k];
        tj_tensor *base = tj_empty(bs, nd, dt);
        x = tjc_make_view(base, sizes, vst, nd, 0);
        tj_release(tj_copy_(x, src));
        tj_release(base);
    } else {
        int64_t st[TJ_MAX_DIMS];
        memcpy(st, tj_strides(src), sizeof(int64_t) * (size_t)nd);
        st[ex] = 0;
        x = tjc_make_view(src, sizes, st, nd, 0);
    }
    tj_release(src);
    assert_non_null(x);
    return x;
}

static void random_case(tj_generator *g, const ref_op *r, const tj_op_info *op, tj_dtype dt) {
    static const int64_t size_choices[] = {1, 2, 3, 4, 5, 7, 1, 2, 3, 0};
    int nd = rnd(5);
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0; d < nd; d++) sizes[d] = size_choices[rnd(rnd(8) ? 9 : 10)];
    tcase tc = {.ref = r, .op = op, .keepdim = rnd(2), .correction = rnd(3),
                .ord = ords[rnd(sizeof ords / sizeof ords[0])]};
    random_dims(&tc, sizes, nd);
    tj_tensor *x = make_input(g, sizes, nd, dt, r);
    check_case(&tc, x);
    tj_release(x);
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_every_reduction_has_a_reference(void **state) {
    (void)state;
    int found = 0;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        if (tj_op_kind_of(op) != TJ_KIND_REDUCTION) continue;
        if (!ref_of(tj_op_name(op))) fail_msg("reduction %s has no reference in test_reduce.c",
                                              tj_op_name(op));
        found++;
    }
    for (int i = 0; i < N_REFS; i++)
        if (!tj_op_find(refs[i].name)) fail_msg("reference %s names no op", refs[i].name);
    assert_int_equal(found, N_REFS);
}

static void test_random_against_reference(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(42);
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        if (tj_op_kind_of(op) != TJ_KIND_REDUCTION) continue;
        const ref_op *r = ref_of(tj_op_name(op));
        for (int dt = 0; dt < TJ_NUM_DTYPES; dt++)
            for (int k = 0; k < ((r->dtypes & B(dt)) ? 150 : 10); k++)
                random_case(g, r, op, (tj_dtype)dt);
    }
    tj_generator_free(g);
}

/* A few hand-checked values, through the generated API. */
static void test_api_values(void **state) {
    (void)state;
    double v[] = {1, 5, 2, 5, -3, 0};
    int64_t sz[] = {2, 3};
    tj_tensor *x = tj_from_array(v, sz, 2, TJ_F64);
    int64_t d1[] = {1}, dm1[] = {-1}, d0[] = {0};
    tj_tensor *s = tj_sum(x, d1, 1, true);
    int64_t s_sz[] = {2, 1};
    tt_assert_sizes(s, s_sz, 2);
    tt_assert_values(s, ((double[]){8, 2}), 2, 0);
    tj_tensor *all = tj_sum(x, NULL, 0, false);
    assert_int_equal(tj_ndim(all), 0);
    tt_assert_values(all, ((double[]){10}), 1, 0);
    tj_tensor *out[2];
    assert_int_equal(tj_max_dim(x, -1, false, out, 2), 2);
    tt_assert_values(out[0], ((double[]){5, 5}), 2, 0);
    tt_assert_values(out[1], ((double[]){1, 0}), 2, 0); /* ties: the first index */
    tj_release(out[0]);
    tj_release(out[1]);
    tj_tensor *am = tj_argmax(x, NULL, 0, false), *amk = tj_argmax(x, NULL, 0, true);
    tt_assert_values(am, ((double[]){1}), 1, 0);
    tt_assert_sizes(amk, ((int64_t[]){1, 1}), 2);
    tj_tensor *am0 = tj_argmin(x, d0, 1, false);
    tt_assert_values(am0, ((double[]){0, 1, 1}), 3, 0);
    tj_tensor *var = tj_var(x, dm1, 1, 1, false), *sd = tj_std(x, NULL, 0, 0, false);
    tt_assert_values(var, ((double[]){13.0 / 3, 49.0 / 3}), 2, 1e-12);
    tt_assert_values(sd, ((double[]){sqrt(71.0) / 3}), 1, 1e-12); /* correction 0 */
    tj_tensor *n2 = tj_linalg_vector_norm(x, 2, NULL, 0, false);
    tt_assert_values(n2, ((double[]){8}), 1, 1e-12); /* sqrt(1+25+4+25+9) */
    tj_tensor *to = tj_sum_to_size(x, ((int64_t[]){1, 3}), 2);
    tt_assert_values(to, ((double[]){6, 2, 2}), 3, 0);
    tj_tensor *lse = tj_logsumexp(x, d0, 1, false);
    double lse_want[] = {log(exp(1) + exp(5)), log(exp(5) + exp(-3)), log(exp(2) + 1)};
    tt_assert_values(lse, lse_want, 3, 1e-12);
    tj_tensor *rel[] = {x, s, all, am, amk, am0, var, sd, n2, to, lse};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) tj_release(rel[i]);
}

static void expect_error_(tj_tensor *t, const char *a, const char *b, int line) {
    if (t) fail_msg("line %d: expected an error mentioning '%s' and '%s'", line, a, b);
    tt_assert_error_(a, __FILE__, line);
    tt_assert_error_(b, __FILE__, line);
}
/* clears the sticky error first, so that a NULL input sets its own message */
#define expect_error(call, a, b)                     \
    do {                                             \
        tj_clear_error();                            \
        expect_error_((call), a, b, __LINE__);       \
    } while (0)

static void test_errors(void **state) {
    (void)state;
    tj_tensor *x = tj_zeros(((int64_t[]){3, 4}), 2, TJ_F32);
    tj_tensor *e = tj_zeros(((int64_t[]){0, 4}), 2, TJ_F32);
    tj_tensor *i = tj_zeros(((int64_t[]){3}), 1, TJ_I64);
    tj_tensor *z = tj_scalar_tensor(2, TJ_F64);
    expect_error(tj_sum(x, ((int64_t[]){2}), 1, false), "aten::sum.dim_IntList", "out of range");
    expect_error(tj_mean(x, ((int64_t[]){-3}), 1, false), "aten::mean.dim", "out of range");
    expect_error(tj_sum(x, ((int64_t[]){1, -1}), 2, false), "appears multiple times", "[1, -1]");
    expect_error(tj_sum(z, ((int64_t[]){0, -1}), 2, false), "aten::sum", "multiple times");
    expect_error(tj_mean(i, NULL, 0, false), "aten::mean.dim", "i64");
    expect_error(tj_var(i, NULL, 0, 1, false), "aten::var.correction", "i64");
    expect_error(tj_linalg_vector_norm(i, 2, NULL, 0, false), "vector_norm", "i64");
    expect_error(tj_sum_to_size(x, ((int64_t[]){5}), 1), "aten::sum_to_size", "[5]");
    expect_error(tj_sum_to_size(x, ((int64_t[]){2, 4}), 2), "not expandable", "[3, 4]");
    expect_error(tj_sum_to_size(x, ((int64_t[]){2, 3, 4}), 3), "sum_to_size", "[2, 3, 4]");
    expect_error(tj_amax(e, ((int64_t[]){0}), 1, false), "aten::amax",
                 "cannot reduce over a zero-size dimension");
    expect_error(tj_argmax(e, NULL, 0, false), "aten::argmax", "zero-size");
    expect_error(tj_argmax(x, ((int64_t[]){0, 1}), 2, false), "aten::argmax", "one dim");
    expect_error(tj_linalg_vector_norm(e, INFINITY, NULL, 0, false), "vector_norm", "zero-size");
    expect_error(tj_linalg_vector_norm(x, NAN, NULL, 0, false), "vector_norm", "NaN");
    expect_error(tj_sum(NULL, NULL, 0, false), "aten::sum", "NULL");
    tj_tensor *out[2] = {NULL, NULL};
    tj_clear_error();
    assert_int_equal(tj_max_dim(x, 5, false, out, 2), -1);
    tt_assert_error("out of range");
    assert_int_equal(tj_min_dim(x, 0, false, out, 1), -1);
    tt_assert_error("outputs");
    assert_null(out[0]);
    /* empty reductions that have an identity */
    tj_tensor *s = tj_sum(e, ((int64_t[]){0}), 1, false), *p = tj_prod(e, NULL, 0, false);
    tj_tensor *m = tj_mean(e, NULL, 0, true), *amax = tj_amax(e, ((int64_t[]){1}), 1, false);
    tt_assert_values(s, ((double[]){0, 0, 0, 0}), 4, 0);
    tt_assert_values(p, ((double[]){1}), 1, 0);
    tt_assert_sizes(m, ((int64_t[]){1, 1}), 2);
    assert_true(isnan(tj_get(m, ((int64_t[]){0, 0}))));
    tt_assert_sizes(amax, ((int64_t[]){0}), 1);
    tj_tensor *rel[] = {x, e, i, z, s, p, m, amax};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) tj_release(rel[k]);
    tj_clear_error();
}

/* Long sums stay accurate: 0.1 added a million times. A plain running sum in
 * f64 is off by about 1e-6 here; the blocked, laned sum by far less. */
static void test_long_sums_are_accurate(void **state) {
    (void)state;
    int64_t n = 1000000;
    tj_tensor *x = tj_full(&n, 1, 0.1, TJ_F64), *xf = tj_full(&n, 1, 0.1, TJ_F32);
    tj_tensor *s = tj_sum(x, NULL, 0, false), *sf = tj_sum(xf, NULL, 0, false);
    double got, gotf;
    assert_int_equal(tj_item(s, &got), TJ_OK);
    assert_int_equal(tj_item(sf, &gotf), TJ_OK);
    if (fabs(got - 1e5) >= 1e-9) fail_msg("sum of 0.1 x 1e6: %.17g", got);
    assert_true(fabs(gotf - 1e6 * (double)0.1f) < 1e-2); /* exact up to the f32 rounding */
    /* the column layout: sum over dim 0 of [n/4, 4] */
    int64_t sz[] = {n / 4, 4};
    tj_tensor *x2 = tj_full(sz, 2, 0.1, TJ_F64), *c = tj_sum(x2, ((int64_t[]){0}), 1, false);
    for (int64_t k = 0; k < 4; k++) assert_true(fabs(tj_get(c, &k) - 2.5e4) < 1e-9);
    /* f64 norms neither overflow nor underflow */
    tj_tensor *big = tj_full(((int64_t[]){4}), 1, 1e300, TJ_F64);
    tj_tensor *tiny = tj_full(((int64_t[]){4}), 1, 1e-300, TJ_F64);
    tj_tensor *nb = tj_linalg_vector_norm(big, 2, NULL, 0, false);
    tj_tensor *nt = tj_linalg_vector_norm(tiny, 2, NULL, 0, false);
    tj_tensor *nt3 = tj_linalg_vector_norm(tiny, 3, NULL, 0, false);
    tt_assert_values(nb, ((double[]){2e300}), 1, 1e286);
    tt_assert_values(nt, ((double[]){2e-300}), 1, 1e-314);
    assert_true(fabs(tj_get(nt3, NULL) / (cbrt(4.0) * 1e-300) - 1) < 1e-14);
    tj_tensor *rel[] = {x, xf, s, sf, x2, c, big, tiny, nb, nt, nt3};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) tj_release(rel[k]);
}

/* Every reduction gives the same bits with one thread and with two, in the
 * row layout (long rows cut into blocks) and the column layout; i64 inputs
 * in [-5, 5] also put ties for max and min in many blocks. */
static void test_thread_count_does_not_change_results(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(7);
    int64_t rows[] = {3, 30001}, cols[] = {20001, 3}; /* several blocks each */
    static const tj_dtype dts[] = {TJ_F32, TJ_F64, TJ_I64};
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        if (tj_op_kind_of(op) != TJ_KIND_REDUCTION) continue;
        const ref_op *r = ref_of(tj_op_name(op));
        for (int di = 0; di < 3; di++) {
            if (!(r->dtypes & B(dts[di]))) continue;
            for (int layout = 0; layout < 3; layout++) {
                const int64_t *sz = layout == 1 ? cols : rows;
                bool prod = strcmp(r->name, "aten::prod.dim_IntList") == 0;
                double lo = dts[di] == TJ_I64 ? -5 : prod ? 0.999 : r->lo;
                double hi = dts[di] == TJ_I64 ? 5 : prod ? 1.001 : r->hi;
                tj_tensor *x = tt_random(g, sz, 2, dts[di], lo, hi);
                tcase tc = {.ref = r, .op = op, .correction = 1, .ord = 2, .n_dims = 1};
                tc.dims[0] = layout == 1 ? 0 : 1;
                if (layout == 2) tc.n_dims = r->dims == ONE_DIM ? 1 : 0;
                if (r->dims == SIZE) {
                    tc.n_dims = 2;
                    tc.dims[0] = layout == 1 ? 1 : sz[0];
                    tc.dims[1] = layout == 1 ? sz[1] : 1;
                }
                tj_tensor *a[2], *b[2];
                tj_set_num_threads(1);
                int na = call(&tc, x, a);
                tj_set_num_threads(2);
                int nb = call(&tc, x, b);
                tj_set_num_threads(0);
                assert_true(na > 0);
                assert_int_equal(na, nb);
                for (int k = 0; k < na; k++) {
                    size_t bytes = (size_t)tj_numel(a[k]) * tj_dtype_size(tj_tensor_dtype(a[k]));
                    if (memcmp(tj_data(a[k]), tj_data(b[k]), bytes) != 0)
                        fail_msg("%s: results differ between 1 and 2 threads (layout %d)",
                                 r->name, layout);
                    tj_release(a[k]);
                    tj_release(b[k]);
                }
                check_case(&tc, x); /* and they are right */
                tj_release(x);
            }
        }
    }
    tj_generator_free(g);
}

/* NaNs in later blocks of a long reduction: the first one wins everywhere. */
static void test_nan_across_blocks(void **state) {
    (void)state;
    int64_t n = 100000, at[] = {61000, 90000};
    int64_t sz[] = {n / 2, 2};
    tj_tensor *x = tj_zeros(&n, 1, TJ_F32);
    for (int k = 0; k < 2; k++) ((float *)tj_data(x))[at[k]] = NAN;
    tj_tensor *y = tj_view(x, sz, 2); /* NaN at [30500, 0] and [45000, 0] */
    assert_non_null(y);
    tj_tensor *am = tj_argmax(x, NULL, 0, false), *an = tj_argmin(x, NULL, 0, false);
    tj_tensor *mx = tj_amax(x, NULL, 0, false), *out[2];
    tt_assert_values(am, ((double[]){61000}), 1, 0);
    tt_assert_values(an, ((double[]){61000}), 1, 0);
    assert_true(isnan(tj_get(mx, NULL)));
    assert_int_equal(tj_max_dim(y, 0, false, out, 2), 2);
    tt_assert_values(out[1], ((double[]){30500, 0}), 2, 0);
    assert_true(isnan(tj_get(out[0], ((int64_t[]){0}))));
    tj_tensor *rel[] = {x, y, am, an, mx, out[0], out[1]};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) tj_release(rel[k]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_reduction_has_a_reference),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_api_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_sums_are_accurate),
        cmocka_unit_test(test_thread_count_does_not_change_results),
        cmocka_unit_test(test_nan_across_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
