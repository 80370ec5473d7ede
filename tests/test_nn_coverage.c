/* test_nn_coverage.c — every op of the nn family (the rows of
 * core/ops_nn.def) is covered by some nn test file's list (nn_cases.h), and
 * every listed name is such a row. The op table is enumerated for the kinds
 * the family uses (nn, composite, random); ops of those kinds that other
 * families own are left to their own tests. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/nn_cases.h"

static const char *const listed[] = {TT_NN_NORM_OPS, TT_NN_SOFTMAX_OPS, TT_NN_LOSS_OPS,
                                     TT_NN_INDEX_OPS, TT_NN_DROPOUT_OPS};
enum { N_LISTED = sizeof listed / sizeof *listed };

/* The family's rows, read from the same file the op table is built from. */
static const char *const family[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu) name,
#include "core/ops_nn.def"
#undef TJ_OP
};
enum { N_FAMILY = sizeof family / sizeof *family };

static bool in_list(const char *name, const char *const *list, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(list[i], name) == 0) return true;
    return false;
}

static void every_family_op_is_covered(void **state) {
    (void)state;
    int uncovered = 0, family_seen = 0;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        tj_op_kind k = tj_op_kind_of(op);
        bool family_kind = k == TJ_KIND_NN || k == TJ_KIND_COMPOSITE || k == TJ_KIND_RANDOM;
        bool ours = in_list(tj_op_name(op), family, N_FAMILY);
        if (ours && !family_kind) {
            fprintf(stderr, "%s: row of ops_nn.def with kind %s\n", tj_op_name(op),
                    tj_op_kind_name(k));
            uncovered++;
        }
        if (!family_kind || !ours) continue;
        family_seen++;
        if (!in_list(tj_op_name(op), listed, N_LISTED)) {
            fprintf(stderr, "%s is covered by no test file's list in nn_cases.h\n",
                    tj_op_name(op));
            uncovered++;
        }
    }
    assert_int_equal(uncovered, 0);
    assert_int_equal(family_seen, N_FAMILY);
}

static void every_listed_op_is_a_family_row(void **state) {
    (void)state;
    for (int i = 0; i < N_LISTED; i++) {
        if (!in_list(listed[i], family, N_FAMILY))
            fprintf(stderr, "%s is listed but is no row of ops_nn.def\n", listed[i]);
        assert_true(in_list(listed[i], family, N_FAMILY));
        for (int j = 0; j < i; j++) assert_string_not_equal(listed[i], listed[j]);
    }
    tt_nn_assert_ops_exist(listed, N_LISTED);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_family_op_is_covered),
        cmocka_unit_test(every_listed_op_is_a_family_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
