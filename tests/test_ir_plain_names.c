/* test_ir_plain_names.c — op names without overload, as PyTorch prints them:
 * the parser resolves them from the attributes and inputs given (one
 * overload fits: that op; none or several: an error listing the
 * candidates), and TJ_PRINT_PLAIN_NAMES (tjit fmt --plain-names) prints them
 * so that every corpus file and every example model's graph reads back as
 * the same graph. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ir/parse.h"
#include "tests/ir_testing.h"
#include "tests/support/testing.h"

/* The op of the first node of a one-statement graph over %x, %y, %z. */
static const char *op_of(const char *stmt) {
    char text[512];
    snprintf(text, sizeof text,
             "graph(%%x : Float(2, 3, 4), %%y : Float(2, 3, 4), %%z : Float(2, 3, 4)):\n"
             "  %%1 = %s\n  return (%%1)\n", stmt);
    tj_graph *g = tj_graph_parse(text, NULL);
    if (!g) fail_msg("'%s' does not parse: %s", stmt, tj_last_error());
    static char name[128];
    snprintf(name, sizeof name, "%s", tj_node_name(tj_block_first(tj_graph_block(g))));
    assert_int_equal(tj_graph_verify(g), TJ_OK);
    tj_graph_free(g);
    return name;
}

static void test_resolves(void **state) {
    (void)state;
    assert_string_equal(op_of("aten::sum[dim=[1]](%x)"), "aten::sum.dim_IntList");
    assert_string_equal(op_of("aten::transpose[dim0=1, dim1=2](%y)"), "aten::transpose.int");
    assert_string_equal(op_of("aten::flatten[start_dim=1](%z)"), "aten::flatten.using_ints");
    assert_string_equal(op_of("aten::add(%x, %y)"), "aten::add");
    assert_string_equal(op_of("aten::add[other=2.](%x)"), "aten::add.Scalar");
    assert_string_equal(op_of("aten::add[other=2., alpha=3.](%x)"), "aten::add.Scalar");
    assert_string_equal(op_of("aten::squeeze(%x)"), "aten::squeeze");
    assert_string_equal(op_of("aten::squeeze[dim=0](%x)"), "aten::squeeze.dim");
    assert_string_equal(op_of("aten::lerp[weight=0.5](%x, %y)"), "aten::lerp.Scalar");
    assert_string_equal(op_of("aten::lerp(%x, %y, %z)"), "aten::lerp.Tensor");
    assert_string_equal(op_of("aten::pow[exponent=2.](%x)"), "aten::pow.Tensor_Scalar");
    /* full names are taken as they are */
    assert_string_equal(op_of("aten::add.Scalar[other=1.](%x)"), "aten::add.Scalar");
}

static void expect_error(const char *stmt, const char *needle) {
    char text[512];
    snprintf(text, sizeof text, "graph(%%x : Float(2, 3), %%y : Float(2, 3)):\n  %%1 = %s\n  return (%%1)\n", stmt);
    tj_status st = TJ_OK;
    tj_graph *g = tj_graph_parse(text, &st);
    assert_null(g);
    assert_int_equal(st, TJ_ERR_PARSE);
    if (!strstr(tj_last_error(), needle)) fail_msg("'%s': got '%s', expected '%s'", stmt, tj_last_error(), needle);
}

static void test_no_overload_fits(void **state) {
    (void)state;
    expect_error("aten::lerp(%x, %y)",
                 "2:8: expected an overload of aten::lerp for 2 inputs and attributes [], got none that "
                 "matches: aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor; "
                 "aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor");
    expect_error("aten::lerp[w=1.](%x, %y)", "expected an overload of aten::lerp for 2 inputs and "
                                             "attributes [w], got none that matches");
    /* a plain name that is an op's full name: that op's own checks speak */
    expect_error("aten::add(%x)", "2:8: expected 2 inputs for aten::add, got 1");
}

/* Two overloads that both take the call: the error lists both. (No pair of
 * today's table does; the matcher the parser uses is given two here.) */
static void test_ambiguous(void **state) {
    (void)state;
    const tj_op_info *cands[2] = {tj_op_find("aten::mul"), tj_op_find("aten::maximum")};
    char err[1024];
    assert_null(tjir_match_overloads("aten::mul", cands, 2, NULL, 0, 2, err, sizeof err));
    assert_string_equal(err, "an unambiguous overload of aten::mul for 2 inputs and attributes [], got "
                             "several that match: aten::mul(Tensor self, Tensor other) -> Tensor; "
                             "aten::maximum(Tensor self, Tensor other) -> Tensor");
    const char *attrs[1] = {"other"};
    const tj_op_info *both[2] = {tj_op_find("aten::mul"), tj_op_find("aten::mul.Scalar")};
    assert_ptr_equal(tjir_match_overloads("aten::mul", both, 2, attrs, 1, 1, err, sizeof err), both[1]);
    /* every plain name of the table resolves for the call its printed form makes */
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tj_op_at(i), *c[16];
        const tj_schema *s = tj_op_schema(op);
        char base[128];
        snprintf(base, sizeof base, "%s", tj_op_name(op));
        char *dot = strchr(strstr(base, "::") + 2, '.');
        if (dot) *dot = '\0';
        int n = tjir_overloads(base, c, 16);
        const char *names[TJ_MAX_ARGS];
        for (int k = 0; k < s->n_attrs; k++) names[k] = s->args[s->attr_pos[k]].name;
        int n_in = s->has_tensor_list ? 2 : s->n_tensor_args;
        if (tjir_match_overloads(base, c, n, names, s->n_attrs, n_in, err, sizeof err) != op)
            fail_msg("%s does not resolve back: %s", tj_op_name(op), err);
    }
}

/* Printed with plain names, read back, printed in full: as printed in full. */
static void check_round_trip(const char *path, const char *text) {
    tj_graph *g = tj_graph_parse(text, NULL);
    if (!g) fail_msg("%s: %s", path, tj_last_error());
    char *full = tj_graph_to_string(g, 0), *plain = tj_graph_to_string(g, TJ_PRINT_PLAIN_NAMES);
    tj_graph *h = tj_graph_parse(plain, NULL);
    if (!h) fail_msg("%s with plain names: %s\n%s", path, tj_last_error(), plain);
    char *again = tj_graph_to_string(h, 0);
    if (strcmp(full, again)) fail_msg("%s: plain names read back differently:\n%s\n---\n%s", path, full, again);
    free(full);
    free(plain);
    free(again);
    tj_graph_free(g);
    tj_graph_free(h);
}

static void test_round_trips(void **state) {
    (void)state;
    const char *dirs[] = {"tests/ir", "tests/golden"};
    int files = 0;
    for (int k = 0; k < 2; k++) {
        DIR *d = opendir(dirs[k]);
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            size_t nl = strlen(e->d_name);
            if (nl < 4 || strcmp(e->d_name + nl - 3, ".ir")) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[k], e->d_name);
            char *text = irt_read_file(path);
            assert_non_null(text);
            check_round_trip(path, text);
            free(text);
            files++;
        }
        closedir(d);
    }
    assert_true(files > 20);
    /* the plain form names no overload */
    tj_graph *g = tj_graph_parse("graph(%x : Float(2)):\n  %1 = aten::add.Scalar[other=1.](%x)\n  return (%1)\n", NULL);
    char *plain = tj_graph_to_string(g, TJ_PRINT_PLAIN_NAMES);
    assert_non_null(strstr(plain, "= aten::add[other=1., alpha=1](%x)"));
    free(plain);
    tj_graph_free(g);
}

/* tjit fmt --plain-names, on a file using plain names itself */
static void test_fmt(void **state) {
    (void)state;
    char tool[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", tool, sizeof tool - 8);
    assert_true(n > 0);
    tool[n] = '\0';
    strcpy(strrchr(tool, '/') + 1, "tjit");
    char path[] = "/tmp/tjit-plain-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "graph(%x : Float(2, 3)):\n  %1 : Float(2) = aten::sum[dim=[1]](%x)\n  return (%1)\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char cmd[PATH_MAX * 2 + 64];
    snprintf(cmd, sizeof cmd, "%s fmt --plain-names %s", tool, path);
    FILE *f = popen(cmd, "r");
    char out[1024] = {0};
    size_t got = fread(out, 1, sizeof out - 1, f);
    assert_int_equal(pclose(f), 0);
    unlink(path);
    assert_true(got > 0);
    assert_non_null(strstr(out, "= aten::sum[dim=[1], keepdim=False](%x)"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolves),
        cmocka_unit_test(test_no_overload_fits),
        cmocka_unit_test(test_ambiguous),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_fmt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
