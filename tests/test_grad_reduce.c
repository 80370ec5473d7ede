/* test_grad_reduce.c — derivatives of the reduction family, table-driven:
 * every TJ_KIND_REDUCTION op is listed in tjg_rules_reduce, every one with a
 * rule has cases below (dim lists with negative dims, all dims, keepdim on
 * and off, corrections, norm orders), and every case passes a first- and a
 * second-order finite-difference check in f64 through the graph autodiff.
 * Points where the functions have kinks (ties, zeros) are checked exactly
 * against PyTorch's choices by running the rules eagerly. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "passes/grad.h"
#include "tests/support/gradcheck.h"

#define L(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}
#define L0 0, {0}

/* Inputs: uniform in [-1.5, 1.5], or (AWAY) with magnitudes in [0.5, 1.5]
 * for the rules that divide by x or raise |x| to a power. */
enum { PLAIN, AWAY };

typedef struct rcase {
    const char *op;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int n_dims; /* dim (or size, for sum_to_size) */
    int64_t dims[TJ_MAX_DIMS];
    bool keepdim;
    double extra; /* correction, or ord */
    int domain;
} rcase;

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const rcase cases[] = {
    {"aten::sum.dim_IntList", L(2, 3, 2), L0},
    {"aten::sum.dim_IntList", L(2, 3, 2), L(1), true},
    {"aten::sum.dim_IntList", L(2, 3, 2), L(-1, 0)},
    {"aten::sum.dim_IntList", L0, L0},
    {"aten::sum.dim_IntList", L(3), L(0), true},
    {"aten::mean.dim", L(2, 3, 2), L0, true},
    {"aten::mean.dim", L(2, 3, 2), L(-2)},
    {"aten::mean.dim", L(2, 3, 2), L(2, 0), true},
    {"aten::prod.dim_IntList", L(2, 3), L(1), false, 0, AWAY},
    {"aten::prod.dim_IntList", L(2, 3, 2), L0, false, 0, AWAY},
    {"aten::prod.dim_IntList", L(2, 3, 2), L(0, -1), true, 0, AWAY},
    {"aten::amax", L(2, 3, 2), L(1)},
    {"aten::amax", L(2, 3, 2), L0, true},
    {"aten::amax", L(2, 3, 2), L(-1, 0)},
    {"aten::amin", L(2, 3, 2), L(-2), true},
    {"aten::amin", L(2, 3, 2), L0},
    {"aten::max.dim", L(2, 3, 2), L(1)},
    {"aten::max.dim", L(2, 3, 2), L(-1), true},
    {"aten::max.dim", L(4), L(0)},
    {"aten::max.dim", L0, L(0)},
    {"aten::min.dim", L(2, 3, 2), L(0)},
    {"aten::min.dim", L(3, 2), L(-2), true},
    {"aten::var.correction", L(2, 3, 2), L(1), false, 1},
    {"aten::var.correction", L(2, 3, 2), L0, true, 0},
    {"aten::var.correction", L(2, 3, 2), L(-1, 0), false, 2},
    {"aten::var.correction", L(4), L(0), true, 1},
    {"aten::std.correction", L(2, 3, 2), L(1), false, 1},
    {"aten::std.correction", L(2, 3, 2), L0, true, 0},
    {"aten::std.correction", L(2, 3, 2), L(-1, 0), false, 2},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(1), false, 2},
    {"aten::linalg_vector_norm", L(2, 3, 2), L0, true, 2},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(-1), false, 1},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(0, 2), true, 1},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(1), false, INFINITY},
    {"aten::linalg_vector_norm", L(2, 3, 2), L0, false, INFINITY},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(-2), true, -INFINITY},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(1), false, 3, AWAY},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(0, 1), false, 0.5, AWAY},
    {"aten::linalg_vector_norm", L(2, 3, 2), L(2), false, 0},
    {"aten::logsumexp", L(2, 3, 2), L(1)},
    {"aten::logsumexp", L(2, 3, 2), L(0, -1), true},
    {"aten::logsumexp", L(2, 3, 2), L0},
    {"aten::sum_to_size", L(2, 3, 2), L(3, 1)},
    {"aten::sum_to_size", L(2, 3, 2), L(2, 1, 2)},
    {"aten::sum_to_size", L(2, 3, 2), L(1)},
    {"aten::sum_to_size", L(2, 3), L(2, 3)},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The case's attributes in schema order. */
static void attrs_of(const tj_op_info *op, const rcase *k, tj_attr *a) {
    const tj_schema *s = &op->schema;
    for (int i = 0; i < s->n_attrs; i++) {
        const tj_arg *arg = &s->args[s->attr_pos[i]];
        a[i] = arg->def;
        if (!strcmp(arg->name, "dim") && arg->type == TJ_ARG_INT) a[i].i = k->dims[0];
        else if (!strcmp(arg->name, "dim") || !strcmp(arg->name, "size"))
            a[i].ints.data = k->dims, a[i].ints.n = k->n_dims;
        else if (!strcmp(arg->name, "keepdim")) a[i].b = k->keepdim;
        else if (!strcmp(arg->name, "correction")) a[i].i = (int64_t)k->extra;
        else if (!strcmp(arg->name, "ord")) a[i].f = k->extra;
    }
}

static tj_tensor *input_of(tj_generator *gen, const rcase *k) {
    tj_tensor *x = tt_random(gen, k->sizes, k->ndim, TJ_F64, -1.5, 1.5);
    if (k->domain == AWAY) {
        double *v = tj_data(x);
        for (int64_t e = 0; e < tj_numel(x); e++) v[e] = v[e] < 0 ? v[e] / 1.5 - 0.5 : v[e] / 1.5 + 0.5;
    }
    return x;
}

static void label_of(const rcase *k, char *buf, size_t n) {
    char dims[64] = "";
    for (int i = 0; i < k->n_dims; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%lld", i ? "," : "",
                 (long long)k->dims[i]);
    snprintf(buf, n, "%s (ndim %d, dim [%s], keepdim %d, %g)", k->op, k->ndim, dims, k->keepdim,
             k->extra);
}

static bool in_reduce_table(int id) {
    for (const tjg_rule_entry *e = tjg_rules_reduce; e->op >= 0; e++)
        if (e->op == id) return true;
    return false;
}

static void every_reduction_is_listed(void **state) {
    (void)state;
    int n = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (op->kind != TJ_KIND_REDUCTION) continue;
        n++;
        const tjg_rule_entry *e = tjg_rule_for(op);
        if (!e || !in_reduce_table(i)) fail_msg("%s is not in tjg_rules_reduce", op->name);
        if (!e->rule && !e->why) fail_msg("%s has neither a rule nor a reason", op->name);
        if (!e->rule) continue;
        bool has_case = false;
        for (int c = 0; c < N_CASES; c++) has_case |= !strcmp(cases[c].op, op->name);
        if (!has_case) fail_msg("%s has a rule but no case in test_grad_reduce.c", op->name);
    }
    assert_true(n >= 14);
    for (int c = 0; c < N_CASES; c++)
        if (!tj_op_find(cases[c].op)) fail_msg("case %d names no op: %s", c, cases[c].op);
}

static void check_cases(bool second) {
    tj_generator *gen = tj_generator_new(11);
    for (int c = 0; c < N_CASES; c++) {
        const rcase *k = &cases[c];
        const tj_op_info *op = tj_op_find(k->op);
        tj_attr a[TJ_MAX_ARGS];
        attrs_of(op, k, a);
        char label[160];
        label_of(k, label, sizeof label);
        tj_tensor *x = input_of(gen, k);
        if (second) tt_gradgradcheck_op(op, &x, 1, a, NULL, label);
        else tt_gradcheck_op(op, &x, 1, a, NULL, label);
        tj_release(x);
    }
    tj_generator_free(gen);
}

static void first_order(void **state) {
    (void)state;
    check_cases(false);
}

static void second_order(void **state) {
    (void)state;
    check_cases(true);
}

/* ---- exact values at kinks, through the eager emitter ---------------------------------- */

/* The rule's gradient of x for op(x; attrs) with output gradient g (the
 * first output's; other outputs get none). Releases x and g, so calls can
 * be written inline (the gradcheck helpers want no scope open). */
static tj_tensor *eager_grad(const char *name, tj_tensor *x, const tj_attr *a, tj_tensor *g) {
    const tj_op_info *op = tj_op_find(name);
    tj_tensor *out[4] = {NULL}, *gout[4] = {g, NULL, NULL, NULL}, *gin = NULL;
    int n = tj_invoke(op->id, &x, 1, a, op->schema.n_attrs, out, 4);
    if (n < 1) fail_msg("%s: %s", name, tj_last_error());
    bool needs = true;
    if (tjg_eager_grad(op, &x, 1, a, out, n, gout, &needs, &gin) != TJ_OK)
        fail_msg("%s: %s", name, tj_last_error());
    tj_release(x);
    tj_release(g);
    for (int i = 0; i < n; i++) tj_release(out[i]);
    return gin;
}

static tj_tensor *vec(const double *v, int64_t n) { return tj_from_array(v, &n, 1, TJ_F64); }
static tj_tensor *scalar(double v) { return tj_from_array(&v, NULL, 0, TJ_F64); }
#define VEC(...) vec((double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__}) / sizeof(double))

static void expect(tj_tensor *got, const double *want, int64_t n) {
    assert_non_null(got);
    tt_assert_values(got, want, n, 1e-12);
    tj_release(got);
}

static const int64_t no_dims[1] = {0};
#define ALL_DIMS {.ints = {no_dims, 0}}

static void ties_and_indices(void **state) {
    (void)state;
    tj_attr amax[2] = {ALL_DIMS, {.b = false}};
    /* amax/amin share the gradient evenly among ties */
    expect(eager_grad("aten::amax", VEC(1, 3, 3, 2), amax, scalar(2)), (double[]){0, 1, 1, 0}, 4);
    expect(eager_grad("aten::amin", VEC(3, 1, 1, 2), amax, scalar(2)), (double[]){0, 1, 1, 0}, 4);
    /* max.dim/min.dim give it to the returned (first) index */
    tj_attr maxd[2] = {{.i = 0}, {.b = false}};
    expect(eager_grad("aten::max.dim", VEC(1, 3, 3, 2), maxd, scalar(2)), (double[]){0, 2, 0, 0}, 4);
    expect(eager_grad("aten::min.dim", VEC(3, 1, 1, 2), maxd, scalar(2)), (double[]){0, 2, 0, 0}, 4);
    /* the inf norm: the largest |x| share, with their signs */
    tj_attr inf[3] = {{.f = INFINITY}, ALL_DIMS, {.b = false}};
    expect(eager_grad("aten::linalg_vector_norm", VEC(-3, 1, 3, 0), inf, scalar(2)),
           (double[]){-1, 0, 1, 0}, 4);
}

static void zeros_of_prod(void **state) {
    (void)state;
    const char *prod = "aten::prod.dim_IntList";
    tj_attr a[2] = {ALL_DIMS, {.b = false}};
    /* one zero: it gets the product of the others, the rest get 0 */
    expect(eager_grad(prod, VEC(2, 0, 3), a, scalar(1)), (double[]){0, 6, 0}, 3);
    /* two zeros: every partial product has a zero */
    expect(eager_grad(prod, VEC(0, 2, 0), a, scalar(1)), (double[]){0, 0, 0}, 3);
    /* per row: [[2, 0, 3], [1, 2, 4]] */
    int64_t s23[] = {2, 3}, d1[] = {1};
    tj_attr row[2] = {{.ints = {d1, 1}}, {.b = false}};
    double xv[] = {2, 0, 3, 1, 2, 4};
    expect(eager_grad(prod, tj_from_array(xv, s23, 2, TJ_F64), row, VEC(1, 1)),
           (double[]){0, 6, 0, 8, 4, 2}, 6);
    /* finite differences agree at a single zero to second order, and at
     * two zeros to first order (the documented limit) */
    tj_tensor *x = tj_from_array(xv, s23, 2, TJ_F64);
    tt_gradcheck_op(tj_op_find(prod), &x, 1, row, NULL, "prod, one zero");
    tt_gradgradcheck_op(tj_op_find(prod), &x, 1, row, NULL, "prod, one zero");
    tj_release(x);
    x = tj_from_array((double[]){0, 1.5, 0, 1, -2, 0.5}, s23, 2, TJ_F64);
    tt_gradcheck_op(tj_op_find(prod), &x, 1, row, NULL, "prod, two zeros");
    tj_release(x);
}

static void subgradients_at_zero(void **state) {
    (void)state;
    const char *norm = "aten::linalg_vector_norm";
    double ords[] = {2, 1, INFINITY, -INFINITY, 3, 0.5, 0};
    for (size_t i = 0; i < sizeof ords / sizeof ords[0]; i++) {
        tj_attr a[3] = {{.f = ords[i]}, ALL_DIMS, {.b = false}};
        tj_tensor *gx = eager_grad(norm, VEC(0, 0, 0), a, scalar(1));
        if (ords[i] == 0) assert_null(gx); /* a count: no gradient at all */
        else expect(gx, (double[]){0, 0, 0}, 3);
    }
    /* ord 1 at a single zero */
    tj_attr one[3] = {{.f = 1}, ALL_DIMS, {.b = false}};
    expect(eager_grad(norm, VEC(-2, 0, 1), one, scalar(1)), (double[]){-1, 0, 1}, 3);
    /* std of a constant */
    tj_attr sa[3] = {ALL_DIMS, {.i = 1}, {.b = false}};
    expect(eager_grad("aten::std.correction", VEC(4, 4, 4), sa, scalar(1)), (double[]){0, 0, 0}, 3);
}

int main(void) {
    TT_GRADCHECK_SKIP_WITHOUT_DEVICE();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_reduction_is_listed),
        cmocka_unit_test(first_order),
        cmocka_unit_test(second_order),
        cmocka_unit_test(ties_and_indices),
        cmocka_unit_test(zeros_of_prod),
        cmocka_unit_test(subgradients_at_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
