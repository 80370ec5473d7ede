/* isa.c — the run-time choice of the CPU kernels' instruction set (isa.h),
 * and the op kernels that pass each call on to the chosen build. */
#include "isa.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static const char *const isa_names[] = {"baseline", "avx2", "avx512"};

const char *tjcpu_isa_name(tjcpu_isa_level isa) {
    return (unsigned)isa < 3 ? isa_names[isa] : "unknown";
}

tjcpu_isa_level tjcpu_isa_supported(void) {
#ifdef TJIT_ISA_VARIANTS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return TJCPU_ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return TJCPU_ISA_AVX2;
#endif
    return TJCPU_ISA_BASELINE;
}

/* TJIT_ISA lowers the choice; an unknown value or a higher one than the CPU
 * runs leaves the CPU's own. */
static tjcpu_isa_level choose(void) {
    tjcpu_isa_level isa = tjcpu_isa_supported();
    const char *env = getenv("TJIT_ISA");
    if (env && *env)
        for (int i = 0; i < 3; i++)
            if (!strcmp(env, isa_names[i]) && (tjcpu_isa_level)i < isa) isa = (tjcpu_isa_level)i;
    return isa;
}

/* -1 until the first call; every thread computes the same value, so a race
 * only repeats the detection */
static _Atomic int chosen = -1;

tjcpu_isa_level tjcpu_isa(void) {
    int isa = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)choose();
        atomic_store_explicit(&chosen, isa, memory_order_relaxed);
    }
    return (tjcpu_isa_level)isa;
}

tjcpu_isa_level tjcpu_isa_set(tjcpu_isa_level isa) {
    tjcpu_isa_level top = tjcpu_isa_supported();
    if ((unsigned)isa > (unsigned)top) isa = top;
    atomic_store_explicit(&chosen, (int)isa, memory_order_relaxed);
    return isa;
}

#ifdef TJIT_ISA_VARIANTS
/* The op kernels of the files built three times (CMakeLists.txt's
 * TJIT_ISA_KERNEL_FILES) that are called by name from the op table. */
#define TJCPU_DISPATCHED_KERNELS(X)                                                         \
    X(tjcpu_softmax) X(tjcpu_log_softmax) X(tjcpu_softmax_backward_data)                    \
    X(tjcpu_log_softmax_backward_data)                                                      \
    X(tjcpu_native_batch_norm) X(tjcpu_batch_norm) X(tjcpu_native_batch_norm_backward)     \
    X(tjcpu_batch_norm_stats)                                                               \
    X(tjcpu_native_layer_norm) X(tjcpu_layer_norm) X(tjcpu_native_layer_norm_backward)     \
    X(tjcpu_native_group_norm) X(tjcpu_group_norm) X(tjcpu_native_group_norm_backward)     \
    X(tjcpu_sum) X(tjcpu_mean) X(tjcpu_prod) X(tjcpu_amax) X(tjcpu_amin) X(tjcpu_argmax)    \
    X(tjcpu_argmin) X(tjcpu_max_dim) X(tjcpu_min_dim) X(tjcpu_logsumexp) X(tjcpu_var)       \
    X(tjcpu_std) X(tjcpu_linalg_vector_norm)

#define DISPATCH(name)                                                                      \
    tj_status name##_baseline(const tjc_call *c);                                           \
    tj_status name##_avx2(const tjc_call *c);                                               \
    tj_status name##_avx512(const tjc_call *c);                                             \
    tj_status name(const tjc_call *c) { return TJCPU_ISA_PICK(name)(c); }
TJCPU_DISPATCHED_KERNELS(DISPATCH)

#define ROW_HELPERS(X)                                                                       \
    X(void, tjcpu_softmax_row, (const void *x, void *y, int64_t n, tj_dtype t, bool log_form), \
      (x, y, n, t, log_form))                                                                  \
    X(void, tjcpu_layer_norm_row,                                                              \
      (const void *x, const void *w, const void *b, void *y, int64_t n, tj_dtype t, double eps), \
      (x, w, b, y, n, t, eps))
#define DISPATCH_HELPER(ret, name, params, args)                                            \
    ret name##_baseline params;                                                             \
    ret name##_avx2 params;                                                                 \
    ret name##_avx512 params;                                                               \
    ret name params { TJCPU_ISA_PICK(name) args; }
ROW_HELPERS(DISPATCH_HELPER)
#endif
