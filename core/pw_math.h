/* pw_math.h — the helper vocabulary of pointwise expressions in ops.def.
 * Each tjm_ helper is type-generic over float, double, int64_t and bool, so one
 * expression text serves every dtype; <tgmath.h> does the same for exp, log,
 * tanh and the other libm functions. Code generators provide the same names. */
#ifndef TJIT_PW_MATH_H
#define TJIT_PW_MATH_H

#include <stdbool.h>
#include <stdint.h>
#include <tgmath.h>

/* ---- f32 exp, log and tanh that vectorise ---------------------------------
 * Range reduction plus a polynomial, with no branches and no library calls, so
 * a loop over them becomes SIMD code, and the same arithmetic (ISO C: no
 * contraction into FMA) in scalar, strided and vector paths gives the same
 * bits. Coefficients are Cephes's minimax fits. Accuracy against libm in
 * double, measured over every 193rd float by tests/test_math.c: see
 * docs/performance.md. f64 uses libm. */

static inline float tjm_f32_from_bits(uint32_t u) {
    union { uint32_t u; float f; } v = {u};
    return v.f;
}
static inline uint32_t tjm_f32_bits(float f) {
    union { float f; uint32_t u; } v = {f};
    return v.u;
}
/* 2^n for n in [-126, 127] */
static inline float tjm_pow2i(int n) { return tjm_f32_from_bits((uint32_t)(n + 127) << 23); }

static inline float tjm_expf(float x) {
    bool nan = x != x;
    float xc = nan ? 0.0f : x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
    /* n = round(x / ln 2): adding and subtracting 1.5 * 2^23 rounds to nearest */
    float fn = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    int n = (int)fn;
    float r = xc - fn * 0.693359375f; /* ln 2 in two parts (Cody and Waite) */
    r = r - fn * -2.12194440e-4f;
    float z = r * r;
    float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    int n1 = n / 2; /* two factors so that 2^n reaches denormals and overflows to inf */
    float res = p * tjm_pow2i(n1) * tjm_pow2i(n - n1);
    return nan ? x : res;
}

static inline float tjm_logf(float x) {
    bool tiny = x < 1.17549435e-38f; /* denormals: scale into the normal range first */
    uint32_t u = tjm_f32_bits(tiny ? x * 33554432.0f : x);
    int e = (int)((u >> 23) & 0xff) - 127 - (tiny ? 25 : 0);
    float m = tjm_f32_from_bits((u & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
    bool big = m > 1.41421356237f;                                 /* -> [sqrt(1/2), sqrt(2)) */
    m = big ? m * 0.5f : m;
    e += big;
    float f = m - 1.0f, z = f * f, fe = (float)e;
    float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f -
                    1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f +
                 2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f) * f * z;
    y += -2.12194440e-4f * fe;
    y += -0.5f * z;
    float r = f + y + 0.693359375f * fe;
    r = x == 0.0f ? -__builtin_inff() : r;
    r = x < 0.0f ? __builtin_nanf("") : r;
    r = x == __builtin_inff() ? x : r;
    return x != x ? x : r;
}

static inline float tjm_tanhf(float x) {
    float ax = x < 0.0f ? -x : x, z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float big = 1.0f - 2.0f / (tjm_expf(2.0f * ax) + 1.0f);
    big = x < 0.0f ? -big : big;
    small = x == 0.0f ? x : small; /* keeps the sign of -0 */
    return ax < 0.625f ? small : big; /* NaN takes the second path and stays NaN */
}

static inline double tjm_exp_d(double x) { return exp(x); }
static inline double tjm_log_d(double x) { return log(x); }
static inline double tjm_tanh_d(double x) { return tanh(x); }
#define tjm_exp(x) _Generic((x), float: tjm_expf, default: tjm_exp_d)(x)
#define tjm_log(x) _Generic((x), float: tjm_logf, default: tjm_log_d)(x)
#define tjm_tanh(x) _Generic((x), float: tjm_tanhf, default: tjm_tanh_d)(x)

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
    return 0.5f * x * (1.0f + tjm_tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
static inline double tjm_gelu_tanh_d(double x) {
    return 0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}
#define tjm_gelu_tanh(x) _Generic((x), float: tjm_gelu_tanh_f, default: tjm_gelu_tanh_d)(x)

#endif
