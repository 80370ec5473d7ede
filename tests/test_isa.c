/* test_isa.c — the CPU kernels' builds for each instruction set this CPU runs
 * (backends/cpu/isa.h): representative ops under every path, each against a
 * reference in double within the documented bounds (docs/codegen.md: exp
 * 1 ulp, tanh and sigmoid 2 ulp in f32), and the pointwise results bit for bit
 * the same on every path (the expressions are ISO C, never contracted into
 * FMA; exp's and tanh's fused steps are explicit fmaf calls). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/isa.h"
#include "tests/support/testing.h"

enum { ROWS = 33, COLS = 517, N = ROWS * COLS }; /* odd sizes: vector tails on every path */

static int64_t ulps(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

/* [ROWS, COLS] f32 over [-lo, lo] with some tiny values among them */
static tj_tensor *input(float lo) {
    tj_tensor *x = tj_empty((const int64_t[]){ROWS, COLS}, 2, TJ_F32);
    assert_non_null(x);
    float *p = tj_data(x);
    for (int i = 0; i < N; i++) p[i] = -lo + 2 * lo * (float)i / (float)(N - 1);
    for (int i = 0; i < N; i += 97) p[i] = ldexpf((float)(i % 7) - 3.0f, -(i % 40));
    return x;
}

static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

/* torch.testing's f32 tolerances */
static void assert_close(double got, double want, const char *what, int i, tjcpu_isa_level isa) {
    if (!(fabs(got - want) <= 1e-5 + 1.3e-6 * fabs(want)))
        fail_msg("%s[%d] on the %s path: got %.9g, want %.9g", what, i, tjcpu_isa_name(isa), got,
                 want);
}

static void pointwise_on_every_path(void **state) {
    (void)state;
    tj_tensor *(*const ops[])(tj_tensor *) = {tj_tanh, tj_exp, tj_sigmoid};
    double (*const refs[])(double) = {tanh, exp, sigmoid_ref};
    const char *const names[] = {"tanh", "exp", "sigmoid"};
    const int64_t bounds[] = {2, 1, 2};
    tj_tensor *x = input(20.0f);
    const float *xp = tj_data(x);
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    for (int k = 0; k < 3; k++) {
        float *first = malloc(sizeof(float) * N);
        assert_non_null(first);
        for (int isa = TJCPU_ISA_BASELINE; isa <= (int)top; isa++) {
            assert_int_equal(tjcpu_isa_set((tjcpu_isa_level)isa), isa);
            assert_int_equal(tjcpu_isa(), isa);
            tj_tensor *y = ops[k](x);
            assert_non_null(y);
            const float *yp = tj_data(y);
            int64_t worst = 0;
            for (int i = 0; i < N; i++) {
                float want = (float)refs[k]((double)xp[i]);
                int64_t d = isinf(want) ? (yp[i] == want ? 0 : INT32_MAX) : ulps(yp[i], want);
                if (d > worst) worst = d;
            }
            print_message("%-7s %-8s max error %lld ulp\n", names[k],
                          tjcpu_isa_name((tjcpu_isa_level)isa), (long long)worst);
            assert_true(worst <= bounds[k]);
            if (isa == TJCPU_ISA_BASELINE) memcpy(first, yp, sizeof(float) * N);
            else if (memcmp(first, yp, sizeof(float) * N))
                fail_msg("%s: the %s path differs from the baseline one", names[k],
                         tjcpu_isa_name((tjcpu_isa_level)isa));
            tj_release(y);
        }
        free(first);
    }
    tjcpu_isa_set(was);
    tj_release(x);
}

static void reductions_on_every_path(void **state) {
    (void)state;
    tj_tensor *x = input(3.0f);
    const float *xp = tj_data(x);
    double want_rows[ROWS], want_all = 0;
    for (int r = 0; r < ROWS; r++) {
        want_rows[r] = 0;
        for (int c = 0; c < COLS; c++) want_rows[r] += xp[r * COLS + c];
        want_all += want_rows[r];
    }
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    for (int isa = TJCPU_ISA_BASELINE; isa <= (int)top; isa++) {
        tjcpu_isa_set((tjcpu_isa_level)isa);
        tj_tensor *rows = tj_sum(x, (const int64_t[]){1}, 1, false);
        tj_tensor *cols = tj_sum(x, (const int64_t[]){0}, 1, false);
        tj_tensor *all = tj_sum(x, NULL, 0, false);
        assert_non_null(rows);
        assert_non_null(cols);
        assert_non_null(all);
        for (int r = 0; r < ROWS; r++)
            assert_close(((float *)tj_data(rows))[r], want_rows[r], "sum(dim=1)", r, isa);
        for (int c = 0; c < COLS; c++) {
            double want = 0;
            for (int r = 0; r < ROWS; r++) want += xp[r * COLS + c];
            assert_close(((float *)tj_data(cols))[c], want, "sum(dim=0)", c, isa);
        }
        assert_close(*(float *)tj_data(all), want_all, "sum()", 0, isa);
        tj_release(rows), tj_release(cols), tj_release(all);
    }
    tjcpu_isa_set(was);
    tj_release(x);
}

static void softmax_and_layer_norm_on_every_path(void **state) {
    (void)state;
    tj_tensor *x = input(8.0f);
    tj_tensor *w = tj_empty((const int64_t[]){COLS}, 1, TJ_F32);
    tj_tensor *b = tj_empty((const int64_t[]){COLS}, 1, TJ_F32);
    float *xp = tj_data(x), *wp = tj_data(w), *bp = tj_data(b);
    for (int c = 0; c < COLS; c++) wp[c] = 0.5f + (float)(c % 5) * 0.25f, bp[c] = (float)(c % 3) - 1;
    /* references in double */
    double *sm = malloc(sizeof(double) * N), *ln = malloc(sizeof(double) * N);
    assert_non_null(sm);
    assert_non_null(ln);
    for (int r = 0; r < ROWS; r++) {
        const float *p = xp + r * COLS;
        double m = -INFINITY, s = 0, mean = 0, var = 0;
        for (int c = 0; c < COLS; c++) m = fmax(m, p[c]);
        for (int c = 0; c < COLS; c++) s += exp(p[c] - m);
        for (int c = 0; c < COLS; c++) mean += p[c];
        mean /= COLS;
        for (int c = 0; c < COLS; c++) var += (p[c] - mean) * (p[c] - mean);
        var /= COLS;
        for (int c = 0; c < COLS; c++) {
            sm[r * COLS + c] = exp(p[c] - m) / s;
            ln[r * COLS + c] = (p[c] - mean) / sqrt(var + 1e-5) * wp[c] + bp[c];
        }
    }
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    for (int isa = TJCPU_ISA_BASELINE; isa <= (int)top; isa++) {
        tjcpu_isa_set((tjcpu_isa_level)isa);
        tj_tensor *y = tj_softmax(x, 1);
        tj_tensor *z = tj_layer_norm(x, (const int64_t[]){COLS}, 1, w, b, 1e-5);
        assert_non_null(y);
        assert_non_null(z);
        const float *yp = tj_data(y), *zp = tj_data(z);
        for (int i = 0; i < N; i++) {
            assert_close(yp[i], sm[i], "softmax", i, isa);
            assert_close(zp[i], ln[i], "layer_norm", i, isa);
        }
        tj_release(y), tj_release(z);
    }
    tjcpu_isa_set(was);
    free(sm), free(ln);
    tj_release(x), tj_release(w), tj_release(b);
}

/* A wider set than the CPU runs is never used. */
static void never_above_the_cpu(void **state) {
    (void)state;
    tjcpu_isa_level top = tjcpu_isa_supported(), was = tjcpu_isa();
    assert_true(was <= top);
    assert_int_equal(tjcpu_isa_set(TJCPU_ISA_AVX512), top);
    assert_int_equal(tjcpu_isa(), top);
    assert_string_equal(tjcpu_isa_name(TJCPU_ISA_AVX2), "avx2");
    tjcpu_isa_set(was);
}

/* TJIT_ISA as the ctest entry sets it: the path in use and build info's line. */
static void environment_choice(void **state) {
    (void)state;
    const char *env = getenv("TJIT_ISA");
    char want[64];
    tjcpu_isa_level isa = tjcpu_isa();
    snprintf(want, sizeof want, "\nCPU kernels: %s path\n", tjcpu_isa_name(isa));
    assert_non_null(strstr(tj_build_info(), want));
    if (env && !strcmp(env, "baseline")) assert_int_equal(isa, TJCPU_ISA_BASELINE);
    if (env && !strcmp(env, "avx2")) assert_true(isa <= TJCPU_ISA_AVX2);
    if (!env) assert_int_equal(isa, tjcpu_isa_supported());
#ifdef TJIT_HAVE_LLVM
    /* the LLVM backend's kernels drop the same extensions (backends/llvm/jit.c) */
    const char *at = strstr(tj_build_info(), "\nLLVM: ");
    assert_non_null(at);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
    const char *note = isa == tjcpu_isa_supported() ? NULL : isa == TJCPU_ISA_AVX2 ? ", no AVX-512)" : ", no AVX)";
    if (note) assert_non_null(strstr(line, note));
    else assert_null(strstr(line, ", no AVX"));
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(environment_choice),
        cmocka_unit_test(pointwise_on_every_path),
        cmocka_unit_test(reductions_on_every_path),
        cmocka_unit_test(softmax_and_layer_norm_on_every_path),
        cmocka_unit_test(never_above_the_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
