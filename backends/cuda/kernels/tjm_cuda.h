/* tjm_cuda.h — the device side of the pointwise expression vocabulary
 * (core/pw_math.h on the host): the tjm_* helpers and the libm names that the
 * expressions of core/ops_pointwise.def use, as C++ overloads for float,
 * double, long long and bool, in namespace tjm. Generated pointwise kernels
 * (backends/cuda/pw_codegen.c) evaluate a row's expression inside namespace
 * tjm, so `sqrt(a)` there means tjm::sqrt and never a library overload that
 * the two compilers (NVRTC, the host harness) might resolve differently.
 *
 * Semantics are the CPU's, element for element:
 *  - floats: CUDA's library functions, which are within 2 ulp of the
 *    correctly rounded result over their full range (expf, tanhf, erff,
 *    sinf, cosf: 2; logf, log1pf, expm1f: 1; sqrt and division: correctly
 *    rounded unless fast math is asked for, which the backend never does).
 *    powf is documented at 4 ulp, so f32 pow goes through double pow (2 ulp
 *    of double, so within 1 ulp of float). The __expf family of intrinsics is
 *    never used: it is not within that bound.
 *  - integers: i64 is a wrapper whose + - * and negation wrap (two's
 *    complement), as the CPU's loops do with -fwrapv; signed overflow on
 *    plain long long would be undefined behaviour for both compilers.
 *  - conversions (cv_*: to a compute type; sv_*: to a storage type) are
 *    backends/cpu/copy.c's: integers to floats through double, floats to
 *    integers saturating with NaN as 0, anything to bool as x != 0.
 * Bool tensors are stored as unsigned char (1 byte, 0 or 1). */
#ifndef TJM_CUDA_H
#define TJM_CUDA_H

namespace tjm {

#define TJM_FN __device__ __forceinline__

/* ---- a 64-bit integer whose arithmetic wraps ------------------------------- */
struct i64 {
    long long v;
    __device__ __forceinline__ i64() : v(0) {}
    __device__ __forceinline__ i64(long long x) : v(x) {}
};
TJM_FN long long wrap_(unsigned long long u) { return (long long)u; }
TJM_FN i64 operator-(i64 a) { return i64(wrap_(0ull - (unsigned long long)a.v)); }
TJM_FN i64 operator+(i64 a, i64 b) {
    return i64(wrap_((unsigned long long)a.v + (unsigned long long)b.v));
}
TJM_FN i64 operator-(i64 a, i64 b) {
    return i64(wrap_((unsigned long long)a.v - (unsigned long long)b.v));
}
TJM_FN i64 operator*(i64 a, i64 b) {
    return i64(wrap_((unsigned long long)a.v * (unsigned long long)b.v));
}
TJM_FN bool operator==(i64 a, i64 b) { return a.v == b.v; }
TJM_FN bool operator!=(i64 a, i64 b) { return a.v != b.v; }
TJM_FN bool operator<(i64 a, i64 b) { return a.v < b.v; }
TJM_FN bool operator<=(i64 a, i64 b) { return a.v <= b.v; }
TJM_FN bool operator>(i64 a, i64 b) { return a.v > b.v; }
TJM_FN bool operator>=(i64 a, i64 b) { return a.v >= b.v; }

#define TJM_I64_MAX 9223372036854775807LL
#define TJM_I64_MIN (-9223372036854775807LL - 1)

/* ---- conversions -------------------------------------------------------------
 * cv_<dtype>: a stored or computed value into the compute type of dtype
 * (float, double, i64, bool); sv_<dtype>: into the storage type. */
TJM_FN long long sat_i64(double v) { /* out-of-range casts are undefined: saturate */
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return TJM_I64_MAX;
    if (v <= -9.2233720368547758e18) return TJM_I64_MIN;
    return (long long)v;
}
TJM_FN float cv_f32(float x) { return x; }
TJM_FN float cv_f32(double x) { return (float)x; }
TJM_FN float cv_f32(long long x) { return (float)(double)x; }
TJM_FN float cv_f32(i64 x) { return (float)(double)x.v; }
TJM_FN float cv_f32(unsigned char x) { return x != 0 ? 1.0f : 0.0f; }
TJM_FN float cv_f32(bool x) { return x ? 1.0f : 0.0f; }
TJM_FN double cv_f64(float x) { return (double)x; }
TJM_FN double cv_f64(double x) { return x; }
TJM_FN double cv_f64(long long x) { return (double)x; }
TJM_FN double cv_f64(i64 x) { return (double)x.v; }
TJM_FN double cv_f64(unsigned char x) { return x != 0 ? 1.0 : 0.0; }
TJM_FN double cv_f64(bool x) { return x ? 1.0 : 0.0; }
TJM_FN i64 cv_i64(float x) { return i64(sat_i64((double)x)); }
TJM_FN i64 cv_i64(double x) { return i64(sat_i64(x)); }
TJM_FN i64 cv_i64(long long x) { return i64(x); }
TJM_FN i64 cv_i64(i64 x) { return x; }
TJM_FN i64 cv_i64(unsigned char x) { return i64(x != 0 ? 1 : 0); }
TJM_FN i64 cv_i64(bool x) { return i64(x ? 1 : 0); }
TJM_FN bool cv_b8(float x) { return x != 0.0f; }
TJM_FN bool cv_b8(double x) { return x != 0.0; }
TJM_FN bool cv_b8(long long x) { return x != 0; }
TJM_FN bool cv_b8(i64 x) { return x.v != 0; }
TJM_FN bool cv_b8(unsigned char x) { return x != 0; }
TJM_FN bool cv_b8(bool x) { return x; }
template <typename X> TJM_FN float sv_f32(X x) { return cv_f32(x); }
template <typename X> TJM_FN double sv_f64(X x) { return cv_f64(x); }
template <typename X> TJM_FN long long sv_i64(X x) { return cv_i64(x).v; }
template <typename X> TJM_FN unsigned char sv_b8(X x) { return cv_b8(x) ? 1 : 0; }

/* ---- libm names used by expressions ----------------------------------------- */
TJM_FN float sqrt(float x) { return ::sqrtf(x); }
TJM_FN double sqrt(double x) { return ::sqrt(x); }
TJM_FN float log1p(float x) { return ::log1pf(x); }
TJM_FN double log1p(double x) { return ::log1p(x); }
TJM_FN float expm1(float x) { return ::expm1f(x); }
TJM_FN double expm1(double x) { return ::expm1(x); }
TJM_FN float sin(float x) { return ::sinf(x); }
TJM_FN double sin(double x) { return ::sin(x); }
TJM_FN float cos(float x) { return ::cosf(x); }
TJM_FN double cos(double x) { return ::cos(x); }
TJM_FN float erf(float x) { return ::erff(x); }
TJM_FN double erf(double x) { return ::erf(x); }
TJM_FN float exp(float x) { return ::expf(x); }
TJM_FN double exp(double x) { return ::exp(x); }
TJM_FN float log(float x) { return ::logf(x); }
TJM_FN double log(double x) { return ::log(x); }
TJM_FN float tanh(float x) { return ::tanhf(x); }
TJM_FN double tanh(double x) { return ::tanh(x); }
TJM_FN float fabs(float x) { return ::fabsf(x); }
TJM_FN double fabs(double x) { return ::fabs(x); }

TJM_FN float tjm_exp(float x) { return ::expf(x); }
TJM_FN double tjm_exp(double x) { return ::exp(x); }
TJM_FN float tjm_log(float x) { return ::logf(x); }
TJM_FN double tjm_log(double x) { return ::log(x); }
TJM_FN float tjm_tanh(float x) { return ::tanhf(x); }
TJM_FN double tjm_tanh(double x) { return ::tanh(x); }
TJM_FN float tjm_erf(float x) { return ::erff(x); }
TJM_FN double tjm_erf(double x) { return ::erf(x); }
TJM_FN float tjm_sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
TJM_FN double tjm_sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
TJM_FN float tjm_silu(float x) { return x / (1.0f + ::expf(-x)); }
TJM_FN double tjm_silu(double x) { return x / (1.0 + ::exp(-x)); }
TJM_FN float tjm_sin(float x) { return ::sinf(x); }
TJM_FN double tjm_sin(double x) { return ::sin(x); }
TJM_FN float tjm_cos(float x) { return ::cosf(x); }
TJM_FN double tjm_cos(double x) { return ::cos(x); }
TJM_FN float tjm_log1p(float x) { return ::log1pf(x); }
TJM_FN double tjm_log1p(double x) { return ::log1p(x); }
TJM_FN float tjm_expm1(float x) { return ::expm1f(x); }
TJM_FN double tjm_expm1(double x) { return ::expm1(x); }

/* ---- the tjm_* helpers of core/pw_math.h -------------------------------------- */
TJM_FN float tjm_abs(float x) { return ::fabsf(x); }
TJM_FN double tjm_abs(double x) { return ::fabs(x); }
TJM_FN long long tjm_abs(long long x) {
    return x < 0 ? wrap_(0ull - (unsigned long long)x) : x;
}
TJM_FN i64 tjm_abs(i64 x) { return i64(tjm_abs(x.v)); }
TJM_FN bool tjm_abs(bool x) { return x; }

TJM_FN float tjm_floor(float x) { return ::floorf(x); }
TJM_FN double tjm_floor(double x) { return ::floor(x); }
TJM_FN long long tjm_floor(long long x) { return x; }
TJM_FN i64 tjm_floor(i64 x) { return x; }
TJM_FN bool tjm_floor(bool x) { return x; }

TJM_FN float tjm_ceil(float x) { return ::ceilf(x); }
TJM_FN double tjm_ceil(double x) { return ::ceil(x); }
TJM_FN long long tjm_ceil(long long x) { return x; }
TJM_FN i64 tjm_ceil(i64 x) { return x; }
TJM_FN bool tjm_ceil(bool x) { return x; }

/* halves to even, as nearbyint in the default rounding mode */
TJM_FN float tjm_round(float x) { return ::rintf(x); }
TJM_FN double tjm_round(double x) { return ::rint(x); }
TJM_FN long long tjm_round(long long x) { return x; }
TJM_FN i64 tjm_round(i64 x) { return x; }
TJM_FN bool tjm_round(bool x) { return x; }

/* NaN and both zeros give +0 */
TJM_FN float tjm_sign(float x) { return (float)((x > 0) - (x < 0)); }
TJM_FN double tjm_sign(double x) { return (double)((x > 0) - (x < 0)); }
TJM_FN long long tjm_sign(long long x) { return (x > 0) - (x < 0); }
TJM_FN i64 tjm_sign(i64 x) { return i64(tjm_sign(x.v)); }
TJM_FN bool tjm_sign(bool x) { return x; }

/* integer powers by squaring, wrapping; a negative exponent gives 0 unless
 * |base| is 1 */
TJM_FN long long tjm_ipow(long long b, long long e) {
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    unsigned long long r = 1, x = (unsigned long long)b;
    while (e) {
        if (e & 1) r *= x;
        x *= x;
        e >>= 1;
    }
    return wrap_(r);
}
TJM_FN float tjm_pow(float a, float b) { return (float)::pow((double)a, (double)b); }
TJM_FN double tjm_pow(double a, double b) { return ::pow(a, b); }
TJM_FN long long tjm_pow(long long a, long long b) { return tjm_ipow(a, b); }
TJM_FN i64 tjm_pow(i64 a, i64 b) { return i64(tjm_ipow(a.v, b.v)); }
TJM_FN bool tjm_pow(bool a, bool b) { return a || !b; }

/* maximum and minimum propagate NaN */
TJM_FN float tjm_max(float a, float b) { return (a > b || a != a) ? a : b; }
TJM_FN double tjm_max(double a, double b) { return (a > b || a != a) ? a : b; }
TJM_FN long long tjm_max(long long a, long long b) { return a > b ? a : b; }
TJM_FN i64 tjm_max(i64 a, i64 b) { return a.v > b.v ? a : b; }
TJM_FN bool tjm_max(bool a, bool b) { return a || b; }
TJM_FN float tjm_min(float a, float b) { return (a < b || a != a) ? a : b; }
TJM_FN double tjm_min(double a, double b) { return (a < b || a != a) ? a : b; }
TJM_FN long long tjm_min(long long a, long long b) { return a < b ? a : b; }
TJM_FN i64 tjm_min(i64 a, i64 b) { return a.v < b.v ? a : b; }
TJM_FN bool tjm_min(bool a, bool b) { return a && b; }

/* a NaN bound is no bound; lo > hi makes every value hi */
TJM_FN float tjm_clamp(float x, float lo, float hi) {
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
TJM_FN double tjm_clamp(double x, double lo, double hi) {
    double t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
TJM_FN long long tjm_clamp(long long x, long long lo, long long hi) {
    long long t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
TJM_FN i64 tjm_clamp(i64 x, i64 lo, i64 hi) { return i64(tjm_clamp(x.v, lo.v, hi.v)); }
TJM_FN bool tjm_clamp(bool x, bool lo, bool hi) { return (x || lo) && hi; }

/* the two-sided formula is exact at weight 0 and 1 */
TJM_FN float tjm_lerp(float a, float b, float w) {
    return ::fabsf(w) < 0.5f ? a + w * (b - a) : b - (b - a) * (1.0f - w);
}
TJM_FN double tjm_lerp(double a, double b, double w) {
    return ::fabs(w) < 0.5 ? a + w * (b - a) : b - (b - a) * (1.0 - w);
}

TJM_FN float tjm_gelu_erf(float x) { return 0.5f * x * (1.0f + ::erff(x * 0.70710678118654752f)); }
TJM_FN double tjm_gelu_erf(double x) { return 0.5 * x * (1.0 + ::erf(x * 0.70710678118654752)); }
TJM_FN float tjm_gelu_tanh(float x) {
    return 0.5f * x * (1.0f + ::tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
TJM_FN double tjm_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + ::tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}

#undef TJM_FN
} /* namespace tjm */

#endif
