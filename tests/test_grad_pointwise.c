/* test_grad_pointwise.c — derivatives of the pointwise family, generated from
 * the table: every pointwise op (but in-place forms, which autodiff refuses on
 * paths that need gradients) is listed in tjg_rules_pointwise, and every one
 * with a rule passes a first- and a second-order finite-difference check in
 * f64, with broadcast operands. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "passes/grad.h"
#include "tests/support/gradcheck.h"

/* Inputs away from the ops' singular points and kinks. */
static bool positive_domain(const char *name) {
    static const char *const pos[] = {"aten::log", "aten::log1p", "aten::sqrt", "aten::rsqrt",
                                      "aten::reciprocal", "aten::pow", "aten::pow.Tensor_Scalar",
                                      "aten::div"};
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        if (!strcmp(name, pos[i])) return true;
    return false;
}

static void every_pointwise_op_is_listed(void **state) {
    (void)state;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (op->kind != TJ_KIND_POINTWISE || op->inplace_of >= 0) continue;
        const tjg_rule_entry *e = tjg_rule_for(op);
        if (!e) fail_msg("%s is in no table of derivative rules", op->name);
        if (!e->rule && !e->why) fail_msg("%s has neither a rule nor a reason", op->name);
    }
}

static void check_all(bool second_order) {
    tj_generator *gen = tj_generator_new(5);
    int checked = 0;
    for (const tjg_rule_entry *e = tjg_rules_pointwise; e->op >= 0; e++) {
        const tj_op_info *op = tjc_op(e->op);
        if (!e->rule || op->schema.mutates_self) continue;
        const tj_schema *s = &op->schema;
        bool pos = positive_domain(op->name);
        int64_t full[2] = {2, 3}, row[1] = {3};
        tj_tensor *in[4];
        for (int i = 0; i < s->n_tensor_args; i++) {
            bool is_cond = !strcmp(op->name, "aten::where.self") && i == 0;
            /* the second operand broadcasts: its gradient is summed back */
            const int64_t *sz = i == 1 ? row : full;
            int nd = i == 1 ? 1 : 2;
            in[i] = is_cond ? tt_random(gen, sz, nd, TJ_BOOL, 0, 1)
                            : tt_random(gen, sz, nd, TJ_F64, pos ? 0.5 : -1.5, pos ? 1.5 : 1.5);
        }
        tj_attr attrs[TJ_MAX_ARGS];
        for (int k = 0; k < s->n_attrs; k++) {
            const tj_arg *a = &s->args[s->attr_pos[k]];
            attrs[k] = a->def;
            if (!strcmp(a->name, "alpha") || !strcmp(a->name, "value")) attrs[k].f = 0.7;
            if (!strcmp(a->name, "other") || !strcmp(a->name, "exponent")) attrs[k].f = 1.3;
            if (!strcmp(a->name, "weight")) attrs[k].f = 0.3;
            if (!strcmp(a->name, "min")) attrs[k].f = -0.5;
            if (!strcmp(a->name, "max")) attrs[k].f = 0.5;
            if (a->type == TJ_ARG_DTYPE) attrs[k].dtype = TJ_F64; /* f32 would round away the check */
        }
        int variants = !strcmp(op->name, "aten::gelu") ? 2 : 1;
        for (int v = 0; v < variants; v++) {
            if (v == 1) attrs[0].s = "tanh";
            char label[128];
            snprintf(label, sizeof label, "%s%s", op->name, v ? " (tanh)" : "");
            if (second_order) tt_gradgradcheck_op(op, in, s->n_tensor_args, attrs, NULL, label);
            else tt_gradcheck_op(op, in, s->n_tensor_args, attrs, NULL, label);
        }
        for (int i = 0; i < s->n_tensor_args; i++) tj_release(in[i]);
        checked++;
    }
    assert_true(checked >= 35);
    tj_generator_free(gen);
}

static void first_order(void **state) {
    (void)state;
    check_all(false);
}
static void second_order(void **state) {
    (void)state;
    check_all(true);
}

int main(void) {
    TT_GRADCHECK_SKIP_WITHOUT_DEVICE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_pointwise_op_is_listed),
        cmocka_unit_test(first_order),
        cmocka_unit_test(second_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
