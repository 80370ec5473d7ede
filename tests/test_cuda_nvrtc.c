/* test_cuda_nvrtc.c — every CUDA source tjit holds (the embedded
 * .cu files of backends/cuda/kernels and what providers generate, through
 * tjcu_for_each_source) compiles with NVRTC to PTX for sm_80, and the
 * toolkit's ptxas accepts the PTX for sm_80 and sm_90; a cubin comes out when asked for; an
 * error returns NVRTC's log; and a provider's sources join the walk. No GPU
 * is needed. Built without the CUDA backend, every test is skipped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/runtime_testing.h"
#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/pointwise.h"
#include "backends/cuda/sources.h"
#include "tests/support/cuda_ptx.h"

static const char *const archs[] = {"sm_80", "sm_90"};

typedef struct walk {
    const char *only; /* a name prefix: the walk collects only those sources */
    tt_cuda_sources list;
} walk;

static bool collect_source(void *ctx, const char *name, const char *text) {
    walk *w = ctx;
    if (!w->only || !strncmp(name, w->only, strlen(w->only))) tt_cuda_sources_add(&w->list, name, text);
    return true;
}

static void test_every_source_compiles_and_assembles(void **state) {
    (void)state;
    walk w = {0};
    assert_int_equal(tjcu_add_source_provider(tjcu_pointwise_sources), TJ_OK);
    assert_true(tjcu_for_each_source(collect_source, &w));
    tjcu_remove_source_provider(tjcu_pointwise_sources);
    int sources = tt_cuda_nvrtc_ptxas_all(&w.list, archs, 2);
    assert_true(sources >= 1);
    printf("NVRTC %s: %d sources compiled for sm_80, ptxas accepted all for sm_80 and sm_90\n",
           tjcu_nvrtc_version(), sources);
}

/* ---- providers -------------------------------------------------------------------- */

static bool generated(tjcu_source_fn fn, void *ctx) {
    return fn(ctx, "generated_scale.cu",
              "#include \"tjcu_builtins.h\"\n"
              "extern \"C\" __global__ void generated_scale(int64_t n, float a, float *x) {\n"
              "    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    if (i < n) x[i] = __expf(a * x[i]) + tanhf(x[i]);\n"
              "}\n"
              "TJCU_EXPORT(generated_scale)\n");
}

static bool collect(void *ctx, const char *name, const char *text) {
    (void)text;
    char *names = ctx;
    strcat(names, name);
    strcat(names, " ");
    return true;
}

static bool stop_at_first(void *ctx, const char *name, const char *text) {
    (void)name, (void)text;
    ++*(int *)ctx;
    return false;
}

static void test_providers_join_the_walk(void **state) {
    (void)state;
    char names[4096] = "";
    assert_true(tjcu_for_each_source(collect, names));
    assert_non_null(strstr(names, "selftest.cu "));
    assert_null(strstr(names, "tjcu_builtins.h")); /* the header is no kernel source */
    assert_null(strstr(names, "generated_scale.cu"));
    assert_int_equal(tjcu_add_source_provider(generated), TJ_OK);
    assert_int_equal(tjcu_add_source_provider(generated), TJ_OK); /* once only */
    names[0] = '\0';
    assert_true(tjcu_for_each_source(collect, names));
    char *g = strstr(names, "generated_scale.cu");
    assert_non_null(g);
    assert_null(strstr(g + 1, "generated_scale.cu"));
    walk w = {.only = "generated_"}; /* the others are the test above's */
    assert_true(tjcu_for_each_source(collect_source, &w));
    tjcu_remove_source_provider(generated);
    assert_int_equal(tt_cuda_nvrtc_ptxas_all(&w.list, archs, 2), 1);
    int calls = 0;
    assert_false(tjcu_for_each_source(stop_at_first, &calls));
    assert_int_equal(calls, 1);
}

/* ---- images and errors -------------------------------------------------------------- */

static void test_cubin(void **state) {
    (void)state;
    char *image = NULL;
    size_t size = 0;
    if (tjcu_nvrtc_compile("selftest.cu", tjcu_source_text("selftest.cu"), "sm_90", true, &image, &size) != TJ_OK)
        fail_msg("%s", tj_last_error());
    assert_true(size > 1000);
    assert_memory_equal(image, "\177ELF", 4);
    free(image);
    assert_int_equal(tjcu_nvrtc_compile("selftest.cu", "", "compute_90", true, &image, &size), TJ_ERR_ARG);
    tt_assert_error("is not sm_NN");
    assert_int_equal(tjcu_nvrtc_compile("selftest.cu", "", "gfx90a", false, &image, &size), TJ_ERR_ARG);
    assert_null(image);
}

/* No FMA contraction: a * b + c stays a rounded product and a rounded sum,
 * as on the CPU (in f32 and f64), and the cubin cache's key names the option. */
static void test_no_fma_contraction(void **state) {
    (void)state;
    const char *src = "#include \"tjcu_builtins.h\"\n"
                      "extern \"C\" __global__ void muladd(float *y, const float *a, float b, float c,\n"
                      "                                     double *z, const double *d, double e) {\n"
                      "    y[threadIdx.x] = a[threadIdx.x] * b + c;\n"
                      "    z[threadIdx.x] = z[threadIdx.x] - d[threadIdx.x] * e;\n"
                      "}\n";
    char *ptx = NULL;
    size_t size = 0;
    if (tjcu_nvrtc_compile("muladd.cu", src, "sm_90", false, &ptx, &size) != TJ_OK)
        fail_msg("%s", tj_last_error());
    if (strstr(ptx, "fma.") || !strstr(ptx, "mul.rn.f32") || !strstr(ptx, "add.rn.f32") ||
        !strstr(ptx, "mul.rn.f64") || !strstr(ptx, "sub.rn.f64"))
        fail_msg("NVRTC contracted a * b + c (or rounded it otherwise):\n%s", ptx);
    free(ptx);
    assert_non_null(strstr(tjcu_nvrtc_options(), "--fmad=false"));
}

static void test_compile_error_has_the_log(void **state) {
    (void)state;
    char *image = NULL;
    size_t size = 0;
    const char *src = "#include \"tjcu_builtins.h\"\n"
                      "extern \"C\" __global__ void broken(int *x) { x[threadIdx.x] = no_such_name; }\n";
    assert_int_equal(tjcu_nvrtc_compile("broken.cu", src, "sm_80", false, &image, &size), TJ_ERR_UNSUPPORTED);
    assert_null(image);
    tt_assert_error("broken.cu for sm_80");
    tt_assert_error("broken.cu(2)");
    tt_assert_error("no_such_name");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_source_compiles_and_assembles),
        cmocka_unit_test(test_providers_join_the_walk),
        cmocka_unit_test(test_cubin),
        cmocka_unit_test(test_no_fma_contraction),
        cmocka_unit_test(test_compile_error_has_the_log),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else

static void test_cuda_backend_not_built(void **state) {
    (void)state;
    skip();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_cuda_backend_not_built)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
