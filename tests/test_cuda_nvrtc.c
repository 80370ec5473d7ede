/* test_cuda_nvrtc.c — every CUDA source tjit holds (the embedded
 * .cu files of backends/cuda/kernels and what providers generate, through
 * tjcu_for_each_source) compiles with NVRTC to PTX for sm_80, and the
 * toolkit's ptxas accepts the PTX for sm_80 and sm_90; a cubin comes out when asked for; an
 * error returns NVRTC's log; and a provider's sources join the walk. No GPU
 * is needed. Built without the CUDA backend, every test is skipped. */
#include <pthread.h>
#include <stdatomic.h>
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

typedef struct source_text {
    const char *name, *text;
    char failure[1200];
} source_text;

typedef struct walk {
    const char *only; /* a name prefix: the walk compiles only those sources */
    source_text *s;
    int n, cap;
    atomic_int next;
} walk;

static bool collect_source(void *ctx, const char *name, const char *text) {
    walk *w = ctx;
    if (w->only && strncmp(name, w->only, strlen(w->only))) return true;
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 64;
        w->s = realloc(w->s, sizeof *w->s * (size_t)w->cap);
        assert_non_null(w->s);
    }
    w->s[w->n++] = (source_text){name, text, ""};
    return true;
}

static void *compile_worker(void *arg) {
    walk *w = arg;
    for (int i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        source_text *s = &w->s[i];
        tt_cuda_nvrtc_ptxas(s->name, s->text, archs, 2, s->failure, sizeof s->failure);
    }
    return NULL;
}

/* Compiles every source the walk collected (NVRTC for sm_80, ptxas for
 * sm_80 and sm_90) on two threads, each compile a process of its own in
 * ptxas; fails with the first failure. Returns how many were compiled. */
static int compile_and_assemble_all(walk *w) {
    pthread_t t;
    bool started = pthread_create(&t, NULL, compile_worker, w) == 0;
    compile_worker(w);
    if (started) pthread_join(t, NULL);
    for (int i = 0; i < w->n; i++)
        if (w->s[i].failure[0]) fail_msg("%s", w->s[i].failure);
    int n = w->n;
    free(w->s);
    return n;
}

static void test_every_source_compiles_and_assembles(void **state) {
    (void)state;
    walk w = {0};
    assert_int_equal(tjcu_add_source_provider(tjcu_pointwise_sources), TJ_OK);
    assert_true(tjcu_for_each_source(collect_source, &w));
    tjcu_remove_source_provider(tjcu_pointwise_sources);
    int sources = compile_and_assemble_all(&w);
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
    assert_int_equal(compile_and_assemble_all(&w), 1);
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
