/* test_hardening.c — the defects of issue 19 stay fixed: an integer power
 * with a negative integer exponent is refused (eagerly, and in a compiled
 * and fused graph), float-only pointwise ops refuse integer and bool
 * tensors as PyTorch does, the verifier range-checks dim attributes against
 * the rank of the value they index, a 10 MB value name compiles and runs,
 * the example models' whole workflow leaves no error pending (accessors
 * that now report NULL arguments are not called so on success paths), and,
 * in builds with TJIT_DEBUG_REFCOUNT, a double tj_release or a use
 * after the last release aborts with a message naming the tensor. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "examples/models/models.h"
#include "tests/support/testing.h"

static void expect_failure(const void *result, tj_status status, const char *text) {
    assert_null(result);
    assert_int_equal(tj_last_status(), status);
    tt_assert_error(text);
    tj_clear_error();
}

/* ---- integer powers ------------------------------------------------------------------ */

static void test_int_pow_negative_exponent(void **state) {
    (void)state;
    const int64_t sizes[1] = {5};
    tj_tensor *base = tj_from_array((int64_t[]){2, 1, -1, -1, 0}, sizes, 1, TJ_I64);
    tj_tensor *neg = tj_from_array((int64_t[]){-1, -5, -3, -2, 2}, sizes, 1, TJ_I64);
    /* a tensor exponent: PyTorch's integer values, 0 unless |base| is 1 */
    tj_tensor *p = tj_pow(base, neg);
    tt_assert_values(p, ((double[]){0, 1, -1, 1, 0}), 5, 0);
    tj_tensor *copy = tj_clone(base);
    tj_tensor *same = tj_pow_(copy, neg); /* in place: a new reference to copy */
    assert_ptr_equal(same, copy);
    tj_release(same);
    tt_assert_values(copy, ((double[]){0, 1, -1, 1, 0}), 5, 0);
    /* a negative integer Scalar exponent is refused, as PyTorch does; a float
     * one makes integers f32 */
    expect_failure(tj_pow_scalar(base, -1), TJ_ERR_ARG,
                   "Integers to negative integer powers are not allowed (exponent -1)");
    tj_tensor *half = tj_pow_scalar(base, -1.0);
    assert_int_equal(tj_tensor_dtype(half), TJ_F32);
    tt_assert_values(half, ((double[]){0.5, 1, -1, -1, INFINITY}), 5, 1e-7);
    /* a float exponent tensor computes in floating point */
    tj_tensor *fneg = tj_to_dtype(neg, TJ_F64);
    tj_tensor *fine = tj_pow(base, fneg);
    tt_assert_values(fine, ((double[]){0.5, 1, -1, 1, 0}), 5, 1e-12);
    tj_release(fine);
    tj_release(fneg);
    tj_release(half);
    tj_release(copy);
    tj_release(p);
    tj_release(neg);
    tj_release(base);
}

/* In a compiled graph the integer power is fused like any other pointwise
 * op; every pipeline gives the eager values. */
static void test_int_pow_compiled(void **state) {
    (void)state;
    tj_graph *g = tj_graph_parse("graph(%a : Long(3), %b : Long(3)):\n"
                                 "  %c : Long(3) = aten::mul(%a, %a)\n"
                                 "  %d : Long(3) = aten::pow(%c, %b)\n"
                                 "  %e : Long(3) = aten::add[alpha=1](%d, %a)\n"
                                 "  return (%e)\n", NULL);
    assert_non_null(g);
    const int64_t sizes[1] = {3};
    tj_tensor *a = tj_from_array((int64_t[]){1, 2, 3}, sizes, 1, TJ_I64);
    tj_tensor *neg = tj_from_array((int64_t[]){-2, -2, 0}, sizes, 1, TJ_I64);
    tj_tensor *pos = tj_from_array((int64_t[]){2, 1, 0}, sizes, 1, TJ_I64);
    const char *pipelines[] = {NULL, "", "fuse"};
    for (int k = 0; k < 3; k++) {
        tj_compile_options opts = {.passes = pipelines[k]};
        tj_program *p = tj_compile(g, &opts);
        assert_non_null(p);
        tj_tensor *out[1] = {NULL};
        assert_int_equal(tj_run(p, (tj_tensor *[]){a, neg}, out), TJ_OK);
        tt_assert_values(out[0], ((double[]){2, 2, 4}), 3, 0);
        tj_release(out[0]);
        assert_int_equal(tj_run(p, (tj_tensor *[]){a, pos}, out), TJ_OK);
        tt_assert_values(out[0], ((double[]){2, 6, 4}), 3, 0);
        tj_release(out[0]);
        tj_program_free(p);
    }
    tj_release(pos);
    tj_release(neg);
    tj_release(a);
    tj_graph_free(g);
}

/* ---- float-only ops ------------------------------------------------------------------ */

static void test_float_only_ops_refuse_integers(void **state) {
    (void)state;
    const int64_t sizes[1] = {2};
    tj_tensor *i = tj_from_array((int64_t[]){1, -2}, sizes, 1, TJ_I64);
    tj_tensor *b = tj_from_array((bool[]){true, false}, sizes, 1, TJ_BOOL);
    tj_tensor *f = tj_from_array((float[]){1, -2}, sizes, 1, TJ_F32);
    expect_failure(tj_gelu(i, "none"), TJ_ERR_DTYPE, "aten::gelu: argument 'self' is i64");
    expect_failure(tj_gelu(b, "tanh"), TJ_ERR_DTYPE, "takes only floating-point tensors");
    expect_failure(tj_silu(i), TJ_ERR_DTYPE, "aten::silu: argument 'self' is i64");
    expect_failure(tj_silu(b), TJ_ERR_DTYPE, "aten::silu");
    expect_failure(tj_lerp(f, i, 0.5), TJ_ERR_DTYPE, "argument 'end' is i64");
    /* in a graph too: the verifier's type check and replay use the same rule */
    tj_graph *g = tj_graph_parse("graph(%x : Long(2)):\n"
                                 "  %y : Tensor = aten::gelu[approximate=\"none\"](%x)\n"
                                 "  return (%y)\n", NULL);
    assert_non_null(g);
    tj_program *p = tj_compile(g, NULL);
    tj_tensor *out[1] = {NULL};
    if (p) assert_int_not_equal(tj_run(p, (tj_tensor *[]){i}, out), TJ_OK);
    tt_assert_error("aten::gelu");
    tj_clear_error();
    tj_program_free(p);
    tj_graph_free(g);
    /* floating inputs, and ops PyTorch promotes, still work */
    tj_tensor *y = tj_gelu(f, "none"), *e = tj_exp(i), *s = tj_sigmoid(b);
    assert_non_null(y);
    assert_int_equal(tj_tensor_dtype(e), TJ_F32);
    assert_int_equal(tj_tensor_dtype(s), TJ_F32);
    tj_release(s);
    tj_release(e);
    tj_release(y);
    tj_release(f);
    tj_release(b);
    tj_release(i);
}

/* ---- the verifier's dim checks --------------------------------------------------------- */

static void verify_text(const char *body, const char *want_error) {
    char text[1024];
    snprintf(text, sizeof text, "graph(%%x : Float(2, 4), %%u : Tensor):\n%s", body);
    tj_graph *g = tj_graph_parse(text, NULL);
    if (!g) fail_msg("does not parse: %s\n%s", tj_last_error(), text);
    tj_status st = tj_graph_verify(g);
    if (want_error) {
        if (st == TJ_OK) fail_msg("the verifier accepted:\n%s", text);
        tt_assert_error(want_error);
    } else if (st != TJ_OK) {
        fail_msg("the verifier refused (%s):\n%s", tj_last_error(), text);
    }
    tj_clear_error();
    tj_graph_free(g);
}

static void test_verifier_checks_dims(void **state) {
    (void)state;
    verify_text("  %y : Tensor = aten::softmax[dim=7](%x)\n  return (%y)\n",
                "aten::softmax (line 2): attribute dim=7 is out of range for a value of 2 dims");
    verify_text("  %y : Tensor = aten::log_softmax[dim=-3](%x)\n  return (%y)\n", "dim=-3");
    verify_text("  %y : Tensor, %z : Tensor = prim::ConstantChunk[chunks=2, dim=5](%x)\n"
                "  return (%y, %z)\n", "prim::ConstantChunk (line 2): attribute dim=5");
    verify_text("  %y : Tensor = aten::transpose.int[dim0=0, dim1=2](%x)\n  return (%y)\n",
                "dim1=2");
    verify_text("  %y : Tensor = aten::sum.dim_IntList[dim=[0, 2], keepdim=False](%x)\n"
                "  return (%y)\n", "dim=2");
    verify_text("  %y : Tensor = aten::permute[dims=[1, 9]](%x)\n  return (%y)\n", "dims=9");
    verify_text("  %y : Tensor = aten::flatten.using_ints[start_dim=0, end_dim=4](%x)\n"
                "  return (%y)\n", "end_dim=4");
    verify_text("  %y : Tensor, %z : Tensor = aten::chunk[chunks=2, dim=2](%x)\n"
                "  return (%y, %z)\n", "dim=2");
    verify_text("  %y : Tensor = aten::unsqueeze[dim=4](%x)\n  return (%y)\n", "dim=4");
    /* in range: the last dim, negative dims, one past the end where a dim is inserted */
    verify_text("  %y : Tensor = aten::softmax[dim=-1](%x)\n  return (%y)\n", NULL);
    verify_text("  %y : Tensor = aten::sum.dim_IntList[dim=[0, -1], keepdim=False](%x)\n"
                "  return (%y)\n", NULL);
    verify_text("  %y : Tensor = aten::unsqueeze[dim=2](%x)\n  return (%y)\n", NULL);
    verify_text("  %l : Tensor[] = prim::ListConstruct(%x, %x)\n"
                "  %y : Tensor = aten::stack[dim=2](%x, %x)\n  return (%y)\n", NULL);
    /* the rank of an untyped value is unknown: nothing to check */
    verify_text("  %y : Tensor = aten::softmax[dim=7](%u)\n  return (%y)\n", NULL);
}

/* ---- long names ------------------------------------------------------------------------ */

static void test_ten_megabyte_value_name(void **state) {
    (void)state;
    size_t n = 10u << 20;
    char *name = malloc(n + 1);
    memset(name, 'x', n);
    name[n] = '\0';
    tj_graph *g = tj_graph_new();
    const int64_t sizes[1] = {3};
    tj_type type = tj_type_contiguous(TJ_F32, sizes, 1);
    tj_value *x = tj_graph_add_input(g, &type, name);
    assert_non_null(x);
    assert_int_equal(strlen(tj_value_name(x)), n);
    tj_node *relu = tj_node_create_op(g, tj_op_find("aten::relu"), &x, 1, NULL, 0, -1);
    assert_int_equal(tj_block_append(tj_graph_block(g), relu), TJ_OK);
    assert_int_equal(tj_value_set_type(tj_node_output(relu, 0), &type), TJ_OK);
    assert_int_equal(tj_graph_add_output(g, tj_node_output(relu, 0)), TJ_OK);
    tj_program *p = tj_compile(g, NULL);
    if (!p) fail_msg("tj_compile: %s", tj_last_error());
    tj_tensor *in = tj_from_array((float[]){-1, 0, 2}, sizes, 1, TJ_F32), *out[1] = {NULL};
    assert_int_equal(tj_run(p, &in, out), TJ_OK);
    tt_assert_values(out[0], ((double[]){0, 0, 2}), 3, 0);
    tj_release(out[0]);
    tj_release(in);
    tj_program_free(p);
    tj_graph_free(g);
    free(name);
}

/* ---- success leaves no error -------------------------------------------------------------
 * Accessors given NULL set an error, so the library must not call them so
 * on a path that succeeds: a stale error would be taken for the root cause
 * of a later failure, and code that checks tj_last_status() would see one. */

#define CLEAN(step)                                                                         \
    do {                                                                                  \
        step;                                                                             \
        if (tj_last_status() != TJ_OK)                                                    \
            fail_msg("%s: %s left an error pending: %s", m->name, #step, tj_last_error()); \
    } while (0)

static void check_model_leaves_no_error(const tjx_model *m) {
    tj_clear_error();
    tj_generator *gen = tj_generator_new(5);
    void *params = m->create(gen);
    tj_tensor *in[8] = {NULL}, *out[8] = {NULL}, *grads[8] = {NULL};
    CLEAN(assert_int_equal(m->make_inputs(params, gen, in), TJ_OK));
    tj_graph *g = NULL;
    CLEAN(g = tj_trace(m->forward, params, in, m->n_in, m->n_out, NULL));
    assert_non_null(g);
    char *text = NULL, *dot = NULL;
    CLEAN(text = tj_graph_to_string(g, TJ_PRINT_CANONICAL));
    CLEAN(dot = tj_graph_to_dot(g, 0));
    tj_graph *back = NULL, *copy = NULL;
    CLEAN(back = tj_graph_parse(text, NULL));
    CLEAN(assert_int_equal(tj_graph_verify(back), TJ_OK));
    CLEAN(copy = tj_graph_clone(back, NULL));
    CLEAN(assert_int_equal(tj_run_passes(copy, tj_default_pipeline()), TJ_OK));
    tj_compile_options opts = {.grad_parameters = true};
    tj_program *p = NULL;
    CLEAN(p = tj_compile(g, &opts));
    assert_non_null(p);
    CLEAN(assert_int_equal(tj_program_profile(p, true), TJ_OK));
    CLEAN(assert_int_equal(tj_run(p, in, out), TJ_OK));
    CLEAN(assert_int_equal(tj_backward(p, NULL, grads), TJ_OK));
    char *code = NULL, *plan = NULL, *report = NULL;
    CLEAN(code = tj_program_code_to_string(p));
    CLEAN(plan = tj_program_plan_to_string(p));
    CLEAN(report = tj_profile_report(p));
    if (tj_onnx_available()) {
        void *bytes = NULL;
        size_t len = 0;
        tj_onnx_export_options eo = {.params_as_inputs = false};
        if (tj_graph_export_onnx_bytes(g, &eo, &bytes, &len) == TJ_OK) {
            tj_graph *imported = NULL;
            CLEAN(imported = tj_graph_import_onnx_bytes(bytes, len, NULL));
            tj_graph_free(imported);
        }
        tj_clear_error(); /* a model ONNX cannot express is not this test's concern */
        free(bytes);
    }
    for (int i = 0; i < 8; i++) {
        tj_release(in[i]);
        tj_release(out[i]);
        tj_release(grads[i]);
    }
    free(report);
    free(plan);
    free(code);
    free(dot);
    free(text);
    tj_program_free(p);
    tj_graph_free(copy);
    tj_graph_free(back);
    tj_graph_free(g);
    m->destroy(params);
    tj_generator_free(gen);
}

static void test_success_leaves_no_error(void **state) {
    (void)state;
    for (int i = 0; i < tjx_num_models(); i++) check_model_leaves_no_error(tjx_model_at(i));
}

/* ---- ownership misuse (debug builds) -------------------------------------------------- */

#ifdef TJIT_DEBUG_REFCOUNT
typedef enum { DOUBLE_RELEASE, USE_AFTER_RELEASE, RETAIN_AFTER_RELEASE } misuse;

/* Runs the misuse in a child; returns what it wrote to stderr (malloc'd)
 * after checking that it died of SIGABRT. */
static char *misuse_in_child(misuse what) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        tj_tensor *t = tj_zeros((int64_t[]){2, 3}, 2, TJ_F32);
        if (what == DOUBLE_RELEASE) tj_tensor_set_name(t, "fc1.weight");
        tj_release(t);
        if (what == DOUBLE_RELEASE) tj_release(t);
        if (what == USE_AFTER_RELEASE) tj_relu(t);
        if (what == RETAIN_AFTER_RELEASE) tj_retain(t);
        _exit(0); /* not caught: the parent sees a normal exit */
    }
    close(fds[1]);
    char *text = calloc(1, 4096);
    size_t k = 0;
    ssize_t r;
    while (k < 4095 && (r = read(fds[0], text + k, 4095 - k)) > 0) k += (size_t)r;
    close(fds[0]);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGABRT)
        fail_msg("the child was not aborted (status %d); it wrote:\n%s", ws, text);
    return text;
}

static void expect_in(const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("expected \"%s\" in:\n%s", needle, text);
}

#endif

static void test_ownership_misuse_aborts(void **state) {
    (void)state;
#ifdef TJIT_DEBUG_REFCOUNT
    char *text = misuse_in_child(DOUBLE_RELEASE);
    expect_in(text, "tjit: tj_release: tensor 'fc1.weight' (f32 [2, 3]) used after its last "
                    "tj_release");
    free(text);
    text = misuse_in_child(USE_AFTER_RELEASE);
    expect_in(text, "tjit: aten::relu: tensor (f32 [2, 3]) used after its last tj_release");
    free(text);
    text = misuse_in_child(RETAIN_AFTER_RELEASE);
    expect_in(text, "tjit: tj_retain: tensor (f32 [2, 3])");
    free(text);
#else
    skip(); /* only builds with TJIT_DEBUG_REFCOUNT (Debug, sanitizers) check ownership */
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_pow_negative_exponent),
        cmocka_unit_test(test_int_pow_compiled),
        cmocka_unit_test(test_float_only_ops_refuse_integers),
        cmocka_unit_test(test_verifier_checks_dims),
        cmocka_unit_test(test_ten_megabyte_value_name),
        cmocka_unit_test(test_success_leaves_no_error),
        cmocka_unit_test(test_ownership_misuse_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
