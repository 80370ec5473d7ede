/* tjit_fmt.c — `tjit fmt`: reads a graph in the text form, checks it and
 * prints it back (canonically, without strides or types, with op names
 * without overload) or as Graphviz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit/ir.h"
#include "tjit/tjit.h"
#include "tools/commands.h"

static int usage(void) {
    fprintf(stderr, "usage: tjit fmt FILE.ir [--canonical] [--no-strides] [--no-types] [--plain-names] [--dot]\n"
                    "       FILE may be - for standard input\n");
    return 2;
}

int tjit_cmd_fmt(int argc, char **argv) {
    const char *path = NULL;
    unsigned flags = 0;
    bool as_dot = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--canonical")) flags |= TJ_PRINT_CANONICAL;
        else if (!strcmp(argv[i], "--no-strides")) flags |= TJ_PRINT_NO_STRIDES;
        else if (!strcmp(argv[i], "--no-types")) flags |= TJ_PRINT_NO_TYPES;
        else if (!strcmp(argv[i], "--plain-names")) flags |= TJ_PRINT_PLAIN_NAMES;
        else if (!strcmp(argv[i], "--dot")) as_dot = true;
        else if (argv[i][0] == '-' && argv[i][1]) return usage();
        else if (path) return usage();
        else path = argv[i];
    }
    if (!path) return usage();
    size_t len = 0;
    char *text = tjit_read_file(path, &len);
    if (!text) {
        fprintf(stderr, "tjit fmt: cannot read %s\n", path);
        return 1;
    }
    tj_graph *g = tj_graph_parse_n(text, len, NULL);
    free(text);
    if (!g) {
        fprintf(stderr, "%s:%s\n", path, tj_last_error());
        return 1;
    }
    if (tj_graph_verify(g) != TJ_OK) {
        fprintf(stderr, "%s: %s\n", path, tj_last_error());
        tj_graph_free(g);
        return 1;
    }
    char *out = as_dot ? tj_graph_to_dot(g, flags) : tj_graph_to_string(g, flags);
    tj_graph_free(g);
    if (!out) {
        fprintf(stderr, "tjit fmt: %s\n", tj_last_error());
        return 1;
    }
    fputs(out, stdout);
    free(out);
    return 0;
}
