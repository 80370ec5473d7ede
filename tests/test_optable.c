/* test_optable.c — the op table, schema parsing and the dispatcher's argument
 * checks, which every op shares. */
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

static void every_row_parses_and_names_are_unique(void **state) {
    (void)state;
    int n = tj_op_count();
    assert_true(n > 50);
    for (int i = 0; i < n; i++) {
        const tj_op_info *op = tj_op_at(i);
        assert_non_null(op);
        assert_int_equal(tj_op_id(op), i);
        assert_ptr_equal(tj_op_find(tj_op_name(op)), op);
        assert_true(strncmp(tj_op_name(op), "aten::", 6) == 0 ||
                    strncmp(tj_op_name(op), "tjit::", 6) == 0);
        const tj_schema *s = tj_op_schema(op);
        assert_true(s->n_tensor_args + s->n_attrs == s->n_args);
        assert_true(s->n_outputs == -1 || s->n_outputs >= 1);
        for (int j = 0; j < i; j++) assert_string_not_equal(tj_op_name(tj_op_at(j)), tj_op_name(op));
    }
    assert_null(tj_op_find("aten::no_such_op"));
    assert_null(tj_op_at(-1));
    assert_null(tj_op_at(n));
}

static void inplace_forms_mirror_their_base(void **state) {
    (void)state;
    int found = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (op->inplace_of < 0) continue;
        found++;
        const tj_op_info *base = tjc_op(op->inplace_of);
        assert_ptr_equal(tj_op_inplace_variant(base), op);
        assert_true(op->schema.mutates_self);
        assert_int_equal(op->schema.n_args, base->schema.n_args);
        for (int k = 0; k < op->schema.n_args; k++) {
            assert_string_equal(op->schema.args[k].name, base->schema.args[k].name);
            assert_int_equal(op->schema.args[k].type, base->schema.args[k].type);
        }
        /* "aten::add_" is "aten::add" with the in-place underscore */
        size_t n = strlen(base->name);
        const char *dot = strchr(base->name, '.');
        if (dot) n = (size_t)(dot - base->name);
        assert_true(strncmp(op->name, base->name, n) == 0 && op->name[n] == '_');
    }
    assert_true(found >= 20);
}

static void schema_grammar(void **state) {
    (void)state;
    tj_schema s;
    assert_int_equal(tjc_parse_schema("(Tensor self, Tensor? bias, Tensor[] xs, int dim=-1, "
                                      "int[2] stride=1, int[] size=[2, 3], float? min=None, "
                                      "float alpha=0.5, bool keepdim=False, str(none|tanh) "
                                      "approximate='tanh', ScalarType dtype=f64, Generator? "
                                      "generator=None) -> (Tensor, Tensor)", &s),
                     TJ_ERR_PARSE); /* a Tensor[] must be the only tensor argument */
    assert_int_equal(tjc_parse_schema("(Tensor self, Tensor? bias, *, int dim=-1, int[2] stride=1, "
                                      "int[] size=[2, 3], float? min=None, float alpha=0.5, bool "
                                      "keepdim=False, str(none|tanh) approximate='tanh', ScalarType "
                                      "dtype=f64, Generator? generator=None) -> (Tensor, Tensor)", &s),
                     TJ_OK);
    assert_int_equal(s.n_args, 11);
    assert_int_equal(s.n_tensor_args, 2);
    assert_int_equal(s.n_attrs, 9);
    assert_int_equal(s.n_outputs, 2);
    assert_int_equal(s.args[1].type, TJ_ARG_TENSOR_OPT);
    assert_true(s.args[2].kw_only);
    assert_int_equal(s.args[2].def.i, -1);
    assert_int_equal(s.args[3].fixed_len, 2);
    assert_int_equal(s.args[3].def.ints.n, 2);
    assert_int_equal(s.args[3].def.ints.data[1], 1);
    assert_int_equal(s.args[4].def.ints.data[1], 3);
    assert_true(tj_is_none(s.args[5].def.f));
    assert_true(s.args[6].def.f == 0.5);
    assert_false(s.args[7].def.b);
    assert_string_equal(s.args[8].choices, "none|tanh");
    assert_string_equal(s.args[8].def.s, "tanh");
    assert_int_equal(s.args[9].def.dtype, TJ_F64);
    assert_int_equal(s.args[10].type, TJ_ARG_GENERATOR);
    tjc_schema_free(&s);

    assert_int_equal(tjc_parse_schema("(Tensor(a) self, int chunks) -> Tensor(a)[]", &s), TJ_OK);
    assert_int_equal(s.n_outputs, -1);
    assert_true(s.aliases_self);
    tjc_schema_free(&s);
    assert_int_equal(tjc_parse_schema("(Tensor x, Tensor(b!)? running) -> Tensor", &s), TJ_OK);
    assert_true(s.mutates_inputs);
    assert_false(s.mutates_self);
    assert_true(s.args[1].mutated);
    tjc_schema_free(&s);

    const char *bad[] = {"Tensor self -> Tensor", "(Tensor self) Tensor", "(Tensor self) -> Int",
                         "(Tnesor self) -> Tensor", "(Tensor self, int x=abc) -> Tensor",
                         "(Tensor self, bool b=1) -> Tensor", "(Tensor self, str s='open) -> Tensor",
                         "(Tensor self) -> Tensor extra", "(Tensor self, int[] s=[1 2]) -> Tensor"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tjc_parse_schema(bad[i], &s), TJ_ERR_PARSE);
        tt_assert_error("expected");
    }
    tj_clear_error();
}

static void dispatcher_checks_arguments(void **state) {
    (void)state;
    int64_t sz[1] = {3};
    tj_tensor *x = tj_ones(sz, 1, TJ_F32);
    tj_tensor *out[2];
    tj_attr alpha = {.f = 1.0};
    int add = tj_op_id(tj_op_find("aten::add"));

    assert_int_equal(tj_invoke(add, (tj_tensor *[]){x}, 1, &alpha, 1, out, 1), -1);
    tt_assert_error("aten::add: takes 2 tensor inputs, got 1");
    assert_int_equal(tj_invoke(add, (tj_tensor *[]){x, x}, 2, NULL, 0, out, 1), -1);
    tt_assert_error("aten::add: takes 1 attributes, got 0");
    assert_int_equal(tj_invoke(9999, NULL, 0, NULL, 0, out, 1), -1);
    tt_assert_error("no op has id 9999");
    tj_clear_error();
    assert_int_equal(tj_invoke(add, (tj_tensor *[]){x, NULL}, 2, &alpha, 1, out, 1), -1);
    tt_assert_error("aten::add: argument 'other' is NULL");
    tj_clear_error();
    assert_int_equal(tj_invoke(add, (tj_tensor *[]){x, x}, 2, &alpha, 1, out, 0), -1);
    tt_assert_error("produces 1 outputs but the output array holds 0");

    assert_null(tj_gelu(x, "fast"));
    tt_assert_error("aten::gelu: argument 'approximate' must be one of none|tanh; got 'fast'");
    assert_null(tj_gelu(x, NULL));
    tt_assert_error("argument 'approximate' is NULL");
    assert_null(tj_to_dtype(x, (tj_dtype)42));
    tt_assert_error("not a valid dtype");

    assert_int_equal(tj_invoke(add, (tj_tensor *[]){x, x}, 2, &alpha, 1, out, 1), 1);
    tt_assert_values(out[0], ((double[]){2, 2, 2}), 3, 0);
    tj_release(out[0]);
    tj_release(x);
    tj_clear_error();
}

/* The tracing hook sees user-level calls only, with inputs intact before an
 * in-place op runs. */
typedef struct hook_log {
    int before, after, created, host_reads;
    double first_input_before;
    const tj_op_info *last_op;
} hook_log;

static void *on_before(void *ctx, const tj_op_info *op, tj_tensor *const *in, int n_in,
                       const tj_attr *attrs, int n_attrs) {
    (void)attrs;
    (void)n_attrs;
    hook_log *log = ctx;
    log->before++;
    log->last_op = op;
    if (n_in > 0) {
        int64_t zero[TJ_MAX_DIMS] = {0};
        log->first_input_before = tj_get(in[0], zero);
    }
    return log;
}
static void on_after(void *ctx, void *token, tj_tensor *const *out, int n_out) {
    (void)out;
    (void)n_out;
    assert_ptr_equal(ctx, token);
    ((hook_log *)ctx)->after++;
}
static void on_created(void *ctx, tj_tensor *t) {
    (void)t;
    ((hook_log *)ctx)->created++;
}
static void on_host_read(void *ctx, const tj_tensor *t, const char *what) {
    (void)t;
    (void)what;
    ((hook_log *)ctx)->host_reads++;
}

static void record_hook_sees_user_calls(void **state) {
    (void)state;
    hook_log log = {0};
    tj_record_hook hook = {&log, on_before, on_after, on_created, on_host_read};
    assert_null(tj_set_record_hook(&hook));
    tj_scope_begin();
    int64_t sz[1] = {4};
    tj_tensor *x = tj_full(sz, 1, 2.0, TJ_F32);       /* created: 1 */
    tj_tensor *y = tj_add_scalar_(x, 1.0, 1.0);       /* before sees 2.0, not 3.0 */
    assert_int_equal(log.before, 1);
    assert_int_equal(log.after, 1);
    assert_int_equal(log.created, 1);
    assert_true(log.first_input_before == 2.0);
    assert_string_equal(tj_op_name(log.last_op), "aten::add_.Scalar");
    tj_tensor *z = tj_add(x, tj_to_dtype(x, TJ_I64), 1.0); /* converts inside: still 2 calls */
    assert_int_equal(log.before, 3);
    double v;
    assert_int_equal(tj_item(tj_slice(z, 0, 0, 1, 1), &v), TJ_OK);
    assert_int_equal(log.host_reads, 1);
    assert_ptr_equal(tj_set_record_hook(NULL), &hook);
    (void)y;
    tj_scope_end();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_parses_and_names_are_unique),
        cmocka_unit_test(inplace_forms_mirror_their_base),
        cmocka_unit_test(schema_grammar),
        cmocka_unit_test(dispatcher_checks_arguments),
        cmocka_unit_test(record_hook_sees_user_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
