/* tjcu_builtins.h — the one header that knows where a tjit CUDA kernel is
 * compiled. Every kernel source (.cu) starts with #include "tjcu_builtins.h"
 * and is written in the subset of CUDA C++ that both compilers accept:
 *
 *   - under NVRTC (__CUDACC_RTC__) it adds only what NVRTC lacks without the
 *     standard headers: fixed-width integer types, INFINITY/NAN, the <cfloat>
 *     and <climits> limits, and the two tjit macros below;
 *   - under the host C++ compiler (C++17) it supplies CUDA's built-ins, so the
 *     same source runs on the host execution harness (backends/cuda/harness.h):
 *     threadIdx, blockIdx, blockDim, gridDim, warpSize, __shared__ memory,
 *     __syncthreads and its _count/_and/_or forms, warp shuffles, votes,
 *     matches and reductions, atomics, __ldg, fences, the fast-math and bit
 *     intrinsics, min/max, vector types and the math library (<cmath>);
 *   - included from C (the harness runner), it gives only the binary
 *     interface between the runner and a host-compiled kernel.
 *
 * The two tjit macros:
 *   TJCU_DYNAMIC_SHARED(type, name);  inside a kernel: name is a type * to the
 *                                     launch's dynamic shared memory (16-byte aligned)
 *   TJCU_EXPORT(kernel)               after each extern "C" __global__ kernel's
 *                                     definition: on the host, the entry point
 *                                     tjh_entry_<kernel> that the runner calls for
 *                                     each thread with CUDA's void **kernelParams
 *
 * Semantics on the host (see docs/cuda.md): the threads of a block run as
 * cooperative fibers on one OS thread, so __shared__ variables are static
 * thread_local (one block per OS thread at a time); blocks run in parallel,
 * so atomics are real atomics. Every wait (barrier, warp collective) is a
 * call into the runner through tjcu::rt, after which the thread's own
 * context is restored.
 */
#ifndef TJCU_BUILTINS_H
#define TJCU_BUILTINS_H

/* ======================= NVRTC ========================================== */
#if defined(__CUDACC_RTC__)

typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
/* as the host's LP64 <cstdint> has them, so overloads agree */
typedef long int64_t;
typedef unsigned long uint64_t;
typedef long intptr_t;
typedef unsigned long uintptr_t;

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#define FLT_MIN 1.175494351e-38F
#define FLT_EPSILON 1.192092896e-07F
#define DBL_MAX 1.7976931348623158e+308
#define DBL_MIN 2.2250738585072014e-308
#define DBL_EPSILON 2.2204460492503131e-16
#endif
#ifndef INT_MAX
#define INT_MAX 2147483647
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX 4294967295U
#define LLONG_MAX 9223372036854775807LL
#define LLONG_MIN (-LLONG_MAX - 1)
#define INT64_MAX LLONG_MAX
#define INT64_MIN LLONG_MIN
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* One extern array shared by every kernel of the source, so kernels may view
 * it as different types. */
#define TJCU_DYNAMIC_SHARED(type, name)                                      \
    extern __shared__ __align__(16) unsigned char tjcu_dynamic_shared_[];    \
    type *name = reinterpret_cast<type *>(tjcu_dynamic_shared_)
#define TJCU_EXPORT(kernel)

#else /* not NVRTC */

/* ======================= the runner's binary interface (C) ============== */
/* Bump TJCU_ABI_VERSION when anything in this section changes meaning. */
#define TJCU_ABI_VERSION 2
#ifdef __cplusplus
extern "C" {
#endif

typedef struct tjcu_uint3 {
    unsigned x, y, z;
} tjcu_uint3;

/* One CUDA thread as its kernel code sees it; the runner's own per-thread
 * state follows it in memory. */
typedef struct tjcu_thread {
    tjcu_uint3 thread_idx, block_idx, block_dim, grid_dim;
    void *dynamic_shared;
} tjcu_thread;

/* Block barriers: every thread of the block, at the same __syncthreads. */
enum tjcu_block_op { TJCU_BAR_SYNC, TJCU_BAR_COUNT, TJCU_BAR_AND, TJCU_BAR_OR };

/* Warp collectives: every lane named in the mask, with the same op. Values
 * travel as 64-bit patterns; TJCU_WARP_64 marks 8-byte types. */
enum tjcu_warp_op {
    TJCU_WARP_SYNC,
    TJCU_SHFL_IDX,
    TJCU_SHFL_UP,
    TJCU_SHFL_DOWN,
    TJCU_SHFL_XOR,
    TJCU_VOTE_ALL,
    TJCU_VOTE_ANY,
    TJCU_VOTE_BALLOT,
    TJCU_MATCH_ANY,
    TJCU_MATCH_ALL, /* result: the mask, with bit 32 set when all lanes matched */
    TJCU_REDUCE_ADD,
    TJCU_REDUCE_MIN,
    TJCU_REDUCE_MAX,
    TJCU_REDUCE_AND,
    TJCU_REDUCE_OR,
    TJCU_REDUCE_XOR,
    TJCU_WARP_N_OPS
};
#define TJCU_WARP_64 0x100     /* the value is 8 bytes wide */
#define TJCU_WARP_SIGNED 0x200 /* reductions: the value is a signed int */

typedef struct tjcu_runtime {
    int abi;
    int (*block_sync)(tjcu_thread *t, int op, int pred, int line);
    unsigned long long (*warp_op)(tjcu_thread *t, int op, unsigned mask, unsigned long long value,
                                  int arg, int width, int line);
    unsigned (*active_mask)(tjcu_thread *t);
    void (*trap)(tjcu_thread *t, int line); /* does not return */
} tjcu_runtime;

/* What TJCU_EXPORT defines, and what a host-compiled module exports besides:
 *   void tjh_entry_K(tjcu_thread *, void **args)   runs kernel K's thread
 *   int tjh_params_K(size_t *sizes, int cap)       K's parameter sizes; returns their count
 *   int tjh_bind(const tjcu_runtime *rt)   sets the module's runtime; returns its ABI */
typedef void (*tjcu_entry)(tjcu_thread *t, void **args);
typedef int (*tjcu_bind_fn)(const tjcu_runtime *rt);

#ifdef __cplusplus
}
#endif

/* ======================= the host C++ compiler ========================== */
#ifdef __cplusplus

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <math.h>
#include <type_traits>
#include <utility>

namespace tjcu {
/* the thread running on this OS thread. Aligned so the module's dynamic TLS
 * block is: GCC 12's AddressSanitizer takes a block 16 bytes into a page for
 * one with a glibc 2.19 header in front, and LeakSanitizer then faults on it. */
alignas(64) static thread_local tjcu_thread *cur;
static const tjcu_runtime *rt;

static inline int block_sync(int op, int pred, int line) {
    tjcu_thread *me = cur;
    int r = rt->block_sync(me, op, pred, line);
    cur = me;
    return r;
}
static inline unsigned long long warp_op(int op, unsigned mask, unsigned long long v, int arg,
                                         int width, int line) {
    tjcu_thread *me = cur;
    unsigned long long r = rt->warp_op(me, op, mask, v, arg, width, line);
    cur = me;
    return r;
}
template <class T> static inline unsigned long long bits_of(T v) {
    static_assert(sizeof(T) <= 8, "warp values are at most 8 bytes");
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof v);
    return b;
}
template <class T> static inline T from_bits(unsigned long long b) {
    T v;
    std::memcpy(&v, &b, sizeof v);
    return v;
}
template <class T> static inline int wide() { return sizeof(T) == 8 ? TJCU_WARP_64 : 0; }

/* Calls kernel f with its parameters read from CUDA's kernelParams array. */
template <class... A, std::size_t... I>
static inline void invoke_(void (*f)(A...), void **args, std::index_sequence<I...>) {
    f(*static_cast<typename std::remove_cv<A>::type *>(args[I])...);
}
template <class... A> static inline void invoke(void (*f)(A...), void **args) {
    invoke_(f, args, std::index_sequence_for<A...>{});
}
/* The bytes of each parameter of f (the first cap of them); returns how many
 * there are. Graph capture copies a launch's argument block with it. */
template <class... A> static inline int param_sizes(void (*)(A...), std::size_t *sizes, int cap) {
    const std::size_t s[] = {sizeof(typename std::remove_cv<A>::type)..., 0};
    int n = (int)sizeof...(A);
    for (int i = 0; i < n && i < cap; i++) sizes[i] = s[i];
    return n;
}
} // namespace tjcu

extern "C" __attribute__((visibility("default"))) int tjh_bind(const tjcu_runtime *r) {
    tjcu::rt = r;
    return TJCU_ABI_VERSION;
}

#define TJCU_EXPORT(kernel)                                                                      \
    extern "C" __attribute__((visibility("default"))) void tjh_entry_##kernel(tjcu_thread *t,     \
                                                                             void **args) {      \
        tjcu::cur = t;                                                                           \
        tjcu::invoke(kernel, args);                                                              \
    }                                                                                            \
    extern "C" __attribute__((visibility("default"))) int tjh_params_##kernel(std::size_t *sizes, \
                                                                             int cap) {          \
        return tjcu::param_sizes(kernel, sizes, cap);                                            \
    }
#define TJCU_DYNAMIC_SHARED(type, name) type *name = static_cast<type *>(tjcu::cur->dynamic_shared)

/* ---- qualifiers ---------------------------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
/* one block per OS thread at a time: thread_local storage is the block's */
#define __shared__ static thread_local

/* ---- indices ------------------------------------------------------------- */
typedef tjcu_uint3 uint3;
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
#define threadIdx (tjcu::cur->thread_idx)
#define blockIdx (tjcu::cur->block_idx)
#define blockDim (tjcu::cur->block_dim)
#define gridDim (tjcu::cur->grid_dim)
static constexpr int warpSize = 32;

/* ---- barriers and warp collectives --------------------------------------- */
static inline void __syncthreads(int line = __builtin_LINE()) {
    tjcu::block_sync(TJCU_BAR_SYNC, 1, line);
}
static inline int __syncthreads_count(int pred, int line = __builtin_LINE()) {
    return tjcu::block_sync(TJCU_BAR_COUNT, pred != 0, line);
}
static inline int __syncthreads_and(int pred, int line = __builtin_LINE()) {
    return tjcu::block_sync(TJCU_BAR_AND, pred != 0, line);
}
static inline int __syncthreads_or(int pred, int line = __builtin_LINE()) {
    return tjcu::block_sync(TJCU_BAR_OR, pred != 0, line);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE()) {
    tjcu::warp_op(TJCU_WARP_SYNC, mask, 0, 0, 32, line);
}
static inline unsigned __activemask(void) { return tjcu::rt->active_mask(tjcu::cur); }

#define TJCU_SHUFFLES(T)                                                                          \
    static inline T __shfl_sync(unsigned mask, T v, int src, int width = 32,                      \
                                int line = __builtin_LINE()) {                                    \
        return tjcu::from_bits<T>(tjcu::warp_op(TJCU_SHFL_IDX | tjcu::wide<T>(), mask,            \
                                                tjcu::bits_of(v), src, width, line));             \
    }                                                                                             \
    static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32,            \
                                   int line = __builtin_LINE()) {                                 \
        return tjcu::from_bits<T>(tjcu::warp_op(TJCU_SHFL_UP | tjcu::wide<T>(), mask,             \
                                                tjcu::bits_of(v), (int)delta, width, line));      \
    }                                                                                             \
    static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32,          \
                                     int line = __builtin_LINE()) {                               \
        return tjcu::from_bits<T>(tjcu::warp_op(TJCU_SHFL_DOWN | tjcu::wide<T>(), mask,           \
                                                tjcu::bits_of(v), (int)delta, width, line));      \
    }                                                                                             \
    static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32,            \
                                    int line = __builtin_LINE()) {                                \
        return tjcu::from_bits<T>(tjcu::warp_op(TJCU_SHFL_XOR | tjcu::wide<T>(), mask,            \
                                                tjcu::bits_of(v), lane_mask, width, line));       \
    }                                                                                             \
    static inline unsigned __match_any_sync(unsigned mask, T v, int line = __builtin_LINE()) {    \
        return (unsigned)tjcu::warp_op(TJCU_MATCH_ANY | tjcu::wide<T>(), mask, tjcu::bits_of(v),  \
                                       0, 32, line);                                              \
    }                                                                                             \
    static inline unsigned __match_all_sync(unsigned mask, T v, int *pred,                        \
                                            int line = __builtin_LINE()) {                        \
        unsigned long long r = tjcu::warp_op(TJCU_MATCH_ALL | tjcu::wide<T>(), mask,              \
                                             tjcu::bits_of(v), 0, 32, line);                      \
        *pred = (int)(r >> 32);                                                                   \
        return (unsigned)r;                                                                       \
    }
TJCU_SHUFFLES(int)
TJCU_SHUFFLES(unsigned)
TJCU_SHUFFLES(long)
TJCU_SHUFFLES(unsigned long)
TJCU_SHUFFLES(long long)
TJCU_SHUFFLES(unsigned long long)
TJCU_SHUFFLES(float)
TJCU_SHUFFLES(double)
#undef TJCU_SHUFFLES

static inline int __all_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (int)tjcu::warp_op(TJCU_VOTE_ALL, mask, pred != 0, 0, 32, line);
}
static inline int __any_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (int)tjcu::warp_op(TJCU_VOTE_ANY, mask, pred != 0, 0, 32, line);
}
static inline unsigned __ballot_sync(unsigned mask, int pred, int line = __builtin_LINE()) {
    return (unsigned)tjcu::warp_op(TJCU_VOTE_BALLOT, mask, pred != 0, 0, 32, line);
}
#define TJCU_REDUCE(name, op, T, sign)                                                            \
    static inline T name(unsigned mask, T v, int line = __builtin_LINE()) {                       \
        return (T)tjcu::warp_op(op | sign, mask, (unsigned)v, 0, 32, line);                       \
    }
TJCU_REDUCE(__reduce_add_sync, TJCU_REDUCE_ADD, unsigned, 0)
TJCU_REDUCE(__reduce_add_sync, TJCU_REDUCE_ADD, int, TJCU_WARP_SIGNED)
TJCU_REDUCE(__reduce_min_sync, TJCU_REDUCE_MIN, unsigned, 0)
TJCU_REDUCE(__reduce_min_sync, TJCU_REDUCE_MIN, int, TJCU_WARP_SIGNED)
TJCU_REDUCE(__reduce_max_sync, TJCU_REDUCE_MAX, unsigned, 0)
TJCU_REDUCE(__reduce_max_sync, TJCU_REDUCE_MAX, int, TJCU_WARP_SIGNED)
TJCU_REDUCE(__reduce_and_sync, TJCU_REDUCE_AND, unsigned, 0)
TJCU_REDUCE(__reduce_or_sync, TJCU_REDUCE_OR, unsigned, 0)
TJCU_REDUCE(__reduce_xor_sync, TJCU_REDUCE_XOR, unsigned, 0)
#undef TJCU_REDUCE

/* Ends the launch with an error that names the kernel and the thread. */
static inline void __trap(int line = __builtin_LINE()) { tjcu::rt->trap(tjcu::cur, line); }

/* ---- memory: fences, read-only loads, atomics ---------------------------- */
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
template <class T> static inline T __ldg(const T *p) { return *p; }

/* Blocks run on several OS threads at once: these are real atomics (relaxed, as CUDA's). */
#define TJCU_ATOMIC_INT(T)                                                                        \
    static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }  \
    static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED); }  \
    static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_RELAXED); }  \
    static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_RELAXED); }    \
    static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED); }  \
    static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }\
    static inline T atomicCAS(T *p, T cmp, T v) {                                                 \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);       \
        return cmp;                                                                               \
    }                                                                                             \
    static inline T atomicMax(T *p, T v) {                                                        \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                             \
        while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,        \
                                                       __ATOMIC_RELAXED)) {                       \
        }                                                                                         \
        return old;                                                                               \
    }                                                                                             \
    static inline T atomicMin(T *p, T v) {                                                        \
        T old = __atomic_load_n(p, __ATOMIC_RELAXED);                                             \
        while (old > v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,        \
                                                       __ATOMIC_RELAXED)) {                       \
        }                                                                                         \
        return old;                                                                               \
    }
TJCU_ATOMIC_INT(int)
TJCU_ATOMIC_INT(unsigned)
TJCU_ATOMIC_INT(long long)
TJCU_ATOMIC_INT(unsigned long long)
#undef TJCU_ATOMIC_INT

#define TJCU_ATOMIC_FLOAT(T)                                                                      \
    static inline T atomicAdd(T *p, T v) {                                                        \
        T old, next;                                                                              \
        __atomic_load(p, &old, __ATOMIC_RELAXED);                                                 \
        do {                                                                                      \
            next = old + v;                                                                       \
        } while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED,               \
                                            __ATOMIC_RELAXED));                                   \
        return old;                                                                               \
    }                                                                                             \
    static inline T atomicExch(T *p, T v) {                                                       \
        T old;                                                                                    \
        __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);                                         \
        return old;                                                                               \
    }
TJCU_ATOMIC_FLOAT(float)
TJCU_ATOMIC_FLOAT(double)
#undef TJCU_ATOMIC_FLOAT

static inline unsigned atomicInc(unsigned *p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0 : old + 1, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
static inline unsigned atomicDec(unsigned *p, unsigned limit) {
    unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(p, &old, (old == 0 || old > limit) ? limit : old - 1,
                                        true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

/* ---- bit reinterpretation and integer intrinsics ------------------------- */
static inline float __int_as_float(int v) { return tjcu::from_bits<float>((unsigned)v); }
static inline float __uint_as_float(unsigned v) { return tjcu::from_bits<float>(v); }
static inline int __float_as_int(float v) { return (int)(unsigned)tjcu::bits_of(v); }
static inline unsigned __float_as_uint(float v) { return (unsigned)tjcu::bits_of(v); }
static inline long long __double_as_longlong(double v) { return (long long)tjcu::bits_of(v); }
static inline double __longlong_as_double(long long v) {
    return tjcu::from_bits<double>((unsigned long long)v);
}
static inline int __double2hiint(double v) { return (int)(tjcu::bits_of(v) >> 32); }
static inline int __double2loint(double v) { return (int)(unsigned)tjcu::bits_of(v); }
static inline double __hiloint2double(int hi, int lo) {
    return tjcu::from_bits<double>((unsigned long long)(unsigned)hi << 32 | (unsigned)lo);
}
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
static inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
static inline int __clzll(long long v) { return v ? __builtin_clzll((unsigned long long)v) : 64; }
static inline int __ffs(int v) { return __builtin_ffs(v); }
static inline int __ffsll(long long v) { return __builtin_ffsll(v); }
static inline unsigned __brev(unsigned v) {
    v = (v >> 1 & 0x55555555u) | (v & 0x55555555u) << 1;
    v = (v >> 2 & 0x33333333u) | (v & 0x33333333u) << 2;
    v = (v >> 4 & 0x0f0f0f0fu) | (v & 0x0f0f0f0fu) << 4;
    return __builtin_bswap32(v);
}
static inline int __mul24(int a, int b) {
    return (int)((long long)(((a & 0xffffff) ^ 0x800000) - 0x800000) * (((b & 0xffffff) ^ 0x800000) - 0x800000));
}
static inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
static inline int __mulhi(int a, int b) { return (int)((long long)a * b >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)((unsigned long long)a * b >> 32);
}
static inline long long __mul64hi(long long a, long long b) {
    return (long long)((__int128)a * b >> 64);
}
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)((unsigned __int128)a * b >> 64);
}

/* ---- fast math: the host computes these exactly (within the device's bounds) */
/* glibc declares these names itself: macros keep its declarations out of the way */
namespace tjcu {
static inline float expf_(float x) { return expf(x); }
static inline float exp10f_(float x) { return powf(10.0f, x); }
static inline float logf_(float x) { return logf(x); }
static inline float log2f_(float x) { return log2f(x); }
static inline float log10f_(float x) { return log10f(x); }
static inline float sinf_(float x) { return sinf(x); }
static inline float cosf_(float x) { return cosf(x); }
static inline float tanf_(float x) { return tanf(x); }
static inline float powf_(float x, float y) { return powf(x, y); }
static inline void sincosf_(float x, float *s, float *c) {
    *s = sinf(x);
    *c = cosf(x);
}
} // namespace tjcu
#define __expf tjcu::expf_
#define __exp10f tjcu::exp10f_
#define __logf tjcu::logf_
#define __log2f tjcu::log2f_
#define __log10f tjcu::log10f_
#define __sinf tjcu::sinf_
#define __cosf tjcu::cosf_
#define __tanf tjcu::tanf_
#define __powf tjcu::powf_
#define __sincosf tjcu::sincosf_
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __drcp_rn(double x) { return 1.0 / x; }
static inline double __dsqrt_rn(double x) { return sqrt(x); }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
static inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : x > 0.0f ? x : 0.0f; }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline long long __double2ll_rn(double x) { return (long long)nearbyint(x); }
static inline float __int2float_rn(int x) { return (float)x; }

/* CUDA's min/max overloads (floating ones as fminf/fmaxf) */
#define TJCU_MINMAX(T)                                                                            \
    static inline T min(T a, T b) { return a < b ? a : b; }                                       \
    static inline T max(T a, T b) { return a > b ? a : b; }
TJCU_MINMAX(int)
TJCU_MINMAX(unsigned)
TJCU_MINMAX(long)
TJCU_MINMAX(unsigned long)
TJCU_MINMAX(long long)
TJCU_MINMAX(unsigned long long)
#undef TJCU_MINMAX
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

/* ---- vector types -------------------------------------------------------- */
#define TJCU_VEC2(name, T, align)                                                                 \
    struct alignas(align) name {                                                                  \
        T x, y;                                                                                   \
    };                                                                                            \
    static inline name make_##name(T x, T y) { return name{x, y}; }
#define TJCU_VEC4(name, T, align)                                                                 \
    struct alignas(align) name {                                                                  \
        T x, y, z, w;                                                                             \
    };                                                                                            \
    static inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
TJCU_VEC2(float2, float, 8)
TJCU_VEC4(float4, float, 16)
TJCU_VEC2(double2, double, 16)
TJCU_VEC2(int2, int, 8)
TJCU_VEC4(int4, int, 16)
TJCU_VEC2(uint2, unsigned, 8)
TJCU_VEC4(uint4, unsigned, 16)
TJCU_VEC2(longlong2, long long, 16)
#undef TJCU_VEC2
#undef TJCU_VEC4
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

#endif /* __cplusplus */
#endif /* not NVRTC */
#endif
