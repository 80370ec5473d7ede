/* pw_trig.h — the vectorisable sin, cos, log1p, expm1 and pow (f32 and f64)
 * of pw_math.h (which includes this file after its bit helpers).
 *
 * Everything is computed in double, branch-free, with tjm_fma_exact where
 * an exact product error or remainder is needed (one fma instruction on the
 * AVX2 and AVX-512 builds of the kernels, Dekker's product on the baseline
 * build: the same bits on every path). The f32 functions round the double
 * result, so they are within 0.5 ulp plus a sliver. No conversion between
 * double and 64-bit integers appears (AVX2 has none): exponents go in and
 * out of doubles through their bits. Polynomials are Taylor series cut
 * where the next term is below 2^-60 of the result on the reduced range.
 * backends/llvm/trig.c emits each operation for operation, so LLVM kernels
 * give the same bits; tests/test_math.c sweeps them against long double libm
 * on every instruction set (docs/codegen.md has the table).
 *
 * sin and cos reduce |x| up to TJM_TRIG_FAST_MAX (n = x 2/pi below 2^30,
 * pi/2 in three parts, the remainder kept as a double-double); beyond it the
 * full functions call libm. The CPU loops take the reduction for every lane
 * and redo a run with the full functions only when one of its lanes was
 * beyond (backends/cpu/pointwise.c), so the loop still vectorises. */
#ifndef TJIT_PW_TRIG_H
#define TJIT_PW_TRIG_H

/* Inlined always: out of line (GCC declines to inline pow into the four
 * paths of a binary loop) the contiguous loop would not vectorise. */
#if defined(__GNUC__)
#define TJM_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define TJM_ALWAYS_INLINE static inline
#endif

/* fma(a, b, c) where its exact result is representable: the error of a
 * product (c = -RN(a b)) or a remainder close to c (c ~ -a b). Where the
 * build has no FMA instruction, Dekker's exact product gives the same bits
 * (glibc's software fma would be ten times slower). */
#if defined(__FMA__) || defined(__aarch64__) || defined(__ARM_FEATURE_FMA)
static inline double tjm_fma_exact(double a, double b, double c) { return fma(a, b, c); }
#else
static inline double tjm_fma_exact(double a, double b, double c) {
    double ca = 134217729.0 * a, cb = 134217729.0 * b; /* Veltkamp: 2^27 + 1 */
    double ah = ca - (ca - a), al = a - ah, bh = cb - (cb - b), bl = b - bh;
    double p = a * b;
    double e = ((ah * bh - p) + ah * bl + al * bh) + al * bl; /* a b = p + e exactly */
    return (c + p) + e;
}
#endif

#define TJM_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52: adding and subtracting it rounds */
#define TJM_TRIG_FAST_MAX 1.0e9

/* 2^n for an integral n in [-1022, 1023]: its low bits sit in the mantissa of
 * n + 1.5 * 2^52; shifted up, they become the exponent field. */
static inline double tjm_pow2_dd(double n) {
    uint64_t u = tjm_f64_bits(n + TJM_ROUND_MAGIC);
    return tjm_f64_from_bits((u + 1023u) << 52);
}
/* The exponent field of x as a double (0 to 2047). */
static inline double tjm_exponent_field(double x) {
    uint64_t e = (tjm_f64_bits(x) >> 52) & 0x7ffu;
    return tjm_f64_from_bits(e | 0x4330000000000000ull) - 4503599627370496.0;
}

/* ---- sin, cos ---------------------------------------------------------------- */

/* x = n pi/2 + (r + *lo) for |x| <= TJM_TRIG_FAST_MAX; *q gets n mod 4.
 * The first fma is exact (the remainder is representable), the second
 * product's error is recovered by an fma and the subtraction's by TwoSum. */
static inline double tjm_trig_reduce(double x, double *lo, uint64_t *q) {
    double fn = (x * 0.6366197723675814 + TJM_ROUND_MAGIC) - TJM_ROUND_MAGIC;
    *q = tjm_f64_bits(fn + TJM_ROUND_MAGIC) & 3u;
    double r1 = tjm_fma_exact(-fn, 1.5707963267948966, x);
    double w = fn * 6.123233995736766e-17, we = tjm_fma_exact(fn, 6.123233995736766e-17, -w);
    double r2 = r1 - w, bb = r2 - r1;
    double e2 = (r1 - (r2 - bb)) + (-w - bb);
    double l = (e2 - we) - fn * -1.4973849048591698e-33;
    double r = r2 + l;
    *lo = l - (r - r2);
    return r;
}
/* sin(r + lo) and cos(r + lo) for |r| <= pi/4 (and a sliver) */
static inline double tjm_sin_poly(double r, double lo) {
    double z = r * r;
    double s = ((((((1.0 / 355687428096000.0 * z - 1.0 / 1307674368000.0) * z + 1.0 / 6227020800.0) * z -
                   1.0 / 39916800.0) * z + 1.0 / 362880.0) * z - 1.0 / 5040.0) * z + 1.0 / 120.0) * z -
               1.0 / 6.0;
    return r + (r * z * s + lo);
}
static inline double tjm_cos_poly(double r, double lo) {
    double z = r * r, hz = 0.5 * z;
    double c = ((((((-1.0 / 6402373705728000.0 * z + 1.0 / 20922789888000.0) * z - 1.0 / 87178291200.0) * z +
                   1.0 / 479001600.0) * z - 1.0 / 3628800.0) * z + 1.0 / 40320.0) * z - 1.0 / 720.0) * z +
               1.0 / 24.0;
    double w = 1.0 - hz;
    return w + (((1.0 - w) - hz) + (z * z * c - r * lo));
}
/* sin (odd = 0) or cos (odd = 1) of x in quadrant q + odd */
TJM_ALWAYS_INLINE double tjm_sincos_fast(double x, uint64_t odd) {
    double lo;
    uint64_t q;
    double r = tjm_trig_reduce(x, &lo, &q);
    q += odd;
    double s = tjm_sin_poly(r, lo), c = tjm_cos_poly(r, lo);
    double v = (q & 1u) ? c : s;
    uint64_t flip = (q & 2u) << 62; /* quadrants 2 and 3: the sign bit */
    v = tjm_f64_from_bits(tjm_f64_bits(v) ^ flip);
    double ax = fabs(x);
    v = ax == __builtin_inf() ? __builtin_nan("") : v;
    v = (odd == 0) & (x == 0.0) ? x : v; /* sin(-0) = -0 */
    return x != x ? x : v;
}
static inline bool tjm_trig_huge(double x) {
    double ax = fabs(x);
    return (ax > TJM_TRIG_FAST_MAX) & (ax != __builtin_inf());
}
static inline double tjm_sind_fast(double x) { return tjm_sincos_fast(x, 0); }
static inline double tjm_cosd_fast(double x) { return tjm_sincos_fast(x, 1); }
static inline float tjm_sinf_fast(float x) { return (float)tjm_sincos_fast((double)x, 0); }
static inline float tjm_cosf_fast(float x) { return (float)tjm_sincos_fast((double)x, 1); }
/* the full functions: libm beyond the reduction's range */
static inline double tjm_sind(double x) { return tjm_trig_huge(x) ? sin(x) : tjm_sind_fast(x); }
static inline double tjm_cosd(double x) { return tjm_trig_huge(x) ? cos(x) : tjm_cosd_fast(x); }
static inline float tjm_sinf(float x) { return tjm_trig_huge(x) ? sinf(x) : tjm_sinf_fast(x); }
static inline float tjm_cosf(float x) { return tjm_trig_huge(x) ? cosf(x) : tjm_cosf_fast(x); }

/* ---- expm1 ------------------------------------------------------------------- */

/* e^r - 1 - r for |r| <= ln2/2, as r^2 H(r) */
static inline double tjm_expm1_tail(double r) {
    double h = (((((((((((1.0 / 87178291200.0 * r + 1.0 / 6227020800.0) * r + 1.0 / 479001600.0) * r +
                          1.0 / 39916800.0) * r + 1.0 / 3628800.0) * r + 1.0 / 362880.0) * r +
                       1.0 / 40320.0) * r + 1.0 / 5040.0) * r + 1.0 / 720.0) * r + 1.0 / 120.0) * r +
                   1.0 / 24.0) * r + 1.0 / 6.0) * r + 0.5;
    return r * r * h;
}
/* x = n ln2 + r; e^x - 1 = (2^n - 1) + 2^n r + 2^n r^2 H(r) while 2^n - 1 is
 * exact (n <= 53), (1 + r + r^2 H) 2^n beyond, in two factors so that it
 * overflows to inf. Below -40 the result is -1 in double. */
TJM_ALWAYS_INLINE double tjm_expm1d(double x) {
    double xc = x != x ? 0.0 : x < -40.0 ? -40.0 : x > 710.0 ? 710.0 : x;
    double fn = (xc * 1.4426950408889634 + TJM_ROUND_MAGIC) - TJM_ROUND_MAGIC;
    double r = tjm_fma_exact(-fn, 0.6931471805599453, xc);
    r = r - fn * 2.3190468138462996e-17;
    double t = tjm_expm1_tail(r);
    bool big = fn > 53.0;
    double s = tjm_pow2_dd(big ? 0.0 : fn);
    double near = ((s - 1.0) + s * r) + s * t;
    double n1 = (fn * 0.5 + TJM_ROUND_MAGIC) - TJM_ROUND_MAGIC;
    double far = ((1.0 + r) + t) * tjm_pow2_dd(n1) * tjm_pow2_dd(fn - n1);
    double v = big ? far : near;
    v = x == 0.0 ? x : v; /* expm1(-0) = -0 */
    return x != x ? x : v;
}
static inline float tjm_expm1f(float x) { return (float)tjm_expm1d((double)x); }

/* ---- log (double-double), log1p ----------------------------------------------- */

/* ln x as hi + *lo (about 2^-100 relative) for finite x > 0; ln 0 = -inf and
 * ln inf = inf with *lo = 0. x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
 * s = f / (2 + f) as a double-double: ln m = 2 s + 2 s^3 / 3 + 2 s^5 / 5 + ...
 * with the s^3 term in double-double too. */
TJM_ALWAYS_INLINE double tjm_log_dd(double x, double *lo) {
    bool tiny = x < 2.2250738585072014e-308;
    double xs = tiny ? x * 18014398509481984.0 : x; /* denormals: times 2^54 */
    uint64_t u = tjm_f64_bits(xs);
    double k = tjm_exponent_field(xs) - (tiny ? 1077.0 : 1023.0);
    double m = tjm_f64_from_bits((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    bool big = m > 1.4142135623730950488;
    m = big ? m * 0.5 : m;
    k = big ? k + 1.0 : k;
    double f = m - 1.0;
    double dh = 2.0 + f, dl = f - (dh - 2.0);
    double sh = f / dh;
    double sl = (tjm_fma_exact(-sh, dh, f) - sh * dl) / dh;
    double s2h = sh * sh, s2l = tjm_fma_exact(sh, sh, -s2h);
    double s3h = s2h * sh, s3l = tjm_fma_exact(s2h, sh, -s3h) + s2l * sh;
    double z = s2h;
    double q = (((((((((0.08 * z + 2.0 / 23.0) * z + 2.0 / 21.0) * z + 2.0 / 19.0) * z + 2.0 / 17.0) * z +
                     2.0 / 15.0) * z + 2.0 / 13.0) * z + 2.0 / 11.0) * z + 2.0 / 9.0) * z + 2.0 / 7.0) * z +
               0.4;
    double qz = q * z;
    double ch = 0.6666666666666666 + qz; /* 2/3 + s^2 Q as ch + cl */
    double cl = (0.6666666666666666 - ch) + qz + 3.700743415417188e-17;
    double th = s3h * ch;
    double tl = tjm_fma_exact(s3h, ch, -th) + (s3h * cl + s3l * ch) + 2.0 * s2h * sl;
    double mh = 2.0 * sh + th; /* ln m */
    double ml = ((2.0 * sh - mh) + th) + (2.0 * sl + tl);
    double kh = k * 0.6931471805599453; /* k ln2 */
    double kl = tjm_fma_exact(k, 0.6931471805599453, -kh) + k * 2.3190468138462996e-17;
    double h = kh + mh, hb = h - kh;
    double e = (kh - (h - hb)) + (mh - hb) + (kl + ml);
    double hi = h + e;
    double l = e - (hi - h);
    bool zero = x == 0.0, keep = (x == __builtin_inf()) | (x != x);
    *lo = zero | keep ? 0.0 : l;
    return zero ? -__builtin_inf() : keep ? x : hi;
}
/* ln(1 + x) = ln u + c / u with u = 1 + x rounded and c its rounding error */
TJM_ALWAYS_INLINE double tjm_log1pd(double x) {
    double u = 1.0 + x;
    double c = fabs(x) < 1.0 ? x - (u - 1.0) : 1.0 - (u - x);
    double lo;
    double hi = tjm_log_dd(u, &lo);
    double v = hi + (lo + c / u);
    v = x == -1.0 ? -__builtin_inf() : v;
    v = x < -1.0 ? __builtin_nan("") : v;
    v = (x == __builtin_inf()) | (x == 0.0) ? x : v; /* log1p(-0) = -0 */
    return x != x ? x : v;
}
static inline float tjm_log1pf(float x) { return (float)tjm_log1pd((double)x); }

/* ---- pow --------------------------------------------------------------------- */

/* e^(yh + yl) for a double-double y (clamped to +-800, where the result is
 * already 0 or inf; NaN gives NaN): n = round(y / ln2), r = y - n ln2 with
 * the first product exact in an fma, e^r = 1 + r + r^2 H(r), 2^n in two
 * factors. */
TJM_ALWAYS_INLINE double tjm_exp_dd(double yh, double yl) {
    bool y_nan = yh != yh;
    yl = fabs(yh) <= 800.0 ? yl : 0.0;
    yh = y_nan ? 0.0 : yh < -800.0 ? -800.0 : yh > 800.0 ? 800.0 : yh;
    double fn = (yh * 1.4426950408889634 + TJM_ROUND_MAGIC) - TJM_ROUND_MAGIC;
    double r = tjm_fma_exact(-fn, 0.6931471805599453, yh);
    r = r + (yl - fn * 2.3190468138462996e-17);
    double e = (1.0 + r) + tjm_expm1_tail(r);
    double n1 = (fn * 0.5 + TJM_ROUND_MAGIC) - TJM_ROUND_MAGIC;
    double v = e * tjm_pow2_dd(n1) * tjm_pow2_dd(fn - n1);
    return y_nan ? __builtin_nan("") : v;
}
/* pow: e^(b ln|a|) with b ln|a| as a double-double, then C99's special
 * cases (F.9.4.4) and glibc's for signalling NaNs. */
static inline bool tjm_is_snand(double x) { return x != x && !(tjm_f64_bits(x) & 0x8000000000000ull); }
TJM_ALWAYS_INLINE double tjm_powd(double a, double b) {
    double ll;
    double lh = tjm_log_dd(fabs(a), &ll);
    double yh = b * lh;
    double v = tjm_exp_dd(yh, tjm_fma_exact(b, lh, -yh) + b * ll);
    double half = b * 0.5;
    bool b_int = floor(b) == b, b_odd = b_int & (floor(half) != half);
    bool a_neg = (tjm_f64_bits(a) >> 63) != 0;
    v = a_neg & b_odd ? -v : v;
    v = (a < 0.0) & (a != -__builtin_inf()) & !b_int ? __builtin_nan("") : v;
    v = (a == -1.0) & (fabs(b) == __builtin_inf()) ? 1.0 : v;
    v = b == 0.0 ? (tjm_is_snand(a) ? a + b : 1.0) : v;
    return a == 1.0 ? (tjm_is_snand(b) ? a + b : 1.0) : v;
}
static inline bool tjm_is_snanf(float x) { return x != x && !(tjm_f32_bits(x) & 0x400000u); }
TJM_ALWAYS_INLINE float tjm_powf(float a, float b) {
    double ll, bd = (double)b;
    double lh = tjm_log_dd((double)fabs(a), &ll);
    double yh = bd * lh;
    float v = (float)tjm_exp_dd(yh, tjm_fma_exact(bd, lh, -yh) + bd * ll); /* exact powers of two */
    float half = b * 0.5f;
    bool b_int = floor(b) == b, b_odd = b_int & (floor(half) != half);
    bool a_neg = (tjm_f32_bits(a) >> 31) != 0;
    v = a_neg & b_odd ? -v : v;
    v = (a < 0.0f) & (a != -__builtin_inff()) & !b_int ? __builtin_nanf("") : v;
    v = (a == -1.0f) & (fabs(b) == __builtin_inff()) ? 1.0f : v;
    v = b == 0.0f ? (tjm_is_snanf(a) ? a + b : 1.0f) : v;
    return a == 1.0f ? (tjm_is_snanf(b) ? a + b : 1.0f) : v;
}

#define tjm_sin(x) _Generic((x), float: tjm_sinf, default: tjm_sind)(x)
#define tjm_cos(x) _Generic((x), float: tjm_cosf, default: tjm_cosd)(x)
#define tjm_expm1(x) _Generic((x), float: tjm_expm1f, default: tjm_expm1d)(x)
#define tjm_log1p(x) _Generic((x), float: tjm_log1pf, default: tjm_log1pd)(x)

#endif
