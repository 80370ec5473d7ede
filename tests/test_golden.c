/* test_golden.c — the canonical IR of every example model, byte for byte
 * against tests/golden/<model>.ir (what `tjit dump MODEL --canonical`
 * prints), and each golden file parsed back and printed again unchanged.
 *
 * A change to the tracer, the printer or a model shows up here as a diff.
 * When the change is intended, regenerate the files from the repository root:
 *
 *     TJIT_UPDATE_GOLDEN=1 build/test_golden
 *
 * (or, per model, build/tjit dump MODEL --canonical > tests/golden/MODEL.ir)
 * and review the diff with git. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/runtime_testing.h"

/* The flags of `tjit dump --canonical`: values renumbered, strides kept. */
enum { GOLDEN_FLAGS = TJ_PRINT_CANONICAL };

static bool updating(void) {
    const char *v = getenv("TJIT_UPDATE_GOLDEN");
    return v && *v && strcmp(v, "0") != 0;
}

static char *golden_path(const char *model) {
    size_t n = strlen(model) + 32;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "tests/golden/%s.ir", model);
    return p;
}

/* What `tjit dump MODEL --canonical` prints: the tracer's warnings as
 * comments, then the graph. malloc'd. */
static char *dump_model(const tjx_model *m) {
    tj_generator *gen = tj_generator_new(0); /* the seed tjit dump uses */
    void *params = m->create(gen);
    assert_non_null(params);
    tj_tensor *in[8] = {0};
    assert_int_equal(m->make_inputs(params, gen, in), TJ_OK);
    tj_graph *g = tj_trace(m->forward, params, in, m->n_in, m->n_out, NULL);
    if (!g) fprintf(stderr, "%s: %s\n", m->name, tj_last_error());
    assert_non_null(g);
    char *graph = tj_graph_to_string(g, GOLDEN_FLAGS);
    assert_non_null(graph);
    size_t n = strlen(graph) + 1;
    for (int i = 0; i < tj_graph_num_warnings(g); i++) n += strlen(tj_graph_warning(g, i)) + 12;
    char *text = malloc(n);
    assert_non_null(text);
    text[0] = '\0';
    for (int i = 0; i < tj_graph_num_warnings(g); i++) {
        strcat(text, "# warning: ");
        strcat(text, tj_graph_warning(g, i));
        strcat(text, "\n");
    }
    strcat(text, graph);
    free(graph);
    tj_graph_free(g);
    for (int i = 0; i < m->n_in; i++) tj_release(in[i]);
    m->destroy(params);
    tj_generator_free(gen);
    return text;
}

/* Prints the first line where got and want differ, with a line of context
 * before it. */
static void print_first_difference(const char *path, const char *want, const char *got) {
    int line = 1;
    const char *lw = want, *lg = got, *prev = NULL;
    while (*want && *want == *got) {
        if (*want == '\n') {
            line++;
            prev = lw;
            lw = want + 1;
            lg = got + 1;
        }
        want++;
        got++;
    }
    fprintf(stderr, "--- %s (golden)\n+++ traced now\n@@ line %d @@\n", path, line);
    if (prev) fprintf(stderr, " %.*s\n", (int)strcspn(prev, "\n"), prev);
    if (*lw) fprintf(stderr, "-%.*s\n", (int)strcspn(lw, "\n"), lw);
    else fprintf(stderr, "-(end of file)\n");
    if (*lg) fprintf(stderr, "+%.*s\n", (int)strcspn(lg, "\n"), lg);
    else fprintf(stderr, "+(end of output)\n");
    fprintf(stderr, "If the change is intended, regenerate the golden files from the repository "
            "root with\n    TJIT_UPDATE_GOLDEN=1 <build dir>/test_golden\nand review the diff.\n");
}

static void test_models_match_golden(void **state) {
    (void)state;
    int mismatches = 0;
    for (int k = 0; k < tjx_num_models(); k++) {
        const tjx_model *m = tjx_model_at(k);
        char *path = golden_path(m->name);
        char *got = dump_model(m);
        if (updating()) {
            tt_write_file(path, got, strlen(got));
            fprintf(stderr, "wrote %s\n", path);
        } else {
            char *want = tt_read_file(path);
            if (!want) {
                fprintf(stderr, "cannot read %s (the test runs from the repository root); create "
                        "it with TJIT_UPDATE_GOLDEN=1\n", path);
                mismatches++;
            } else if (strcmp(want, got) != 0) {
                print_first_difference(path, want, got);
                mismatches++;
            }
            free(want);
        }
        free(got);
        free(path);
    }
    assert_int_equal(mismatches, 0);
}

/* The graph part of a golden file: after any "# warning" comment lines. */
static const char *graph_part(const char *text) {
    while (!strncmp(text, "# ", 2)) {
        const char *nl = strchr(text, '\n');
        if (!nl) break;
        text = nl + 1;
    }
    return text;
}

static void test_golden_files_parse_back(void **state) {
    (void)state;
    for (int k = 0; k < tjx_num_models(); k++) {
        const tjx_model *m = tjx_model_at(k);
        char *path = golden_path(m->name);
        char *text = tt_read_file(path);
        if (!text) fprintf(stderr, "cannot read %s\n", path);
        assert_non_null(text);
        tj_status st = TJ_OK;
        tj_graph *g = tj_graph_parse(text, &st);
        if (!g) fprintf(stderr, "%s:%s\n", path, tj_last_error());
        assert_non_null(g);
        assert_int_equal(tj_graph_verify(g), TJ_OK);
        char *again = tj_graph_to_string(g, GOLDEN_FLAGS);
        assert_non_null(again);
        if (strcmp(again, graph_part(text)) != 0) {
            print_first_difference(path, graph_part(text), again);
            fail_msg("%s does not print back as it reads", path);
        }
        free(again);
        tj_graph_free(g);
        free(text);
        free(path);
    }
}

/* What the golden LSTM cell says about the tracer: the high-level ops, with
 * aten::chunk, and no decomposition. */
static void test_lstm_cell_golden_is_high_level(void **state) {
    (void)state;
    char *text = tt_read_file("tests/golden/lstm_cell.ir");
    assert_non_null(text);
    assert_non_null(strstr(text, "= aten::chunk[chunks=4, dim=1]("));
    assert_non_null(strstr(text, "= aten::linear("));
    const char *absent[] = {"aten::mm", "aten::addmm", "aten::t(", "aten::matmul", "aten::narrow"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++) assert_null(strstr(text, absent[i]));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_models_match_golden),
        cmocka_unit_test(test_golden_files_parse_back),
        cmocka_unit_test(test_lstm_cell_golden_is_high_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
