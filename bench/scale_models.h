/* scale_models.h — the large graphs that measure how compile time grows with
 * graph size (bench/compile_scale.c) and check it (tests/test_scale.c), with
 * plain-C references of their values and gradients. Header-only: each bench
 * source is a program of its own.
 *
 *   chain: y = relu(relu(...relu(x))), n relu nodes.
 *   wide:  n nodes over SCALE_WIDE_INPUTS inputs. Node k combines the previous
 *          node with an earlier value chosen by a fixed pseudo-random sequence
 *          (an input or an earlier tanh): even k: prev + pick, or prev * pick
 *          every other time; odd k: tanh(prev). Values stay within [-2, 2]
 *          and every node is live (the next one reads it), while the picks
 *          give values hundreds of uses spread over the whole graph.
 *   rewrites: n nodes that the passes rewrite, SCALE_REWRITE_NODES per step
 *          over a (2, 4) f64 input x: y = contiguous(t(t(y * 1))) (peephole
 *          removes them all), y = y + relu(x) (one relu(x) per step, which
 *          CSE merges into one), a dead neg(y) (DCE), and every fourth y a
 *          piece of one cat of thousands of inputs. After step s,
 *          y = x + (s + 1) relu(x).
 */
#ifndef TJIT_BENCH_SCALE_MODELS_H
#define TJIT_BENCH_SCALE_MODELS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tjit/tjit.h"

enum { SCALE_WIDE_INPUTS = 1000, SCALE_ELEMS = 8 };

typedef struct scale_model {
    int64_t n_nodes;
} scale_model;

static inline tj_status scale_chain_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                       int n_out) {
    (void)n_in, (void)n_out;
    int64_t n = ((const scale_model *)ctx)->n_nodes;
    tj_scope_begin();
    tj_tensor *y = in[0];
    for (int64_t k = 0; k < n && y; k++) y = tj_relu(y);
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

/* The wide graph's pick sequence: a 64-bit LCG's high bits. */
static inline uint64_t scale_next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Slot of the value node k (even) reads beside prev: among the inputs and
 * the n_tanh tanh values made so far. */
static inline int64_t scale_pick(uint64_t *s, int64_t n_tanh) {
    return (int64_t)(scale_next(s) % (uint64_t)(SCALE_WIDE_INPUTS + n_tanh));
}

static inline tj_status scale_wide_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                      int n_out) {
    (void)n_in, (void)n_out;
    int64_t n = ((const scale_model *)ctx)->n_nodes;
    tj_tensor **pool = malloc(sizeof *pool * (size_t)(SCALE_WIDE_INPUTS + n / 2 + 1));
    if (!pool) return TJ_ERR_MEMORY;
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) pool[i] = in[i];
    int64_t n_tanh = 0;
    uint64_t seed = 1;
    tj_scope_begin();
    tj_tensor *y = in[0];
    for (int64_t k = 0; k < n && y; k++) {
        if (k % 2) {
            y = pool[SCALE_WIDE_INPUTS + n_tanh++] = tj_tanh(y);
            continue;
        }
        tj_tensor *p = pool[scale_pick(&seed, n_tanh)];
        y = k % 4 ? tj_mul(y, p) : tj_add(y, p, 1.0);
    }
    out[0] = tj_keep(y);
    tj_scope_end();
    free(pool);
    return out[0] ? TJ_OK : tj_last_status();
}

/* The wide graph's output at each of `elems` elements (in: the inputs' data,
 * SCALE_WIDE_INPUTS rows of elems), and when grad is not NULL the gradient of
 * the sum of the output w.r.t. every input (same layout). Double precision.
 * false when out of memory. */
static inline bool scale_wide_reference(int64_t n, const float *const *in, int elems, double *y_out,
                                        double *grad) {
    int64_t cap = SCALE_WIDE_INPUTS + n / 2 + 1;
    double *pool = malloc(sizeof(double) * (size_t)cap);   /* value of each slot */
    double *node = malloc(sizeof(double) * (size_t)(n + 1)); /* value after each node */
    int64_t *pick = malloc(sizeof(int64_t) * (size_t)(n + 1));
    double *adj = malloc(sizeof(double) * (size_t)cap);
    bool ok = pool && node && pick && adj;
    for (int e = 0; ok && e < elems; e++) {
        for (int i = 0; i < SCALE_WIDE_INPUTS; i++) pool[i] = in[i][e];
        int64_t n_tanh = 0;
        uint64_t seed = 1;
        double y = pool[0];
        for (int64_t k = 0; k < n; k++) {
            if (k % 2) {
                y = pool[SCALE_WIDE_INPUTS + n_tanh++] = tanh(y);
            } else {
                pick[k] = scale_pick(&seed, n_tanh);
                y = k % 4 ? y * pool[pick[k]] : y + pool[pick[k]];
            }
            node[k] = y;
        }
        y_out[e] = y;
        if (!grad) continue;
        /* reverse sweep: dy is the adjoint of the running value, adj of the slots */
        for (int64_t i = 0; i < SCALE_WIDE_INPUTS + n_tanh; i++) adj[i] = 0;
        double dy = 1;
        for (int64_t k = n - 1; k >= 0; k--) {
            double prev = k ? node[k - 1] : pool[0];
            if (k % 2) {
                --n_tanh;
                dy += adj[SCALE_WIDE_INPUTS + n_tanh]; /* this tanh's other readers */
                dy *= 1 - node[k] * node[k];
            } else if (k % 4) {
                adj[pick[k]] += dy * prev;
                dy *= pool[pick[k]];
            } else {
                adj[pick[k]] += dy;
            }
        }
        adj[0] += dy;
        for (int i = 0; i < SCALE_WIDE_INPUTS; i++) grad[(int64_t)i * elems + e] = adj[i];
    }
    free(pool);
    free(node);
    free(pick);
    free(adj);
    return ok;
}

enum { SCALE_REWRITE_NODES = 7, SCALE_REWRITE_EVERY = 4 };

static inline int64_t scale_rewrite_steps(int64_t n) {
    return (n + SCALE_REWRITE_NODES - 1) / SCALE_REWRITE_NODES;
}

static inline int64_t scale_rewrite_pieces(int64_t n) {
    return (scale_rewrite_steps(n) + SCALE_REWRITE_EVERY - 1) / SCALE_REWRITE_EVERY;
}

static inline tj_status scale_rewrites_fn(void *ctx, tj_tensor *const *in, int n_in,
                                          tj_tensor **out, int n_out) {
    (void)n_in, (void)n_out;
    int64_t steps = scale_rewrite_steps(((const scale_model *)ctx)->n_nodes);
    int64_t n_pieces = scale_rewrite_pieces(((const scale_model *)ctx)->n_nodes), m = 0;
    tj_tensor **pieces = malloc(sizeof *pieces * (size_t)n_pieces);
    if (!pieces) return TJ_ERR_MEMORY;
    tj_scope_begin();
    tj_tensor *x = in[0], *y = x;
    for (int64_t s = 0; s < steps && y; s++) {
        y = tj_mul_scalar(y, 1.0);
        y = y ? tj_t(y) : NULL;
        y = y ? tj_t(y) : NULL;
        y = y ? tj_contiguous(y) : NULL;
        tj_tensor *r = tj_relu(x);
        y = y && r ? tj_add(y, r, 1.0) : NULL;
        if (y && !tj_neg(y)) y = NULL; /* read by nobody */
        if (y && s % SCALE_REWRITE_EVERY == 0) pieces[m++] = y;
    }
    out[0] = y ? tj_keep(tj_cat(pieces, (int)m, 0)) : NULL;
    tj_scope_end();
    free(pieces);
    return out[0] ? TJ_OK : tj_last_status();
}

/* The rewrites graph's output (pieces of x's elems elements, in order) and,
 * when grad is not NULL, the gradient of its sum w.r.t. x. */
static inline void scale_rewrites_reference(int64_t n, const double *x, int elems, double *y,
                                            double *grad) {
    int64_t n_pieces = scale_rewrite_pieces(n);
    for (int e = 0; e < elems; e++) {
        double relu = x[e] > 0 ? x[e] : 0, g = 0;
        for (int64_t p = 0; p < n_pieces; p++) {
            double times = (double)(p * SCALE_REWRITE_EVERY + 1);
            y[p * elems + e] = x[e] + times * relu;
            g += 1 + (x[e] > 0 ? times : 0);
        }
        if (grad) grad[e] = g;
    }
}

/* SCALE_WIDE_INPUTS inputs of SCALE_ELEMS elements, uniform in [-1, 1). */
static inline bool scale_wide_inputs(tj_tensor **in, tj_generator *gen) {
    int64_t size = SCALE_ELEMS;
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) {
        tj_tensor *u = tj_rand(&size, 1, TJ_F32, gen), *u2 = u ? tj_mul_scalar(u, 2.0) : NULL;
        in[i] = u2 ? tj_add_scalar(u2, -1.0, 1.0) : NULL;
        tj_release(u2);
        tj_release(u);
        if (!in[i]) return false;
    }
    return true;
}

#endif
