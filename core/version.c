/* version.c — tj_version and tj_build_info: the library's version and what
 * this build holds (backends, BLAS, LLVM, the CPU features its code uses and
 * the instruction set its CPU kernels were chosen for at run time).
 * An optional backend adds its line under its own #ifdef, as LLVM's below. */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/isa.h"
#include "backends/cpu/linalg.h"
#include "core.h"
#include "tjit/version.h"
#ifdef TJIT_HAVE_LLVM
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#endif

/* CMake passes these for this file only (the build configuration). */
#ifndef TJIT_BUILD_TYPE
#define TJIT_BUILD_TYPE "unknown"
#endif

const char *tj_version(void) { return TJIT_VERSION_STRING; }

/* The instruction set extensions the compiler was allowed to use for all of
 * the C code: with TJIT_NATIVE, those of the build machine; otherwise the
 * architecture's baseline, the hot kernels' wider builds being chosen at run
 * time (backends/cpu/isa.h). */
static const char *const isa_extensions[] = {
#ifdef __SSE4_2__
    "sse4.2",
#endif
#ifdef __AVX__
    "avx",
#endif
#ifdef __AVX2__
    "avx2",
#endif
#ifdef __FMA__
    "fma",
#endif
#ifdef __F16C__
    "f16c",
#endif
#ifdef __AVX512F__
    "avx512f",
#endif
#ifdef __AVX512BW__
    "avx512bw",
#endif
#ifdef __AVX512VL__
    "avx512vl",
#endif
#ifdef __AVX512DQ__
    "avx512dq",
#endif
#ifdef __ARM_NEON
    "neon",
#endif
#ifdef __ARM_FEATURE_SVE
    "sve",
#endif
    NULL};

typedef struct text {
    char buf[2048];
    size_t n;
} text;

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...) {
    if (t->n >= sizeof t->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->buf + t->n, sizeof t->buf - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) t->n += (size_t)k < sizeof t->buf - t->n ? (size_t)k : sizeof t->buf - t->n - 1;
}

/* Built once: everything it says is fixed when the library loads. */
static text info;
static pthread_once_t info_once = PTHREAD_ONCE_INIT;

static void describe(void) {
    text *t = &info;
#if defined(__clang__)
    const char *compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *compiler = "gcc " __VERSION__;
#else
    const char *compiler = "an unknown compiler";
#endif
    add(t, "tjit %s (%s build, %s)\n", TJIT_VERSION_STRING, TJIT_BUILD_TYPE, compiler);
    add(t, "devices: cpu\n");
    add(t, "fusion backends: portable");
#ifdef TJIT_HAVE_LLVM
    add(t, ", llvm, llvm-libm");
#endif
    add(t, "\n");
    tjcpu_blas_check_core(); /* the kernels tjit's calls will use */
    char *blas = openblas_get_config();
    add(t, "BLAS: %s (kernels for %s)\n", blas ? blas : "OpenBLAS", openblas_get_corename());
#ifdef TJIT_HAVE_LLVM
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    char *cpu = LLVMGetHostCPUName();
    tjcpu_isa_level kernels_isa = tjcpu_isa();
    add(t, "LLVM: %u.%u.%u (fusion kernels compiled for %s%s)\n", major, minor, patch, cpu,
        kernels_isa == tjcpu_isa_supported() ? "" : kernels_isa == TJCPU_ISA_AVX2 ? ", no AVX-512" : ", no AVX");
    LLVMDisposeMessage(cpu);
#else
    add(t, "LLVM: not built in\n");
#endif
    static const char *const isa_titles[] = {"baseline", "AVX2", "AVX-512"};
    tjcpu_isa_level isa = tjcpu_isa();
#ifdef TJIT_ISA_VARIANTS
    add(t, "ISA: %s (run-time dispatch; TJIT_ISA forces a lower one)\n", isa_titles[isa]);
#else
    add(t, "ISA: %s (no run-time dispatch on this architecture)\n", isa_titles[isa]);
#endif
    add(t, "CPU kernels: %s path\n", tjcpu_isa_name(isa));
    add(t, "compiled for:");
    for (int i = 0; isa_extensions[i]; i++) add(t, " %s", isa_extensions[i]);
    if (!isa_extensions[0]) add(t, " the architecture's baseline");
#ifdef TJIT_BUILD_NATIVE
    add(t, " (the build machine's CPU: TJIT_NATIVE)\n");
#else
    add(t, " (portable build)\n");
#endif
#ifdef TJIT_BUILD_SANITIZE
    add(t, "sanitizers: address, undefined\n");
#endif
}

const char *tj_build_info(void) {
    pthread_once(&info_once, describe);
    return info.buf;
}
