/* grad_reduce.c — derivative rules of the reduction family (grad.h). */
#include "grad.h"

/* sum_to_size: the gradient spreads back over the broadcast dims. */
static tj_status d_sum_to_size(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = tjg_type(c, tjg_input(c, 0));
    tj_attr size = {.ints = {t.sizes, t.ndim}};
    c->grad_in[0] = tjg_op(c, TJ_OP_expand, &c->grad_out[0], 1, &size);
    return TJ_OK;
}

const tjg_rule_entry tjg_rules_reduce[] = {
    {TJ_OP_sum_to_size, d_sum_to_size, NULL},
    {-1, NULL, NULL},
};
