/* random.c — the counter-based Philox-4x32-10 generator and random creation.
 * Element i of a draw uses counter (offset + i) alone, so results do not
 * depend on how the elements are split across threads. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core.h"
#include "random.h"

struct tj_generator {
    uint64_t seed;
    uint64_t offset;
};

void tjc_philox(uint64_t seed, uint64_t counter, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

double tjc_uniform53(uint32_t hi, uint32_t lo) {
    uint64_t bits = ((uint64_t)hi << 21) ^ (lo >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * 0x1p-53;
}

float tjc_uniform24(uint32_t w) { return (float)(w >> 8) * 0x1p-24f; }

double tjc_normal(const uint32_t w[4]) {
    double u1 = 1.0 - tjc_uniform53(w[0], w[1]); /* (0, 1]: log stays finite */
    double u2 = tjc_uniform53(w[2], w[3]);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

tj_generator *tj_generator_new(uint64_t seed) {
    tj_generator *g = tjc_malloc(sizeof *g);
    if (!g) {
        tjc_error(TJ_ERR_MEMORY, "tj_generator_new: out of memory");
        return NULL;
    }
    g->seed = seed;
    g->offset = 0;
    return g;
}

void tj_generator_free(tj_generator *g) { tjc_free(g); }

void tj_generator_set_state(tj_generator *g, uint64_t seed, uint64_t offset) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_generator_set_state: generator is NULL");
        return;
    }
    g->seed = seed;
    g->offset = offset;
}

uint64_t tj_generator_seed(const tj_generator *g) {
    return g ? g->seed : (tjc_error(TJ_ERR_ARG, "tj_generator_seed: generator is NULL"), 0);
}
uint64_t tj_generator_offset(const tj_generator *g) {
    return g ? g->offset : (tjc_error(TJ_ERR_ARG, "tj_generator_offset: generator is NULL"), 0);
}

uint64_t tj_generator_reserve(tj_generator *g, uint64_t n) {
    if (!g) return tjc_error(TJ_ERR_ARG, "tj_generator_reserve: generator is NULL"), 0;
    uint64_t first = g->offset;
    g->offset += n;
    return first;
}

#define TJC_DEFAULT_GENERATOR_SEED 0

static tj_generator *default_gen;
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;

tj_status tjc_generator_reserve_for(const char *op, tj_generator *g, uint64_t n, uint64_t *seed,
                                    uint64_t *first) {
    if (g) {
        *seed = tj_generator_seed(g);
        *first = tj_generator_reserve(g, n);
        return TJ_OK;
    }
    pthread_mutex_lock(&default_lock);
    if (!default_gen) default_gen = tj_generator_new(TJC_DEFAULT_GENERATOR_SEED);
    tj_status st = default_gen ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "%s: out of memory creating "
                                                   "the default generator", op);
    if (!st) {
        *seed = tj_generator_seed(default_gen);
        *first = tj_generator_reserve(default_gen, n);
    }
    pthread_mutex_unlock(&default_lock);
    return st;
}

typedef enum { DRAW_UNIFORM, DRAW_NORMAL, DRAW_BERNOULLI } draw_kind;

static tj_tensor *draw(const char *fn, const int64_t *sizes, int ndim, tj_dtype dtype,
                       tj_generator *g, draw_kind kind, double p) {
    if (!g) return tjc_error(TJ_ERR_ARG, "%s: generator is NULL", fn), NULL;
    if (kind != DRAW_BERNOULLI && !tj_dtype_is_float(dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: dtype %s is not a floating dtype", fn,
                         tj_dtype_name(dtype)), NULL;
    if (kind == DRAW_BERNOULLI && !(p >= 0 && p <= 1))
        return tjc_error(TJ_ERR_ARG, "%s: probability %g is not in [0, 1]", fn, p), NULL;
    tj_tensor *t = tjc_alloc(sizes, ndim, dtype);
    if (!t) return NULL;
    int64_t n = tjc_numel(sizes, ndim);
    uint64_t seed = g->seed, base = tj_generator_reserve(g, (uint64_t)n);
    char *data = tjc_data_ptr(t);
    /* counters, not a running state: any split across threads gives the same numbers */
    int threads = n > 65536 ? tj_get_num_threads() : 1;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        tjc_philox(seed, base + (uint64_t)i, w);
        double v;
        if (kind == DRAW_NORMAL) v = tjc_normal(w);
        else if (dtype == TJ_F32 && kind == DRAW_UNIFORM) v = tjc_uniform24(w[0]);
        else v = tjc_uniform53(w[0], w[1]);
        if (kind == DRAW_BERNOULLI) v = v < p;
        switch (dtype) {
        case TJ_F32: ((float *)data)[i] = (float)v; break;
        case TJ_F64: ((double *)data)[i] = v; break;
        case TJ_I64: ((int64_t *)data)[i] = (int64_t)v; break;
        case TJ_BOOL: ((bool *)data)[i] = v != 0; break;
        default: break;
        }
    }
    if (!tjc_track_created(t)) {
        tj_release(t);
        return NULL;
    }
    return t;
}

tj_tensor *tj_rand(const int64_t *sizes, int ndim, tj_dtype dtype, tj_generator *g) {
    return draw("tj_rand", sizes, ndim, dtype, g, DRAW_UNIFORM, 0);
}
tj_tensor *tj_randn(const int64_t *sizes, int ndim, tj_dtype dtype, tj_generator *g) {
    return draw("tj_randn", sizes, ndim, dtype, g, DRAW_NORMAL, 0);
}
tj_tensor *tj_bernoulli(const int64_t *sizes, int ndim, double p, tj_dtype dtype,
                        tj_generator *g) {
    return draw("tj_bernoulli", sizes, ndim, dtype, g, DRAW_BERNOULLI, p);
}
