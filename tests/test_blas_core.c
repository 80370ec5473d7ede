/* test_blas_core.c — OpenBLAS's kernels after tjit's first GEMM
 * (backends/cpu/blas_core.c): on a CPU with AVX2 and FMA they use AVX2 or
 * wider, whatever OpenBLAS chose when it loaded, unless the user named them
 * with OPENBLAS_CORETYPE (the second run of this test names Prescott, which
 * must then stay); and the GEMM is right either way. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/cpu/isa.h"
#include "backends/cpu/linalg.h"
#include "tests/support/testing.h"

enum { M = 67, K = 45, N = 131 }; /* odd sizes: every kernel's edges */

static void mm_matches_reference(void) {
    tj_generator *gen = tj_generator_new(5);
    tj_tensor *a = tj_randn((const int64_t[]){M, K}, 2, TJ_F32, gen);
    tj_tensor *b = tj_randn((const int64_t[]){K, N}, 2, TJ_F32, gen);
    tj_tensor *c = tj_mm(a, b);
    assert_non_null(c);
    const float *pa = tj_data(a), *pb = tj_data(b), *pc = tj_data(c);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                want += (double)pa[i * K + k] * pb[k * N + j];
                mag += fabs((double)pa[i * K + k] * pb[k * N + j]);
            }
            if (fabs(pc[i * N + j] - want) > 1e-6 * mag + 1e-6)
                fail_msg("mm[%d, %d]: got %.9g, want %.9g", i, j, (double)pc[i * N + j], want);
        }
    tj_release(a), tj_release(b), tj_release(c);
    tj_generator_free(gen);
}

static void kernels_fit_the_cpu(void **state) {
    (void)state;
    mm_matches_reference();
    const char *core = openblas_get_corename(), *user = getenv("OPENBLAS_CORETYPE");
    assert_non_null(core);
    print_message("OpenBLAS kernels: %s (CPU: %s; OPENBLAS_CORETYPE %s)\n", core,
                  tjcpu_isa_name(tjcpu_isa_supported()), user ? user : "unset");
    if (user) {
        assert_true(strcasecmp(core, user) == 0); /* the user's choice stands */
    } else if (tjcpu_isa_supported() >= TJCPU_ISA_AVX2) {
        if (!tjcpu_blas_core_has_avx2(core)) fail_msg("OpenBLAS runs %s kernels on a CPU with AVX2", core);
        assert_null(getenv("OPENBLAS_CORETYPE")); /* set only for the moment of the choice */
    }
    mm_matches_reference(); /* and again, after the choice */
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(kernels_fit_the_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
