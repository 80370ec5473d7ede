/* test_grad_nn.c — derivatives of the nn family (core/ops_nn.def): every row
 * is listed in tjg_rules_nn with a rule or a reason, every op with a rule has
 * cases below, and every case passes a first- and a second-order
 * finite-difference check in f64 through the graph autodiff. Training-mode
 * dropout, whose mask changes with every run, is checked with its generator
 * reset before each run. Sizes are tiny: finite differences run a graph twice
 * per element. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "passes/grad.h"
#include "tests/support/gradcheck.h"

enum { MAX_IN = 8 };

/* One call to check: the op's tensor inputs (NULL: an absent optional), its
 * attributes, and which inputs to differentiate (all floating ones unless
 * has_wrt). */
typedef struct gcase {
    int op;
    int n_in;
    tj_tensor *in[MAX_IN];
    tj_attr attrs[TJ_MAX_ARGS];
    bool wrt[MAX_IN], has_wrt;
} gcase;

typedef void (*make_fn)(gcase *k, tj_generator *g, int variant);

static const tj_arg *attr_arg(const gcase *k, const char *name, int *at) {
    const tj_schema *s = &tjc_op(k->op)->schema;
    for (int a = 0; a < s->n_attrs; a++)
        if (!strcmp(s->args[s->attr_pos[a]].name, name)) {
            *at = a;
            return &s->args[s->attr_pos[a]];
        }
    fail_msg("%s has no attribute %s", tjc_op(k->op)->name, name);
    return NULL;
}
static void set_attr(gcase *k, const char *name, tj_attr v) {
    int at = 0;
    attr_arg(k, name, &at);
    k->attrs[at] = v;
}
#define SET_F(k, name, v) set_attr(k, name, (tj_attr){.f = (v)})
#define SET_I(k, name, v) set_attr(k, name, (tj_attr){.i = (v)})
#define SET_B(k, name, v) set_attr(k, name, (tj_attr){.b = (v)})
#define SET_S(k, name, v) set_attr(k, name, (tj_attr){.s = (v)})

static void start(gcase *k, int op, int n_in) {
    memset(k, 0, sizeof *k);
    k->op = op;
    k->n_in = n_in;
    const tj_schema *s = &tjc_op(op)->schema;
    for (int a = 0; a < s->n_attrs; a++) k->attrs[a] = s->args[s->attr_pos[a]].def;
}
static void only(gcase *k, const bool *wrt) {
    k->has_wrt = true;
    memcpy(k->wrt, wrt, sizeof(bool) * (size_t)k->n_in);
}

static tj_tensor *rnd(tj_generator *g, double lo, double hi, int nd, const int64_t *sizes) {
    return tt_random(g, sizes, nd, TJ_F64, lo, hi);
}
#define N_ARGS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define R(g, lo, hi, ...) rnd(g, lo, hi, N_ARGS(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})
static tj_tensor *ints(const int64_t *v, int nd, const int64_t *sizes) {
    tj_tensor *t = tj_from_array(v, sizes, nd, TJ_I64);
    assert_non_null(t);
    return t;
}
#define IDX(values, ...) ints(values, N_ARGS(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})

static const char *const reductions[] = {"none", "mean", "sum"};

/* ---- normalisation --------------------------------------------------------------------
 * variants: bit 0 eval, bit 1 without weight and bias (and running stats in
 * training). */

static void mk_batch_norm(gcase *k, tj_generator *g, int v, int op) {
    bool eval = v & 1, bare = v & 2;
    start(k, op, 5);
    k->in[0] = R(g, -1.5, 1.5, 3, 2, 2);
    if (!bare) {
        k->in[1] = R(g, 0.5, 1.5, 2);
        k->in[2] = R(g, -1, 1, 2);
    }
    if (eval || !bare) {
        k->in[3] = R(g, -0.5, 0.5, 2);
        k->in[4] = R(g, 0.5, 1.5, 2);
    }
    SET_B(k, "training", !eval);
    SET_F(k, "momentum", 0.1);
    SET_F(k, "eps", 1e-5);
    only(k, (const bool[]){true, true, true, false, false}); /* running stats get none */
}
static void mk_native_batch_norm(gcase *k, tj_generator *g, int v) {
    mk_batch_norm(k, g, v, TJ_OP_native_batch_norm);
}
static void mk_batch_norm_c(gcase *k, tj_generator *g, int v) {
    mk_batch_norm(k, g, v, TJ_OP_batch_norm);
}

static void mk_native_batch_norm_backward(gcase *k, tj_generator *g, int v) {
    bool eval = v & 1, bare = v & 2;
    start(k, TJ_OP_native_batch_norm_backward, 7);
    k->in[0] = R(g, -1, 1, 3, 2, 2);
    k->in[1] = R(g, -1.5, 1.5, 3, 2, 2);
    if (!bare) k->in[2] = R(g, 0.5, 1.5, 2);
    int m = eval ? 3 : 5;
    k->in[m] = R(g, -0.5, 0.5, 2);
    k->in[m + 1] = R(g, 0.5, 1.5, 2);
    SET_B(k, "train", !eval);
    SET_F(k, "eps", 1e-5);
}

/* variant: bit 0 two normalised dims, bit 1 without weight and bias */
static const int64_t ns1[] = {3}, ns2[] = {2, 3};
static void mk_layer_norm(gcase *k, tj_generator *g, int v, int op) {
    bool two = v & 1, bare = v & 2;
    start(k, op, 3);
    k->in[0] = two ? R(g, -1.5, 1.5, 2, 2, 3) : R(g, -1.5, 1.5, 2, 3);
    if (!bare) {
        k->in[1] = two ? R(g, 0.5, 1.5, 2, 3) : R(g, 0.5, 1.5, 3);
        k->in[2] = two ? R(g, -1, 1, 2, 3) : R(g, -1, 1, 3);
    }
    set_attr(k, "normalized_shape", (tj_attr){.ints = {two ? ns2 : ns1, two ? 2 : 1}});
    SET_F(k, "eps", 1e-5);
}
static void mk_native_layer_norm(gcase *k, tj_generator *g, int v) {
    mk_layer_norm(k, g, v, TJ_OP_native_layer_norm);
}
static void mk_layer_norm_c(gcase *k, tj_generator *g, int v) {
    mk_layer_norm(k, g, v, TJ_OP_layer_norm);
}

static void mk_native_layer_norm_backward(gcase *k, tj_generator *g, int v) {
    bool two = v & 1, bare = v & 2;
    start(k, TJ_OP_native_layer_norm_backward, 6);
    k->in[0] = two ? R(g, -1, 1, 2, 2, 3) : R(g, -1, 1, 2, 3);
    k->in[1] = two ? R(g, -1.5, 1.5, 2, 2, 3) : R(g, -1.5, 1.5, 2, 3);
    k->in[2] = two ? R(g, -0.5, 0.5, 2, 1, 1) : R(g, -0.5, 0.5, 2, 1);
    k->in[3] = two ? R(g, 0.5, 1.5, 2, 1, 1) : R(g, 0.5, 1.5, 2, 1);
    if (!bare) {
        k->in[4] = two ? R(g, 0.5, 1.5, 2, 3) : R(g, 0.5, 1.5, 3);
        k->in[5] = two ? R(g, -1, 1, 2, 3) : R(g, -1, 1, 3);
    }
    set_attr(k, "normalized_shape", (tj_attr){.ints = {two ? ns2 : ns1, two ? 2 : 1}});
}

/* input [2, 4, 2] (variant bit 0: [2, 4], no spatial dims) in 2 groups;
 * bit 1: without weight and bias */
static void mk_group_norm(gcase *k, tj_generator *g, int v, int op) {
    bool flat = v & 1, bare = v & 2;
    start(k, op, 3);
    k->in[0] = flat ? R(g, -1.5, 1.5, 2, 4) : R(g, -1.5, 1.5, 2, 4, 2);
    if (!bare) {
        k->in[1] = R(g, 0.5, 1.5, 4);
        k->in[2] = R(g, -1, 1, 4);
    }
    if (op == TJ_OP_group_norm) {
        SET_I(k, "num_groups", 2);
    } else {
        SET_I(k, "N", 2);
        SET_I(k, "C", 4);
        SET_I(k, "HxW", flat ? 1 : 2);
        SET_I(k, "group", 2);
    }
    SET_F(k, "eps", 1e-5);
}
static void mk_native_group_norm(gcase *k, tj_generator *g, int v) {
    mk_group_norm(k, g, v, TJ_OP_native_group_norm);
}
static void mk_group_norm_c(gcase *k, tj_generator *g, int v) {
    mk_group_norm(k, g, v, TJ_OP_group_norm);
}

static void mk_native_group_norm_backward(gcase *k, tj_generator *g, int v) {
    bool bare = v & 2;
    start(k, TJ_OP_native_group_norm_backward, 5);
    k->in[0] = R(g, -1, 1, 2, 4, 2);
    k->in[1] = R(g, -1.5, 1.5, 2, 4, 2);
    k->in[2] = R(g, -0.5, 0.5, 2, 2);
    k->in[3] = R(g, 0.5, 1.5, 2, 2);
    if (!bare) k->in[4] = R(g, 0.5, 1.5, 4);
    SET_I(k, "N", 2);
    SET_I(k, "C", 4);
    SET_I(k, "HxW", 2);
    SET_I(k, "group", 2);
}

/* ---- softmax: variant = dim ----------------------------------------------------------- */

static void mk_softmax(gcase *k, tj_generator *g, int v, int op) {
    start(k, op, 1);
    k->in[0] = R(g, -2, 2, 2, 3);
    SET_I(k, "dim", v);
}
static void mk_softmax_c(gcase *k, tj_generator *g, int v) { mk_softmax(k, g, v, TJ_OP_softmax); }
static void mk_log_softmax(gcase *k, tj_generator *g, int v) {
    mk_softmax(k, g, v, TJ_OP_log_softmax);
}

static void mk_softmax_bwd(gcase *k, tj_generator *g, int v, int op) {
    start(k, op, 2);
    k->in[0] = R(g, -1, 1, 2, 3);
    k->in[1] = op == TJ_OP_softmax_backward_data ? R(g, 0.1, 0.9, 2, 3) : R(g, -2, -0.1, 2, 3);
    SET_I(k, "dim", v);
    set_attr(k, "input_dtype", (tj_attr){.dtype = TJ_F64});
}
static void mk_softmax_backward_data(gcase *k, tj_generator *g, int v) {
    mk_softmax_bwd(k, g, v, TJ_OP_softmax_backward_data);
}
static void mk_log_softmax_backward_data(gcase *k, tj_generator *g, int v) {
    mk_softmax_bwd(k, g, v, TJ_OP_log_softmax_backward_data);
}

/* ---- losses: variant % 3 = reduction; bit 2 (4): class weights / weight;
 * bit 3 (8): ignore_index / pos_weight; bit 4 (16): spatial [N, C, d] ------- */

static const int64_t targets[] = {0, 2, 3}, targets_sp[] = {1, 0, 2, 2};

/* grad_output of a loss's backward op: the loss's sizes */
static tj_tensor *loss_grad(tj_generator *g, int red, const tj_tensor *shape_of) {
    if (red) return tt_random(g, NULL, 0, TJ_F64, 0.5, 1.5);
    return tt_random(g, tj_sizes(shape_of), tj_ndim(shape_of), TJ_F64, -1, 1);
}

static void mk_nll(gcase *k, tj_generator *g, int v, int op) {
    bool bwd = op == TJ_OP_nll_loss_backward, sp = v & 16;
    int o = bwd ? 1 : 0;
    start(k, op, 3 + o);
    k->in[o] = sp ? R(g, -2, 0, 2, 4, 2) : R(g, -2, 0, 3, 4);
    k->in[o + 1] = sp ? IDX(targets_sp, 2, 2) : IDX(targets, 3);
    if (v & 4) k->in[o + 2] = R(g, 0.5, 1.5, 4);
    if (bwd) k->in[0] = loss_grad(g, v % 3, k->in[o + 1]);
    SET_S(k, "reduction", reductions[v % 3]);
    SET_I(k, "ignore_index", v & 8 ? 2 : -100);
    /* the class weights get no gradient, as in PyTorch */
    only(k, bwd ? (const bool[]){true, true, false, false} : (const bool[]){true, false, false});
}
static void mk_nll_loss(gcase *k, tj_generator *g, int v) { mk_nll(k, g, v, TJ_OP_nll_loss); }
static void mk_nll_loss_backward(gcase *k, tj_generator *g, int v) {
    mk_nll(k, g, v, TJ_OP_nll_loss_backward);
}
static void mk_cross_entropy(gcase *k, tj_generator *g, int v) {
    mk_nll(k, g, v, TJ_OP_cross_entropy_loss);
    tj_release(k->in[0]); /* logits, not log-probabilities */
    k->in[0] = v & 16 ? R(g, -2, 2, 2, 4, 2) : R(g, -2, 2, 3, 4);
    if (v & 32) SET_F(k, "label_smoothing", 0.2);
}

static void mk_mse(gcase *k, tj_generator *g, int v, int op) {
    int o = op == TJ_OP_mse_loss_backward ? 1 : 0;
    start(k, op, 2 + o);
    /* 4: self [3] broadcast against target [2, 3]; 8: target [1, 3] against self [2, 3] */
    k->in[o] = v & 4 ? R(g, -1, 1, 3) : R(g, -1, 1, 2, 3);
    k->in[o + 1] = v & 8 ? R(g, -1, 1, 1, 3) : R(g, -1, 1, 2, 3);
    if (o) k->in[0] = loss_grad(g, v % 3, k->in[1]);
    SET_S(k, "reduction", reductions[v % 3]);
}
static void mk_mse_loss(gcase *k, tj_generator *g, int v) { mk_mse(k, g, v, TJ_OP_mse_loss); }
static void mk_mse_loss_backward(gcase *k, tj_generator *g, int v) {
    mk_mse(k, g, v, TJ_OP_mse_loss_backward);
}

/* self [2, 3] with weight [3] and pos_weight [3] (broadcast) */
static void mk_bce(gcase *k, tj_generator *g, int v, int op) {
    int o = op == TJ_OP_binary_cross_entropy_with_logits_backward ? 1 : 0;
    start(k, op, 4 + o);
    k->in[o] = R(g, -2, 2, 2, 3);
    k->in[o + 1] = R(g, 0, 1, 2, 3);
    if (v & 4) k->in[o + 2] = R(g, 0.5, 1.5, 3);
    if (v & 8) k->in[o + 3] = R(g, 0.5, 2.5, 3);
    if (o) k->in[0] = loss_grad(g, v % 3, k->in[1]);
    SET_S(k, "reduction", reductions[v % 3]);
}
static void mk_bce_c(gcase *k, tj_generator *g, int v) {
    mk_bce(k, g, v, TJ_OP_binary_cross_entropy_with_logits);
}
static void mk_bce_backward(gcase *k, tj_generator *g, int v) {
    mk_bce(k, g, v, TJ_OP_binary_cross_entropy_with_logits_backward);
}

/* ---- indexing ---------------------------------------------------------------------------
 * embedding: variant bit 0 padding_idx 2, bit 1 scale_grad_by_freq; the
 * indices repeat rows and hit the padding row. */

static const int64_t emb_idx[] = {2, 0, 4, 2, 2, 1};

static void mk_embedding(gcase *k, tj_generator *g, int v) {
    start(k, TJ_OP_embedding, 2);
    k->in[0] = R(g, -1, 1, 5, 3);
    k->in[1] = IDX(emb_idx, 2, 3);
    SET_I(k, "padding_idx", v & 1 ? 2 : -1);
    SET_B(k, "scale_grad_by_freq", v & 2);
}
static void mk_embedding_dense_backward(gcase *k, tj_generator *g, int v) {
    start(k, TJ_OP_embedding_dense_backward, 2);
    k->in[0] = R(g, -1, 1, 2, 3, 3);
    k->in[1] = IDX(emb_idx, 2, 3);
    SET_I(k, "num_weights", 5);
    SET_I(k, "padding_idx", v & 1 ? 2 : -1);
    SET_B(k, "scale_grad_by_freq", v & 2);
}

/* variant = dim; indices repeat */
static const int64_t sel_idx[] = {2, 0, 2};
static const int64_t gather0[] = {2, 0, 1, 1, 1, 2}, gather1[] = {3, 0, 1, 1, 0, 3};

static void mk_index_select(gcase *k, tj_generator *g, int v) {
    start(k, TJ_OP_index_select, 2);
    k->in[0] = R(g, -1, 1, 3, 4);
    k->in[1] = IDX(sel_idx, 3);
    SET_I(k, "dim", v);
}
/* index [2, 3] (dim 0) or [3, 2] (dim 1): smaller than self in the other dim */
static void mk_gather(gcase *k, tj_generator *g, int v) {
    start(k, TJ_OP_gather, 2);
    k->in[0] = R(g, -1, 1, 3, 4);
    k->in[1] = v ? IDX(gather1, 3, 2) : IDX(gather0, 2, 3);
    SET_I(k, "dim", v);
}
/* src larger than index in the other dim: its tail gets a zero gradient */
static void mk_scatter_add(gcase *k, tj_generator *g, int v) {
    start(k, TJ_OP_scatter_add, 3);
    k->in[0] = R(g, -1, 1, 3, 4);
    k->in[1] = v ? IDX(gather1, 3, 2) : IDX(gather0, 2, 3);
    k->in[2] = v ? R(g, -1, 1, 3, 3) : R(g, -1, 1, 2, 4);
    SET_I(k, "dim", v);
}

/* ---- dropout: variant 0 eval, 1 training with p = 0, 2 training with p = 1 ---------- */

static tj_generator *dropout_gen;

static void mk_dropout(gcase *k, tj_generator *g, int v, int op) {
    start(k, op, 1);
    k->in[0] = R(g, -1, 1, 2, 3);
    SET_F(k, "p", v == 0 ? 0.5 : v == 1 ? 0.0 : 1.0);
    SET_B(k, "train", v != 0);
    set_attr(k, "generator", (tj_attr){.gen = dropout_gen});
}
static void mk_native_dropout(gcase *k, tj_generator *g, int v) {
    mk_dropout(k, g, v, TJ_OP_native_dropout);
}
static void mk_dropout_c(gcase *k, tj_generator *g, int v) { mk_dropout(k, g, v, TJ_OP_dropout); }
static void mk_native_dropout_backward(gcase *k, tj_generator *g, int v) {
    (void)v;
    start(k, TJ_OP_native_dropout_backward, 2);
    k->in[0] = R(g, -1, 1, 2, 3);
    k->in[1] = tt_random(g, (const int64_t[]){2, 3}, 2, TJ_BOOL, 0, 1);
    SET_F(k, "scale", 2.0);
}

/* ---- the table ---------------------------------------------------------------------------- */

typedef struct case_row {
    const char *label;
    int op;
    make_fn make;
    int variant;
    /* the first-order rule is PyTorch's by design rather than the derivative
     * (embedding's padding_idx and scale_grad_by_freq): only the second
     * order is checked here, the first in embedding_padding_and_frequency */
    bool by_design;
} case_row;

#define ROW(label, op, make, v) {label, TJ_OP_##op, make, v, false}
#define ROW_BY_DESIGN(label, op, make, v) {label, TJ_OP_##op, make, v, true}
static const case_row cases[] = {
    ROW("native_batch_norm train", native_batch_norm, mk_native_batch_norm, 0),
    ROW("native_batch_norm eval", native_batch_norm, mk_native_batch_norm, 1),
    ROW("native_batch_norm train, no affine or running stats",
        native_batch_norm, mk_native_batch_norm, 2),
    ROW("native_batch_norm eval, no affine", native_batch_norm, mk_native_batch_norm, 3),
    ROW("batch_norm train", batch_norm, mk_batch_norm_c, 0),
    ROW("batch_norm eval", batch_norm, mk_batch_norm_c, 1),
    ROW("batch_norm train, no affine or running stats", batch_norm, mk_batch_norm_c, 2),
    ROW("batch_norm eval, no affine", batch_norm, mk_batch_norm_c, 3),
    ROW("native_batch_norm_backward train",
        native_batch_norm_backward, mk_native_batch_norm_backward, 0),
    ROW("native_batch_norm_backward eval",
        native_batch_norm_backward, mk_native_batch_norm_backward, 1),
    ROW("native_batch_norm_backward train, no weight",
        native_batch_norm_backward, mk_native_batch_norm_backward, 2),
    ROW("native_batch_norm_backward eval, no weight",
        native_batch_norm_backward, mk_native_batch_norm_backward, 3),
    ROW("native_layer_norm [3]", native_layer_norm, mk_native_layer_norm, 0),
    ROW("native_layer_norm [2, 3]", native_layer_norm, mk_native_layer_norm, 1),
    ROW("native_layer_norm [2, 3], no affine", native_layer_norm, mk_native_layer_norm, 3),
    ROW("layer_norm [3]", layer_norm, mk_layer_norm_c, 0),
    ROW("layer_norm [2, 3]", layer_norm, mk_layer_norm_c, 1),
    ROW("layer_norm [3], no affine", layer_norm, mk_layer_norm_c, 2),
    ROW("native_layer_norm_backward [3]",
        native_layer_norm_backward, mk_native_layer_norm_backward, 0),
    ROW("native_layer_norm_backward [2, 3], no affine",
        native_layer_norm_backward, mk_native_layer_norm_backward, 3),
    ROW("native_group_norm", native_group_norm, mk_native_group_norm, 0),
    ROW("native_group_norm [N, C], no affine", native_group_norm, mk_native_group_norm, 3),
    ROW("group_norm", group_norm, mk_group_norm_c, 0),
    ROW("group_norm [N, C]", group_norm, mk_group_norm_c, 1),
    ROW("group_norm, no affine", group_norm, mk_group_norm_c, 2),
    ROW("native_group_norm_backward", native_group_norm_backward, mk_native_group_norm_backward, 0),
    ROW("native_group_norm_backward, no weight",
        native_group_norm_backward, mk_native_group_norm_backward, 2),
    ROW("softmax dim 0", softmax, mk_softmax_c, 0),
    ROW("softmax dim 1", softmax, mk_softmax_c, 1),
    ROW("log_softmax dim 1", log_softmax, mk_log_softmax, 1),
    ROW("_softmax_backward_data", softmax_backward_data, mk_softmax_backward_data, 1),
    ROW("_log_softmax_backward_data", log_softmax_backward_data, mk_log_softmax_backward_data, 0),
    ROW("nll_loss none", nll_loss, mk_nll_loss, 0),
    ROW("nll_loss mean, weights, ignore_index", nll_loss, mk_nll_loss, 1 | 4 | 8),
    ROW("nll_loss sum, weights", nll_loss, mk_nll_loss, 2 | 4),
    ROW("nll_loss mean, [N, C, d]", nll_loss, mk_nll_loss, 1 | 16),
    ROW("nll_loss_backward none, ignore_index", nll_loss_backward, mk_nll_loss_backward, 0 | 8),
    ROW("nll_loss_backward mean, weights", nll_loss_backward, mk_nll_loss_backward, 1 | 4),
    ROW("nll_loss_backward sum", nll_loss_backward, mk_nll_loss_backward, 2),
    ROW("cross_entropy_loss none, weights", cross_entropy_loss, mk_cross_entropy, 0 | 4),
    ROW("cross_entropy_loss mean, weights, ignore_index",
        cross_entropy_loss, mk_cross_entropy, 1 | 4 | 8),
    ROW("cross_entropy_loss sum, [N, C, d]", cross_entropy_loss, mk_cross_entropy, 2 | 16),
    ROW("cross_entropy_loss none, label_smoothing", cross_entropy_loss, mk_cross_entropy, 0 | 32),
    ROW("cross_entropy_loss mean, weights, ignore_index, label_smoothing",
        cross_entropy_loss, mk_cross_entropy, 1 | 4 | 8 | 32),
    ROW("cross_entropy_loss sum, [N, C, d], weights, label_smoothing",
        cross_entropy_loss, mk_cross_entropy, 2 | 4 | 16 | 32),
    ROW("mse_loss none", mse_loss, mk_mse_loss, 0),
    ROW("mse_loss mean", mse_loss, mk_mse_loss, 1),
    ROW("mse_loss sum", mse_loss, mk_mse_loss, 2),
    ROW("mse_loss none, self broadcast", mse_loss, mk_mse_loss, 0 | 4),
    ROW("mse_loss mean, self broadcast", mse_loss, mk_mse_loss, 1 | 4),
    ROW("mse_loss sum, target broadcast", mse_loss, mk_mse_loss, 2 | 8),
    ROW("mse_loss_backward none", mse_loss_backward, mk_mse_loss_backward, 0),
    ROW("mse_loss_backward mean, target broadcast", mse_loss_backward, mk_mse_loss_backward, 1 | 8),
    ROW("mse_loss_backward mean", mse_loss_backward, mk_mse_loss_backward, 1),
    ROW("mse_loss_backward sum", mse_loss_backward, mk_mse_loss_backward, 2),
    ROW("bce_with_logits none", binary_cross_entropy_with_logits, mk_bce_c, 0),
    ROW("bce_with_logits mean, weight, pos_weight",
        binary_cross_entropy_with_logits, mk_bce_c, 1 | 4 | 8),
    ROW("bce_with_logits sum, pos_weight", binary_cross_entropy_with_logits, mk_bce_c, 2 | 8),
    ROW("bce_with_logits none, weight", binary_cross_entropy_with_logits, mk_bce_c, 0 | 4),
    ROW("bce_with_logits_backward none, weight, pos_weight",
        binary_cross_entropy_with_logits_backward, mk_bce_backward, 0 | 4 | 8),
    ROW("bce_with_logits_backward mean",
        binary_cross_entropy_with_logits_backward, mk_bce_backward, 1),
    ROW("bce_with_logits_backward sum, pos_weight",
        binary_cross_entropy_with_logits_backward, mk_bce_backward, 2 | 8),
    ROW("embedding", embedding, mk_embedding, 0),
    ROW_BY_DESIGN("embedding, padding_idx", embedding, mk_embedding, 1),
    ROW_BY_DESIGN("embedding, scale_grad_by_freq", embedding, mk_embedding, 2),
    ROW_BY_DESIGN("embedding, padding_idx, scale_grad_by_freq", embedding, mk_embedding, 3),
    ROW("embedding_dense_backward", embedding_dense_backward, mk_embedding_dense_backward, 0),
    ROW("embedding_dense_backward, padding_idx",
        embedding_dense_backward, mk_embedding_dense_backward, 1),
    ROW("embedding_dense_backward, padding_idx, scale_grad_by_freq",
        embedding_dense_backward, mk_embedding_dense_backward, 3),
    ROW("index_select dim 0", index_select, mk_index_select, 0),
    ROW("index_select dim 1", index_select, mk_index_select, 1),
    ROW("gather dim 0", gather, mk_gather, 0),
    ROW("gather dim 1", gather, mk_gather, 1),
    ROW("scatter_add dim 0", scatter_add, mk_scatter_add, 0),
    ROW("scatter_add dim 1", scatter_add, mk_scatter_add, 1),
    ROW("native_dropout eval", native_dropout, mk_native_dropout, 0),
    ROW("native_dropout train, p = 0", native_dropout, mk_native_dropout, 1),
    ROW("native_dropout train, p = 1", native_dropout, mk_native_dropout, 2),
    ROW("dropout eval", dropout, mk_dropout_c, 0),
    ROW("dropout train, p = 0", dropout, mk_dropout_c, 1),
    ROW("dropout train, p = 1", dropout, mk_dropout_c, 2),
    ROW("native_dropout_backward", native_dropout_backward, mk_native_dropout_backward, 0),
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ---- checks ---------------------------------------------------------------------------------- */

/* The family's rows, read from the file the op table is built from. */
static const int family[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu) TJ_OP_##id,
#include "core/ops_nn.def"
#undef TJ_OP
};
enum { N_FAMILY = sizeof family / sizeof family[0] };

static void every_nn_op_is_listed(void **state) {
    (void)state;
    for (int f = 0; f < N_FAMILY; f++) {
        const tj_op_info *op = tjc_op(family[f]);
        const tjg_rule_entry *e = NULL;
        for (const tjg_rule_entry *r = tjg_rules_nn; r->op >= 0; r++)
            if (r->op == op->id) e = r;
        if (!e) fail_msg("%s is not listed in tjg_rules_nn", op->name);
        if (tjg_rule_for(op) != e) fail_msg("%s is listed in another family's table too", op->name);
        if (!e->rule && !e->why) fail_msg("%s has neither a rule nor a reason", op->name);
        bool has_case = false;
        for (int k = 0; k < N_CASES; k++) has_case |= cases[k].op == op->id;
        if (e->rule && !has_case) fail_msg("%s has a rule but no gradient check case", op->name);
    }
    for (const tjg_rule_entry *r = tjg_rules_nn; r->op >= 0; r++) {
        bool ours = false;
        for (int f = 0; f < N_FAMILY; f++) ours |= family[f] == r->op;
        if (!ours)
            fail_msg("%s is in tjg_rules_nn but is no row of ops_nn.def", tjc_op(r->op)->name);
    }
}

static void run_cases(bool second_order) {
    tj_generator *g = tj_generator_new(17);
    dropout_gen = tj_generator_new(3);
    for (int i = 0; i < N_CASES; i++) {
        if (cases[i].by_design && !second_order) continue;
        gcase k;
        cases[i].make(&k, g, cases[i].variant);
        assert_int_equal(k.op, cases[i].op);
        const tj_op_info *op = tjc_op(k.op);
        const bool *wrt = k.has_wrt ? k.wrt : NULL;
        if (second_order) tt_gradgradcheck_op(op, k.in, k.n_in, k.attrs, wrt, cases[i].label);
        else tt_gradcheck_op(op, k.in, k.n_in, k.attrs, wrt, cases[i].label);
        for (int j = 0; j < k.n_in; j++) tj_release(k.in[j]);
    }
    tj_generator_free(dropout_gen);
    tj_generator_free(g);
}

static void first_order(void **state) {
    (void)state;
    run_cases(false);
}
static void second_order(void **state) {
    (void)state;
    run_cases(true);
}

/* The gradient of <embedding(w, idx), v> with respect to w, through the graph. */
static tj_tensor *embedding_grad(tj_generator *g, int variant, tj_tensor *v) {
    gcase k;
    mk_embedding(&k, g, variant);
    tj_graph *fwd = tt_op_graph(tjc_op(TJ_OP_embedding), k.in, 2, k.attrs);
    assert_non_null(fwd);
    tj_graph *gg = tj_grad_graph(fwd, (const bool[]){true, false});
    if (!gg) fail_msg("tj_grad_graph: %s", tj_last_error());
    tj_compile_options o = {.passes = "dce"};
    tj_program *p = tj_compile(gg, &o);
    assert_non_null(p);
    tj_tensor *grad = NULL;
    if (tt_gradcheck_run(p, (tj_tensor *const[]){k.in[0], k.in[1], v}, &grad) != TJ_OK)
        fail_msg("run: %s", tj_last_error());
    tj_program_free(p);
    tj_graph_free(gg);
    tj_graph_free(fwd);
    tj_release(k.in[0]);
    tj_release(k.in[1]);
    return grad;
}

/* As PyTorch: padding_idx's row gets no gradient, and scale_grad_by_freq
 * divides each row's gradient by its index's count (emb_idx: 2 three times,
 * 0, 1 and 4 once). The plain case passes the finite-difference check. */
static void embedding_padding_and_frequency(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(29);
    tj_tensor *v = R(g, -1, 1, 2, 3, 3);
    tj_tensor *plain = embedding_grad(g, 0, v);
    tt_ref want = tt_ref_of(plain);
    for (int variant = 1; variant <= 3; variant++) {
        tj_tensor *got = embedding_grad(g, variant, v);
        tt_ref r = tt_ref_of(got);
        for (int64_t e = 0; e < r.numel; e++) {
            int64_t row = e / 3;
            double expect = want.v[e];
            if (variant & 2 && row == 2) expect /= 3;
            if (variant & 1 && row == 2) expect = 0;
            if (r.v[e] != expect && !(fabs(r.v[e] - expect) <= 1e-14))
                fail_msg("variant %d, element %lld: %g, expected %g", variant, (long long)e, r.v[e],
                         expect);
        }
        tt_ref_free(&r);
        tj_release(got);
    }
    tt_ref_free(&want);
    tj_release(plain);
    tj_release(v);
    tj_generator_free(g);
}

/* ---- dropout in training --------------------------------------------------------------
 * The mask changes with every run, so each run below starts from the same
 * generator state: then native_dropout is linear in x with a fixed mask. */

static tj_program *compile(const tj_graph *g) {
    tj_compile_options o = {.passes = "dce"};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    return p;
}

static void run_from(tj_generator *drop, const tj_program *p, tj_tensor *const *in,
                     tj_tensor **out) {
    tj_generator_set_state(drop, 5, 0);
    if (tt_gradcheck_run(p, in, out) != TJ_OK) fail_msg("run: %s", tj_last_error());
}

static void native_dropout_in_training(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(31), *drop = tj_generator_new(5);
    gcase k;
    start(&k, TJ_OP_native_dropout, 1);
    k.in[0] = R(g, -1, 1, 3, 4);
    SET_F(&k, "p", 0.5);
    SET_B(&k, "train", true);
    set_attr(&k, "generator", (tj_attr){.gen = drop});
    const int64_t sizes[2] = {3, 4};
    tj_graph *fwd = tt_op_graph(tjc_op(TJ_OP_native_dropout), k.in, 1, k.attrs);
    assert_non_null(fwd);
    tj_graph *gg = tj_grad_graph(fwd, (const bool[]){true});
    if (!gg) fail_msg("tj_grad_graph: %s", tj_last_error());
    /* second order, with respect to x and the output's gradient */
    tj_graph *ggg = tj_grad_graph(gg, (const bool[]){true, true, false});
    if (!ggg) fail_msg("tj_grad_graph (second order): %s", tj_last_error());
    tj_program *pf = compile(fwd), *pg = compile(gg), *pgg = compile(ggg);
    tj_tensor *x = tj_clone(k.in[0]), *v = R(g, -1, 1, 3, 4), *u = R(g, -1, 1, 3, 4);
    tj_tensor *no_mask_grad = tj_zeros(sizes, 2, TJ_BOOL);
    tj_tensor *out[2], *dx, *second[2];
    run_from(drop, pf, &x, out);
    run_from(drop, pg, (tj_tensor *const[]){x, v, no_mask_grad}, &dx);
    run_from(drop, pgg, (tj_tensor *const[]){x, v, no_mask_grad, u}, second);
    tt_ref mask = tt_ref_of(out[1]), rv = tt_ref_of(v), ru = tt_ref_of(u), rdx = tt_ref_of(dx);
    tt_ref dxx = tt_ref_of(second[0]), dxv = tt_ref_of(second[1]);
    int kept = 0;
    double *xp = tj_data(x);
    for (int64_t e = 0; e < 12; e++) {
        kept += mask.v[e] != 0;
        assert_true(rdx.v[e] == rv.v[e] * mask.v[e] * 2); /* exact: scale 2 */
        assert_true(dxx.v[e] == 0);
        assert_true(dxv.v[e] == ru.v[e] * mask.v[e] * 2);
        double x0 = xp[e], h = 1e-6, sides[2];
        for (int side = 0; side < 2; side++) {
            tj_tensor *o[2];
            xp[e] = x0 + (side ? -h : h);
            run_from(drop, pf, &x, o);
            tt_ref ro = tt_ref_of(o[0]);
            sides[side] = 0;
            for (int64_t j = 0; j < 12; j++) sides[side] += ro.v[j] * rv.v[j];
            tt_ref_free(&ro);
            tj_release(o[0]);
            tj_release(o[1]);
        }
        xp[e] = x0;
        double numeric = (sides[0] - sides[1]) / (2 * h);
        if (!(fabs(numeric - rdx.v[e]) <= 1e-6))
            fail_msg("element %lld: derived %g, finite difference %g", (long long)e, rdx.v[e],
                     numeric);
    }
    assert_true(kept > 0 && kept < 12); /* a mask worth the name */
    tt_ref_free(&mask), tt_ref_free(&rv), tt_ref_free(&ru), tt_ref_free(&rdx);
    tt_ref_free(&dxx), tt_ref_free(&dxv);
    tj_release(out[0]), tj_release(out[1]), tj_release(dx);
    tj_release(second[0]), tj_release(second[1]);
    tj_release(x), tj_release(v), tj_release(u), tj_release(no_mask_grad), tj_release(k.in[0]);
    tj_program_free(pf), tj_program_free(pg), tj_program_free(pgg);
    tj_graph_free(ggg), tj_graph_free(gg), tj_graph_free(fwd);
    tj_generator_free(drop);
    tj_generator_free(g);
}

/* dropout keeps no mask: in training with 0 < p < 1 autodiff refuses it and
 * names the op to use instead. */
/* aten::dropout in training is differentiated as native_dropout, whose mask
 * backward saves: with ones in and ones back, the gradient is the mask times
 * the scale, which is the output itself. */
static void dropout_in_training_gets_its_mask(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(37);
    int64_t sz[2] = {4, 5};
    tj_tensor *x = tj_ones(sz, 2, TJ_F64);
    tj_attr attrs[3] = {{.f = 0.3}, {.b = true}, {.gen = g}};
    tj_graph *fwd = tt_op_graph(tjc_op(TJ_OP_dropout), &x, 1, attrs);
    assert_non_null(fwd);
    bool want[1] = {true};
    tj_compile_options o = {.requires_grad = want, .passes = ""};
    tj_program *p = tj_compile(fwd, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    bool native = false;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)tj_program_graph(p))); n; n = tj_node_next(n))
        native |= tj_node_op(n) == tjc_op(TJ_OP_native_dropout);
    assert_true(native);
    tj_tensor *out, *gx = NULL;
    tj_tensor *xr = tt_gradcheck_device_mode() ? tj_to_device(x, TJ_DEVICE_CUDA(0)) : x;
    assert_int_equal(tj_run(p, &xr, &out), TJ_OK);
    assert_int_equal(tj_backward(p, NULL, &gx), TJ_OK);
    tt_ref r = tt_ref_of(out);
    tt_assert_close_ref(gx, &r, 0, 0);
    int dropped = 0;
    for (int64_t i = 0; i < r.numel; i++) dropped += r.v[i] == 0;
    assert_true(dropped > 0 && dropped < r.numel); /* the mask is not trivial */
    tt_ref_free(&r);
    tj_release(out);
    tj_release(gx);
    tj_program_free(p);
    tj_graph_free(fwd);
    tj_release(x);
    tj_generator_free(g);
}

/* ---- a chain of rules ----------------------------------------------------------------
 * Second derivatives of a small classifier head, batch_norm (training) ->
 * layer_norm -> log_softmax -> nll_loss, the way a gradient penalty takes
 * them: the rules compose across ops, not only one op at a time. */

static tj_status head(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    static const int64_t width[1] = {4};
    tj_scope_begin();
    tj_tensor *h = tj_batch_norm(in[0], in[1], in[2], NULL, NULL, true, 0.1, 1e-5);
    h = tj_layer_norm(h, width, 1, in[3], NULL, 1e-5);
    out[0] = tj_nll_loss(tj_log_softmax(h, 1), in[4], NULL, "mean", -100);
    tj_status st = out[0] ? TJ_OK : tj_last_status();
    if (out[0]) tj_keep(out[0]);
    tj_scope_end();
    return st;
}

static void second_order_through_a_chain(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(41);
    tj_tensor *target = IDX(targets, 3);
    tj_tensor *in[5] = {R(g, -1.5, 1.5, 3, 4), R(g, 0.5, 1.5, 4), R(g, -1, 1, 4), R(g, 0.5, 1.5, 4),
                        target};
    tj_graph *fwd = tj_trace(head, NULL, in, 5, 1, NULL);
    if (!fwd) fail_msg("trace: %s", tj_last_error());
    bool wrt[5] = {true, true, true, true, false};
    tj_graph *grad = tj_grad_graph(fwd, wrt);
    if (!grad) fail_msg("tj_grad_graph: %s", tj_last_error());
    tj_tensor *seed = tt_random(g, NULL, 0, TJ_F64, 0.5, 1.5); /* the loss's gradient */
    tj_tensor *all[6] = {in[0], in[1], in[2], in[3], target, seed};
    bool wrt2[6] = {true, true, true, true, false, true};
    tt_gradcheck_graph(fwd, all, wrt, 1e-6, 1e-5, "classifier head");
    tt_gradcheck_graph(grad, all, wrt2, 1e-5, 1e-4, "classifier head (second order)");
    tj_graph_free(grad);
    tj_graph_free(fwd);
    for (int i = 0; i < 4; i++) tj_release(in[i]);
    tj_release(seed);
    tj_release(target);
    tj_generator_free(g);
}

int main(void) {
    TT_GRADCHECK_SKIP_WITHOUT_DEVICE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_nn_op_is_listed),
        cmocka_unit_test(first_order),
        cmocka_unit_test(second_order),
        cmocka_unit_test(embedding_padding_and_frequency),
        cmocka_unit_test(native_dropout_in_training),
        cmocka_unit_test(dropout_in_training_gets_its_mask),
        cmocka_unit_test(second_order_through_a_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
