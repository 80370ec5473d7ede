/* cuda.c — the GPU table (make bench-gpu): tjit's CUDA backend beside the
 * libraries called directly on the same GPU, in the same run: per-op launch
 * overhead on a chain of 100 one-element adds, sgemm 4096 against cublasSgemm,
 * conv2d [32,64,56,56] x 64 3x3 forward and both backward ops against cuDNN,
 * softmax [4096, 4096] against the device's copy bandwidth, and the example
 * models' forward replay. bench/torch_cuda.py prints PyTorch's CUDA rows for
 * the same workloads. Medians of timed repetitions, each closed by a
 * synchronisation. Then issue 22's workloads (bench/gpu/workloads.h) in tjit's
 * three variants; --json prints only those, as JSON lines for
 * bench/gpu_report.py, which joins them with PyTorch's. Without a GPU it says
 * so and exits 0; --smoke runs those workloads at tiny sizes, on the host
 * harness too (ctest's bench_cuda_smoke). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "tjit/runtime.h"

#ifdef TJIT_HAVE_CUDA
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cuDNN's classic conv API */
#include <cublas_v2.h>
#include <cudnn.h>
#include "backends/cuda/cuda.h"
#include "bench/gpu/workloads.h"
#include "core/core.h"

static const tj_device DEV = {TJ_CUDA, 0};
enum { REPS = 15 };

/* Median seconds of fn(ctx) over REPS runs after two warm-ups, each run
 * synchronised. */
static double timed(void (*fn)(void *), void *ctx) {
    double t[REPS];
    for (int r = -2; r < REPS; r++) {
        tj_cuda_synchronize();
        double t0 = bench_now();
        fn(ctx);
        tj_cuda_synchronize();
        if (r >= 0) t[r] = bench_now() - t0;
    }
    return bench_median(t, REPS);
}

/* ---- per-op overhead -------------------------------------------------------------- */

static tj_status chain100(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    tj_tensor *x = in[0];
    for (int i = 0; i < 100; i++) x = tj_add(x, in[1], 1.0);
    out[0] = tj_keep(x);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

typedef struct chain_ctx {
    tj_tensor *in[2];
    tj_program *p;
} chain_ctx;

static void eager_chain(void *c) {
    chain_ctx *k = c;
    tj_tensor *out;
    tj_scope_begin();
    chain100(NULL, k->in, 2, &out, 1);
    tj_scope_end();
}
static void replay_chain(void *c) {
    chain_ctx *k = c;
    tj_tensor *out;
    tj_scope_begin();
    tj_run(k->p, k->in, &out);
    tj_scope_end();
}

static void overhead_rows(void) {
    int64_t one = 1;
    chain_ctx k = {{tj_ones_on(&one, 1, TJ_F32, DEV), tj_ones_on(&one, 1, TJ_F32, DEV)}, NULL};
    tj_graph *g = tj_trace(chain100, NULL, k.in, 2, 1, NULL);
    tj_compile_options o = {.passes = ""}; /* one instruction per op: the overhead itself */
    k.p = tj_compile(g, &o);
    printf("| per-op overhead, eager (100 adds, 1 element) | %.2f us/op | |\n",
           timed(eager_chain, &k) * 1e6 / 100);
    printf("| per-op overhead, replay (100 adds, 1 element) | %.2f us/op | |\n",
           timed(replay_chain, &k) * 1e6 / 100);
    tj_program_free(k.p);
    tj_graph_free(g);
    tj_release(k.in[0]);
    tj_release(k.in[1]);
}

/* ---- sgemm ------------------------------------------------------------------------- */

typedef struct gemm_ctx {
    tj_tensor *a, *b, *c;
    cublasHandle_t h;
    int n;
} gemm_ctx;

static void tjit_mm(void *c) {
    gemm_ctx *k = c;
    tj_scope_begin();
    tj_mm(k->a, k->b);
    tj_scope_end();
}
static void cublas_mm(void *c) {
    gemm_ctx *k = c;
    float one = 1, zero = 0;
    /* row-major C = A B is column-major C^T = B^T A^T */
    cublasSgemm(k->h, CUBLAS_OP_N, CUBLAS_OP_N, k->n, k->n, k->n, &one, tj_data(k->b), k->n,
                tj_data(k->a), k->n, &zero, tj_data(k->c), k->n);
}

static void gemm_rows(void) {
    int n = 4096;
    int64_t sz[2] = {n, n};
    tj_generator *gen = tj_generator_new(1);
    gemm_ctx k = {.n = n};
    k.a = tj_to_device(tj_randn(sz, 2, TJ_F32, gen), DEV);
    k.b = tj_to_device(tj_randn(sz, 2, TJ_F32, gen), DEV);
    k.c = tj_empty_on(sz, 2, TJ_F32, DEV);
    cublasCreate(&k.h);
    cublasSetStream(k.h, tjcu_stream(DEV));
    cublasSetMathMode(k.h, CUBLAS_PEDANTIC_MATH); /* no TF32, as tjit's default */
    double flop = 2.0 * n * n * n, tj = timed(tjit_mm, &k), cb = timed(cublas_mm, &k);
    printf("| sgemm %d | %.1f TFLOP/s | cuBLAS %.1f TFLOP/s (%.0f%%) |\n", n, flop / tj * 1e-12,
           flop / cb * 1e-12, 100 * cb / tj);
    cublasDestroy(k.h);
    tj_generator_free(gen);
}

/* ---- conv2d ------------------------------------------------------------------------ */

typedef struct conv_ctx {
    tj_tensor *x, *w, *y, *gy, *gx, *gw;
    cudnnHandle_t h;
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdDataAlgo_t da;
    cudnnConvolutionBwdFilterAlgo_t fb;
    void *ws;
    size_t ws_bytes;
    int which; /* 0 forward, 1 backward input, 2 backward weight */
} conv_ctx;

static void tjit_conv(void *c) {
    conv_ctx *k = c;
    int64_t one[2] = {1, 1}, pad[2] = {1, 1};
    tj_scope_begin();
    if (k->which == 0) tj_conv2d(k->x, k->w, NULL, one, 2, pad, 2, one, 2, 1);
    else if (k->which == 1)
        tj_conv2d_backward_input(k->gy, k->w, tj_sizes(k->x), 4, one, 2, pad, 2, one, 2, 1);
    else tj_conv2d_backward_weight(k->gy, k->x, tj_sizes(k->w), 4, one, 2, pad, 2, one, 2, 1);
    tj_scope_end();
}

static void cudnn_conv(void *c) {
    conv_ctx *k = c;
    float one = 1, zero = 0;
    if (k->which == 0)
        cudnnConvolutionForward(k->h, &one, k->xd, tj_data(k->x), k->wd, tj_data(k->w), k->cd, k->fa,
                                k->ws, k->ws_bytes, &zero, k->yd, tj_data(k->y));
    else if (k->which == 1)
        cudnnConvolutionBackwardData(k->h, &one, k->wd, tj_data(k->w), k->yd, tj_data(k->gy), k->cd,
                                     k->da, k->ws, k->ws_bytes, &zero, k->xd, tj_data(k->gx));
    else
        cudnnConvolutionBackwardFilter(k->h, &one, k->xd, tj_data(k->x), k->yd, tj_data(k->gy),
                                       k->cd, k->fb, k->ws, k->ws_bytes, &zero, k->wd,
                                       tj_data(k->gw));
}

static void conv_rows(void) {
    int64_t xs[4] = {32, 64, 56, 56}, ws[4] = {64, 64, 3, 3};
    tj_generator *gen = tj_generator_new(2);
    conv_ctx k = {0};
    k.x = tj_to_device(tj_randn(xs, 4, TJ_F32, gen), DEV);
    k.w = tj_to_device(tj_randn(ws, 4, TJ_F32, gen), DEV);
    k.y = tj_empty_on(xs, 4, TJ_F32, DEV);
    k.gy = tj_to_device(tj_randn(xs, 4, TJ_F32, gen), DEV);
    k.gx = tj_empty_on(xs, 4, TJ_F32, DEV);
    k.gw = tj_empty_on(ws, 4, TJ_F32, DEV);
    cudnnCreate(&k.h);
    cudnnSetStream(k.h, tjcu_stream(DEV));
    cudnnCreateTensorDescriptor(&k.xd);
    cudnnCreateTensorDescriptor(&k.yd);
    cudnnCreateFilterDescriptor(&k.wd);
    cudnnCreateConvolutionDescriptor(&k.cd);
    cudnnSetTensor4dDescriptor(k.xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 32, 64, 56, 56);
    cudnnSetTensor4dDescriptor(k.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 32, 64, 56, 56);
    cudnnSetFilter4dDescriptor(k.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 64, 64, 3, 3);
    cudnnSetConvolution2dDescriptor(k.cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                    CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(k.cd, CUDNN_FMA_MATH); /* no TF32 */
    int got;
    cudnnConvolutionFwdAlgoPerf_t fp;
    cudnnConvolutionBwdDataAlgoPerf_t dp;
    cudnnConvolutionBwdFilterAlgoPerf_t bp;
    cudnnGetConvolutionForwardAlgorithm_v7(k.h, k.xd, k.wd, k.cd, k.yd, 1, &got, &fp);
    cudnnGetConvolutionBackwardDataAlgorithm_v7(k.h, k.wd, k.yd, k.cd, k.xd, 1, &got, &dp);
    cudnnGetConvolutionBackwardFilterAlgorithm_v7(k.h, k.xd, k.yd, k.cd, k.wd, 1, &got, &bp);
    k.fa = fp.algo, k.da = dp.algo, k.fb = bp.algo;
    size_t a = 0, b = 0, c = 0;
    cudnnGetConvolutionForwardWorkspaceSize(k.h, k.xd, k.wd, k.cd, k.yd, k.fa, &a);
    cudnnGetConvolutionBackwardDataWorkspaceSize(k.h, k.wd, k.yd, k.cd, k.xd, k.da, &b);
    cudnnGetConvolutionBackwardFilterWorkspaceSize(k.h, k.xd, k.yd, k.cd, k.wd, k.fb, &c);
    k.ws_bytes = a > b ? (a > c ? a : c) : (b > c ? b : c);
    k.ws = tjcu_malloc(DEV, k.ws_bytes ? k.ws_bytes : 1);
    const char *names[3] = {"forward", "backward input", "backward weight"};
    for (k.which = 0; k.which < 3; k.which++) {
        double tj = timed(tjit_conv, &k), dn = timed(cudnn_conv, &k);
        printf("| conv2d [32,64,56,56] x 64 3x3, %s | %.3f ms | cuDNN %.3f ms (%.0f%%) |\n",
               names[k.which], tj * 1e3, dn * 1e3, 100 * dn / tj);
    }
    tjcu_free(DEV, k.ws);
    cudnnDestroyTensorDescriptor(k.xd);
    cudnnDestroyTensorDescriptor(k.yd);
    cudnnDestroyFilterDescriptor(k.wd);
    cudnnDestroyConvolutionDescriptor(k.cd);
    cudnnDestroy(k.h);
    tj_generator_free(gen);
}

/* ---- softmax and copy bandwidth ------------------------------------------------------- */

typedef struct sm_ctx {
    tj_tensor *x, *y;
} sm_ctx;
static void tjit_softmax(void *c) {
    tj_scope_begin();
    tj_softmax(((sm_ctx *)c)->x, -1);
    tj_scope_end();
}
static void device_copy(void *c) {
    sm_ctx *k = c;
    tjcu_copy_d2d(DEV, tj_data(k->y), tj_data(k->x), (size_t)tj_numel(k->x) * 4);
}

static void softmax_rows(void) {
    int64_t sz[2] = {4096, 4096};
    tj_generator *gen = tj_generator_new(3);
    sm_ctx k = {tj_to_device(tj_randn(sz, 2, TJ_F32, gen), DEV), tj_empty_on(sz, 2, TJ_F32, DEV)};
    double bytes = 2.0 * 4096 * 4096 * 4, sm = timed(tjit_softmax, &k), cp = timed(device_copy, &k);
    printf("| softmax [4096, 4096] | %.0f GB/s | copy %.0f GB/s (%.0f%% of copy) |\n",
           bytes / sm * 1e-9, bytes / cp * 1e-9, 100 * cp / sm);
    tj_generator_free(gen);
}

/* ---- the example models ------------------------------------------------------------- */

typedef struct model_ctx {
    tj_program *p;
    tj_tensor *in[8];
} model_ctx;
static void replay_model(void *c) {
    model_ctx *k = c;
    tj_tensor *out[8];
    tj_scope_begin();
    tj_run(k->p, k->in, out);
    tj_scope_end();
}

static void model_rows(void) {
    for (int i = 0; i < tjx_num_models(); i++) {
        const tjx_model *m = tjx_model_at(i);
        tj_generator *gen = tj_generator_new(4);
        void *params = m->create(gen);
        model_ctx k = {0};
        tj_tensor *host[8], *ps[64];
        m->make_inputs(params, gen, host);
        /* every tensor the model owns, as module.to(device): the parameters and the
         * buffers (the cnn's batch_norm running statistics) */
        int np = m->parameters(params, ps, 64);
        if (m->buffers) np += m->buffers(params, ps + np, 64 - np);
        for (int j = 0; j < np; j++) tj_move_to_device(ps[j], DEV);
        for (int j = 0; j < m->n_in; j++) k.in[j] = tj_to_device(host[j], DEV);
        tj_graph *g = tj_trace(m->forward, params, k.in, m->n_in, m->n_out, NULL);
        k.p = g ? tj_compile(g, NULL) : NULL;
        if (k.p) printf("| %s forward (replay) | %.3f ms | |\n", m->name, timed(replay_model, &k) * 1e3);
        else printf("| %s forward | n/a: %s | |\n", m->name, tj_last_error());
        tj_program_free(k.p);
        tj_graph_free(g);
        m->destroy(params);
        tj_generator_free(gen);
    }
}

static int usage(void) {
    fprintf(stderr, "usage: bench_cuda [--json] [--smoke] [--budget SECONDS]\n"
                    "  --json    issue 22's workloads only, as JSON lines (bench/gpu_report.py)\n"
                    "  --smoke   those workloads at tiny sizes, also on the host harness\n"
                    "  --budget  timed seconds per workload and variant (default 1)\n");
    return 2;
}

int main(int argc, char **argv) {
    bg_config cfg = {.budget = 1.0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) cfg.json = true;
        else if (!strcmp(argv[i], "--smoke")) cfg.smoke = true;
        else if (!strcmp(argv[i], "--budget") && i + 1 < argc) cfg.budget = atof(argv[++i]);
        else return usage();
    }
    if (cfg.smoke) cfg.budget = 0.001;
    if (!(cfg.budget > 0)) return usage();
    /* the harness runs the workloads' code (--smoke), but times nothing */
    bool usable = tj_cuda_is_available() && (cfg.smoke || tjcu_has_libraries(DEV));
    if (!usable) {
        char why[300];
        snprintf(why, sizeof why, "%s", tj_last_error()[0] ? tj_last_error()
                 : "the host harness is no place to time a GPU");
        for (char *c = why; *c; c++)
            if (*c == '"' || *c == '\\' || *c == '\n') *c = ' ';
        if (cfg.json) printf("{\"kind\": \"error\", \"error\": \"no GPU: %s\"}\n", why);
        else printf("bench_cuda: no GPU: %s\n", why);
        return 0;
    }
    if (!cfg.json && !cfg.smoke) {
        tj_scope_begin();
        printf("| workload (cuda:0) | tjit | the library called directly |\n|---|---|---|\n");
        overhead_rows();
        gemm_rows();
        conv_rows();
        softmax_rows();
        model_rows();
        tj_scope_end();
    }
    bg_run_all(&cfg);
    return 0;
}
#pragma GCC diagnostic pop
#else
int main(int argc, char **argv) {
    bool json = argc > 1 && !strcmp(argv[1], "--json");
    if (json) printf("{\"kind\": \"error\", \"error\": \"no GPU: this build has no CUDA backend\"}\n");
    else printf("bench_cuda: no GPU: this build has no CUDA backend (configure with -DTJIT_CUDA=ON)\n");
    return 0;
}
#endif
