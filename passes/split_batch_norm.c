/* split_batch_norm.c — a training-mode batch_norm whose result feeds a
 * pointwise op splits into its statistics and a pointwise normalisation:
 *
 *     y = batch_norm(x, gamma, beta, running_mean, running_var, training=True, m, eps)
 *  -> mean, invstd, scale, shift =
 *         tjit::batch_norm_stats(x, gamma, beta, running_mean, running_var, m, eps)
 *     y = x * scale.reshape(C, 1, ..) + shift.reshape(C, 1, ..)
 *
 * (for native_batch_norm, save_mean and save_invstd become the statistics'
 * mean and invstd, which the backward graph reads as before). The statistics
 * read x twice (its sums, then the squares about the mean) and write [C]
 * values; the normalisation is then a multiply-add that the fuser puts in
 * one group with the pointwise ops that read y (the relu of conv -
 * batch_norm - relu), so y is written once, already activated, instead of
 * written by batch_norm, then read and written again by relu.
 *
 * Conditions, all required:
 *  - aten::batch_norm, or aten::native_batch_norm, with training true;
 *  - x's sizes known, at least 2 dims, f32 or f64, on the CPU, and gamma,
 *    beta and the running statistics either absent or [C] vectors of x's
 *    dtype on the CPU (CUDA graphs are left as they are: their batch_norm is
 *    one kernel already, and their fuser is not measured on this pattern);
 *  - some op that reads y is one the fuser takes (tjf_fusible_op): without
 *    one, the split would trade one kernel for several.
 *
 * scale and shift are rounded as batch_norm's kernel rounds its coefficients,
 * so the unfused multiply-add and the portable runner's give batch_norm's
 * bits; LLVM's kernels may contract it into one fma. The running statistics are written by the statistics op, where batch_norm
 * wrote them, so the order of effects is unchanged. Runs after autodiff (the
 * pipeline runs on differentiated graphs): the backward graph's
 * native_batch_norm_backward reads the same saved statistics. */
#include "fuser/fuser.h"
#include "passes/passes_internal.h"

static bool read_by_fusible_op(const tj_value *y) {
    for (int u = 0; u < tj_value_num_uses(y); u++) {
        const tj_node *user = tj_value_use(y, u).user;
        if (tj_node_kind_of(user) == TJ_NODE_OP && tjf_fusible_op(tj_node_op(user))) return true;
    }
    return false;
}

static bool splittable(const tj_node *n) {
    if (!tjp_is_op(n, TJ_OP_native_batch_norm) && !tjp_is_op(n, TJ_OP_batch_norm)) return false;
    if (tj_node_num_inputs(n) != 5 || !tj_node_attr(n, 0)->b) return false; /* training */
    const tj_type *t = tj_value_type(tj_node_input(n, 0));
    if (!tjp_known_sizes(t) || t->ndim < 2 || t->device_type != TJ_CPU) return false;
    if (t->dtype != TJ_F32 && t->dtype != TJ_F64) return false;
    for (int i = 1; i < 5; i++)
        if (!tjp_channel_vector(tj_node_input(n, i), t->dtype, t->sizes[1], true)) return false;
    return read_by_fusible_op(tj_node_output(n, 0));
}

/* v [C] reshaped to [C, 1, ..] so that it broadcasts over x's dims after 1
 * (v itself for x of 2 dims). */
static tj_value *per_channel(tj_node *pos, tj_value *v, const tj_type *x) {
    if (!v || x->ndim == 2) return v;
    int64_t shape[TJ_MAX_DIMS];
    shape[0] = x->sizes[1];
    for (int d = 1; d < x->ndim - 1; d++) shape[d] = 1;
    tj_attr to = {.ints = {shape, x->ndim - 1}};
    return tjp_emit_before(pos, TJ_OP_reshape, &v, 1, &to);
}

static tj_status split(tj_node *n) {
    const tj_type *tx = tj_value_type(tj_node_input(n, 0));
    tj_attr attrs[2] = {*tj_node_attr(n, 1), *tj_node_attr(n, 2)}; /* momentum, eps */
    tj_value *in[5], *stats[4]; /* mean, invstd, scale, shift */
    for (int i = 0; i < 5; i++) in[i] = tj_node_input(n, i);
    if (tjp_emit_n_before(n, TJ_OP_batch_norm_stats, in, 5, attrs, stats, 4) != 4)
        return tj_last_status();
    tj_attr one = {.scalar = tj_scalar_int(1)};
    tj_value *scale = per_channel(n, stats[2], tx), *shift = per_channel(n, stats[3], tx);
    tj_value *y = scale && shift ? tjp_emit_before(n, TJ_OP_mul, (tj_value *[]){in[0], scale}, 2, NULL)
                                 : NULL;
    if (y) y = tjp_emit_before(n, TJ_OP_add, (tj_value *[]){y, shift}, 2, &one);
    if (!y) return tj_last_status();
    tj_status st = tjp_replace_value(tj_node_output(n, 0), y);
    for (int k = 1; k < tj_node_num_outputs(n) && !st; k++) /* save_mean, save_invstd */
        st = tjp_replace_value(tj_node_output(n, k), stats[k - 1]);
    return st ? st : tjp_destroy_with_nones(n);
}

tj_status tj_pass_split_batch_norm(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "split_batch_norm: the graph is NULL");
    for (tj_node *n = tj_block_first(tj_graph_block(g)), *next; n; n = next) {
        next = tj_node_next(n);
        if (!splittable(n)) continue;
        tj_status st = split(n);
        if (st) return st;
    }
    return TJ_OK;
}
