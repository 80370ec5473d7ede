/* loss_composite.c — cross_entropy_loss composed of other ops, as PyTorch
 * composes it, for every device's kernel (backends/cpu/loss.c,
 * backends/cuda/op_loss.c): log_softmax over the class dim, nll_loss, and
 * with label_smoothing e over C classes
 *   (1 - e) nll + (e / C) smooth,
 * smooth = sum over the positions not ignored of -sum_c w_c logp[n, c, *],
 * reduced as nll is: per position (none), summed, or divided by the summed
 * weights of the targets not ignored (mean, the denominator nll_loss uses;
 * their count without weights). Each op runs on the inputs' device; autodiff's
 * rule (passes/grad_nn.c) differentiates the same composition. */
#include "nn_rules.h"

#include "tjit/ops_api.h"

enum { MAX_TEMPS = 24 };

typedef struct temps {
    tj_tensor *t[MAX_TEMPS];
    int n;
    bool failed;
} temps;

/* Keeps t for release at the end; NULL (an op failed) marks the whole failed. */
static tj_tensor *keep(temps *k, tj_tensor *t) {
    if (!t || k->failed) {
        k->failed = true;
        tj_release(t);
        return NULL;
    }
    k->t[k->n++] = t;
    return t;
}

static void release_all(temps *k) {
    for (int i = 0; i < k->n; i++) tj_release(k->t[i]);
}

/* The smoothing term, reduced: its pieces go to k. */
static tj_tensor *smoothing_term(temps *k, tj_tensor *logp, tj_tensor *target, tj_tensor *w,
                                 int red, int64_t ignore, int64_t cdim) {
    tj_tensor *wl = logp;
    if (w && w->dtype != logp->dtype) /* the loss keeps self's dtype, as nll_loss does */
        w = keep(k, tj_to_dtype(w, logp->dtype));
    if (w && !k->failed) { /* w as [1, C, 1, ...] against logp */
        int64_t shape[TJ_MAX_DIMS];
        for (int d = 0; d < logp->ndim; d++) shape[d] = d == cdim ? w->sizes[0] : 1;
        wl = keep(k, tj_mul(logp, keep(k, tj_reshape(w, shape, logp->ndim))));
    }
    tj_tensor *per = k->failed ? NULL : keep(k, tj_neg(keep(k, tj_sum(wl, &cdim, 1, false))));
    tj_tensor *kept = k->failed ? NULL : keep(k, tj_ne_scalar(target, tj_scalar_int(ignore)));
    if (k->failed) return NULL;
    /* an ignored position is 0 even where its log-probabilities are not finite */
    tj_tensor *zeros = keep(k, tj_zeros_like(per));
    per = k->failed ? NULL : keep(k, tj_where(kept, per, zeros));
    if (k->failed || red == TJC_RED_NONE) return per;
    tj_tensor *sum = keep(k, tj_sum(per, NULL, 0, false));
    if (k->failed || red == TJC_RED_SUM) return sum;
    tj_tensor *total;
    if (w) { /* the weights of the targets not ignored (an ignored one reads class 0, times 0) */
        int64_t flat = -1;
        tj_tensor *idx = keep(k, tj_reshape(keep(k, tj_mul(target, kept)), &flat, 1));
        tj_tensor *wt = k->failed ? NULL : keep(k, tj_index_select(w, 0, idx));
        tj_tensor *m = k->failed ? NULL : keep(k, tj_mul(wt, keep(k, tj_reshape(kept, &flat, 1))));
        total = k->failed ? NULL : keep(k, tj_sum(m, NULL, 0, false));
    } else {
        total = keep(k, tj_sum(kept, NULL, 0, false));
    }
    return k->failed ? NULL : keep(k, tj_div(sum, total));
}

tj_tensor *tjc_cross_entropy(const tjc_call *c) {
    tj_tensor *x = c->in[0], *target = c->in[1], *w = c->in[2];
    int red = tjc_nn_reduction(c, 0);
    int64_t ignore = c->attr[1].i, cdim = x->ndim == 1 ? 0 : 1;
    double e = c->attr[2].f;
    temps k = {.n = 0};
    tj_tensor *logp = keep(&k, tj_log_softmax(x, cdim));
    tj_tensor *nll = logp ? tj_nll_loss(logp, target, w, c->attr[0].s, ignore) : NULL;
    if (!nll || !(e > 0)) { /* as PyTorch: a negative label_smoothing smooths nothing */
        release_all(&k);
        return nll;
    }
    keep(&k, nll);
    tj_tensor *smooth = smoothing_term(&k, logp, target, w, red, ignore, cdim);
    tj_tensor *scaled = smooth ? keep(&k, tj_mul_scalar(nll, tj_scalar_float(1 - e))) : NULL;
    double per_class = e / (double)x->sizes[cdim];
    tj_tensor *out = scaled ? tj_add(scaled, smooth, tj_scalar_float(per_class)) : NULL;
    release_all(&k);
    return out;
}
