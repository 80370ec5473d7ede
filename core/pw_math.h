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
 * a loop over them becomes SIMD code, and the same arithmetic in scalar,
 * strided and vector paths gives the same bits. exp's reduction and
 * polynomial, which tanh shares, are written with tjm_fmaf, one rounding per
 * multiply and add: fewer instructions and no worse error where the CPU has
 * FMA, and the same bits on every ISA path (the rest is ISO C, which GCC
 * does not contract). Coefficients are Cephes's minimax fits. Accuracy
 * against libm in double, measured over every 193rd float by
 * tests/test_math.c: see docs/performance.md. f64 uses libm. */

/* a * b + c rounded once: one instruction where the translation unit is built
 * for FMA (the AVX2 and AVX-512 kernels, the LLVM backend's llvm.fma), glibc's
 * correctly rounded fmaf elsewhere (the baseline build: the same bits, slower;
 * every x86-64 CPU since 2013 takes an FMA path). */
#define tjm_fmaf(a, b, c) fmaf(a, b, c)

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

/* exp's reduction and polynomial: e^y = 2^*n (1 + the result), the result
 * e^r - 1 for y = n ln 2 + r, n = round(y / ln 2) (adding and subtracting
 * 1.5 * 2^23 rounds to nearest), ln 2 in two parts (Cody and Waite), the
 * polynomial in Estrin's scheme (three independent pairs, then two steps in
 * r^2). tjm_expf, tjm_tanhf and the reduced-range exps below scale it each
 * in the one way their range allows. */
static inline float tjm_expm1f_core(float y, int *n) {
    float fn = tjm_fmaf(y, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
    *n = (int)fn;
    float r = tjm_fmaf(fn, -0.693359375f, y);
    r = tjm_fmaf(fn, 2.12194440e-4f, r);
    float z = r * r;
    float pa = tjm_fmaf(1.9875691500e-4f, r, 1.3981999507e-3f);
    float pb = tjm_fmaf(8.3334519073e-3f, r, 4.1665795894e-2f);
    float pc = tjm_fmaf(1.6666665459e-1f, r, 5.0000001201e-1f);
    float p = tjm_fmaf(tjm_fmaf(pa, z, pb), z, pc);
    return tjm_fmaf(p, z, r);
}
static inline float tjm_expf_core(float y, int *n) { return tjm_expm1f_core(y, n) + 1.0f; }

static inline float tjm_expf(float x) {
    bool nan = x != x;
    float xc = nan ? 0.0f : x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x;
    int n;
    float p = tjm_expf_core(xc, &n);
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
    /* the special values, blended in on the bits: selects here leave GCC with
     * control flow it does not if-convert, and the loop would not vectorise */
    uint32_t ux = tjm_f32_bits(x), mag = ux & 0x7fffffffu, rb = tjm_f32_bits(r);
    uint32_t zero = 0u - (uint32_t)(mag == 0);                      /* log(+-0) = -inf */
    uint32_t neg = 0u - (uint32_t)((ux >> 31) & (mag != 0));        /* negative: NaN */
    uint32_t keep = 0u - (uint32_t)(ux == 0x7f800000u || mag > 0x7f800000u); /* inf, NaN: x */
    rb = (rb & ~zero) | (0xff800000u & zero);
    rb = (rb & ~neg) | (0x7fc00000u & neg);
    rb = (rb & ~keep) | (ux & keep);
    return tjm_f32_from_bits(rb);
}

/* e^y where 1 / (1 + e^y) and x / (1 + e^y) need it, with tjm_expf's bits
 * wherever they can tell: below -86 the sum 1 + e^y rounds to 1 either way,
 * and past 89 e^y is inf either way, so y is clamped into [-86, 89] (NaN to
 * -86: the callers return NaN themselves) and 2^n is 2 * 2^(n-1), one scaling
 * that stays exact up to FLT_MAX, instead of tjm_expf's two. */
static inline float tjm_expf_sigmoid_range(float y) {
    y = y > -86.0f ? y : -86.0f;
    y = y < 89.0f ? y : 89.0f;
    int n;
    float p = tjm_expf_core(y, &n);
    return (p * 2.0f) * tjm_pow2i(n - 1);
}
/* 1 / (1 + tjm_expf(-x)) and x / (1 + tjm_expf(-x)), bit for bit */
static inline float tjm_sigmoidf(float x) {
    float r = 1.0f / (1.0f + tjm_expf_sigmoid_range(-x));
    return x != x ? x + x : r;
}
static inline float tjm_siluf(float x) {
    float r = x / (1.0f + tjm_expf_sigmoid_range(-x));
    return x != x ? x + x : r;
}

static inline float tjm_tanhf(float x) {
    /* tanh(|x|) = m / (m + 2) with m = e^2|x| - 1 = 2^n (q + 1) - 1, q = e^r - 1
     * from tjm_expf_core's polynomial; then x's sign put back on the bits
     * (-0 stays -0). From |x| = 9.1 on the result rounds to 1: the clamp
     * there keeps 2^n exact. */
    uint32_t ux = tjm_f32_bits(x), sign = ux & 0x80000000u;
    float ax = tjm_f32_from_bits(ux & 0x7fffffffu);
    float y = 2.0f * (ax < 9.1f ? ax : 9.1f);
    int n;
    float q = tjm_expm1f_core(y, &n), s = tjm_pow2i(n);
    float m = tjm_fmaf(q, s, s - 1.0f);
    float r = tjm_f32_from_bits(tjm_f32_bits(m / (m + 2.0f)) | sign);
    return x != x ? x + x : r; /* NaN: quieted, as arithmetic on it would */
}

/* ---- f64 exp, log, tanh, erf and f32 erf that vectorise ----------------------
 * The same scheme in double: branch-free range reduction and Cephes's
 * rational fits. The LLVM backend (backends/llvm/) emits these operation for
 * operation, so its vectorised kernels give the same bits as these C
 * versions; the op table still takes f64 exp/log/tanh and erf from libm,
 * so today these are the LLVM backend's reference (tests/test_llvm_math.c
 * holds both to libm and to each other; docs/codegen.md has the ulp table). */

static inline double tjm_f64_from_bits(uint64_t u) {
    union { uint64_t u; double f; } v = {u};
    return v.f;
}
static inline uint64_t tjm_f64_bits(double f) {
    union { double f; uint64_t u; } v = {f};
    return v.u;
}
/* 2^n for n in [-1022, 1023] */
static inline double tjm_pow2i_d(int64_t n) { return tjm_f64_from_bits((uint64_t)(n + 1023) << 52); }

#include "pw_trig.h" /* sin, cos, log1p, expm1 and pow */

static inline double tjm_expd(double x) {
    bool nan = x != x;
    double xc = nan ? 0.0 : x < -746.0 ? -746.0 : x > 710.0 ? 710.0 : x;
    /* n = round(x / ln 2): adding and subtracting 1.5 * 2^52 rounds to nearest */
    double fn = (xc * 1.4426950408889634073599 + 6755399441055744.0) - 6755399441055744.0;
    int64_t n = (int64_t)fn;
    double r = xc - fn * 6.93145751953125E-1; /* ln 2 in two parts */
    r = r - fn * 1.42860682030941723212E-6;
    double z = r * r;
    double p = r * ((1.26177193074810590878E-4 * z + 3.02994407707441961300E-2) * z +
                    9.99999999999999999910E-1);
    double q = ((3.00198505138664455042E-6 * z + 2.52448340349684104192E-3) * z +
                2.27265548208155028766E-1) * z + 2.00000000000000000009E0;
    double e = p / (q - p);
    e = 1.0 + 2.0 * e;
    int64_t n1 = n / 2; /* two factors so that 2^n reaches denormals and overflows to inf */
    double res = e * tjm_pow2i_d(n1) * tjm_pow2i_d(n - n1);
    return nan ? x : res;
}

static inline double tjm_logd(double x) {
    bool tiny = x < 2.2250738585072014e-308; /* denormals: scale into the normal range first */
    uint64_t u = tjm_f64_bits(tiny ? x * 18014398509481984.0 : x);
    int64_t e = (int64_t)((u >> 52) & 0x7ff) - 1023 - (tiny ? 54 : 0);
    double m = tjm_f64_from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
    bool big = m > 1.4142135623730950488; /* -> [sqrt(1/2), sqrt(2)) */
    m = big ? m * 0.5 : m;
    e += big;
    double f = m - 1.0, z = f * f, fe = (double)e;
    double p = ((((1.01875663804580931796E-4 * f + 4.97494994976747001425E-1) * f +
                  4.70579119878881725854E0) * f + 1.44989225341610930846E1) * f +
                1.79368678507819816313E1) * f + 7.70838733755885391666E0;
    double q = ((((f + 1.12873587189167450590E1) * f + 4.52279145837532221105E1) * f +
                 8.29875266912776603211E1) * f + 7.11544750618563894466E1) * f +
               2.31251620126765340583E1;
    double y = f * (z * p / q);
    y += -2.121944400546905827679e-4 * fe;
    y += -0.5 * z;
    double r = f + y + 0.693359375 * fe;
    r = x == 0.0 ? -__builtin_inf() : r;
    r = x < 0.0 ? __builtin_nan("") : r;
    r = x == __builtin_inf() ? x : r;
    return x != x ? x : r;
}

static inline double tjm_tanhd(double x) {
    double ax = x < 0.0 ? -x : x, z = x * x;
    double p = (-9.64399179425052238628E-1 * z - 9.92877231001918586564E1) * z -
               1.61468768441708447952E3;
    double q = ((z + 1.12811678491632931402E2) * z + 2.23548839060100448583E3) * z +
               4.84406305325125486048E3;
    double small = x + x * z * p / q;
    double big = 1.0 - 2.0 / (tjm_expd(2.0 * ax) + 1.0);
    big = x < 0.0 ? -big : big;
    small = x == 0.0 ? x : small; /* keeps the sign of -0 */
    return ax < 0.625 ? small : big; /* NaN takes the second path and stays NaN */
}

/* erf: x T(x^2)/U(x^2) below 1, else 1 - e^(-x^2) P(|x|)/Q(|x|) (erfc's fit,
 * valid to 8; from 6 on the result rounds to 1 anyway, so |x| is capped). */
static inline double tjm_erfd(double x) {
    double ax = x < 0.0 ? -x : x, z = x * x;
    double t = (((9.60497373987051638749E0 * z + 9.00260197203842689217E1) * z +
                 2.23200534594684319226E3) * z + 7.00332514112805075473E3) * z +
               5.55923013010394962768E4;
    double u = ((((z + 3.35617141647503099647E1) * z + 5.21357949780152679795E2) * z +
                 4.59432382970980127987E3) * z + 2.26290000613890934246E4) * z +
               4.92673942608635921086E4;
    double small = x * t / u;
    double a = ax < 8.0 ? ax : 8.0;
    double e = tjm_expd(-a * a);
    double p = (((((((2.46196981473530512524E-10 * a + 5.64189564831068821977E-1) * a +
                     7.46321056442269912687E0) * a + 4.86371970985681366614E1) * a +
                   1.96520832956077098242E2) * a + 5.26445194995477358631E2) * a +
                 9.34528527171957607540E2) * a + 1.02755188689515710272E3) * a +
               5.57535335369399327526E2;
    double q = (((((((a + 1.32281951154744992508E1) * a + 8.67072140885989742329E1) * a +
                    3.54937778887819891062E2) * a + 9.75708501743205489753E2) * a +
                  1.82390916687909736289E3) * a + 2.24633760818710981792E3) * a +
                1.65666309194161350182E3) * a + 5.57535340817727675546E2;
    double big = 1.0 - e * p / q;
    big = x < 0.0 ? -big : big;
    double r = ax < 1.0 ? small : big;
    return x != x ? x : r;
}

/* f32 erf in float, so that it vectorises on AVX2 too (no 64-bit integer
 * conversions): x (1 + T(x^2)) below 1, else 1 - e^(-b^2) G(1/b) with b = |x|
 * capped to [1, 4] (erf rounds to 1 from about 3.9). T and G are least-squares
 * fits (relative error 1.4e-9 and 1.7e-8); the result is within 1.35 ulp of
 * the correctly rounded erf over every float (tests/test_math.c). */
static inline float tjm_erff(float x) {
    float a = x < 0.0f ? -x : x, z = x * x;
    float t = ((((((7.898210184421817e-05f * z - 8.024354121533627e-04f) * z +
                   5.1900535770086015e-03f) * z - 2.685480853680238e-02f) * z +
                 1.1283612428235859e-01f) * z - 3.7612628843324375e-01f) * z +
               1.283791665100518e-01f);
    float small = x + x * t; /* x (1 + t): the last rounding is x's */
    float b = a < 4.0f ? a : 4.0f;
    b = b > 1.0f ? b : 1.0f;
    float u = 1.0f / b;
    float g = ((((((((2.9677235918169887e-02f * u - 1.7400144137451656e-01f) * u +
                     4.245884457081541e-01f) * u - 5.183950056395172e-01f) * u +
                   2.2255830175326174e-01f) * u + 2.390853734375367e-01f) * u -
                 3.78960746404066e-01f) * u + 2.1224172375131165e-02f) * u +
               5.61681487835096e-01f) * u + 1.2575778950791878e-04f;
    float big = 1.0f - tjm_expf(-b * b) * g;
    big = x < 0.0f ? -big : big;
    float r = a < 1.0f ? small : big;
    return x != x ? x : r;
}

static inline double tjm_exp_d(double x) { return exp(x); }
static inline double tjm_log_d(double x) { return log(x); }
static inline double tjm_tanh_d(double x) { return tanh(x); }
static inline double tjm_erf_d(double x) { return erf(x); }
#define tjm_exp(x) _Generic((x), float: tjm_expf, default: tjm_exp_d)(x)
#define tjm_log(x) _Generic((x), float: tjm_logf, default: tjm_log_d)(x)
#define tjm_tanh(x) _Generic((x), float: tjm_tanhf, default: tjm_tanh_d)(x)
#define tjm_erf(x) _Generic((x), float: tjm_erff, default: tjm_erf_d)(x)
static inline double tjm_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline double tjm_silu_d(double x) { return x / (1.0 + exp(-x)); }
#define tjm_sigmoid(x) _Generic((x), float: tjm_sigmoidf, default: tjm_sigmoid_d)(x)
#define tjm_silu(x) _Generic((x), float: tjm_siluf, default: tjm_silu_d)(x)

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
/* f32 pow stays glibc's powf: table-driven, it is twice as fast as tjm_powf
 * on AVX2 (which LLVM's "llvm" mode uses; docs/performance.md). */
static inline float tjm_pow_f(float a, float b) { return pow(a, b); }
TJM_ALWAYS_INLINE double tjm_pow_d(double a, double b) { return tjm_powd(a, b); }
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

static inline float tjm_gelu_erf_f(float x) { return 0.5f * x * (1.0f + tjm_erff(x * 0.70710678118654752f)); }
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
