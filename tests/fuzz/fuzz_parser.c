/* fuzz_parser.c — a libFuzzer target for the IR parser (see Makefile here).
 *
 * Any input must parse or fail cleanly. What parses must print, and the print
 * must parse back and print identically, in the plain, canonical and untyped
 * forms; the verifier, the Graphviz writer and cloning must run on it too.
 * Sanitizers catch crashes, leaks and undefined behaviour; a broken round
 * trip aborts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit/ir.h"
#include "tjit/tjit.h"

static void must(bool ok, const char *what, const char *text) {
    if (ok) return;
    fprintf(stderr, "fuzz_parser: %s\n--- text:\n%s\n--- error: %s\n", what, text ? text : "(null)",
            tj_last_error());
    abort();
}

static void round_trip(const tj_graph *g, unsigned flags) {
    char *a = tj_graph_to_string(g, flags);
    must(a != NULL, "printing failed", NULL);
    tj_graph *h = tj_graph_parse(a, NULL);
    must(h != NULL, "the printed form does not parse", a);
    char *b = tj_graph_to_string(h, flags);
    must(b && strcmp(a, b) == 0, "print, parse, print differs", b);
    tj_graph_free(h);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tj_graph *g = tj_graph_parse_n((const char *)data, size, NULL);
    if (!g) {
        must(tj_last_error()[0] != '\0', "a failed parse set no error", NULL);
        tj_clear_error();
        return 0;
    }
    round_trip(g, 0);
    round_trip(g, TJ_PRINT_CANONICAL);
    round_trip(g, TJ_PRINT_NO_TYPES | TJ_PRINT_CANONICAL);
    round_trip(g, TJ_PRINT_NO_STRIDES);
    tj_graph_verify(g);
    char *dot = tj_graph_to_dot(g, 0);
    must(dot != NULL, "Graphviz output failed", NULL);
    free(dot);
    tj_graph *c = tj_graph_clone(g, NULL);
    must(c != NULL, "cloning failed", NULL);
    char *a = tj_graph_to_string(g, 0), *b = tj_graph_to_string(c, 0);
    must(a && b && strcmp(a, b) == 0, "a clone prints differently", b);
    free(a);
    free(b);
    tj_graph_free(c);
    tj_graph_free(g);
    tj_clear_error();
    return 0;
}
