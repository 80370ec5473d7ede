/* test_trig.c — the eager CPU kernels of sin, cos, log1p, expm1 and pow (the
 * vectorisable versions of core/pw_trig.h; f32 pow is glibc's powf) on every
 * instruction set this CPU runs (backends/cpu/isa.h), each path forced in turn:
 *   - accuracy sweeps against a correctly rounded reference (f32: libm in
 *     double, rounded; f64: libm in long double, rounded), at most 2 ulp;
 *   - special values exactly (signed zeros, infinities, NaN, denormals,
 *     arguments beyond the reduction's range such as 1e22, 1e300, FLT_MAX);
 *   - the same bits on every path, in place as well as out of place. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/isa.h"
#include "tests/support/testing.h"

enum { MAX_ULP = 2 };

/* Distance in representable values (the bit patterns ordered as integers). */
static int64_t ulps_f(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}
static uint64_t ulps_d(double a, double b) {
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    /* map to a monotonic unsigned order */
    uint64_t oa = ia < 0 ? (uint64_t)0x8000000000000000ull - (uint64_t)(ia & INT64_MAX) : (uint64_t)ia + 0x8000000000000000ull;
    uint64_t ob = ib < 0 ? (uint64_t)0x8000000000000000ull - (uint64_t)(ib & INT64_MAX) : (uint64_t)ib + 0x8000000000000000ull;
    return oa > ob ? oa - ob : ob - oa;
}
/* the same value, NaNs alike, zeros by sign */
static bool same_d(double got, double want) {
    if (want != want) return got != got;
    return got == want && signbit(got) == signbit(want);
}

typedef enum fn { SIN, COS, LOG1P, EXPM1, POW, NUM_FNS } fn;
static const char *const fn_names[NUM_FNS] = {"sin", "cos", "log1p", "expm1", "pow"};

static double ref_f32(fn f, double x, double y) {
    switch (f) {
    case SIN: return sin(x);
    case COS: return cos(x);
    case LOG1P: return log1p(x);
    case EXPM1: return expm1(x);
    default: return pow(x, y);
    }
}
static long double ref_f64(fn f, long double x, long double y) {
    switch (f) {
    case SIN: return sinl(x);
    case COS: return cosl(x);
    case LOG1P: return log1pl(x);
    case EXPM1: return expm1l(x);
    default: return powl(x, y);
    }
}

static tj_tensor *run(fn f, tj_tensor *x, tj_tensor *y) {
    switch (f) {
    case SIN: return tj_sin(x);
    case COS: return tj_cos(x);
    case LOG1P: return tj_log1p(x);
    case EXPM1: return tj_expm1(x);
    default: return tj_pow(x, y);
    }
}

/* ---- inputs ------------------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * (double)(next_u64() >> 11) * 0x1p-53; }

/* The values each function's sweep takes (besides the bit-pattern sweep). */
static double sample(fn f, uint64_t i) {
    switch (f) {
    case SIN:
    case COS:
        if (i % 3 == 0) return uniform(-10, 10);
        if (i % 3 == 1) return uniform(-1e6, 1e6);
        return round(uniform(-1e8, 1e8)) * 1.5707963267948966; /* near multiples of pi/2 */
    case LOG1P:
        if (i % 3 == 0) return uniform(-1, 1);
        if (i % 3 == 1) return -1 + ldexp(uniform(0, 1), -(int)(i % 50)); /* near -1 */
        return ldexp(uniform(-1, 1), -(int)(i % 60));                     /* near 0 */
    case EXPM1:
        if (i % 2 == 0) return uniform(-2, 2);
        return uniform(-50, 720);
    default: return 0;
    }
}

/* n values of dtype t for f: half a sweep over bit patterns (every exponent),
 * half from sample(), then the special values given. */
static tj_tensor *inputs(fn f, tj_dtype t, int64_t n, const double *specials, int n_specials) {
    tj_tensor *x = tj_empty(&n, 1, t);
    assert_non_null(x);
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (i < n_specials) v = specials[i];
        else if (i % 2 == 0 && t == TJ_F32) {
            uint32_t b = (uint32_t)((uint64_t)i * 4099u * 1031u);
            float fv;
            memcpy(&fv, &b, 4);
            v = fv;
        } else if (i % 2 == 0) {
            uint64_t b = (uint64_t)i * 0x9e3779b97f4a7c15ull;
            memcpy(&v, &b, 8);
        } else v = sample(f, (uint64_t)i);
        if (t == TJ_F32) ((float *)tj_data(x))[i] = (float)v;
        else ((double *)tj_data(x))[i] = v;
    }
    return x;
}

/* ---- checking one result ------------------------------------------------------- */

typedef struct worst {
    uint64_t ulp;
    double at, at_y;
    int64_t checked;
} worst;

static void check_one(fn f, tj_dtype t, double x, double y, double got, worst *w, const char *isa) {
    double want;
    if (t == TJ_F32) want = (double)(float)ref_f32(f, (double)(float)x, (double)(float)y);
    else want = (double)ref_f64(f, (long double)x, (long double)y);
    if (want != want || got != got || isinf(want) || isinf(got)) { /* NaN and inf exactly */
        if (!same_d(got, want))
            fail_msg("%s %s on %s: f(%a, %a) = %a, want %a", fn_names[f], tj_dtype_name(t), isa, x, y, got,
                     want);
        return;
    }
    uint64_t d = t == TJ_F32 ? (uint64_t)ulps_f((float)got, (float)want) : ulps_d(got, want);
    if (d > w->ulp) *w = (worst){d, x, y, w->checked};
    w->checked++;
}

static double at(tj_tensor *v, int64_t i) {
    return tj_tensor_dtype(v) == TJ_F32 ? (double)((const float *)tj_data(v))[i] : ((const double *)tj_data(v))[i];
}

/* One function in one dtype on every path: the sweep within MAX_ULP and the
 * bits of every path equal to the baseline's. */
static void sweep_on_every_path(fn f, tj_dtype t, tj_tensor *x, tj_tensor *y) {
    int64_t n = tj_numel(x);
    size_t bytes = (size_t)n * (t == TJ_F32 ? 4 : 8);
    void *first = malloc(bytes);
    assert_non_null(first);
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    for (int isa = TJCPU_ISA_BASELINE; isa <= (int)top; isa++) {
        assert_int_equal(tjcpu_isa_set((tjcpu_isa_level)isa), isa);
        const char *name = tjcpu_isa_name((tjcpu_isa_level)isa);
        tj_tensor *r = run(f, x, y);
        assert_non_null(r);
        worst w = {0, 0, 0, 0};
        for (int64_t i = 0; i < n; i++) check_one(f, t, at(x, i), y ? at(y, i) : 0, at(r, i), &w, name);
        print_message("%-5s %s %-8s max error %llu ulp (at %a, %a) over %lld values\n", fn_names[f],
                      tj_dtype_name(t), name, (unsigned long long)w.ulp, w.at, w.at_y, (long long)w.checked);
        assert_true(w.checked > n / 3); /* the sweep really compared most values */
        assert_true(w.ulp <= MAX_ULP);
        if (isa == TJCPU_ISA_BASELINE) memcpy(first, tj_data(r), bytes);
        else if (memcmp(first, tj_data(r), bytes))
            fail_msg("%s %s: the %s path differs from the baseline one", fn_names[f], tj_dtype_name(t), name);
        tj_release(r);
    }
    tjcpu_isa_set(was);
    free(first);
}

enum { N_SWEEP = 1 << 20 };

static const double trig_specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-310, 1e-40, -1e-40,
                                       1e-300, 1e22, -1e22, 1e300, -1e300, FLT_MAX, -FLT_MAX, DBL_MAX,
                                       1e9, 1.0000001e9, 1e10, 3.0e38, 7.0e15, 1.5707963267948966,
                                       3.141592653589793, 0x1p30, 0x1p52, 0x1p1023};
static const double log1p_specials[] = {0.0, -0.0, -1.0, -2.0, -1e300, INFINITY, -INFINITY, NAN, 1e-310,
                                        -1e-310, 1e-40, 0x1p-54, -0x1p-54, 0x1p-25, 1e300, DBL_MAX,
                                        FLT_MAX, -0.9999999, 1.0, 0x1p53};
static const double expm1_specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-310, 1e-40,
                                        0x1p-54, -0x1p-54, 88.7, 88.8, -87.5, -104.0, 709.7, 709.8,
                                        710.0, 1000.0, -40.0, -41.0, -745.0, -1e300, 1e300, 37.5, -37.5,
                                        0.34657359027997264, 0.6931471805599453};

#define N_OF(a) ((int)(sizeof a / sizeof a[0]))

static void unary_sweep(fn f, tj_dtype t, const double *specials, int n_specials) {
    tj_tensor *x = inputs(f, t, N_SWEEP, specials, n_specials);
    sweep_on_every_path(f, t, x, NULL);
    tj_release(x);
}

static void sin_sweeps(void **state) {
    (void)state;
    unary_sweep(SIN, TJ_F32, trig_specials, N_OF(trig_specials));
    unary_sweep(SIN, TJ_F64, trig_specials, N_OF(trig_specials));
}
static void cos_sweeps(void **state) {
    (void)state;
    unary_sweep(COS, TJ_F32, trig_specials, N_OF(trig_specials));
    unary_sweep(COS, TJ_F64, trig_specials, N_OF(trig_specials));
}
static void log1p_sweeps(void **state) {
    (void)state;
    unary_sweep(LOG1P, TJ_F32, log1p_specials, N_OF(log1p_specials));
    unary_sweep(LOG1P, TJ_F64, log1p_specials, N_OF(log1p_specials));
}
static void expm1_sweeps(void **state) {
    (void)state;
    unary_sweep(EXPM1, TJ_F32, expm1_specials, N_OF(expm1_specials));
    unary_sweep(EXPM1, TJ_F64, expm1_specials, N_OF(expm1_specials));
}

/* pow: bases over every exponent (positive and negative), exponents small
 * and large, integral and not; then every pair of the special values. */
static const double pow_specials[] = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5,
                                      -2.5, INFINITY, -INFINITY, NAN, 1e-310, -1e-310, 1e300, 1e-300,
                                      0x1p53, 0x1p60, -0x1p53 - 2.0, 1.0 + 0x1p-52, 1023.0, -1075.0};
static void pow_sweep(tj_dtype t) {
    int64_t n = N_SWEEP, ns = N_OF(pow_specials);
    tj_tensor *a = tj_empty(&n, 1, t), *b = tj_empty(&n, 1, t);
    assert_non_null(a);
    assert_non_null(b);
    for (int64_t i = 0; i < n; i++) {
        double av, bv;
        if (i < ns * ns) av = pow_specials[i / ns], bv = pow_specials[i % ns];
        else {
            if (t == TJ_F32) {
                uint32_t bits = (uint32_t)next_u64();
                float fv;
                memcpy(&fv, &bits, 4);
                av = fv;
            } else {
                uint64_t bits = next_u64();
                memcpy(&av, &bits, 8);
            }
            if (i % 4 == 0) av = uniform(0, 4);
            else if (i % 4 == 1) av = 1 + uniform(-1e-6, 1e-6);
            int k = (int)(i % 5);
            bv = k == 0 ? round(uniform(-40, 40)) : k == 1 ? uniform(-3, 3) : k == 2 ? uniform(-300, 300)
                 : k == 3 ? uniform(-1e7, 1e7) : ldexp(uniform(-1, 1), -(int)(i % 40));
            if (!isfinite(av)) av = 1.5;
        }
        if (t == TJ_F32) ((float *)tj_data(a))[i] = (float)av, ((float *)tj_data(b))[i] = (float)bv;
        else ((double *)tj_data(a))[i] = av, ((double *)tj_data(b))[i] = bv;
    }
    sweep_on_every_path(POW, t, a, b);
    tj_release(a);
    tj_release(b);
}
static void pow_sweeps(void **state) {
    (void)state;
    pow_sweep(TJ_F32);
    pow_sweep(TJ_F64);
}

/* ---- special values ------------------------------------------------------------ */

typedef struct special {
    fn f;
    double x, y, want;
} special;

static const special exact[] = {
    {SIN, 0.0, 0, 0.0}, {SIN, -0.0, 0, -0.0}, {SIN, INFINITY, 0, NAN}, {SIN, -INFINITY, 0, NAN},
    {SIN, NAN, 0, NAN}, {SIN, 1e-310, 0, 1e-310}, {SIN, -1e-40, 0, -1e-40},
    {COS, 0.0, 0, 1.0}, {COS, -0.0, 0, 1.0}, {COS, INFINITY, 0, NAN}, {COS, -INFINITY, 0, NAN},
    {COS, NAN, 0, NAN}, {COS, 1e-310, 0, 1.0},
    {LOG1P, 0.0, 0, 0.0}, {LOG1P, -0.0, 0, -0.0}, {LOG1P, -1.0, 0, -INFINITY}, {LOG1P, -2.0, 0, NAN},
    {LOG1P, -INFINITY, 0, NAN}, {LOG1P, INFINITY, 0, INFINITY}, {LOG1P, NAN, 0, NAN},
    {LOG1P, 1e-310, 0, 1e-310}, {LOG1P, -1e-40, 0, -1e-40}, {LOG1P, 0x1p-60, 0, 0x1p-60},
    {EXPM1, 0.0, 0, 0.0}, {EXPM1, -0.0, 0, -0.0}, {EXPM1, INFINITY, 0, INFINITY},
    {EXPM1, -INFINITY, 0, -1.0}, {EXPM1, NAN, 0, NAN}, {EXPM1, 1e-310, 0, 1e-310},
    {EXPM1, -1e-40, 0, -1e-40}, {EXPM1, 0x1p-60, 0, 0x1p-60}, {EXPM1, 1000.0, 0, INFINITY},
    {EXPM1, -1000.0, 0, -1.0}, {EXPM1, 1e300, 0, INFINITY},
    /* C99 F.9.4.4 */
    {POW, 0.0, -3.0, INFINITY}, {POW, -0.0, -3.0, -INFINITY}, {POW, 0.0, -2.0, INFINITY},
    {POW, -0.0, -0.5, INFINITY}, {POW, -0.0, -INFINITY, INFINITY}, {POW, 0.0, 3.0, 0.0},
    {POW, -0.0, 3.0, -0.0}, {POW, -0.0, 2.0, 0.0}, {POW, -0.0, 0.5, 0.0}, {POW, -1.0, INFINITY, 1.0},
    {POW, -1.0, -INFINITY, 1.0}, {POW, 1.0, NAN, 1.0}, {POW, 1.0, -7.5, 1.0}, {POW, NAN, 0.0, 1.0},
    {POW, NAN, -0.0, 1.0}, {POW, -2.0, 0.5, NAN}, {POW, 0.5, -INFINITY, INFINITY},
    {POW, 2.0, -INFINITY, 0.0}, {POW, 0.5, INFINITY, 0.0}, {POW, 2.0, INFINITY, INFINITY},
    {POW, -INFINITY, -3.0, -0.0}, {POW, -INFINITY, -2.0, 0.0}, {POW, -INFINITY, 3.0, -INFINITY},
    {POW, -INFINITY, 2.5, INFINITY}, {POW, INFINITY, -1.0, 0.0}, {POW, INFINITY, 0.5, INFINITY},
    {POW, NAN, 1.0, NAN}, {POW, 2.0, NAN, NAN}, {POW, 2.0, 10.0, 1024.0}, {POW, -2.0, 3.0, -8.0},
    {POW, 4.0, 0.5, 2.0}, {POW, 10.0, 400.0, INFINITY}, {POW, 10.0, -400.0, 0.0},
    {POW, 2.0, -1074.0, 0x1p-1074},
};

static void special_values_on_every_path(void **state) {
    (void)state;
    int64_t n = N_OF(exact);
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    for (int isa = TJCPU_ISA_BASELINE; isa <= (int)top; isa++) {
        tjcpu_isa_set((tjcpu_isa_level)isa);
        for (int dt = 0; dt < 2; dt++) {
            tj_dtype t = dt ? TJ_F64 : TJ_F32;
            for (int64_t i = 0; i < n; i++) {
                const special *s = &exact[i];
                bool f32_only_differs = t == TJ_F32 && (fabs(s->x) < 1e-38 && s->x != 0);
                if (f32_only_differs && s->f != COS) continue; /* f32 denormals: checked as 1e-40 */
                if (t == TJ_F32 && s->f == POW && (s->x == 10.0 || s->y == -1074.0)) continue;
                /* a vector of 19 copies: the vector body and its tail */
                int64_t len = 19;
                tj_tensor *x = tj_full(&len, 1, s->x, t), *y = tj_full(&len, 1, s->y, t);
                tj_tensor *r = run(s->f, x, s->f == POW ? y : NULL);
                assert_non_null(r);
                double want = t == TJ_F32 ? (double)(float)s->want : s->want;
                double xv = t == TJ_F32 ? (double)(float)s->x : s->x;
                if (t == TJ_F32 && (s->f == SIN || s->f == LOG1P || s->f == EXPM1) && xv != 0 && fabs(xv) < 1e-30)
                    want = xv;
                for (int64_t k = 0; k < len; k++)
                    if (!same_d(at(r, k), want))
                        fail_msg("%s %s on %s: f(%a, %a) = %a, want %a", fn_names[s->f], tj_dtype_name(t),
                                 tjcpu_isa_name((tjcpu_isa_level)isa), s->x, s->y, at(r, k), want);
                tj_release(x), tj_release(y), tj_release(r);
            }
        }
    }
    tjcpu_isa_set(was);
}

/* In place, lanes beyond the reduction's range among ordinary ones: the
 * second pass must see the inputs of those lanes, not the first pass's
 * results (the in-place kernel's input is its output). */
static void huge_arguments_in_place(void **state) {
    (void)state;
    int64_t n = 1000;
    for (int dt = 0; dt < 2; dt++) {
        tj_dtype t = dt ? TJ_F64 : TJ_F32;
        tj_tensor *x = tj_empty(&n, 1, t);
        for (int64_t i = 0; i < n; i++) {
            double v = i % 97 == 5 ? 1e22 + (double)i * 1e16 : i % 89 == 3 ? 3e38 : (double)i * 0.37 - 150;
            if (t == TJ_F32) ((float *)tj_data(x))[i] = (float)v;
            else ((double *)tj_data(x))[i] = v;
        }
        tj_tensor *keep = tj_clone(x), *out = tj_cos(x), *in_place = tj_cos_(x);
        assert_non_null(in_place);
        tj_release(in_place); /* a reference of its own to x */
        for (int64_t i = 0; i < n; i++) {
            double xi = at(keep, i), want = t == TJ_F32 ? (double)cosf((float)xi) : (double)cosl(xi);
            if (!same_d(at(x, i), at(out, i))) fail_msg("in place differs at %lld", (long long)i);
            uint64_t d = t == TJ_F32 ? (uint64_t)ulps_f((float)at(x, i), (float)want) : ulps_d(at(x, i), want);
            if (d > MAX_ULP) fail_msg("cos(%a) = %a, want %a", xi, at(x, i), want);
        }
        tj_release(x), tj_release(keep), tj_release(out);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(special_values_on_every_path),
        cmocka_unit_test(huge_arguments_in_place),
        cmocka_unit_test(sin_sweeps),
        cmocka_unit_test(cos_sweeps),
        cmocka_unit_test(log1p_sweeps),
        cmocka_unit_test(expm1_sweeps),
        cmocka_unit_test(pow_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
