/* fold_batch_norm.c — an eval-mode batch_norm of a convolution's result
 * folds into the convolution's weights:
 *
 *     batch_norm(conv2d(x, w, b, ...), gamma, beta, mean, var, training=False, eps)
 *  -> conv2d(x, w * s.reshape(C, 1, 1, 1), (b - mean) * s + beta, ...)
 *     with s = gamma * rsqrt(var + eps)
 *
 * (conv1d alike, s reshaped to [C, 1, 1]; a missing conv bias reads as zero,
 * a missing gamma as one, a missing beta as zero). The weights are graph
 * inputs read by reference, so the folded ones are computed by the graph at
 * every replay: a few ops over the weights and [C] vectors (the fuser makes
 * them one or two kernels), against a whole pass over the convolution's
 * output that batch_norm cost.
 *
 * Conditions, all required:
 *  - aten::batch_norm with training false, or aten::native_batch_norm with
 *    training false whose statistics outputs nobody reads; running_mean and
 *    running_var given (eval mode normalises by them; without them there is
 *    nothing to fold);
 *  - its input the result of aten::conv1d or aten::conv2d read by nothing
 *    else (not a graph output either);
 *  - one dtype, f32 or f64, for the convolution's result, its weight and
 *    bias, and batch_norm's vectors; all on the CPU (CUDA graphs are left as
 *    they are); the result's sizes known, with C channels, the weight's
 *    first size C, every vector of sizes [C];
 *  - nothing writes in place between the convolution and the batch_norm.
 *
 * aten::conv_transpose2d is left alone: its weight is [C_in, C_out/groups,
 * kh, kw], so the per-output-channel scale falls on its second dim and, with
 * groups, on slices of it; a different rewrite, for a rarer pattern.
 *
 * An eval-mode batch_norm writes nothing, so removing it removes no effect,
 * although its schema marks the running statistics Tensor(b!). Gradients
 * stay right for the same reason as every pass's (the values are the same,
 * computed differently); when backward needs the convolution's result (for
 * gamma's gradient) the forward graph returns it, and the pass keeps off. */

#include "passes/passes_internal.h"

/* The convolution folding into batch_norm node n, or NULL. */
static tj_node *foldable(tj_node *n, bool any_writes) {
    bool native = tjp_is_op(n, TJ_OP_native_batch_norm);
    if (!native && !tjp_is_op(n, TJ_OP_batch_norm)) return NULL;
    if (tj_node_num_inputs(n) != 5 || tj_node_attr(n, 0)->b) return NULL; /* training */
    for (int k = 1; native && k < tj_node_num_outputs(n); k++)
        if (tj_value_num_uses(tj_node_output(n, k))) return NULL;
    tj_value *y = tj_node_input(n, 0);
    tj_node *conv = tj_value_node(y);
    int rank = tjp_is_op(conv, TJ_OP_conv2d) ? 4 : tjp_is_op(conv, TJ_OP_conv1d) ? 3 : 0;
    if (!rank || tj_value_num_uses(y) != 1 || tj_node_num_inputs(conv) != 3) return NULL;
    const tj_type *ty = tj_value_type(y), *tw = tj_value_type(tj_node_input(conv, 1));
    if (!tjp_known_sizes(ty) || ty->ndim != rank || ty->device_type != TJ_CPU) return NULL;
    if (ty->dtype != TJ_F32 && ty->dtype != TJ_F64) return NULL;
    int64_t c = ty->sizes[1];
    if (!tjp_known_sizes(tw) || tw->ndim != rank || tw->dtype != ty->dtype || tw->sizes[0] != c ||
        tw->device_type != TJ_CPU)
        return NULL;
    if (!tjp_channel_vector(tj_node_input(conv, 2), ty->dtype, c, true)) return NULL;
    for (int i = 1; i < 5; i++) /* gamma, beta optional; the running statistics required */
        if (!tjp_channel_vector(tj_node_input(n, i), ty->dtype, c, i < 3)) return NULL;
    if (any_writes)
        for (const tj_node *m = tj_node_next(conv); m && m != n; m = tj_node_next(m))
            if (tjp_mutates(m)) return NULL;
    return conv;
}

/* The folded weight and bias before n; false with an error. */
static bool fold(tj_node *n, tj_node *conv, tj_value **weight, tj_value **bias) {
    tj_value *gamma = tj_node_input(n, 1), *beta = tj_node_input(n, 2);
    tj_value *mean = tj_node_input(n, 3), *var = tj_node_input(n, 4);
    tj_value *w = tj_node_input(conv, 1), *b = tj_node_input(conv, 2);
    tj_attr one = {.scalar = tj_scalar_int(1)};
    tj_attr shifted[2] = {{.scalar = tj_scalar_float(tj_node_attr(n, 2)->f)}, one}; /* var + eps */
    tj_value *v = tjp_emit_before(n, TJ_OP_add_scalar, &var, 1, shifted);
    tj_value *s = v ? tjp_emit_before(n, TJ_OP_rsqrt, &v, 1, NULL) : NULL;
    if (s && !tjp_is_none(gamma)) s = tjp_emit_before(n, TJ_OP_mul, (tj_value *[]){gamma, s}, 2, NULL);
    if (!s) return false;
    const tj_type *tw = tj_value_type(w);
    int64_t shape[4] = {tw->sizes[0], 1, 1, 1};
    tj_attr to = {.ints = {shape, tw->ndim}};
    tj_value *column = tjp_emit_before(n, TJ_OP_reshape, &s, 1, &to);
    *weight = column ? tjp_emit_before(n, TJ_OP_mul, (tj_value *[]){w, column}, 2, NULL) : NULL;
    tj_value *d = NULL;
    if (*weight && tjp_is_none(b)) d = tjp_emit_before(n, TJ_OP_neg, &mean, 1, NULL);
    else if (*weight) d = tjp_emit_before(n, TJ_OP_sub, (tj_value *[]){b, mean}, 2, &one);
    *bias = d ? tjp_emit_before(n, TJ_OP_mul, (tj_value *[]){d, s}, 2, NULL) : NULL;
    if (*bias && !tjp_is_none(beta))
        *bias = tjp_emit_before(n, TJ_OP_add, (tj_value *[]){*bias, beta}, 2, &one);
    return *bias != NULL;
}

static tj_status rewrite(tj_node *n, tj_node *conv) {
    tj_value *weight, *bias;
    if (!fold(n, conv, &weight, &bias)) return tj_last_status();
    tj_value *in[3] = {tj_node_input(conv, 0), weight, bias};
    tj_value *y = tjp_emit_before(n, tj_op_id(tj_node_op(conv)), in, 3, tj_node_attrs(conv));
    if (!y) return tj_last_status();
    tj_status st = tjp_replace_value(tj_node_output(n, 0), y);
    if (st) return st;
    if ((st = tjp_destroy_with_nones(n))) return st;
    tjp_remove_if_dead(conv);
    return TJ_OK;
}

tj_status tj_pass_fold_batch_norm(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "fold_batch_norm: the graph is NULL");
    bool any_writes = tj_graph_writes_in_place(g);
    for (tj_node *n = tj_block_first(tj_graph_block(g)), *next; n; n = next) {
        next = tj_node_next(n);
        tj_node *conv = foldable(n, any_writes);
        if (!conv) continue;
        tj_status st = rewrite(n, conv);
        if (st) return st;
    }
    return TJ_OK;
}
