/* workloads.c — see workloads.h. Timing: a variant is warmed up (its first
 * step compiles kernels or captures its CUDA graph), then timed in windows of
 * k back-to-back steps each closed by tj_cuda_synchronize, k chosen so that a
 * window lasts about a tenth of the budget; the row is the median of
 * window / k. bench/gpu_report.py times PyTorch the same way. */
#include "bench/gpu/workloads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "bench/bench_util.h"
#include "tjit/passes.h"
#include "tjit/runtime.h"

static const tj_device DEV = {TJ_CUDA, 0};

enum { MAX_IN = 4, MAX_PARAMS = 64, MAX_WINDOWS = 50, N_VARIANTS = 3 };

static const char *const variant_names[N_VARIANTS] = {"unfused", "fused", "fused + CUDA graph"};

typedef struct workload {
    const char *id, *label;
    const char *torch_model; /* the class in bench/torch_models.py's MODELS */
    tj_model_fn fn;
    void *ctx;
    int n_in, n_out;
    tj_tensor *in[MAX_IN];   /* on the device */
    tj_tensor *params[MAX_PARAMS];
    int n_params;
    bool backward;
    double lr;               /* > 0: an SGD update after the backward */
    int64_t int_high;        /* i64 inputs hold classes in [0, int_high) */
    double bytes;            /* memory traffic of one step, for GB/s (0: none) */
} workload;

/* ---- timing --------------------------------------------------------------------------- */

typedef tj_status (*step_fn)(void *ctx);

/* Median seconds of one step (see the file's comment); 0 with the error set
 * when a step fails. */
static double timed(const bg_config *cfg, step_fn step, void *ctx) {
    double t0 = bench_now();
    for (int w = 0; w < (cfg->smoke ? 1 : 3); w++)
        if (step(ctx)) return 0;
    if (tj_cuda_synchronize()) return 0;
    double warm = (bench_now() - t0) / (cfg->smoke ? 1 : 3);
    double window = cfg->budget / 10;
    int k = warm > 0 && warm < window ? (int)(window / warm) : 1;
    if (k > 10000) k = 10000;
    double per[MAX_WINDOWS];
    int n = 0;
    double start = bench_now();
    int min_windows = cfg->smoke ? 1 : 5;
    while (n < MAX_WINDOWS && (n < min_windows || bench_now() - start < cfg->budget)) {
        double w0 = bench_now();
        for (int i = 0; i < k; i++)
            if (step(ctx)) return 0;
        if (tj_cuda_synchronize()) return 0;
        per[n++] = (bench_now() - w0) / k;
    }
    return bench_median(per, n);
}

/* ---- the variants ----------------------------------------------------------------------- */

typedef struct variant {
    const workload *w;
    tj_program *p;
} variant;

/* One training or inference step as bench_suite takes it: the program; for
 * backward workloads tj_backward, the SGD update when lr > 0, and clearing
 * the gradients. */
static tj_status program_step(void *ctx) {
    variant *v = ctx;
    const workload *w = v->w;
    tj_tensor *out[4];
    tj_scope_begin(); /* outputs, gradients and temporaries end with it */
    tj_status st = tj_run(v->p, w->in, out);
    if (!st && w->backward) st = tj_backward(v->p, NULL, NULL);
    for (int i = 0; !st && w->lr > 0 && i < w->n_params; i++) {
        tj_tensor *g = tj_program_grad(v->p, tj_tensor_name(w->params[i]));
        if (g && !tj_sub_(w->params[i], g, w->lr)) st = tj_last_status();
    }
    if (!st && w->backward) tj_program_zero_grad(v->p);
    tj_scope_end();
    return st;
}

/* The default pipeline without its fuse pass: every op its own kernel. */
static void unfused_pipeline(char *buf, size_t n) {
    char all[512];
    snprintf(all, sizeof all, "%s", tj_default_pipeline());
    buf[0] = '\0';
    char *save = NULL;
    for (char *p = strtok_r(all, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (strcmp(p, "fuse"))
            snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", buf[0] ? "," : "", p);
}

/* ---- output ------------------------------------------------------------------------------ */

static void json_sizes(const tj_tensor *t) {
    printf("[");
    for (int d = 0; d < tj_ndim(t); d++) printf("%s%lld", d ? ", " : "", (long long)tj_sizes(t)[d]);
    printf("]");
}

/* What bench/gpu_report.py needs to build the workload in PyTorch. */
static void describe(const workload *w) {
    printf("{\"kind\": \"workload\", \"id\": \"%s\", \"label\": \"%s\", \"model\": \"%s\", "
           "\"backward\": %s, \"lr\": %g, \"bytes\": %.17g, \"inputs\": [",
           w->id, w->label, w->torch_model, w->backward ? "true" : "false", w->lr, w->bytes);
    for (int i = 0; i < w->n_in; i++) {
        printf("%s{\"dtype\": \"%s\", \"high\": %lld, \"sizes\": ", i ? ", " : "",
               tj_dtype_name(tj_tensor_dtype(w->in[i])), (long long)w->int_high);
        json_sizes(w->in[i]);
        printf("}");
    }
    printf("], \"params\": [");
    for (int i = 0; i < w->n_params; i++) {
        printf("%s{\"name\": \"%s\", \"sizes\": ", i ? ", " : "", tj_tensor_name(w->params[i]));
        json_sizes(w->params[i]);
        printf("}");
    }
    printf("]}\n");
}

/* A message fit for a JSON string or a table cell: its first line, without
 * quotes, backslashes or bars. */
static void clean(char *dst, size_t n, const char *msg) {
    snprintf(dst, n, "%s", msg);
    for (char *c = dst; *c; c++) {
        if (*c == '\n') {
            *c = '\0';
            break;
        }
        if (*c == '"' || *c == '\\' || *c == '|' || (unsigned char)*c < ' ') *c = ' ';
    }
}

static void run_workload(const bg_config *cfg, const workload *w) {
    if (cfg->json) describe(w);
    else printf("| %s |", w->label);
    fflush(stdout);
    char unfused[512];
    unfused_pipeline(unfused, sizeof unfused);
    tj_graph *g = tj_trace(w->fn, w->ctx, w->in, w->n_in, w->n_out, NULL);
    char why[300] = "";
    if (!g) clean(why, sizeof why, tj_last_error());
    for (int k = 0; k < N_VARIANTS; k++) {
        tj_compile_options o = {.passes = k == 0 ? unfused : NULL, .grad_parameters = w->backward,
                                .cuda_graph = k == 2};
        variant v = {w, g ? tj_compile(g, &o) : NULL};
        double t = v.p ? timed(cfg, program_step, &v) : 0;
        if (g && t == 0) clean(why, sizeof why, tj_last_error());
        tj_clear_error();
        if (cfg->json && t > 0)
            printf("{\"kind\": \"time\", \"id\": \"%s\", \"variant\": \"%s\", \"median_s\": %.9g}\n",
                   w->id, variant_names[k], t);
        else if (cfg->json)
            printf("{\"kind\": \"time\", \"id\": \"%s\", \"variant\": \"%s\", \"error\": \"%s\"}\n",
                   w->id, variant_names[k], why);
        else if (t > 0 && w->bytes > 0)
            printf(" %.3f ms (%.0f GB/s) |", t * 1e3, w->bytes / t * 1e-9);
        else if (t > 0)
            printf(" %.3f ms |", t * 1e3);
        else
            printf(" n/a: %s |", why);
        fflush(stdout);
        tj_program_free(v.p);
    }
    if (!cfg->json) printf("\n");
    tj_graph_free(g);
}

/* ---- the device's copy bandwidth ------------------------------------------------------------ */

typedef struct copy_ctx {
    void *dst, *src;
    size_t bytes;
} copy_ctx;

static tj_status copy_step(void *ctx) {
    copy_ctx *c = ctx;
    return tjcu_copy_d2d(DEV, c->dst, c->src, c->bytes);
}

/* GB/s of a device-to-device copy of as many bytes as the largest pointwise
 * chain's tensors, bytes read and written both counted; 0 on failure. */
static double copy_bandwidth(const bg_config *cfg, int64_t n) {
    tj_tensor *a = tj_full_on(&n, 1, 1.0, TJ_F32, DEV), *b = tj_empty_on(&n, 1, TJ_F32, DEV);
    copy_ctx c = {a && b ? tj_data(b) : NULL, a && b ? tj_data(a) : NULL, (size_t)n * 4};
    double t = c.dst ? timed(cfg, copy_step, &c) : 0;
    tj_release(a);
    tj_release(b);
    return t > 0 ? 2.0 * (double)c.bytes / t * 1e-9 : 0;
}

/* ---- the workloads ---------------------------------------------------------------------------- */

/* Moves every tensor the model owns to the device, as module.to(device):
 * the parameters (kept in w) and the buffers (batch_norm's running
 * statistics). */
static tj_status own_tensors_to_device(workload *w, const tjx_model *m, void *params) {
    w->n_params = m->parameters(params, w->params, MAX_PARAMS);
    tj_tensor *buffers[MAX_PARAMS];
    int n_buffers = m->buffers ? m->buffers(params, buffers, MAX_PARAMS) : 0;
    for (int i = 0; i < w->n_params; i++)
        if (tj_move_to_device(w->params[i], DEV)) return tj_last_status();
    for (int i = 0; i < n_buffers; i++)
        if (tj_move_to_device(buffers[i], DEV)) return tj_last_status();
    return TJ_OK;
}

/* The model's example inputs on the device, plus extra ones already there. */
static tj_status inputs_to_device(workload *w, const tjx_model *m, void *params, tj_generator *gen) {
    tj_tensor *host[MAX_IN] = {0};
    tj_status st = m->make_inputs(params, gen, host);
    for (int i = 0; i < m->n_in; i++) {
        if (!st && !(w->in[i] = tj_to_device(host[i], DEV))) st = tj_last_status();
        tj_release(host[i]);
    }
    return st;
}

static void release_inputs(workload *w) {
    for (int i = 0; i < w->n_in; i++) tj_release(w->in[i]);
}

static void failed(const bg_config *cfg, const char *id, const char *label) {
    char why[300];
    clean(why, sizeof why, tj_last_error());
    if (cfg->json) printf("{\"kind\": \"error\", \"id\": \"%s\", \"error\": \"%s\"}\n", id, why);
    else printf("| %s | n/a: %s | | |\n", label, why);
    tj_clear_error();
}

static void lstm_workload(const bg_config *cfg, int64_t b, int64_t h, bool backward) {
    char id[32], label[64];
    snprintf(id, sizeof id, "lstm_%s_b%lld", backward ? "fwdbwd" : "fwd", (long long)b);
    snprintf(label, sizeof label, "LSTM cell %s B=%lld H=%lld", backward ? "fwd+bwd" : "fwd",
             (long long)b, (long long)h);
    tj_generator *gen = tj_generator_new(1);
    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){b, h, h, 1, 1});
    workload w = {.id = id, .label = label, .torch_model = backward ? "lstm_cell_loss" : "lstm_cell",
                  .fn = backward ? bench_lstm_cell_loss : tjx_lstm_cell.forward, .ctx = cell,
                  .n_in = 3, .n_out = backward ? 1 : 2, .backward = backward};
    if (cell && !own_tensors_to_device(&w, &tjx_lstm_cell, cell) &&
        !inputs_to_device(&w, &tjx_lstm_cell, cell, gen))
        run_workload(cfg, &w);
    else failed(cfg, id, label);
    release_inputs(&w);
    if (cell) tjx_lstm_cell.destroy(cell);
    tj_generator_free(gen);
}

static void pointwise_workload(const bg_config *cfg, int64_t n, const char *size_name) {
    char id[32], label[64];
    snprintf(id, sizeof id, "pointwise_%s", size_name);
    snprintf(label, sizeof label, "pointwise chain %s", size_name);
    /* made on the device: values in tanh's and sigmoid's ordinary range */
    workload w = {.id = id, .label = label, .torch_model = "pointwise", .fn = bench_pointwise_chain,
                  .n_in = 3, .n_out = 1, .bytes = 16.0 * (double)n}; /* x, a, b read; y written */
    static const double values[3] = {0.5, 1.5, -0.25};
    tj_status st = TJ_OK;
    for (int k = 0; k < 3 && !st; k++)
        if (!(w.in[k] = tj_full_on(&n, 1, values[k], TJ_F32, DEV))) st = tj_last_status();
    if (!st) run_workload(cfg, &w);
    else failed(cfg, id, label);
    release_inputs(&w);
}

/* A row group: softmax(x * 0.125) (n_in 1) or layer_norm(x + y, w, b) (n_in
 * 4) over rows of width n, random values made on the device. */
static void row_workload(const bg_config *cfg, int64_t rows, int64_t n, bool norm) {
    char id[48], label[96];
    snprintf(id, sizeof id, "%s_%lldx%lld", norm ? "residual_layer_norm" : "scaled_softmax",
             (long long)rows, (long long)n);
    snprintf(label, sizeof label, "%s [%lld, %lld]", norm ? "layer_norm(x + y, w, b)" : "softmax(x * 0.125)",
             (long long)rows, (long long)n);
    int64_t sizes[2] = {rows, n};
    workload w = {.id = id, .label = label, .torch_model = norm ? "residual_layer_norm" : "scaled_softmax",
                  .fn = norm ? bench_residual_layer_norm : bench_scaled_softmax, .n_in = norm ? 4 : 1,
                  .n_out = 1, .bytes = (norm ? 12.0 : 8.0) * (double)(rows * n)};
    tj_generator *gen = tj_generator_new(4);
    tj_status st = TJ_OK;
    for (int k = 0; k < w.n_in && !st; k++) {
        tj_tensor *h = k < 2 ? tj_randn(sizes, 2, TJ_F32, gen) : tj_randn(&n, 1, TJ_F32, gen);
        if (!h || !(w.in[k] = tj_to_device(h, DEV))) st = tj_last_status();
        tj_release(h);
    }
    if (!st) run_workload(cfg, &w);
    else failed(cfg, id, label);
    release_inputs(&w);
    tj_generator_free(gen);
}

/* the MLP's nll loss, an SGD step of lr 0.01 (bench_suite's mlp_train) */
static void mlp_workload(const bg_config *cfg) {
    const char *id = "mlp_train", *label = "MLP train step";
    tj_generator *gen = tj_generator_new(2);
    void *mlp = tjx_mlp.create(gen);
    tjx_task task = {&tjx_mlp, mlp, "nll"};
    workload w = {.id = id, .label = label, .torch_model = "mlp_train", .fn = tjx_loss_fn,
                  .ctx = &task, .n_in = 2, .n_out = 1, .backward = true, .lr = 0.01, .int_high = 10};
    tj_status st = mlp ? own_tensors_to_device(&w, &tjx_mlp, mlp) : tj_last_status();
    if (!st) st = inputs_to_device(&w, &tjx_mlp, mlp, gen);
    if (!st) {
        int64_t b = tj_size(w.in[0], 0);
        tj_scope_begin();
        tj_tensor *classes = tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64);
        if (!(w.in[1] = tj_to_device(classes, DEV))) st = tj_last_status();
        else tj_retain(w.in[1]);
        tj_scope_end();
    }
    if (!st) run_workload(cfg, &w);
    else failed(cfg, id, label);
    release_inputs(&w);
    if (mlp) tjx_mlp.destroy(mlp);
    tj_generator_free(gen);
}

static void model_workload(const bg_config *cfg, const tjx_model *m, const char *id, const char *label) {
    tj_generator *gen = tj_generator_new(3);
    void *params = m->create(gen);
    workload w = {.id = id, .label = label, .torch_model = m->name, .fn = m->forward, .ctx = params,
                  .n_in = m->n_in, .n_out = m->n_out};
    if (params && !own_tensors_to_device(&w, m, params) && !inputs_to_device(&w, m, params, gen))
        run_workload(cfg, &w);
    else failed(cfg, id, label);
    release_inputs(&w);
    if (params) m->destroy(params);
    tj_generator_free(gen);
}

void bg_run_all(const bg_config *cfg) {
    int64_t big = cfg->smoke ? 4096 : 100000000, small = cfg->smoke ? 1000 : 1000000;
    double gbps = copy_bandwidth(cfg, big);
    if (cfg->json) {
        printf("{\"kind\": \"copy\", \"bytes\": %.17g, \"gbps\": %.6g%s%s%s}\n", 8.0 * (double)big, gbps,
               gbps > 0 ? "" : ", \"error\": \"", gbps > 0 ? "" : "the copy failed", gbps > 0 ? "" : "\"");
    } else {
        printf("\n| workload (cuda:0) | tjit unfused | tjit fused | tjit fused + CUDA graph |\n"
               "|---|---|---|---|\n");
        printf("| device copy, %.3g MB read + written | %.0f GB/s | | |\n", 8e-6 * (double)big, gbps);
    }
    fflush(stdout);
    int64_t lstm_h[2] = {cfg->smoke ? 8 : 64, cfg->smoke ? 16 : 512};
    int64_t lstm_b[2] = {1, cfg->smoke ? 2 : 64};
    for (int s = 0; s < 2; s++)
        for (int bwd = 0; bwd < 2; bwd++) lstm_workload(cfg, lstm_b[s], lstm_h[s], bwd);
    pointwise_workload(cfg, small, cfg->smoke ? "1e3" : "1e6");
    pointwise_workload(cfg, big, cfg->smoke ? "4096" : "1e8");
    row_workload(cfg, cfg->smoke ? 8 : 16384, cfg->smoke ? 128 : 1024, false);
    row_workload(cfg, cfg->smoke ? 8 : 16384, cfg->smoke ? 256 : 1024, true);
    mlp_workload(cfg);
    model_workload(cfg, &tjx_cnn, "cnn_fwd", "CNN fwd");
    model_workload(cfg, &tjx_transformer, "transformer_fwd", "transformer block fwd");
}
