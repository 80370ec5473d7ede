/* suite.c — bench_suite, the tjit half of `make bench`: every workload of the
 * side-by-side comparison with PyTorch (LSTM cell forward and forward+backward
 * at three sizes, the pointwise chain, an MLP training step, the CNN and the
 * transformer block forward, per-op overhead, sgemm), each measured as tjit
 * eager, replay (unfused), fused with the portable runner and fused with
 * LLVM, plus a plain copy and OpenBLAS's sgemm for the machine's limits.
 * Writes <out>/tjit.csv, <out>/manifest.jsonl and <out>/data/<workload>/ (.npy
 * files: inputs, weights, each variant's outputs and gradients), which
 * bench/torch_compare.py reads; bench/report.py prints the table.
 * Usage: bench_suite [--out DIR] [--budget SECONDS] [--threads N] [--only ID,ID]
 *                    [--append] [--list] [--no-progress]
 * On a terminal a status line on stderr says how many workloads are done and
 * which one runs; elsewhere a line per workload does (--no-progress: none,
 * for a driver that shows its own). */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/suite/harness.h"
#include "examples/models/models.h"

enum { CHAIN_OPS = 100 };

/* ---- model functions of the workloads that are not example models ------------- */

/* y = x + b + b + ... (CHAIN_OPS adds on 1-element tensors: per-op overhead) */
static tj_status add_chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    tj_tensor *x = in[0];
    for (int i = 0; i < CHAIN_OPS; i++) x = tj_add(x, in[1], 1.0);
    out[0] = tj_keep(x);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status matmul(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    out[0] = tj_mm(in[0], in[1]);
    return out[0] ? TJ_OK : tj_last_status();
}

/* nll_loss(mlp(x), target), mean over the batch */
static tj_status mlp_loss(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in, (void)n_out;
    tj_tensor *y = NULL;
    tj_scope_begin();
    tj_status st = tjx_mlp.forward(ctx, in, 1, &y, 1);
    tj_tensor *l = st ? NULL : tj_nll_loss(y, in[1], NULL, "mean", -100);
    out[0] = tj_keep(l);
    tj_scope_end();
    return l ? TJ_OK : (st ? st : tj_last_status());
}

/* ---- the extras: the machine's limits, interleaved with the variants ------------- */

typedef struct copy_ctx {
    float *src, *dst;
    int64_t n;
    int threads;
} copy_ctx;

static void run_copy(void *p) {
    copy_ctx *c = p;
#pragma omp parallel num_threads(c->threads)
    {
        int k = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo = c->n * k / nt, hi = c->n * (k + 1) / nt;
        memcpy(c->dst + lo, c->src + lo, (size_t)(hi - lo) * sizeof(float));
    }
}

typedef struct sgemm_ctx {
    const float *a, *b;
    float *c;
    int n;
} sgemm_ctx;

static void run_sgemm(void *p) {
    sgemm_ctx *s = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b,
                s->n, 0.0f, s->c, s->n);
}

/* ---- the workloads ---------------------------------------------------------------- */

static void release_inputs(bs_workload *w) {
    for (int k = 0; k < w->n_in; k++) tj_release(w->in[k]);
}

/* arg: the size (0, 1, 2) times 2, plus 1 for forward+backward */
static void lstm_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    static const struct { int64_t b, h; } sizes[3] = {{1, 64}, {64, 512}, {512, 256}};
    int64_t b = sizes[arg / 2].b, h = sizes[arg / 2].h;
    bool bwd = arg % 2;
    char label[96];
    snprintf(label, sizeof label, "LSTM cell %s B=%lld H=%lld", bwd ? "fwd+bwd" : "fwd",
             (long long)b, (long long)h);
    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){b, h, h, 1, 1});
    bs_workload w = {.id = id, .label = label, .kind = bwd ? "lstm_cell_loss" : "lstm_cell",
                     .fn = bwd ? bench_lstm_cell_loss : tjx_lstm_cell.forward, .ctx = cell, .n_in = 3,
                     .n_out = bwd ? 1 : 2, .backward = bwd};
    if (!cell || tjx_lstm_cell.make_inputs(cell, gen, w.in)) {
        fprintf(stderr, "bench_suite: %s: %s\n", id, tj_last_error());
        exit(1);
    }
    w.n_params = tjx_lstm_cell.parameters(cell, w.params, BS_MAX_PARAMS);
    bs_run_workload(cfg, &w);
    release_inputs(&w);
    tjx_lstm_cell.destroy(cell);
}

/* arg: the number of elements */
static void pointwise_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    int64_t n = arg;
    char label[96];
    snprintf(label, sizeof label, "pointwise chain %s", n == 1000000 ? "1e6" : "1e7");
    copy_ctx c = {aligned_alloc(64, (size_t)n * 4), aligned_alloc(64, (size_t)n * 4), n, cfg->threads};
    if (!c.src || !c.dst) exit(1);
    memset(c.src, 1, (size_t)n * 4); /* touch every page before timing */
    memset(c.dst, 0, (size_t)n * 4);
    bs_workload w = {.id = id, .label = label, .kind = "pointwise", .fn = bench_pointwise_chain, .n_in = 3,
                     .n_out = 1, .bytes = 16.0 * (double)n, /* x, a, b read; y written */
                     .extra = {"copy", run_copy, &c}};
    for (int k = 0; k < 3; k++) w.in[k] = tj_randn(&n, 1, TJ_F32, gen);
    bs_run_workload(cfg, &w);
    release_inputs(&w);
    free(c.src);
    free(c.dst);
}

/* a model of the registry with its example inputs, forward only; arg: 0 the
 * CNN, 1 the transformer block */
static void model_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    const tjx_model *m = arg ? &tjx_transformer : &tjx_cnn;
    const char *label = arg ? "transformer block fwd" : "CNN fwd";
    void *params = m->create(gen);
    bs_workload w = {.id = id, .label = label, .kind = m->name, .fn = m->forward, .ctx = params,
                     .n_in = m->n_in, .n_out = m->n_out};
    if (!params || m->make_inputs(params, gen, w.in)) {
        fprintf(stderr, "bench_suite: %s: %s\n", id, tj_last_error());
        exit(1);
    }
    w.n_params = m->parameters(params, w.params, BS_MAX_PARAMS);
    bs_run_workload(cfg, &w);
    release_inputs(&w);
    m->destroy(params);
}

static void mlp_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    (void)arg;
    void *mlp = tjx_mlp.create(gen);
    bs_workload w = {.id = id, .label = "MLP train step",
                     .kind = "mlp_train", .fn = mlp_loss, .ctx = mlp, .n_in = 2, .n_out = 1,
                     .backward = true, .lr = 0.01};
    if (!mlp || tjx_mlp.make_inputs(mlp, gen, w.in)) exit(1);
    int64_t b = tj_size(w.in[0], 0);
    tj_scope_begin();
    w.in[1] = tj_retain(tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64));
    tj_scope_end();
    w.n_params = tjx_mlp.parameters(mlp, w.params, BS_MAX_PARAMS);
    bs_run_workload(cfg, &w);
    release_inputs(&w);
    tjx_mlp.destroy(mlp);
}

static void overhead_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    (void)arg;
    int64_t one = 1;
    bs_workload w = {.id = id, .label = "per-op overhead (100 adds)", .kind = "add_chain",
                     .fn = add_chain, .n_in = 2, .n_out = 1, .ops = CHAIN_OPS};
    w.in[0] = tj_randn(&one, 1, TJ_F32, gen);
    w.in[1] = tj_randn(&one, 1, TJ_F32, gen);
    bs_run_workload(cfg, &w);
    release_inputs(&w);
}

/* arg: the size n of the square matrices */
static void sgemm_workload(bs_config *cfg, const char *id, tj_generator *gen, int arg) {
    int n = arg;
    char label[96];
    snprintf(label, sizeof label, "sgemm %d", n);
    int64_t shape[2] = {n, n};
    bs_workload w = {.id = id, .label = label, .kind = "mm", .fn = matmul, .n_in = 2, .n_out = 1,
                     .flops = 2.0 * n * n * (double)n};
    w.in[0] = tj_randn(shape, 2, TJ_F32, gen);
    w.in[1] = tj_randn(shape, 2, TJ_F32, gen);
    size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
    sgemm_ctx sc = {tj_data(w.in[0]), tj_data(w.in[1]), aligned_alloc(64, bytes), n};
    if (!sc.c) exit(1);
    memset(sc.c, 0, bytes);
    w.extra = (bs_extra){"openblas", run_sgemm, &sc};
    bs_run_workload(cfg, &w);
    release_inputs(&w);
    free(sc.c);
}

/* Every workload, in the order of the table. Each draws its data from a
 * generator seeded by its position, so selecting some leaves theirs as is. */
static const struct entry {
    const char *id;
    void (*run)(bs_config *cfg, const char *id, tj_generator *gen, int arg);
    int arg;
} workloads[] = {
    {"lstm_fwd_b1", lstm_workload, 0},      {"lstm_fwdbwd_b1", lstm_workload, 1},
    {"lstm_fwd_b64", lstm_workload, 2},     {"lstm_fwdbwd_b64", lstm_workload, 3},
    {"lstm_fwd_b512", lstm_workload, 4},    {"lstm_fwdbwd_b512", lstm_workload, 5},
    {"pointwise_1e6", pointwise_workload, 1000000},
    {"pointwise_1e7", pointwise_workload, 10000000},
    {"mlp_train", mlp_workload, 0},         {"cnn_fwd", model_workload, 0},
    {"transformer_fwd", model_workload, 1}, {"overhead", overhead_workload, 0},
    {"sgemm_512", sgemm_workload, 512},     {"sgemm_2048", sgemm_workload, 2048},
};
enum { N_WORKLOADS = sizeof workloads / sizeof workloads[0] };

static bool selected(const char *only, const char *id) {
    if (!only) return true;
    size_t n = strlen(id);
    for (const char *p = only; (p = strstr(p, id)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
    return false;
}

int main(int argc, char **argv) {
    bs_config cfg = {.out_dir = "build/bench", .budget_s = 4.0, .min_reps = 5, .max_reps = 2000,
                     .warmup = 3, .threads = tj_get_num_threads()};
    const char *only = NULL;
    bool show_progress = true;
    for (int i = 1; i < argc; i++) {
        bool more = i + 1 < argc;
        if (!strcmp(argv[i], "--out") && more) cfg.out_dir = argv[++i];
        else if (!strcmp(argv[i], "--budget") && more) cfg.budget_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && more) cfg.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && more) only = argv[++i];
        else if (!strcmp(argv[i], "--append")) cfg.append = true;
        else if (!strcmp(argv[i], "--no-progress")) show_progress = false;
        else if (!strcmp(argv[i], "--list")) {
            for (int k = 0; k < N_WORKLOADS; k++) printf("%s\n", workloads[k].id);
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--out DIR] [--budget SECONDS] [--threads N] [--only ID,ID] "
                            "[--append] [--list] [--no-progress]\n", argv[0]);
            return 2;
        }
    }
    if (cfg.threads < 1) cfg.threads = 1;
    /* one thread count for tjit's loops, OpenBLAS and (through the manifest) PyTorch */
    tj_set_num_threads(cfg.threads);
    openblas_set_num_threads(cfg.threads);
#ifdef TJIT_HAVE_LLVM
    cfg.llvm_built = true;
#endif
    if (!bs_open(&cfg)) {
        fprintf(stderr, "bench_suite: cannot write to %s\n", cfg.out_dir);
        return 1;
    }
    int total = 0, done = 0;
    for (int k = 0; k < N_WORKLOADS; k++) total += selected(only, workloads[k].id);
    tjit_progress progress;
    tjit_progress_begin(&progress, "bench_suite", "done", total);
    cfg.progress = show_progress ? &progress : NULL;
    for (int k = 0; k < N_WORKLOADS; k++) {
        if (!selected(only, workloads[k].id)) continue;
        tjit_progress_item(cfg.progress, done++, workloads[k].id);
        tj_generator *gen = tj_generator_new(1000 + (uint64_t)k);
        workloads[k].run(&cfg, workloads[k].id, gen, workloads[k].arg);
        tj_generator_free(gen);
    }
    tjit_progress_end(cfg.progress, done);
    bs_close(&cfg);
    return 0;
}
