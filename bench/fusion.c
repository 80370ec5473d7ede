/* fusion.c — what fusion buys: the pointwise chain
 * y = tanh(x*a + b) * sigmoid(x) + 1 over 1e6 and 1e7 f32 elements, replayed
 * unfused and fused (the portable runner), in GB/s beside a plain copy of the
 * same size; and the LSTM cell forward eager, replayed, and replayed fused.
 * Medians of repetitions after warm-up, all measured in this run with the
 * same thread count. Bytes counted for the chain: x, a, b read and y written
 * once (16 bytes an element); for the copy: 8 bytes an element. Then row
 * groups compiled by the "llvm" backend (a softmax or layer_norm with its
 * prologue in one kernel, backends/llvm/rowgen.c) against the same ops one
 * by one, both read from IR text; skipped in builds without LLVM. Last,
 * reductions' row groups: RMSNorm x * rsqrt(mean(x * x, -1, keepdim) +
 * eps) * w, logsumexp(x + y, -1) and sum(x * y, -1), unfused, portable and
 * llvm. And epilogue groups: gelu(linear(x)) and relu(linear(x) + r) as one
 * group run block by block, against the product followed by its epilogue's
 * own fused sweep. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"
#include "bench_util.h"
#include "fuser/fuser.h"

static tj_program *compile(tj_model_fn fn, void *ctx, tj_tensor **in, int n_in, int n_out,
                           const char *passes) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, n_out, NULL);
    tj_compile_options o = {.passes = passes};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    tj_graph_free(g);
    if (!p) {
        fprintf(stderr, "fusion bench: %s\n", tj_last_error());
        exit(1);
    }
    return p;
}

/* Median seconds of one run: a program, or the eager model when p is NULL. */
static double time_runs(tj_program *p, tj_model_fn fn, void *ctx, tj_tensor **in, int n_in,
                        int n_out, int reps) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    tj_tensor *out[4];
    for (int r = -2; r < reps; r++) {
        double t0 = bench_now();
        tj_status st = p ? tj_run(p, in, out) : fn(ctx, in, n_in, out, n_out);
        double dt = bench_now() - t0;
        if (st) {
            fprintf(stderr, "fusion bench: %s\n", tj_last_error());
            exit(1);
        }
        for (int i = 0; i < n_out; i++) tj_release(out[i]);
        if (r >= 0) t[r] = dt;
    }
    double m = bench_median(t, reps);
    free(t);
    return m;
}

/* The program of IR text, compiled as it is (no passes) for backend. */
static tj_program *compile_text(const char *text, const char *backend) {
    tj_status st;
    tj_graph *g = tj_graph_parse(text, &st);
    tj_compile_options o = {.passes = "", .backend = backend};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    tj_graph_free(g);
    return p;
}

/* op(x * 0.125) over [B, L] f32 (op softmax), or layer_norm(x + y, w, b)
 * over [B, L]: as one fusion group, or (group false) the same ops alone. */
static void row_text(char *out, size_t cap, bool layer_norm, int64_t B, int64_t L, bool group) {
    long long b = B, l = L;
    char body[1024];
    if (layer_norm)
        snprintf(body, sizeof body,
                 "  %%1 : Float(%lld, %lld) = aten::add[alpha=1.](%%x, %%y)\n"
                 "  %%2 : Float(%lld, %lld) = aten::layer_norm[normalized_shape=[%lld], eps=1e-05](%%1, %%w, %%b)\n"
                 "  return (%%2)\n", b, l, b, l, l);
    else
        snprintf(body, sizeof body,
                 "  %%1 : Float(%lld, %lld) = aten::mul.Scalar[other=0.125](%%x)\n"
                 "  %%2 : Float(%lld, %lld) = aten::softmax[dim=-1](%%1)\n"
                 "  return (%%2)\n", b, l, b, l);
    char params[256];
    if (layer_norm)
        snprintf(params, sizeof params, "%%x : Float(%lld, %lld), %%y : Float(%lld, %lld), %%w : Float(%lld), "
                 "%%b : Float(%lld)", b, l, b, l, l, l);
    else
        snprintf(params, sizeof params, "%%x : Float(%lld, %lld)", b, l);
    if (!group) {
        snprintf(out, cap, "graph(%s):\n%s", params, body);
        return;
    }
    snprintf(out, cap, "graph(%s):\n  %%9 : Float(%lld, %lld) = prim::FusionGroup_0(%s)\n  return (%%9)\n"
             "with prim::FusionGroup_0 = graph(%s):\n%s", params, b, l,
             layer_norm ? "%x, %y, %w, %b" : "%x", params, body);
}

/* Reductions' groups over [B, L] f32 (kind 0 RMSNorm, 1 logsumexp(x + y),
 * 2 sum(x * y)): one group, or (group false) the same ops alone. */
static void reduction_text(char *out, size_t cap, int kind, int64_t B, int64_t L, bool group) {
    long long b = B, l = L;
    char body[2048], params[256], args[64], ret[64];
    if (kind == 0) {
        snprintf(body, sizeof body,
                 "  %%1 : Float(%lld, %lld) = aten::mul(%%x, %%x)\n"
                 "  %%2 : Float(%lld, 1) = aten::mean.dim[dim=[-1], keepdim=True](%%1)\n"
                 "  %%3 : Float(%lld, 1) = aten::add.Scalar[other=1e-06, alpha=1.](%%2)\n"
                 "  %%4 : Float(%lld, 1) = aten::rsqrt(%%3)\n"
                 "  %%5 : Float(%lld, %lld) = aten::mul(%%x, %%4)\n"
                 "  %%6 : Float(%lld, %lld) = aten::mul(%%5, %%w)\n"
                 "  return (%%6)\n", b, l, b, b, b, b, l, b, l);
        snprintf(params, sizeof params, "%%x : Float(%lld, %lld), %%w : Float(%lld)", b, l, l);
        snprintf(args, sizeof args, "%%x, %%w");
        snprintf(ret, sizeof ret, "Float(%lld, %lld)", b, l);
    } else {
        snprintf(body, sizeof body,
                 "  %%1 : Float(%lld, %lld) = %s\n"
                 "  %%2 : Float(%lld) = %s[dim=[-1], keepdim=False](%%1)\n"
                 "  return (%%2)\n", b, l, kind == 1 ? "aten::add[alpha=1.](%x, %y)" : "aten::mul(%x, %y)", b,
                 kind == 1 ? "aten::logsumexp" : "aten::sum.dim_IntList");
        snprintf(params, sizeof params, "%%x : Float(%lld, %lld), %%y : Float(%lld, %lld)", b, l, b, l);
        snprintf(args, sizeof args, "%%x, %%y");
        snprintf(ret, sizeof ret, "Float(%lld)", b);
    }
    if (!group) {
        snprintf(out, cap, "graph(%s):\n%s", params, body);
        return;
    }
    snprintf(out, cap, "graph(%s):\n  %%9 : %s = prim::FusionGroup_0(%s)\n  return (%%9)\n"
             "with prim::FusionGroup_0 = graph(%s):\n%s", params, ret, args, params, body);
}

static void reduction_groups(tj_generator *gen) {
    static const char *names[3] = {"x * rsqrt(mean(x*x, -1, keepdim) + eps) * w", "logsumexp(x + y, -1)",
                                   "sum(x * y, -1)"};
    printf("\n| reduction group (%s) | unfused ms | fused, portable ms | fused, llvm ms | portable speed-up | "
           "llvm speed-up |\n|---|---|---|---|---|---|\n", bench_isa());
    for (int kind = 0; kind < 3; kind++) {
        int64_t B = 512, L = 1024;
        char text[4096];
        reduction_text(text, sizeof text, kind, B, L, false);
        tj_program *plain = compile_text(text, NULL);
        reduction_text(text, sizeof text, kind, B, L, true);
        tj_program *portable = compile_text(text, "portable");
        tj_program *fused = tjf_find_backend("llvm") ? compile_text(text, "llvm") : NULL;
        if (!plain || !portable) {
            printf("| (not compiled: %s) | | | | | |\n", tj_last_error());
            tj_program_free(plain);
            tj_program_free(portable);
            tj_program_free(fused);
            return;
        }
        int64_t xs[2] = {B, L};
        tj_tensor *in[2] = {tj_randn(xs, 2, TJ_F32, gen),
                            kind == 0 ? tj_randn(&L, 1, TJ_F32, gen) : tj_randn(xs, 2, TJ_F32, gen)};
        double tu = time_runs(plain, NULL, NULL, in, 2, 1, 200);
        double tp = time_runs(portable, NULL, NULL, in, 2, 1, 200);
        double tf = fused ? time_runs(fused, NULL, NULL, in, 2, 1, 200) : 0;
        char llvm_ms[32] = "n/a", llvm_x[32] = "n/a";
        if (fused) {
            snprintf(llvm_ms, sizeof llvm_ms, "%.4f", tf * 1e3);
            snprintf(llvm_x, sizeof llvm_x, "%.2fx", tu / tf);
        }
        printf("| %s [%lld, %lld] | %.4f | %.4f | %s | %.2fx | %s |\n", names[kind], (long long)B, (long long)L,
               tu * 1e3, tp * 1e3, llvm_ms, tu / tp, llvm_x);
        tj_program_free(plain);
        tj_program_free(portable);
        tj_program_free(fused);
        for (int i = 0; i < 2; i++) tj_release(in[i]);
    }
}

/* Row groups against their ops alone, both replayed. */
static void row_groups(tj_generator *gen) {
    static const struct {
        bool layer_norm;
        int64_t B, L;
    } cases[] = {{false, 512, 128}, {false, 64, 4096}, {true, 512, 256}};
    printf("\n| row group (%s) | unfused ms | fused, portable ms | fused, llvm ms | portable speed-up | "
           "llvm speed-up |\n|---|---|---|---|---|---|\n", bench_isa());
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[4096];
        row_text(text, sizeof text, cases[c].layer_norm, cases[c].B, cases[c].L, false);
        tj_program *plain = compile_text(text, NULL);
        row_text(text, sizeof text, cases[c].layer_norm, cases[c].B, cases[c].L, true);
        tj_program *portable = compile_text(text, "portable");
        tj_program *fused = tjf_find_backend("llvm") ? compile_text(text, "llvm") : NULL;
        if (!plain || !portable) {
            printf("| (not compiled: %s) | | | | | |\n", tj_last_error());
            tj_program_free(plain);
            tj_program_free(portable);
            tj_program_free(fused);
            return;
        }
        int64_t xs[2] = {cases[c].B, cases[c].L}, ws[1] = {cases[c].L};
        tj_tensor *in[4] = {tj_randn(xs, 2, TJ_F32, gen), tj_randn(xs, 2, TJ_F32, gen), tj_randn(ws, 1, TJ_F32, gen),
                            tj_randn(ws, 1, TJ_F32, gen)};
        int n_in = cases[c].layer_norm ? 4 : 1;
        double tu = time_runs(plain, NULL, NULL, in, n_in, 1, 200);
        double tp = time_runs(portable, NULL, NULL, in, n_in, 1, 200);
        double tf = fused ? time_runs(fused, NULL, NULL, in, n_in, 1, 200) : 0;
        char llvm_ms[32] = "n/a", llvm_x[32] = "n/a";
        if (fused) {
            snprintf(llvm_ms, sizeof llvm_ms, "%.4f", tf * 1e3);
            snprintf(llvm_x, sizeof llvm_x, "%.2fx", tu / tf);
        }
        printf("| %s [%lld, %lld] | %.4f | %.4f | %s | %.2fx | %s |\n",
               cases[c].layer_norm ? "layer_norm(x + y, w, b)" : "softmax(x * 0.125)", (long long)cases[c].B,
               (long long)cases[c].L, tu * 1e3, tp * 1e3, llvm_ms, tu / tp, llvm_x);
        tj_program_free(plain);
        tj_program_free(portable);
        tj_program_free(fused);
        for (int i = 0; i < 4; i++) tj_release(in[i]);
    }
}

/* linear(x, w, b) over x [M, K], w [N, K], then gelu (residual false) or
 * relu(. + r) with r [M, N]: as one epilogue group (epilogue true), or the
 * product alone followed by its epilogue as a pointwise group of its own. */
static void epilogue_text(char *out, size_t cap, bool residual, int64_t M, int64_t K, int64_t N,
                          bool epilogue) {
    long long m = M, k = K, n = N;
    char ins[512], body[512];
    snprintf(ins, sizeof ins, "%%x : Float(%lld, %lld), %%w : Float(%lld, %lld), %%b : Float(%lld)%s", m, k,
             n, k, n, residual ? ", %r : Float(" : "");
    if (residual) snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%lld, %lld)", m, n);
    if (residual)
        snprintf(body, sizeof body, "  %%s : Float(%lld, %lld) = aten::add[alpha=1.](%%h, %%r)\n"
                 "  %%y : Float(%lld, %lld) = aten::relu(%%s)\n", m, n, m, n);
    else
        snprintf(body, sizeof body, "  %%y : Float(%lld, %lld) = aten::gelu[approximate=\"none\"](%%h)\n", m, n);
    const char *rin = residual ? ", %r" : "";
    if (epilogue)
        snprintf(out, cap, "graph(%s):\n  %%y : Float(%lld, %lld) = prim::FusionGroup_0(%%x, %%w, %%b%s)\n"
                 "  return (%%y)\nwith prim::FusionGroup_0 = graph(%s):\n"
                 "  %%h : Float(%lld, %lld) = aten::linear(%%x, %%w, %%b)\n%s  return (%%y)\n",
                 ins, m, n, rin, ins, m, n, body);
    else
        snprintf(out, cap, "graph(%s):\n  %%h : Float(%lld, %lld) = aten::linear(%%x, %%w, %%b)\n"
                 "  %%y : Float(%lld, %lld) = prim::FusionGroup_0(%%h%s)\n  return (%%y)\n"
                 "with prim::FusionGroup_0 = graph(%%h : Float(%lld, %lld)%s%s%s):\n%s  return (%%y)\n",
                 ins, m, n, m, n, rin, m, n, residual ? ", %r : Float(" : "", "", "", body);
    if (!epilogue && residual) { /* the epilogue group's own inputs: h and r */
        snprintf(out, cap, "graph(%s):\n  %%h : Float(%lld, %lld) = aten::linear(%%x, %%w, %%b)\n"
                 "  %%y : Float(%lld, %lld) = prim::FusionGroup_0(%%h, %%r)\n  return (%%y)\n"
                 "with prim::FusionGroup_0 = graph(%%h : Float(%lld, %lld), %%r : Float(%lld, %lld)):\n"
                 "%s  return (%%y)\n", ins, m, n, m, n, m, n, m, n, body);
    }
}

/* GEMM epilogues: the product and its epilogue in one group, block by
 * block, against the product followed by a fused sweep of its epilogue,
 * both with the llvm backend. */
static void epilogue_groups(tj_generator *gen) {
    static const struct {
        bool residual;
        int64_t M, K, N;
    } cases[] = {{false, 4096, 1024, 1024}, {false, 8192, 256, 2048}, {true, 4096, 1024, 1024}, {false, 128, 256, 1024}};
    const char *backend = tjf_find_backend("llvm") ? "llvm" : "portable";
    printf("\n| epilogue group (%s, %s) | product, then epilogue ms | one epilogue group ms | speed-up |\n"
           "|---|---|---|---|\n", backend, bench_isa());
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        static char text[8192];
        epilogue_text(text, sizeof text, cases[c].residual, cases[c].M, cases[c].K, cases[c].N, false);
        tj_program *apart = compile_text(text, backend);
        epilogue_text(text, sizeof text, cases[c].residual, cases[c].M, cases[c].K, cases[c].N, true);
        tj_program *one = compile_text(text, backend);
        if (!apart || !one) {
            printf("| (not compiled: %s) | | | |\n", tj_last_error());
            tj_program_free(apart);
            tj_program_free(one);
            return;
        }
        int64_t xs[2] = {cases[c].M, cases[c].K}, ws[2] = {cases[c].N, cases[c].K}, bs[1] = {cases[c].N},
                rs[2] = {cases[c].M, cases[c].N};
        tj_tensor *in[4] = {tj_randn(xs, 2, TJ_F32, gen), tj_randn(ws, 2, TJ_F32, gen), tj_randn(bs, 1, TJ_F32, gen),
                            tj_randn(rs, 2, TJ_F32, gen)};
        int n_in = cases[c].residual ? 4 : 3, reps = cases[c].M > 1000 ? 21 : 200;
        double ta = 1e30, to = 1e30; /* alternated, the better of three medians each */
        for (int round = 0; round < 3; round++) {
            double a = time_runs(apart, NULL, NULL, in, n_in, 1, reps);
            double o = time_runs(one, NULL, NULL, in, n_in, 1, reps);
            ta = a < ta ? a : ta;
            to = o < to ? o : to;
        }
        printf("| %s over [%lld, %lld] x [%lld, %lld]^T | %.3f | %.3f | %.2fx |\n",
               cases[c].residual ? "relu(linear + r)" : "gelu(linear)", (long long)cases[c].M,
               (long long)cases[c].K, (long long)cases[c].N, (long long)cases[c].K, ta * 1e3, to * 1e3, ta / to);
        tj_program_free(apart);
        tj_program_free(one);
        for (int i = 0; i < 4; i++) tj_release(in[i]);
    }
}

int main(void) {
    tj_generator *gen = tj_generator_new(2);
    printf("fusion: %d threads, medians\n\n", tj_get_num_threads());
    printf("| chain tanh(x*a+b)*sigmoid(x)+1 | copy GB/s | unfused ms | unfused GB/s | fused ms "
           "| fused GB/s | fused/copy | fused speed-up |\n|---|---|---|---|---|---|---|---|\n");
    const int64_t sizes[2] = {1000000, 10000000};
    for (int s = 0; s < 2; s++) {
        int64_t n = sizes[s];
        int reps = n > 2000000 ? 15 : 40;
        tj_tensor *in[3] = {tj_randn(&n, 1, TJ_F32, gen), tj_randn(&n, 1, TJ_F32, gen),
                            tj_randn(&n, 1, TJ_F32, gen)};
        tj_program *plain = compile(bench_pointwise_chain, NULL, in, 3, 1, "dce,cse");
        tj_program *fused = compile(bench_pointwise_chain, NULL, in, 3, 1, NULL);
        double tc = bench_copy_time(n, reps, tj_get_num_threads(), NULL);
        double tu = time_runs(plain, bench_pointwise_chain, NULL, in, 3, 1, reps);
        double tf = time_runs(fused, bench_pointwise_chain, NULL, in, 3, 1, reps);
        double gb = 16.0 * (double)n / 1e9;
        printf("| %.0e elements | %.1f | %.2f | %.1f | %.2f | %.1f | %.0f%% | %.2fx |\n", (double)n,
               8.0 * (double)n / 1e9 / tc, tu * 1e3, gb / tu, tf * 1e3, gb / tf, 100 * (gb / tf) / (8.0 * (double)n / 1e9 / tc),
               tu / tf);
        tj_program_free(plain);
        tj_program_free(fused);
        for (int i = 0; i < 3; i++) tj_release(in[i]);
    }

    printf("\n| LSTM cell forward | eager ms | replay ms | fused replay ms | fused vs eager |\n"
           "|---|---|---|---|---|\n");
    const tjx_lstm_sizes cells[3] = {{1, 64, 64, 1, 1}, {64, 512, 512, 1, 1}, {512, 256, 256, 1, 1}};
    for (int c = 0; c < 3; c++) {
        void *params = tjx_lstm_cell_create_sized(gen, cells[c]);
        tj_tensor *in[3];
        if (!params || tjx_lstm_cell.make_inputs(params, gen, in) != TJ_OK) return 1;
        int reps = cells[c].batch == 1 ? 2000 : 30;
        tj_program *plain = compile(tjx_lstm_cell.forward, params, in, 3, 2, "dce,cse");
        tj_program *fused = compile(tjx_lstm_cell.forward, params, in, 3, 2, NULL);
        double te = time_runs(NULL, tjx_lstm_cell.forward, params, in, 3, 2, reps);
        double tu = time_runs(plain, NULL, NULL, in, 3, 2, reps);
        double tf = time_runs(fused, NULL, NULL, in, 3, 2, reps);
        printf("| B=%lld H=%lld | %.3f | %.3f | %.3f | %.2fx |\n", (long long)cells[c].batch,
               (long long)cells[c].hidden, te * 1e3, tu * 1e3, tf * 1e3, te / tf);
        tj_program_free(plain);
        tj_program_free(fused);
        for (int i = 0; i < 3; i++) tj_release(in[i]);
        tjx_lstm_cell.destroy(params);
    }
    row_groups(gen);
    reduction_groups(gen);
    epilogue_groups(gen);
    tj_generator_free(gen);
    return 0;
}
