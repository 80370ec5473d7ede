/* fuse_rows.c — the row kernel of a fusion group holding a row op
 * (softmax, log_softmax or layer_norm over the last dim; fuser/fuser.h):
 * its shape for a spec, and its entry points (fusion.h).
 *
 * One row per group of lanes: a warp for rows of at most 128 elements
 * (several rows a block, no block barrier), else one block of 64 to 1024
 * threads, sized so that each lane holds at most 8 of the row's elements.
 * Element j of the row is lane j % lanes's. The kernel makes two passes:
 *   1. each lane evaluates the prologue (fuse_codegen.c's <name>_rowx) at its
 *      elements and folds the row op's input into a statistic: softmax's
 *      (max, sum of exp(x - max)), rescaled when the max grows, as
 *      kernels/softmax.cu; layer_norm's (count, mean, M2) by Welford in double
 *      as kernels/norm.cu, so a constant row has exactly zero variance. The
 *      lanes' statistics meet by xor shuffles within a warp, then (a block
 *      per row) through shared memory, combined in the same order by every
 *      thread, so each lane holds the row's statistic and results do not
 *      depend on timing.
 *   2. each lane computes the row op's result at its elements and runs the
 *      whole group there (<name>_rowy: epilogue and every store, prologue
 *      values that are outputs included).
 * The row op's input is kept in registers between the passes when the row
 * fits (cache elements a lane); longer rows evaluate the prologue again.
 * With the row in registers the statistic takes two reductions instead of
 * one fold, each of plain adds or maxima: softmax's max, then the sum of
 * e = exp(x - max), which stays in the registers for the result (one exp an
 * element; the fold's rescaling costs up to two); layer_norm's sum, then the
 * squared deviations from the mean, in double (no division an element, and a
 * constant row's deviations are exactly zero).
 * The row length is a constant of the kernel, as every size is; the kernel
 * declares its block size (__launch_bounds__), so that the compiler keeps
 * its registers within what a block of that size may have. */
#include <math.h>
#include <stdio.h>

#include "backends/cuda/fusion.h"
#include "backends/cuda/pointwise.h"
#include "backends/cuda/reduce_plan.h"
#include "core/core.h"

enum { WARP_ROWS = 128, MAX_CACHE = 8, MIN_LANES = 64, MAX_LANES = 1024 };

tj_status tjcu_fuse_row_plan(const tj_node *n, int ndim, const int64_t *sizes, tjcu_fuse_row *row) {
    tjf_row_kind kind = tjf_row_op(n);
    if (kind == TJF_ROW_NONE || ndim < 1 || sizes[ndim - 1] < 1)
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s is not a row op over the group's last dim",
                         tj_node_name((tj_node *)n));
    const tj_type *tx = tj_value_type(tj_node_input((tj_node *)n, 0));
    *row = (tjcu_fuse_row){.kind = kind, .dtype = (tj_dtype)tx->dtype, .len = sizes[ndim - 1]};
    row->rows = tjc_numel(sizes, ndim) / row->len;
    if (kind == TJF_ROW_LAYER_NORM)
        row->eps = tj_node_attr((tj_node *)n, tj_node_attr_index((tj_node *)n, "eps"))->f;
    if (row->len <= WARP_ROWS) {
        row->lanes = 32;
        row->per_block = row->len <= 32 ? 8 : 4;
    } else {
        unsigned lanes = tjcu_pow2_at_least((row->len + MAX_CACHE - 1) / MAX_CACHE);
        row->lanes = lanes < MIN_LANES ? MIN_LANES : lanes > MAX_LANES ? MAX_LANES : lanes;
        row->per_block = 1;
    }
    int64_t per_lane = (row->len + row->lanes - 1) / row->lanes;
    row->cache = per_lane <= MAX_CACHE ? (int)per_lane : 0;
    return TJ_OK;
}

/* Helpers shared by every row kernel of a module (each kernel's text carries
 * them; the guard keeps one copy). */
static void put_helpers(tjc_text *t) {
    tjc_put(t, "#ifndef TJF_ROW_HELPERS\n#define TJF_ROW_HELPERS\n"
               "/* the precise exp and log, as the per-op softmax kernels use */\n"
               "__device__ __forceinline__ float tjf_row_exp(float x) { return expf(x); }\n"
               "__device__ __forceinline__ double tjf_row_exp(double x) { return exp(x); }\n"
               "__device__ __forceinline__ float tjf_row_log(float x) { return logf(x); }\n"
               "__device__ __forceinline__ double tjf_row_log(double x) { return log(x); }\n"
               "/* (m, s) stands for m + log(s) */\n"
               "template <class T> __device__ __forceinline__ void tjf_row_join(T &m, T &s, T m2, T s2) {\n"
               "    if (m2 > m) {\n        s = s * tjf_row_exp(m - m2) + s2;\n        m = m2;\n"
               "    } else if (m2 == m) {\n        s += s2;\n    } else {\n"
               "        s += s2 * tjf_row_exp(m2 - m);\n    }\n}\n"
               "/* Chan's combination of two (count, mean, M2) */\n"
               "__device__ __forceinline__ void tjf_row_chan(double &n, double &mean, double &m2, double nb,\n"
               "                                             double meanb, double m2b) {\n"
               "    if (nb == 0.0) return;\n"
               "    if (n == 0.0) {\n        n = nb;\n        mean = meanb;\n        m2 = m2b;\n        return;\n    }\n"
               "    double total = n + nb, d = meanb - mean;\n"
               "    mean += d * (nb / total);\n    m2 += m2b + d * d * (n * nb / total);\n    n = total;\n}\n"
               "#endif\n");
}

/* The fold of one element x (w, b: the affine part there, unused here). */
static void put_fold(tjc_text *t, const tjcu_fuse_row *row, const char *indent) {
    if (row->kind == TJF_ROW_LAYER_NORM)
        tjc_put(t, "%s{\n%s    const double v = (double)x, d = v - mean;\n%s    cnt += 1.0;\n"
                   "%s    mean += d / cnt;\n%s    m2 += d * (v - mean);\n%s}\n",
                indent, indent, indent, indent, indent, indent);
    else
        tjc_put(t, "%stjf_row_join<T>(m, s, x, (T)1);\n", indent);
}

/* The row op's result y at an element from its input x (and w, b). */
static void put_result(tjc_text *t, const tjcu_fuse_row *row, const char *indent) {
    switch (row->kind) {
    case TJF_ROW_SOFTMAX: tjc_put(t, "%sconst T y = tjf_row_exp(x - m) * inv;\n", indent); break;
    case TJF_ROW_LOG_SOFTMAX:
        /* (x - max) is exact near the max; subtracting max + log(sum) at once
         * would round at the magnitude of x */
        tjc_put(t, "%sconst T y = (x - m) - ls;\n", indent);
        break;
    default:
        tjc_put(t, "%sconst T y = (T)(((double)x - mean) * rstd * (double)w + (double)b);\n", indent);
        break;
    }
}

/* Every lane's statistic becomes the row's: xor shuffles within the warp,
 * then, with a block a row, the warps' through shared memory. */
static void put_combine(tjc_text *t, const tjcu_fuse_row *row) {
    bool ln = row->kind == TJF_ROW_LAYER_NORM;
    tjc_put(t, "        for (int d = 16; d > 0; d >>= 1) {\n");
    if (ln)
        tjc_put(t, "            const double nb = __shfl_xor_sync(0xffffffffu, cnt, d);\n"
                   "            const double mb = __shfl_xor_sync(0xffffffffu, mean, d);\n"
                   "            const double qb = __shfl_xor_sync(0xffffffffu, m2, d);\n"
                   "            tjf_row_chan(cnt, mean, m2, nb, mb, qb);\n");
    else
        tjc_put(t, "            const T mb = __shfl_xor_sync(0xffffffffu, m, d);\n"
                   "            const T sb = __shfl_xor_sync(0xffffffffu, s, d);\n"
                   "            tjf_row_join<T>(m, s, mb, sb);\n");
    tjc_put(t, "        }\n");
    if (row->per_block != 1 || row->lanes <= 32) return;
    int warps = (int)(row->lanes / 32);
    tjc_put(t, "        if ((lane & 31) == 0) {\n");
    if (ln) tjc_put(t, "            sm[0][lane >> 5] = cnt;\n            sm[1][lane >> 5] = mean;\n"
                       "            sm[2][lane >> 5] = m2;\n");
    else tjc_put(t, "            sm[0][lane >> 5] = (double)m;\n            sm[1][lane >> 5] = (double)s;\n");
    tjc_put(t, "        }\n        __syncthreads();\n");
    if (ln) tjc_put(t, "        cnt = sm[0][0], mean = sm[1][0], m2 = sm[2][0];\n");
    else tjc_put(t, "        m = (T)sm[0][0], s = (T)sm[1][0];\n");
    tjc_put(t, "        for (int w = 1; w < %d; w++)\n", warps);
    if (ln) tjc_put(t, "            tjf_row_chan(cnt, mean, m2, sm[0][w], sm[1][w], sm[2][w]);\n");
    else tjc_put(t, "            tjf_row_join<T>(m, s, (T)sm[0][w], (T)sm[1][w]);\n");
    tjc_put(t, "        __syncthreads(); /* before the next row writes sm */\n");
}

/* v (of type ty) becomes the row's op (max or +) of every lane's: xor
 * shuffles within the warp, then, with a block a row, the warps' values
 * through shared memory, combined in the same order by every thread. */
static void put_reduce(tjc_text *t, const tjcu_fuse_row *row, const char *v, const char *ty, bool max) {
    const char *f = max ? "%s = %s > %s ? %s : %s;\n" : "%s = %s + %s;\n";
    tjc_put(t, "        for (int d = 16; d > 0; d >>= 1) {\n"
               "            const %s o_ = __shfl_xor_sync(0xffffffffu, %s, d);\n            ", ty, v);
    if (max) tjc_put(t, f, v, "o_", v, "o_", v);
    else tjc_put(t, f, v, v, "o_");
    tjc_put(t, "        }\n");
    if (row->per_block != 1 || row->lanes <= 32) return;
    tjc_put(t, "        if ((lane & 31) == 0) sm[0][lane >> 5] = (double)%s;\n        __syncthreads();\n"
               "        %s = (%s)sm[0][0];\n        for (int w = 1; w < %d; w++) {\n"
               "            const %s o_ = (%s)sm[0][w];\n            ",
            v, v, ty, (int)(row->lanes / 32), ty, ty);
    if (max) tjc_put(t, f, v, "o_", v, "o_", v);
    else tjc_put(t, f, v, v, "o_");
    tjc_put(t, "        }\n        __syncthreads(); /* before the next reduction writes sm */\n");
}

/* Pass 1 with the row in registers (xs; see the file comment). */
static void put_cached_stats(tjc_text *t, const tjcu_fuse_row *row) {
    tjc_put(t, "#pragma unroll\n        for (int k = 0; k < %d; k++)\n", row->cache);
    if (row->kind == TJF_ROW_LAYER_NORM) {
        tjc_put(t, "            if ((I)lane + (I)k * (I)%u < N) sum += (double)xs[k];\n", row->lanes);
        put_reduce(t, row, "sum", "double", false);
        tjc_put(t, "        const double mean = sum / (double)N;\n        double m2 = 0.0;\n"
                   "#pragma unroll\n        for (int k = 0; k < %d; k++)\n"
                   "            if ((I)lane + (I)k * (I)%u < N) {\n"
                   "                const double d = (double)xs[k] - mean;\n                m2 += d * d;\n"
                   "            }\n", row->cache, row->lanes);
        put_reduce(t, row, "m2", "double", false);
        return;
    }
    /* a NaN is no maximum; it makes the sum NaN below, and so the row */
    tjc_put(t, "            if ((I)lane + (I)k * (I)%u < N && xs[k] > m) m = xs[k];\n", row->lanes);
    put_reduce(t, row, "m", "T", true);
    /* softmax keeps e for its result; log_softmax needs x again */
    tjc_put(t, "#pragma unroll\n        for (int k = 0; k < %d; k++)\n"
               "            if ((I)lane + (I)k * (I)%u < N) {\n"
               "                const T e = tjf_row_exp(xs[k] - m);\n%s                s += e;\n"
               "            }\n", row->cache, row->lanes,
            row->kind == TJF_ROW_SOFTMAX ? "                xs[k] = e;\n" : "");
    put_reduce(t, row, "s", "T", false);
}

/* A loop over the lane's elements of the row: j the column, i the element;
 * body at indent 12. */
static void put_loop_head(tjc_text *t, const tjcu_fuse_row *row) {
    if (row->cache) {
        tjc_put(t, "#pragma unroll\n        for (int k = 0; k < %d; k++) {\n"
                   "            const I j = (I)lane + (I)k * (I)%u;\n"
                   "            if (j >= N) break;\n            const I i = base + j;\n",
                row->cache, row->lanes);
    } else {
        tjc_put(t, "        for (I j = (I)lane; j < N; j += (I)%u) {\n            const I i = base + j;\n",
                row->lanes);
    }
}

void tjcu_fuse_put_row_kernel(tjc_text *t, const char *name, const tjcu_fuse_row *row) {
    bool ln = row->kind == TJF_ROW_LAYER_NORM;
    put_helpers(t);
    tjc_put(t, "template <typename I, typename D>\n__device__ __forceinline__ void %s_row(const %s_args &A) {\n",
            name, name);
    tjc_put(t, "    typedef %s T;\n    const I N = (I)%lldLL;\n    const long long rows = %lldLL;\n",
            tjcu_c_compute_type(row->dtype), (long long)row->len, (long long)row->rows);
    tjc_put(t, "    const int lane = (int)threadIdx.x;\n");
    if (row->per_block == 1 && row->lanes > 32) tjc_put(t, "    __shared__ double sm[3][32];\n");
    tjc_put(t, "    for (long long rw_ = (long long)blockIdx.x * blockDim.y + threadIdx.y; rw_ < rows;\n"
               "         rw_ += (long long)gridDim.x * blockDim.y) {\n");
    tjc_put(t, "        const I base = (I)rw_ * N;\n");
    if (row->cache) tjc_put(t, "        T xs[%d];\n", row->cache);
    if (ln && row->cache) tjc_put(t, "        double sum = 0.0;\n");
    else if (ln) tjc_put(t, "        double cnt = 0.0, mean = 0.0, m2 = 0.0;\n");
    else tjc_put(t, "        T m = -(T)INFINITY, s = (T)0;\n");
    /* pass 1 */
    put_loop_head(t, row);
    tjc_put(t, "            T x, w, b;\n            %s_rowx<I, D>(A, i, x, w, b);\n"
               "            (void)w;\n            (void)b;\n", name);
    if (row->cache) tjc_put(t, "            xs[k] = x;\n");
    else put_fold(t, row, "            ");
    tjc_put(t, "        }\n");
    if (row->cache) put_cached_stats(t, row);
    else put_combine(t, row);
    if (ln) {
        /* an infinite variance is NaN (the CPU's rule, backends/cpu/nn.h) */
        tjc_put(t, "        const double var = m2 / (double)N;\n");
        tjc_put(t, "        const double rstd = var == (double)INFINITY ? (double)NAN : 1.0 / sqrt(var + (double)");
        tjc_put(t, "%a);\n", row->eps);
    } else {
        /* an infinite max (a row of -inf, or a +inf) is NaN, as exp(x - max) makes it on the CPU */
        tjc_put(t, "        if (m == (T)INFINITY || m == -(T)INFINITY) s = (T)NAN;\n");
        if (row->kind == TJF_ROW_SOFTMAX) tjc_put(t, "        const T inv = (T)1 / s;\n");
        else tjc_put(t, "        const T ls = tjf_row_log(s);\n");
    }
    /* pass 2 */
    put_loop_head(t, row);
    if (row->cache && row->kind == TJF_ROW_SOFTMAX) {
        tjc_put(t, "            const T y = xs[k] * inv; /* e, kept from pass 1 */\n");
    } else if (row->cache && !ln) {
        tjc_put(t, "            const T x = xs[k];\n");
    } else {
        /* with the input cached, the prologue's x is dead code here: w and b are loads */
        tjc_put(t, "            T x, w, b;\n            %s_rowx<I, D>(A, i, x, w, b);\n"
                   "            (void)w;\n            (void)b;\n", name);
        if (row->cache) tjc_put(t, "            x = xs[k];\n");
    }
    if (!(row->cache && row->kind == TJF_ROW_SOFTMAX)) put_result(t, row, "            ");
    tjc_put(t, "            %s_rowy<I, D>(A, i, y);\n        }\n    }\n}\n", name);
    static const char *const index[2][2] = {{"unsigned", "int"}, {"unsigned long long", "long long"}};
    for (int wide = 0; wide < 2; wide++)
        tjc_put(t, "extern \"C\" __global__ void __launch_bounds__(%u) %s_%s(%s_args A) { %s_row<%s, %s>(A); }\n"
                   "TJCU_EXPORT(%s_%s)\n",
                row->lanes * (unsigned)row->per_block, name, wide ? "i64" : "i32", name, name,
                index[wide][0], index[wide][1], name, wide ? "i64" : "i32");
}
