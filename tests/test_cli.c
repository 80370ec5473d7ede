/* test_cli.c — the tjit program: `tjit run` on a small .ir file with an
 * input from a .npy file and outputs saved with --out, its errors (a
 * malformed file reports line:col and exits 1), `tjit run --backward`,
 * `tjit dump` (with --grad), `tjit profile` (its table, its trace file and
 * its errors), random integer inputs and `tjit --version`. The binary is found next to this test's
 * executable, in the build directory. */
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuser/fuser.h"
#include "tests/support/runtime_testing.h"

extern char **environ;

static char *dir;
static char tjit[PATH_MAX];

static int setup_dir(void **state) {
    (void)state;
    ssize_t n = readlink("/proc/self/exe", tjit, sizeof tjit - 8);
    if (n <= 0) return -1;
    tjit[n] = '\0';
    char *slash = strrchr(tjit, '/');
    if (!slash) return -1;
    strcpy(slash + 1, "tjit");
    dir = tt_mkdtemp();
    return 0;
}
static int teardown_dir(void **state) {
    (void)state;
    tt_rmtree(dir);
    dir = NULL;
    return 0;
}
/* The tool's output: its exit status, stdout and stderr (malloc'd). */
typedef struct result {
    int status;
    char *out, *err;
} result;

static void result_free(result *r) {
    free(r->out);
    free(r->err);
}

/* Runs tjit with args (NULL-terminated), stdout and stderr to files. */
static result run_tjit(const char *const *args) {
    if (access(tjit, X_OK) != 0) {
        fprintf(stderr, "no tjit program at %s\n", tjit);
        fail();
    }
    char *argv[32] = {tjit};
    int n = 1;
    for (; args[n - 1] && n < 31; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    char *out_path = tt_path(dir, "stdout.txt"), *err_path = tt_path(dir, "stderr.txt");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, tjit, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws), tt_read_file(out_path),
                tt_read_file(err_path)};
    assert_non_null(r.out);
    assert_non_null(r.err);
    unlink(out_path);
    unlink(err_path);
    free(out_path);
    free(err_path);
    return r;
}

static void expect(const result *r, int status, const char *in_out, const char *in_err) {
    bool ok = r->status == status && (!in_out || strstr(r->out, in_out)) &&
              (!in_err || strstr(r->err, in_err));
    if (!ok) {
        fprintf(stderr, "tjit exited %d (expected %d)\n--- stdout (expected \"%s\")\n%s--- stderr "
                "(expected \"%s\")\n%s---\n", r->status, status, in_out ? in_out : "", r->out,
                in_err ? in_err : "", r->err);
        fail();
    }
}

static char *write_text(const char *name, const char *text) {
    char *path = tt_path(dir, name);
    tt_write_file(path, text, strlen(text));
    return path;
}

/* ---- tjit run ----------------------------------------------------------------------------- */

static const char graph_text[] =
    "# y = 2x; out = relu(y)\n"
    "graph(%x : Float(2, 3)):\n"
    "  %1 : Float(2, 3) = aten::mul.Scalar[other=2.](%x)\n"
    "  %out : Float(2, 3) = aten::relu(%1)\n"
    "  return (%out, %1)\n";

static void test_run_with_input_and_out(void **state) {
    (void)state;
    char *ir = write_text("g.ir", graph_text);
    char *x_path = tt_path(dir, "x.npy"), *out_dir = tt_path(dir, "out");
    const float xs[6] = {-1.5f, 0, 2, 3.25f, -4, 5};
    tj_tensor *x = tj_from_array(xs, (int64_t[]){2, 3}, 2, TJ_F32);
    assert_int_equal(tj_save_npy(x_path, x), TJ_OK);
    char input[PATH_MAX + 8];
    snprintf(input, sizeof input, "x=%s", x_path);
    result r = run_tjit((const char *[]){"run", ir, "--input", input, "--out", out_dir, NULL});
    expect(&r, 0, "out : Float(2, 3, device=cpu)", NULL);
    expect(&r, 0, "  min 0  max 10  mean 3.41667\n1 : Float(2, 3, device=cpu)\n"
                  "  min -8  max 10  mean 1.58333\n", NULL);
    result_free(&r);
    /* the named output is saved under its name, the unnamed one by position */
    char *out_npy = tt_path(out_dir, "out.npy"), *y_npy = tt_path(out_dir, "1.npy");
    tj_tensor *out = tj_load_npy(out_npy), *y = tj_load_npy(y_npy);
    assert_non_null(out);
    assert_non_null(y);
    const double want_y[6] = {-3, 0, 4, 6.5, -8, 10}, want_out[6] = {0, 0, 4, 6.5, 0, 10};
    tt_assert_sizes(out, ((int64_t[]){2, 3}), 2);
    tt_assert_values(out, want_out, 6, 0);
    tt_assert_values(y, want_y, 6, 0);
    /* inputs can be named by position too */
    snprintf(input, sizeof input, "0=%s", x_path);
    r = run_tjit((const char *[]){"run", ir, "--input", input, NULL});
    expect(&r, 0, "min -8  max 10", NULL);
    result_free(&r);
    /* without --input, a random input of the declared type */
    r = run_tjit((const char *[]){"run", ir, NULL});
    expect(&r, 0, "out : Float(2, 3, device=cpu)", NULL);
    result_free(&r);
    free(out_npy);
    free(y_npy);
    free(x_path);
    free(out_dir);
    free(ir);
}

static void test_run_errors(void **state) {
    (void)state;
    char *bad = write_text("bad.ir", "graph(%x : Float(2)):\n  %y = aten::no_such_op(%x)\n  return (%y)\n");
    result r = run_tjit((const char *[]){"run", bad, NULL});
    expect(&r, 1, NULL, "bad.ir:2:8: expected a known op, got 'aten::no_such_op'");
    result_free(&r);
    char *ir = write_text("g.ir", graph_text);
    r = run_tjit((const char *[]){"run", ir, "--input", "nope=x.npy", NULL});
    expect(&r, 1, NULL, "the graph has no input named 'nope'");
    result_free(&r);
    char *junk = write_text("junk.npy", "not a numpy file at all");
    char input[PATH_MAX + 8];
    snprintf(input, sizeof input, "x=%s", junk);
    r = run_tjit((const char *[]){"run", ir, "--input", input, NULL});
    expect(&r, 1, NULL, "is not a .npy file (bad magic)");
    result_free(&r);
    /* an input of other sizes than the graph declares */
    char *wrong = tt_path(dir, "wrong.npy");
    assert_int_equal(tj_save_npy(wrong, tj_zeros((int64_t[]){3, 2}, 2, TJ_F32)), TJ_OK);
    snprintf(input, sizeof input, "x=%s", wrong);
    r = run_tjit((const char *[]){"run", ir, "--input", input, NULL});
    expect(&r, 1, NULL, "has sizes [3, 2] but the program was traced with [2, 3]");
    result_free(&r);
    char *missing = tt_path(dir, "missing.ir");
    r = run_tjit((const char *[]){"run", missing, NULL});
    expect(&r, 1, NULL, "cannot open");
    result_free(&r);
    r = run_tjit((const char *[]){"run", NULL});
    expect(&r, 2, NULL, "usage: tjit run");
    result_free(&r);
    r = run_tjit((const char *[]){"run", ir, "--input", "no-equals-sign", NULL});
    expect(&r, 2, NULL, "--input takes NAME=FILE.npy");
    result_free(&r);
    free(missing);
    free(wrong);
    free(junk);
    free(ir);
    free(bad);
}

/* --backward: the gradient of each input for output gradients of ones (or
 * given ones), saved as grad_NAME.npy. Here d/dx (relu(2x) + 2x) = 2 [2x > 0] + 2. */
static void test_run_backward(void **state) {
    (void)state;
    char *ir = write_text("g.ir", graph_text);
    char *x_path = tt_path(dir, "x.npy"), *g_path = tt_path(dir, "g.npy"), *out_dir = tt_path(dir, "grads");
    const float xs[6] = {-1.5f, 0, 2, 3.25f, -4, 5}, gs[6] = {1, 1, 1, 1, 1, 0.5f};
    assert_int_equal(tj_save_npy(x_path, tj_from_array(xs, (int64_t[]){2, 3}, 2, TJ_F32)), TJ_OK);
    assert_int_equal(tj_save_npy(g_path, tj_from_array(gs, (int64_t[]){2, 3}, 2, TJ_F32)), TJ_OK);
    char input[PATH_MAX + 8], gout[PATH_MAX + 8];
    snprintf(input, sizeof input, "x=%s", x_path);
    result r = run_tjit((const char *[]){"run", ir, "--input", input, "--backward", "--out", out_dir, NULL});
    expect(&r, 0, "grad_x : Float(2, 3, device=cpu)", NULL);
    result_free(&r);
    char *grad_npy = tt_path(out_dir, "grad_x.npy");
    tj_tensor *gx = tj_load_npy(grad_npy);
    const double want[6] = {2, 2, 4, 4, 2, 4};
    tt_assert_values(gx, want, 6, 0);
    /* a given gradient for the output 'out' (halved in the last element) */
    snprintf(gout, sizeof gout, "out=%s", g_path);
    r = run_tjit((const char *[]){"run", ir, "--input", input, "--backward", "--grad-output", gout,
                                  "--out", out_dir, NULL});
    expect(&r, 0, "grad_x", NULL);
    result_free(&r);
    gx = tj_load_npy(grad_npy);
    const double want_given[6] = {2, 2, 4, 4, 2, 3};
    tt_assert_values(gx, want_given, 6, 0);
    r = run_tjit((const char *[]){"run", ir, "--grad-output", gout, NULL});
    expect(&r, 1, NULL, "--grad-output needs --backward");
    result_free(&r);
    free(grad_npy);
    free(x_path);
    free(g_path);
    free(out_dir);
    free(ir);
}

/* ---- tjit dump ---------------------------------------------------------------------------- */

static void test_dump(void **state) {
    (void)state;
    result r = run_tjit((const char *[]){"dump", "lstm_cell", "--canonical", NULL});
    expect(&r, 0, "aten::chunk[chunks=4, dim=1]", NULL);
    expect(&r, 0, "%weight_ih : Float(2048, 512", NULL);
    assert_string_equal(r.err, "");
    result_free(&r);
    r = run_tjit((const char *[]){"dump", "mlp", "--code", NULL});
    expect(&r, 0, "registers: ", NULL);
    result_free(&r);
    r = run_tjit((const char *[]){"dump", "no_such_model", NULL});
    expect(&r, 2, NULL, "no model named 'no_such_model'");
    result_free(&r);
    r = run_tjit((const char *[]){"dump", "mlp", "--grad", NULL});
    expect(&r, 0, "# backward: gradients of the outputs and the saved values in", NULL);
    expect(&r, 0, "aten::_log_softmax_backward_data", NULL);
    result_free(&r);
    /* the fusion report after the pipeline's fuse pass: the LSTM cell's
     * pointwise nodes all in one group, but for the sum of the two biases
     * that merge_linears made, which only a linear reads */
    r = run_tjit((const char *[]){"dump", "lstm_cell", "--fusion-report", NULL});
    expect(&r, 0, "# fusion report\n# left outside any group\n"
           "  %7 aten::add: not merged into its user %8 aten::linear: it feeds the matrix product of "
           "%8 aten::linear, whose operands come from outside its group (the product runs first, "
           "its epilogue after)\n"
           "# neighbouring groups not merged\n"
           "# 1 group formed, 10 nodes fused, 1 fusible-kind node left out\n", NULL);
    assert_string_equal(r.err, "");
    result_free(&r);
    r = run_tjit((const char *[]){"dump", "mlp", "--fusion-report", NULL});
    expect(&r, 0, "prim::FusionGroup: both hold a matrix product; a group holds one", NULL);
    result_free(&r);
    r = run_tjit((const char *[]){"dump", "mlp", "--fusion-report", "--passes", "dce", NULL});
    expect(&r, 2, NULL, "--fusion-report: the pipeline \"dce\" has no fuse pass");
    result_free(&r);
    /* a graph file stands in the place of a model */
    char *ir = write_text("g.ir", graph_text);
    r = run_tjit((const char *[]){"dump", ir, "--after", "fuse", NULL});
    expect(&r, 0, "prim::FusionGroup", NULL);
    result_free(&r);
    char *bad = write_text("bad.ir", "graph(%x : Float(2)):\n  %y = aten::no_such_op(%x)\n  return (%y)\n");
    r = run_tjit((const char *[]){"dump", bad, NULL});
    expect(&r, 1, NULL, "no_such_op");
    result_free(&r);
    free(ir);
    free(bad);
}

/* ---- tjit profile, tjit --version ---------------------------------------------------------- */

static void test_profile(void **state) {
    (void)state;
    char *trace = tt_path(dir, "trace.json");
    result r = run_tjit((const char *[]){"profile", "lstm_cell", "--runs", "2", "--chrome-trace", trace, NULL});
    char header[128];
    snprintf(header, sizeof header, "lstm_cell: 2 runs after 2 to warm up, fusion backend %s",
             tjf_find_backend("llvm") ? "llvm" : "portable"); /* the fastest built */
    expect(&r, 0, header, NULL);
    expect(&r, 0, "forward: 2 replays, ", NULL);
    expect(&r, 0, "  aten::linear ", NULL);
    expect(&r, 0, "  fusion %", NULL);
    expect(&r, 0, "trace: ", NULL);
    assert_string_equal(r.err, ""); /* quick work shows no progress */
    result_free(&r);
    char *text = tt_read_file(trace);
    assert_non_null(text);
    assert_non_null(strstr(text, "\"traceEvents\": ["));
    assert_non_null(strstr(text, "\"name\": \"aten::linear\""));
    free(text);
    /* a graph file on random inputs, with its backward */
    char *ir = write_text("g.ir", graph_text);
    r = run_tjit((const char *[]){"profile", ir, "--backward", "--runs", "3", NULL});
    expect(&r, 0, "3 runs of forward and backward", NULL);
    expect(&r, 0, "backward: 3 replays, ", NULL);
    result_free(&r);
    r = run_tjit((const char *[]){"profile", "no_such_thing", NULL});
    expect(&r, 1, NULL, "'no_such_thing' is neither an example model (tjit list models) nor a readable file");
    result_free(&r);
    r = run_tjit((const char *[]){"profile", "mlp", "--runs", "0", NULL});
    expect(&r, 2, NULL, "--runs takes a whole number from 1, got '0'");
    result_free(&r);
    r = run_tjit((const char *[]){"profile", "mlp", "--backend", "nope", NULL});
    expect(&r, 1, NULL, "no fusion backend named 'nope'");
    result_free(&r);
    /* TJIT_BACKEND picks the default; a name that is no backend is refused */
    setenv("TJIT_BACKEND", "portable", 1);
    r = run_tjit((const char *[]){"profile", "mlp", "--runs", "1", NULL});
    expect(&r, 0, "fusion backend portable", NULL);
    result_free(&r);
    setenv("TJIT_BACKEND", "nope", 1);
    r = run_tjit((const char *[]){"profile", "mlp", "--runs", "1", NULL});
    expect(&r, 1, NULL, "no fusion backend named 'nope' (from TJIT_BACKEND)");
    result_free(&r);
    unsetenv("TJIT_BACKEND");
    r = run_tjit((const char *[]){"profile", "mlp", "--runs", "1", "--chrome-trace", "/nonexistent/t.json", NULL});
    expect(&r, 1, NULL, "cannot write /nonexistent/t.json");
    result_free(&r);
    r = run_tjit((const char *[]){"profile", NULL});
    expect(&r, 2, NULL, "usage: tjit profile MODEL|FILE.ir");
    result_free(&r);
    free(ir);
    free(trace);
}

/* Random Long and Bool inputs (small non-negative integers) are made and
 * released: under LeakSanitizer a leak would fail the run. */
static void test_run_integer_inputs(void **state) {
    (void)state;
    char *ir = write_text("ints.ir",
                          "graph(%i : Long(2, 3), %b : Bool(2, 3)):\n"
                          "  %f : Long(2, 3) = aten::to.dtype[dtype=Long](%b)\n"
                          "  %s : Long(2, 3) = aten::add[alpha=1](%i, %f)\n"
                          "  return (%s)\n");
    result r = run_tjit((const char *[]){"run", ir, NULL});
    expect(&r, 0, "s : Long(2, 3, device=cpu)", NULL);
    result_free(&r);
    free(ir);
}

static void test_version(void **state) {
    (void)state;
    result r = run_tjit((const char *[]){"--version", NULL});
    expect(&r, 0, "tjit " TJIT_VERSION_STRING " (", NULL);
    expect(&r, 0, "\nBLAS: OpenBLAS", NULL);
    expect(&r, 0, "\nISA: ", NULL);
    expect(&r, 0, "\nCPU kernels: ", NULL);
    result_free(&r);
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(test_run_with_input_and_out),
        T(test_run_errors),
        T(test_run_backward),
        T(test_run_integer_inputs),
        T(test_dump),
        T(test_profile),
        T(test_version),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
