/* blas_core.c — OpenBLAS's kernels for this CPU, checked once before tjit's
 * first BLAS call (tjcpu_gemm, linalg.h).
 *
 * An OpenBLAS built with DYNAMIC_ARCH picks its kernels by CPU model when it
 * loads. A model newer than the library (Debian 12's 0.3.21 on Sapphire and
 * Emerald Rapids, family 6 model 0x8f and 0xcf) gets the generic fallback,
 * Prescott's SSE3 kernels: sgemm at an eighth of the speed the CPU has. When
 * the kernels OpenBLAS chose use less than AVX2 on a CPU with AVX2 and FMA,
 * tjit asks OpenBLAS to choose again through its own switch, the
 * OPENBLAS_CORETYPE variable (SkylakeX where the CPU has AVX-512, Haswell
 * otherwise), set for the moment of the call and then removed. A user who
 * set OPENBLAS_CORETYPE is never second-guessed, and an OpenBLAS without
 * DYNAMIC_ARCH (no gotoblas_dynamic_init) or another BLAS is left as it is.
 * The choice is made before any BLAS call of tjit's; a program calling BLAS
 * on other threads at that very moment is outside what this can guard. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "isa.h"
#include "linalg.h"

/* 0.3.21's names and later ones */
bool tjcpu_blas_core_has_avx2(const char *core) {
    static const char *const wide[] = {"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids", "Excavator"};
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
        if (!strcasecmp(core, wide[i])) return true;
    return false;
}

static pthread_once_t checked = PTHREAD_ONCE_INIT;

static void check_core(void) {
    tjcpu_isa_level cpu = tjcpu_isa_supported();
    const char *core = openblas_get_corename();
    if (cpu < TJCPU_ISA_AVX2 || !core || tjcpu_blas_core_has_avx2(core) || getenv("OPENBLAS_CORETYPE")) return;
    void (*quit)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
    void (*init)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
    if (!quit || !init) return;
    setenv("OPENBLAS_CORETYPE", cpu == TJCPU_ISA_AVX512 ? "SkylakeX" : "Haswell", 1);
    quit();
    init();
    unsetenv("OPENBLAS_CORETYPE");
}

void tjcpu_blas_check_core(void) { pthread_once(&checked, check_core); }
