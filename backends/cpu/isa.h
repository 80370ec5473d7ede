/* isa.h — the instruction sets the hot CPU kernels are built for, and the
 * run-time choice among them (backends/cpu/isa.c). Prefix tjcpu_isa.
 *
 * The library itself is compiled for the architecture's baseline (x86-64:
 * SSE2), so a binary runs on any CPU of the architecture. The files named in
 * CMakeLists.txt's TJIT_ISA_KERNEL_FILES are compiled twice more, for AVX2+FMA
 * and for AVX-512 (F, BW, VL, DQ): backends/cpu/isa/<file>_<isa>.c defines
 * TJCPU_ISA_SUFFIX and includes backends/cpu/<file>.c, whose kernels name
 * themselves with TJCPU_ISA_NAME so that each build has its own symbols.
 * Callers reach the set chosen at first use: the loop tables through
 * tjcpu_isa_pick, the op kernels through the dispatchers of isa.c.
 *
 * The choice is the widest set the CPU supports; TJIT_ISA=baseline|avx2|avx512
 * in the environment lowers it (never above what the CPU has).
 */
#ifndef TJIT_CPU_ISA_H
#define TJIT_CPU_ISA_H

typedef enum tjcpu_isa_level { TJCPU_ISA_BASELINE, TJCPU_ISA_AVX2, TJCPU_ISA_AVX512 } tjcpu_isa_level;

/* The set in use, chosen once (the CPU's features and TJIT_ISA). */
tjcpu_isa_level tjcpu_isa(void);
/* "baseline", "avx2", "avx512" */
const char *tjcpu_isa_name(tjcpu_isa_level isa);
/* The widest set the CPU runs, whatever TJIT_ISA says. */
tjcpu_isa_level tjcpu_isa_supported(void);
/* Uses isa from now on, or the widest supported set when isa is wider; returns
 * the set now in use. For tests: not while kernels run on other threads. */
tjcpu_isa_level tjcpu_isa_set(tjcpu_isa_level isa);

#define TJCPU_ISA_CAT_(a, b) a##_##b
#define TJCPU_ISA_CAT(a, b) TJCPU_ISA_CAT_(a, b)
#ifdef TJCPU_ISA_SUFFIX /* a variant build: backends/cpu/isa/<file>_<isa>.c */
#define TJCPU_ISA_NAME(name) TJCPU_ISA_CAT(name, TJCPU_ISA_SUFFIX)
#elif defined(TJIT_ISA_VARIANTS)
#define TJCPU_ISA_NAME(name) TJCPU_ISA_CAT(name, baseline)
#else /* one build only: the kernels keep their names */
#define TJCPU_ISA_NAME(name) name
#endif

/* The object of the set in use among name_baseline, name_avx2, name_avx512. */
#ifdef TJIT_ISA_VARIANTS
#define TJCPU_ISA_PICK(name)                                                                \
    (tjcpu_isa() == TJCPU_ISA_AVX512 ? name##_avx512                                       \
     : tjcpu_isa() == TJCPU_ISA_AVX2 ? name##_avx2                                         \
                                     : name##_baseline)
#else
#define TJCPU_ISA_PICK(name) name
#endif

#endif
