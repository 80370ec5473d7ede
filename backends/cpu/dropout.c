/* dropout.c — CPU kernels of native_dropout, dropout and
 * native_dropout_backward (rows of core/ops_nn.def).
 *
 * Element i (in row-major order, whatever input's strides) is kept when the
 * 53-bit uniform drawn from Philox counter offset + i is >= p; the
 * generator's offset advances by numel per training call. So one seed and
 * offset give one mask, independent of the thread count.
 *
 * A NULL generator draws from the process-wide default generator (core/
 * random.c: seed 0, shared by all threads and devices under a lock). Programs
 * that need their own stream (or reproducibility across unrelated calls) pass
 * a generator of their own. */
#include <string.h>

#include "core/random.h"
#include "nn.h"

/* out (and mask when not NULL) from input; attrs: p, train, generator */
static tj_status dropout(const tjc_call *c, tj_tensor *out, tj_tensor *mask) {
    double p = c->attr[0].f;
    bool train = c->attr[1].b;
    tj_tensor *x = tjnn_contig(c->in[0]);
    if (!x) return tj_last_status();
    int64_t n = tjc_numel(x->sizes, x->ndim);
    bool *m = mask ? (bool *)tjc_data_ptr(mask) : NULL;
    if (!train) { /* eval: the identity, everything kept */
        tj_status st = tjcpu_copy(out, x);
        if (m) memset(m, 1, (size_t)n);
        tj_release(x);
        return st;
    }
    uint64_t seed, base;
    tj_status st =
        tjc_generator_reserve_for(c->op->name, c->attr[2].gen, (uint64_t)n, &seed, &base);
    if (st) {
        tj_release(x);
        return st;
    }
    double scale = p < 1 ? 1 / (1 - p) : 0;
    const void *xp = tjc_data_ptr(x);
    void *op = tjc_data_ptr(out);
    bool f32 = x->dtype == TJ_F32;
    int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        tjc_philox(seed, base + (uint64_t)i, w);
        bool keep = tjc_uniform53(w[0], w[1]) >= p;
        if (f32) ((float *)op)[i] = keep ? (float)(((const float *)xp)[i] * scale) : 0.0f;
        else ((double *)op)[i] = keep ? ((const double *)xp)[i] * scale : 0.0;
        if (m) m[i] = keep;
    }
    tj_release(x);
    return TJ_OK;
}

tj_status tjcpu_native_dropout(const tjc_call *c) { return dropout(c, c->out[0], c->out[1]); }
tj_status tjcpu_dropout(const tjc_call *c) { return dropout(c, c->out[0], NULL); }

/* in: grad_output, mask; attrs: scale. gi = g * mask * scale */
tj_status tjcpu_native_dropout_backward(const tjc_call *c) {
    tj_tensor *g = tjnn_contig(c->in[0]), *mask = tjnn_contig(c->in[1]), *out = c->out[0];
    tj_status st = g && mask ? TJ_OK : tj_last_status();
    if (!st) {
        double scale = c->attr[0].f;
        int64_t n = tjc_numel(g->sizes, g->ndim);
        const bool *m = (const bool *)tjc_data_ptr(mask);
        const void *gp = tjc_data_ptr(g);
        void *op = tjc_data_ptr(out);
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++)
            tjnn_st(op, out->dtype, i, tjnn_ld(gp, g->dtype, i) * (m[i] ? scale : 0.0));
    }
    tj_release(g), tj_release(mask);
    return st;
}
