/* test_ir_fmt.c — the `tjit fmt` command, run as a program (the tjit binary
 * next to this test): good files print back, malformed ones give the
 * line:col error and exit status 1. */
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/ir_testing.h"

static char tool[PATH_MAX];

static int find_tool(void **state) {
    (void)state;
    ssize_t n = readlink("/proc/self/exe", tool, sizeof tool - 8);
    if (n <= 0) return -1;
    tool[n] = '\0';
    char *slash = strrchr(tool, '/');
    if (!slash) return -1;
    strcpy(slash + 1, "tjit");
    return 0;
}

/* Runs `tjit ARGS` (stderr joined to stdout); returns the exit status and
 * the output (malloc'd) in *out. */
static int run_tool(const char *args, const char *stdin_text, char **out) {
    if (access(tool, X_OK) != 0) {
        print_message("%s is not built; test skipped\n", tool);
        skip();
    }
    char in_path[] = "/tmp/tjit_fmt_inXXXXXX";
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    if (stdin_text) assert_int_equal(write(fd, stdin_text, strlen(stdin_text)), (ssize_t)strlen(stdin_text));
    close(fd);
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd, "'%s' %s < %s 2>&1", tool, args, in_path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap + 1);
    while ((got = fread(buf + len, 1, cap - len, p)) > 0) {
        len += got;
        if (len == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    buf[len] = '\0';
    int status = pclose(p);
    unlink(in_path);
    *out = buf;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_good_file(void **state) {
    (void)state;
    char *out;
    assert_int_equal(run_tool("fmt tests/ir/basic_pointwise.ir", NULL, &out), 0);
    char *want = irt_read_file("tests/ir/basic_pointwise.ir");
    irt_assert_text(out, want);
    free(out);
    free(want);
    assert_int_equal(run_tool("fmt tests/ir/numbered_values.ir --canonical --no-types", NULL, &out), 0);
    irt_assert_text(out, "graph(%0,\n      %1):\n"
                         "  %2 = aten::sub[alpha=1.](%0, %1)\n"
                         "  %3 = aten::exp(%2)\n"
                         "  %4 = aten::div(%3, %1)\n"
                         "  %5 = aten::abs(%4)\n"
                         "  return (%5, %3)\n");
    free(out);
    assert_int_equal(run_tool("fmt tests/ir/fusion_group.ir --dot", NULL, &out), 0);
    assert_true(strncmp(out, "digraph tjit {\n", 15) == 0);
    assert_non_null(strstr(out, "subgraph cluster_1 {"));
    assert_non_null(strstr(out, "label=\"prim::FusionGroup_0\";"));
    free(out);
}

static void test_stdin(void **state) {
    (void)state;
    char *out;
    assert_int_equal(run_tool("fmt - --no-strides",
                              "graph(%x : Float(2, strides=[1])):\n  return (%x)\n", &out), 0);
    irt_assert_text(out, "graph(%x : Float(2)):\n  return (%x)\n");
    free(out);
}

static void test_malformed_file(void **state) {
    (void)state;
    char *out;
    assert_int_equal(run_tool("fmt -", "graph(%x):\n  %1 = aten::tanhh(%x)\n  return (%1)\n", &out),
                     1);
    irt_assert_text(out, "-:2:8: expected a known op, got 'aten::tanhh' (did you mean 'aten::tanh'?)\n");
    free(out);
    /* parses, but its fusion group has one input where its subgraph has two */
    assert_int_equal(run_tool("fmt -",
                              "graph(%x):\n  %1 = prim::FusionGroup_0(%x)\n  return (%1)\n"
                              "with prim::FusionGroup_0 = graph(%a, %b):\n  return (%a)\n",
                              &out),
                     1);
    assert_non_null(strstr(out, "graph verify: node #"));
    assert_non_null(strstr(out, "it has 1 inputs, its subgraph 2"));
    free(out);
    assert_int_equal(run_tool("fmt tests/ir/no_such_file.ir", NULL, &out), 1);
    assert_non_null(strstr(out, "cannot read tests/ir/no_such_file.ir"));
    free(out);
}

static void test_usage(void **state) {
    (void)state;
    char *out;
    assert_int_equal(run_tool("fmt", NULL, &out), 2);
    assert_non_null(strstr(out, "usage: tjit fmt FILE.ir"));
    free(out);
    assert_int_equal(run_tool("fmt a.ir b.ir", NULL, &out), 2);
    free(out);
    assert_int_equal(run_tool("fmt a.ir --pretty", NULL, &out), 2);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_stdin),
        cmocka_unit_test(test_malformed_file),
        cmocka_unit_test(test_usage),
    };
    return cmocka_run_group_tests(tests, find_tool, NULL);
}
