/* pw_math.h — the helper vocabulary of pointwise expressions in ops.def.
 * Each tjm_ helper is type-generic over float, double, int64_t and bool, so one
 * expression text serves every dtype; <tgmath.h> does the same for exp, log,
 * tanh and the other libm functions. Code generators provide the same names. */
#ifndef TJIT_PW_MATH_H
#define TJIT_PW_MATH_H

#include <stdbool.h>
#include <stdint.h>
#include <tgmath.h>

#define TJM_GENERIC(name, x) \
    _Generic((x), float: name##_f, double: name##_d, int64_t: name##_i, bool: name##_b)

static inline float tjm_abs_f(float x) { return fabs(x); }
static inline double tjm_abs_d(double x) { return fabs(x); }
static inline int64_t tjm_abs_i(int64_t x) { return x < 0 ? (int64_t)(0 - (uint64_t)x) : x; }
static inline bool tjm_abs_b(bool x) { return x; }
#define tjm_abs(x) TJM_GENERIC(tjm_abs, x)(x)

static inline float tjm_floor_f(float x) { return floor(x); }
static inline double tjm_floor_d(double x) { return floor(x); }
static inline int64_t tjm_floor_i(int64_t x) { return x; }
static inline bool tjm_floor_b(bool x) { return x; }
#define tjm_floor(x) TJM_GENERIC(tjm_floor, x)(x)

static inline float tjm_ceil_f(float x) { return ceil(x); }
static inline double tjm_ceil_d(double x) { return ceil(x); }
static inline int64_t tjm_ceil_i(int64_t x) { return x; }
static inline bool tjm_ceil_b(bool x) { return x; }
#define tjm_ceil(x) TJM_GENERIC(tjm_ceil, x)(x)

/* Halves round to even, as in PyTorch. */
static inline float tjm_round_f(float x) { return nearbyint(x); }
static inline double tjm_round_d(double x) { return nearbyint(x); }
static inline int64_t tjm_round_i(int64_t x) { return x; }
static inline bool tjm_round_b(bool x) { return x; }
#define tjm_round(x) TJM_GENERIC(tjm_round, x)(x)

static inline float tjm_sign_f(float x) { return (float)((x > 0) - (x < 0)); }
static inline double tjm_sign_d(double x) { return (double)((x > 0) - (x < 0)); }
static inline int64_t tjm_sign_i(int64_t x) { return (x > 0) - (x < 0); }
static inline bool tjm_sign_b(bool x) { return x; }
#define tjm_sign(x) TJM_GENERIC(tjm_sign, x)(x)

/* Integer powers by squaring; a negative exponent gives 0 unless |base| is 1. */
static inline int64_t tjm_ipow(int64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, x = (uint64_t)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return (int64_t)r;
}
static inline float tjm_pow_f(float a, float b) { return pow(a, b); }
static inline double tjm_pow_d(double a, double b) { return pow(a, b); }
static inline int64_t tjm_pow_i(int64_t a, int64_t b) { return tjm_ipow(a, b); }
static inline bool tjm_pow_b(bool a, bool b) { return a || !b; }
#define tjm_pow(a, b) TJM_GENERIC(tjm_pow, a)(a, b)

/* maximum/minimum propagate NaN, as in PyTorch. */
static inline float tjm_max_f(float a, float b) { return (a > b || a != a) ? a : b; }
static inline double tjm_max_d(double a, double b) { return (a > b || a != a) ? a : b; }
static inline int64_t tjm_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
static inline bool tjm_max_b(bool a, bool b) { return a || b; }
#define tjm_max(a, b) TJM_GENERIC(tjm_max, a)(a, b)
static inline float tjm_min_f(float a, float b) { return (a < b || a != a) ? a : b; }
static inline double tjm_min_d(double a, double b) { return (a < b || a != a) ? a : b; }
static inline int64_t tjm_min_i(int64_t a, int64_t b) { return a < b ? a : b; }
static inline bool tjm_min_b(bool a, bool b) { return a && b; }
#define tjm_min(a, b) TJM_GENERIC(tjm_min, a)(a, b)

/* A NaN bound means "no bound"; when lo > hi every value becomes hi. */
static inline float tjm_clamp_f(float x, float lo, float hi) {
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
static inline double tjm_clamp_d(double x, double lo, double hi) {
    double t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
static inline int64_t tjm_clamp_i(int64_t x, int64_t lo, int64_t hi) {
    int64_t t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
static inline bool tjm_clamp_b(bool x, bool lo, bool hi) { return (x || lo) && hi; }
#define tjm_clamp(x, lo, hi) TJM_GENERIC(tjm_clamp, x)(x, lo, hi)

/* The two-sided formula keeps lerp exact at weight 0 and 1. */
static inline float tjm_lerp_f(float a, float b, float w) {
    return fabs(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}
static inline double tjm_lerp_d(double a, double b, double w) {
    return fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}
#define tjm_lerp(a, b, w) _Generic((a), float: tjm_lerp_f, default: tjm_lerp_d)(a, b, w)

static inline float tjm_gelu_erf_f(float x) { return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f)); }
static inline double tjm_gelu_erf_d(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752)); }
#define tjm_gelu_erf(x) _Generic((x), float: tjm_gelu_erf_f, default: tjm_gelu_erf_d)(x)
static inline float tjm_gelu_tanh_f(float x) {
    return 0.5f * x * (1.0f + tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
static inline double tjm_gelu_tanh_d(double x) {
    return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}
#define tjm_gelu_tanh(x) _Generic((x), float: tjm_gelu_tanh_f, default: tjm_gelu_tanh_d)(x)

#endif
