/* test_onnx_roundtrip.c — every example model's forward graph, and the
 * forward (loss) graph of each training task, exported as ONNX; accepted by
 * ONNX's checker (Debian's python3-onnx, with shape inference); run by ONNX
 * Runtime (installed from PyPI into BUILD/onnx-venv when missing) with the
 * same outputs as tjit's replay; imported back, compiled and run with the
 * same outputs again, its parameters bound under their names. Also: export
 * with symbolic sizes (allow_size_change) run at another batch size, and
 * parameters as inputs. Outputs agree within 1e-5 relative to the output's
 * largest magnitude (float32 sums in another order differ by rounding). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "examples/models/models.h"
#include "tests/support/runtime_testing.h"

#define REL_TOL 1e-5
#define MAX_OUT 160

static char ort_python[1024]; /* "" when ONNX Runtime could not be installed */

static int setup(void **state) {
    (void)state;
    FILE *f = popen("sh tests/onnx/ort_env.sh " TJIT_BUILD_DIR, "r");
    if (!f) return -1;
    if (!fgets(ort_python, sizeof ort_python, f)) ort_python[0] = '\0';
    int rc = pclose(f);
    ort_python[strcspn(ort_python, "\n")] = '\0';
    if (WEXITSTATUS(rc) == 77) {
        printf("ONNX Runtime: the package index is unreachable; the ONNX Runtime comparisons are skipped\n");
        ort_python[0] = '\0';
        return 0;
    }
    return WEXITSTATUS(rc) == 0 && ort_python[0] ? 0 : -1;
}

/* got against want within REL_TOL of want's largest magnitude. */
static void assert_close(const tj_tensor *got, const tj_tensor *want, const char *what) {
    if (!got) fail_msg("%s: no output: %s", what, tj_last_error());
    assert_int_equal(tj_tensor_dtype(got), tj_tensor_dtype(want));
    assert_int_equal(tj_ndim(got), tj_ndim(want));
    for (int d = 0; d < tj_ndim(got); d++) assert_int_equal(tj_sizes(got)[d], tj_sizes(want)[d]);
    tt_ref g = tt_ref_of(got), w = tt_ref_of(want);
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < w.numel; i++) scale = fmax(scale, fabs(w.v[i]));
    for (int64_t i = 0; i < w.numel; i++) {
        double err = fabs(g.v[i] - w.v[i]);
        worst = fmax(worst, err);
        if (!(err <= REL_TOL * scale) && !(isnan(g.v[i]) && isnan(w.v[i])))
            fail_msg("%s: element %lld is %.9g, expected %.9g (scale %.3g)", what, (long long)i, g.v[i],
                     w.v[i], scale);
    }
    tt_ref_free(&g);
    tt_ref_free(&w);
}

static void run_cmd(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fail_msg("'%s' exited with %d", cmd, rc);
}

/* The op names of g's nodes, sorted, one per line (malloc'd). */
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static char *op_list(const tj_graph *g) {
    const char *names[4096];
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x && n < 4096; x = tj_node_next(x))
        if (tj_node_kind_of(x) == TJ_NODE_OP) names[n++] = tj_node_name(x);
    qsort(names, (size_t)n, sizeof *names, by_name);
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(names[i]) + 1;
    char *s = calloc(1, len), *p = s;
    for (int i = 0; i < n; i++) p += sprintf(p, "%s\n", names[i]);
    return s;
}

static bool same_ops; /* set by the caller: the imported graph must have g's ops */

/* Exports g, checks it, compares ONNX Runtime and the re-imported graph
 * with tjit's outputs on inputs (all the unbound inputs; with
 * params_as_inputs, the parameters follow). */
static void round_trip(const char *label, const tj_graph *g, tj_tensor *const *inputs, int n_in,
                       const tj_onnx_export_options *opts, tj_tensor *const *ort_inputs,
                       int n_ort_inputs, const tj_compile_options *copts) {
    tj_scope_begin();
    tj_program *p = tj_compile(g, copts);
    if (!p) fail_msg("%s: compile: %s", label, tj_last_error());
    int n_out = tj_program_num_outputs(p);
    tj_tensor *want[MAX_OUT] = {0}, *got[MAX_OUT] = {0};
    assert_true(n_out <= MAX_OUT);
    if (tj_run(p, inputs, want) != TJ_OK) fail_msg("%s: run: %s", label, tj_last_error());
    tj_program_free(p);

    char *dir = tt_mkdtemp(), *model = tt_path(dir, "model.onnx"), cmd[4096];
    if (tj_graph_export_onnx(g, model, opts) != TJ_OK) fail_msg("%s: export: %s", label, tj_last_error());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/onnx/onnx_check.py %s", model);
    run_cmd(cmd);
    if (ort_python[0]) {
        for (int i = 0; i < n_ort_inputs; i++) {
            char name[32];
            snprintf(name, sizeof name, "in_%d.npy", i);
            char *path = tt_path(dir, name);
            assert_int_equal(tj_save_npy(path, ort_inputs[i]), TJ_OK);
            free(path);
        }
        snprintf(cmd, sizeof cmd, "%s tests/onnx/ort_run.py %s %s", ort_python, model, dir);
        run_cmd(cmd);
        for (int k = 0; k < n_out; k++) {
            char name[32], what[128];
            snprintf(name, sizeof name, "ort_%d.npy", k);
            snprintf(what, sizeof what, "%s: ONNX Runtime's output %d", label, k);
            char *path = tt_path(dir, name);
            assert_close(tj_load_npy(path), want[k], what);
            free(path);
        }
    }
    /* imported back: the same outputs, parameters bound under their names */
    tj_type types[16];
    for (int i = 0; i < n_in && i < 16; i++)
        types[i] = tj_type_contiguous(tj_tensor_dtype(inputs[i]), tj_sizes(inputs[i]), tj_ndim(inputs[i]));
    tj_onnx_import_options io = {.input_types = types, .n_inputs = n_in < 16 ? n_in : 16};
    tj_graph *h = tj_graph_import_onnx_ex(model, opts && opts->allow_size_change ? &io : NULL);
    if (!h) fail_msg("%s: import: %s", label, tj_last_error());
    int bound_g = 0, bound_h = 0;
    for (int i = 0; i < tj_graph_num_inputs(g); i++) bound_g += tj_graph_input_binding(g, i) != NULL;
    for (int i = 0; i < tj_graph_num_inputs(h); i++) {
        tj_tensor *b = tj_graph_input_binding(h, i);
        if (!b) continue;
        bound_h++;
        const char *name = tj_value_name(tj_graph_input(h, i));
        bool found = false;
        for (int j = 0; j < tj_graph_num_inputs(g) && !found; j++)
            found = tj_graph_input_binding(g, j) && name && tj_value_name(tj_graph_input(g, j)) &&
                    !strcmp(name, tj_value_name(tj_graph_input(g, j)));
        if (!found) fail_msg("%s: imported parameter %s is not one of the graph's", label, name ? name : "?");
    }
    /* parameters ONNX never reads (running statistics of training-mode batch_norm) drop out */
    if (!opts || !opts->params_as_inputs) assert_true(bound_h <= bound_g && (bound_h > 0 || bound_g == 0));
    if (same_ops) {
        char *a = op_list(g), *b = op_list(h);
        if (strcmp(a, b)) fail_msg("%s: the imported graph has other ops:\n%s---\n%s", label, a, b);
        free(a);
        free(b);
    }
    tj_program *q = tj_compile(h, copts);
    if (!q) fail_msg("%s: compile the imported graph: %s", label, tj_last_error());
    assert_int_equal(tj_program_num_outputs(q), n_out);
    if (tj_run(q, opts && opts->params_as_inputs ? ort_inputs : inputs, got) != TJ_OK)
        fail_msg("%s: run the imported graph: %s", label, tj_last_error());
    for (int k = 0; k < n_out; k++) {
        char what[128];
        snprintf(what, sizeof what, "%s: imported graph's output %d", label, k);
        assert_close(got[k], want[k], what);
    }
    tj_program_free(q);
    tj_graph_free(h);
    free(model);
    tt_rmtree(dir);
    tj_scope_end();
}

/* A model's forward graph, or its loss graph for training (loss != NULL). */
static void check_model(const tjx_model *m, const char *loss) {
    tj_generator *gen = tj_generator_new(11);
    void *params = m->create(gen);
    assert_non_null(params);
    tj_tensor *in[8] = {0};
    assert_int_equal(m->make_inputs(params, gen, in), TJ_OK);
    int n_in = m->n_in;
    tjx_task task = {m, params, loss};
    tj_graph *g;
    char label[128];
    if (loss) {
        tj_scope_begin();
        if (!strcmp(loss, "nll")) {
            int64_t b = tj_size(in[0], 0);
            in[n_in] = tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64);
        } else {
            in[n_in] = tj_zeros(NULL, 0, TJ_F32);
        }
        tj_keep(in[n_in]);
        tj_scope_end();
        n_in++;
        g = tj_trace(tjx_loss_fn, &task, in, n_in, 1, NULL);
        snprintf(label, sizeof label, "%s training (%s loss)", m->name, loss);
    } else {
        g = tj_trace(m->forward, params, in, n_in, m->n_out, NULL);
        snprintf(label, sizeof label, "%s", m->name);
    }
    if (!g) fail_msg("%s: trace: %s", label, tj_last_error());
    /* high-level ops come back as themselves where ONNX has them (decomposed:
     * training-mode batch_norm, gelu through Erf, linear on 3-D input) */
    same_ops = m == &tjx_mlp || m == &tjx_lstm_cell;
    round_trip(label, g, in, n_in, NULL, in, n_in, NULL);
    same_ops = false;
    printf("  %s: checked, ONNX Runtime %s, imported back: equal\n", label, ort_python[0] ? "equal" : "skipped");
    tj_graph_free(g);
    for (int i = 0; i < n_in; i++) tj_release(in[i]);
    m->destroy(params);
    tj_generator_free(gen);
}

static void test_mlp(void **s) { (void)s; check_model(&tjx_mlp, NULL); }
static void test_lstm_cell(void **s) { (void)s; check_model(&tjx_lstm_cell, NULL); }
static void test_lstm(void **s) { (void)s; check_model(&tjx_lstm, NULL); }
static void test_cnn(void **s) { (void)s; check_model(&tjx_cnn, NULL); }
static void test_transformer(void **s) { (void)s; check_model(&tjx_transformer, NULL); }
static void test_train_mlp(void **s) { (void)s; check_model(&tjx_mlp, "nll"); }
static void test_train_lstm(void **s) { (void)s; check_model(&tjx_lstm, "square"); }
static void test_train_cnn(void **s) { (void)s; check_model(&tjx_cnn, "square"); }
static void test_train_transformer(void **s) { (void)s; check_model(&tjx_transformer, "square"); }

/* Symbolic sizes: traced at one batch size, run by both at another. */
static void check_dynamic(const tjx_model *m, int64_t batch) {
    tj_generator *gen = tj_generator_new(3);
    void *params = m->create(gen);
    tj_tensor *in[8] = {0};
    assert_int_equal(m->make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(m->forward, params, in, m->n_in, m->n_out, NULL);
    assert_non_null(g);
    tj_scope_begin();
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, tj_sizes(in[0]), sizeof(int64_t) * (size_t)tj_ndim(in[0]));
    sizes[0] = batch;
    tj_tensor *x = tj_randn(sizes, tj_ndim(in[0]), tj_tensor_dtype(in[0]), gen);
    tj_onnx_export_options o = {.allow_size_change = true};
    tj_compile_options c = {.allow_size_change = true};
    char label[64];
    snprintf(label, sizeof label, "%s at batch %lld", m->name, (long long)batch);
    round_trip(label, g, &x, 1, &o, &x, 1, &c);
    tj_scope_end();
    tj_graph_free(g);
    tj_release(in[0]);
    m->destroy(params);
    tj_generator_free(gen);
}

static void test_dynamic_sizes(void **s) {
    (void)s;
    check_dynamic(&tjx_mlp, 5);
    check_dynamic(&tjx_cnn, 3);
}

/* A graph after the default pipeline: its fusion groups are written as their
 * subgraphs' ops (prim::ConstantChunk as Split). */
static void test_fused(void **s) {
    (void)s;
    tj_generator *gen = tj_generator_new(8);
    void *params = tjx_lstm_cell.create(gen);
    tj_tensor *in[8] = {0};
    assert_int_equal(tjx_lstm_cell.make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, params, in, tjx_lstm_cell.n_in, tjx_lstm_cell.n_out, NULL);
    assert_non_null(g);
    assert_int_equal(tj_run_passes(g, tj_default_pipeline()), TJ_OK);
    int groups = 0;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n))
        groups += tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP;
    assert_true(groups > 0);
    round_trip("lstm_cell, fused", g, in, tjx_lstm_cell.n_in, NULL, in, tjx_lstm_cell.n_in, NULL);
    tj_graph_free(g);
    for (int i = 0; i < tjx_lstm_cell.n_in; i++) tj_release(in[i]);
    tjx_lstm_cell.destroy(params);
    tj_generator_free(gen);
}


/* ---- every exportable op, in one graph -------------------------------------------------------
 * Each output is one op (or one piece of a multi-output op) on small inputs:
 * a, b [4, 6]; img [2, 4, 6, 6]; cls [4] classes < 6; idx [4, 6] < 6;
 * eidx [4, 6] < 10; y01 [4, 6] of 0 and 1; w2 [4, 4, 3, 3]; w1 [4, 4, 3];
 * wt [4, 3, 3, 3]; c4 [4]; emb [10, 3]; w65 [5, 6]. */
enum { ZOO_IN = 14 };

static tj_status zoo(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in;
    tj_tensor *a = in[0], *b = in[1], *img = in[2], *cls = in[3], *idx = in[4], *eidx = in[5];
    tj_tensor *y01 = in[6], *w2 = in[7], *w1 = in[8], *wt = in[9], *c4 = in[10], *emb = in[11];
    tj_tensor *w65 = in[12], *c5 = in[13];
    tj_tensor *p = tj_add_scalar(tj_abs(a), 0.5, 1.0); /* positive */
    int k = 0;
#define OUT(x) do { if (k < n_out) out[k++] = (x); } while (0)
    int64_t d1[1] = {1}, d0[1] = {0}, d01[2] = {0, 1}, s16[2] = {1, 6}, v64[2] = {6, 4};
    int64_t one[1] = {1}, two[1] = {2}, zero[1] = {0}, k3[1] = {3}, s2[1] = {2};
    tj_tensor *pieces[8];
    /* pointwise */
    OUT(tj_neg(a)); OUT(tj_exp(a)); OUT(tj_log(p)); OUT(tj_log1p(p)); OUT(tj_expm1(a));
    OUT(tj_sqrt(p)); OUT(tj_rsqrt(p)); OUT(tj_sin(a)); OUT(tj_cos(a)); OUT(tj_tanh(a));
    OUT(tj_sigmoid(a)); OUT(tj_relu(a)); OUT(tj_gelu(a, "none")); OUT(tj_gelu(a, "tanh"));
    OUT(tj_silu(a)); OUT(tj_erf(a)); OUT(tj_reciprocal(p)); OUT(tj_sign(a));
    OUT(tj_floor(tj_mul_scalar(a, 3.0))); OUT(tj_ceil(tj_mul_scalar(a, 3.0)));
    OUT(tj_round(tj_mul_scalar(a, 3.0))); OUT(tj_logical_not(tj_gt(a, b)));
    OUT(tj_add(a, b, 2.0)); OUT(tj_sub(a, b, 0.5)); OUT(tj_mul(a, b)); OUT(tj_div(a, p));
    OUT(tj_pow(p, b)); OUT(tj_maximum(a, b)); OUT(tj_minimum(a, b)); OUT(tj_eq(idx, eidx));
    OUT(tj_ne(idx, eidx)); OUT(tj_lt(a, b)); OUT(tj_le(a, b)); OUT(tj_ge(a, b));
    OUT(tj_logical_and(tj_gt(a, b), tj_gt(a, p))); OUT(tj_logical_or(tj_gt(a, b), tj_gt(a, p)));
    OUT(tj_add_scalar(a, 2.0, 3.0)); OUT(tj_sub_scalar(a, 1.0, 1.0)); OUT(tj_div_scalar(a, 4.0));
    OUT(tj_pow_scalar(p, 1.5)); OUT(tj_maximum_scalar(a, 0.1)); OUT(tj_minimum_scalar(a, 0.1));
    OUT(tj_eq_scalar(idx, 2.0)); OUT(tj_ne_scalar(idx, 2.0)); OUT(tj_lt_scalar(a, 0.2));
    OUT(tj_logical_or_scalar(a, 0.0)); OUT(tj_where(tj_gt(a, b), a, b));
    OUT(tj_clamp(a, -0.5, 0.5)); OUT(tj_clamp(a, TJ_NONE, 0.3)); OUT(tj_lerp(a, b, 0.25));
    OUT(tj_lerp_tensor(a, b, y01)); OUT(tj_addcmul(a, b, p, 0.5)); OUT(tj_clone(a));
    OUT(tj_to_dtype(a, TJ_F64)); OUT(tj_zeros_like(a)); OUT(tj_add(idx, eidx, 1));
    OUT(tj_div(idx, tj_add_scalar(eidx, 1.0, 1.0)));
    /* reductions */
    OUT(tj_sum(a, d1, 1, false)); OUT(tj_sum(tj_gt(a, b), d1, 1, true)); OUT(tj_mean(a, NULL, 0, false));
    OUT(tj_prod(p, d1, 1, false)); OUT(tj_amax(a, d0, 1, true)); OUT(tj_amin(a, d01, 2, false));
    tj_max_dim(a, 1, true, pieces, 2); OUT(pieces[0]); OUT(pieces[1]);
    tj_min_dim(a, 0, false, pieces, 2); OUT(pieces[0]); OUT(pieces[1]);
    OUT(tj_argmax(a, NULL, 0, true)); OUT(tj_argmin(a, d1, 1, false));
    OUT(tj_var(a, d1, 1, 1, false)); OUT(tj_std(a, NULL, 0, 0, false));
    OUT(tj_linalg_vector_norm(a, 2.0, d1, 1, false)); OUT(tj_linalg_vector_norm(a, 1.0, NULL, 0, false));
    OUT(tj_linalg_vector_norm(a, INFINITY, d1, 1, true)); OUT(tj_linalg_vector_norm(a, 3.0, d1, 1, false));
    OUT(tj_logsumexp(a, d1, 1, false)); OUT(tj_sum_to_size(a, s16, 2));
    /* views and shapes */
    OUT(tj_view(a, v64, 2)); OUT(tj_squeeze(tj_unsqueeze(a, 1))); OUT(tj_squeeze_dim(tj_unsqueeze(a, 0), 0));
    OUT(tj_t(a)); OUT(tj_transpose(img, 1, 3)); OUT(tj_permute(img, (int64_t[]){2, 0, 3, 1}, 4));
    OUT(tj_expand(tj_unsqueeze(p, 0), (int64_t[]){3, 4, 6}, 3)); OUT(tj_select(a, 1, -1));
    OUT(tj_narrow(a, 1, 2, 3)); OUT(tj_slice(a, 1, 1, 6, 2)); OUT(tj_diagonal(a, 1, 0, 1));
    OUT(tj_diagonal(img, -1, 3, 1));
    tj_chunk(a, 3, 1, pieces, 3); OUT(pieces[0]); OUT(pieces[2]);
    tj_split(a, 4, 1, pieces, 2); OUT(pieces[1]);
    tj_split_with_sizes(a, (int64_t[]){1, 3}, 2, 0, pieces, 2); OUT(pieces[1]);
    tj_unbind(a, 0, pieces, 4); OUT(pieces[3]);
    OUT(tj_reshape(img, (int64_t[]){8, 36}, 2)); OUT(tj_flatten(img, 1, 2)); OUT(tj_flatten(img, 1, -1));
    OUT(tj_contiguous(tj_t(a))); OUT(tj_cat((tj_tensor *[]){a, b}, 2, 1));
    OUT(tj_stack((tj_tensor *[]){a, b}, 2, 0));
    /* products, convolution, pooling */
    OUT(tj_mm(a, tj_t(b))); OUT(tj_bmm(tj_reshape(img, (int64_t[]){8, 6, 6}, 3), tj_reshape(img, (int64_t[]){8, 6, 6}, 3)));
    OUT(tj_matmul(img, tj_t(b))); OUT(tj_addmm(c5, a, tj_t(w65), 0.5, 2.0));
    OUT(tj_linear(a, w65, c5)); OUT(tj_linear(img, w65, NULL));
    OUT(tj_conv2d(img, w2, c4, two, 1, one, 1, one, 1, 1));
    OUT(tj_conv2d(img, tj_slice(w2, 1, 0, 2, 1), NULL, one, 1, zero, 1, two, 1, 2));
    OUT(tj_conv1d(tj_reshape(img, (int64_t[]){2, 4, 36}, 3), w1, c4, one, 1, one, 1, one, 1, 1));
    OUT(tj_conv_transpose2d(img, wt, NULL, two, 1, one, 1, one, 1, 1, one, 1));
    OUT(tj_max_pool2d(img, k3, 1, two, 1, one, 1, one, 1, false));
    OUT(tj_max_pool2d(img, s2, 1, NULL, 0, zero, 1, one, 1, false));
    OUT(tj_avg_pool2d(img, k3, 1, two, 1, one, 1, false, false));
    OUT(tj_avg_pool2d(img, k3, 1, one, 1, one, 1, false, true));
    OUT(tj_adaptive_avg_pool2d(img, (int64_t[]){3, 3}, 2)); OUT(tj_adaptive_avg_pool2d(img, (int64_t[]){1, 1}, 2));
    /* normalisation, softmax, losses, indexing */
    OUT(tj_batch_norm(img, c4, NULL, tj_mul_scalar(c4, 0.1), tj_add_scalar(tj_abs(c4), 1.0, 1.0), false, 0.1, 1e-5));
    OUT(tj_layer_norm(img, (int64_t[]){6, 6}, 2, NULL, NULL, 1e-5));
    OUT(tj_layer_norm(a, (int64_t[]){6}, 1, tj_select(w65, 0, 1), tj_select(w65, 0, 2), 1e-3));
    OUT(tj_group_norm(img, 2, c4, c4, 1e-5)); OUT(tj_group_norm(img, 4, NULL, c4, 1e-5));
    OUT(tj_softmax(a, 0)); OUT(tj_log_softmax(img, 1));
    OUT(tj_mse_loss(a, b, "none")); OUT(tj_mse_loss(a, b, "mean"));
    OUT(tj_nll_loss(tj_log_softmax(a, 1), cls, NULL, "mean", -100));
    OUT(tj_nll_loss(tj_log_softmax(a, 1), cls, tj_select(w65, 0, 0), "sum", 2));
    OUT(tj_nll_loss(tj_log_softmax(a, 1), cls, NULL, "none", -100));
    OUT(tj_cross_entropy_loss(a, cls, NULL, "mean", -100, 0.0));
    OUT(tj_binary_cross_entropy_with_logits(a, y01, p, tj_select(p, 0, 0), "mean"));
    OUT(tj_binary_cross_entropy_with_logits(a, y01, NULL, NULL, "none"));
    OUT(tj_embedding(emb, eidx, -1, false)); OUT(tj_index_select(a, 1, cls));
    OUT(tj_gather(a, 1, idx)); OUT(tj_scatter_add(a, 1, idx, b)); OUT(tj_one_hot(cls, 6));
    OUT(tj_dropout(a, 0.3, false, NULL));
#undef OUT
    return tj_last_status();
}

static tj_tensor *classes(tj_generator *gen, const int64_t *sizes, int nd, double n) {
    return tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(sizes, nd, TJ_F64, gen), n)), TJ_I64);
}

static void test_every_op(void **s) {
    (void)s;
    tj_scope_begin();
    tj_generator *gen = tj_generator_new(21);
    int64_t s46[2] = {4, 6}, simg[4] = {2, 4, 6, 6}, s4[1] = {4}, sw2[4] = {4, 4, 3, 3}, sw1[3] = {4, 4, 3};
    int64_t swt[4] = {4, 3, 3, 3}, semb[2] = {10, 3}, sw65[2] = {5, 6}, s5[1] = {5};
    tj_tensor *in[ZOO_IN] = {
        tj_randn(s46, 2, TJ_F32, gen), tj_randn(s46, 2, TJ_F32, gen), tj_randn(simg, 4, TJ_F32, gen),
        classes(gen, s4, 1, 6), classes(gen, s46, 2, 6), classes(gen, s46, 2, 10),
        tj_to_dtype(classes(gen, s46, 2, 2), TJ_F32), tj_randn(sw2, 4, TJ_F32, gen),
        tj_randn(sw1, 3, TJ_F32, gen), tj_randn(swt, 4, TJ_F32, gen), tj_randn(s4, 1, TJ_F32, gen),
        tj_randn(semb, 2, TJ_F32, gen), tj_randn(sw65, 2, TJ_F32, gen), tj_randn(s5, 1, TJ_F32, gen)};
    enum { N_OUT = 140 };
    tj_tensor *probe[N_OUT] = {0}; /* run once eagerly to count the outputs */
    if (zoo(NULL, in, ZOO_IN, probe, N_OUT) != TJ_OK) fail_msg("zoo: %s", tj_last_error());
    int n = 0;
    while (n < N_OUT && probe[n]) n++;
    tj_graph *g = tj_trace(zoo, NULL, in, ZOO_IN, n, NULL);
    if (!g) fail_msg("trace: %s", tj_last_error());
    assert_true(n > 100);
    round_trip("every exportable op", g, in, ZOO_IN, NULL, in, ZOO_IN, NULL);
    printf("  %d ops' outputs: checked, ONNX Runtime %s, imported back: equal\n", n,
           ort_python[0] ? "equal" : "skipped");
    tj_graph_free(g);
    tj_generator_free(gen);
    tj_scope_end();
}

/* Parameters as graph inputs: ONNX Runtime is fed them. */
static void test_params_as_inputs(void **s) {
    (void)s;
    tj_generator *gen = tj_generator_new(4);
    void *params = tjx_mlp.create(gen);
    tj_tensor *in[8] = {0}, *all[32];
    assert_int_equal(tjx_mlp.make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(tjx_mlp.forward, params, in, 1, 1, NULL);
    assert_non_null(g);
    int n = tj_graph_num_inputs(g);
    assert_true(n <= 32);
    for (int i = 0; i < n; i++) all[i] = i ? tj_graph_input_binding(g, i) : in[0];
    tj_onnx_export_options o = {.params_as_inputs = true};
    round_trip("mlp, parameters as inputs", g, in, 1, &o, all, n, NULL);
    tj_graph_free(g);
    tj_release(in[0]);
    tjx_mlp.destroy(params);
    tj_generator_free(gen);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp),           cmocka_unit_test(test_lstm_cell),
        cmocka_unit_test(test_lstm),          cmocka_unit_test(test_cnn),
        cmocka_unit_test(test_transformer),   cmocka_unit_test(test_train_mlp),
        cmocka_unit_test(test_train_lstm),    cmocka_unit_test(test_train_cnn),
        cmocka_unit_test(test_train_transformer), cmocka_unit_test(test_dynamic_sizes),
        cmocka_unit_test(test_params_as_inputs), cmocka_unit_test(test_fused),
        cmocka_unit_test(test_every_op),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
