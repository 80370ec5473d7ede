/* ir_testing.h — helpers shared by the IR tests (test_ir_*.c): op lookup that
 * skips a test when the op table lacks a row, file reading, and string
 * comparisons that show both texts. Prefix irt_. */
#ifndef TJIT_IR_TESTING_H
#define TJIT_IR_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tjit/ir.h"

/* The op named, or a skipped test when the table has no such row (yet). */
static inline const tj_op_info *irt_op(const char *name) {
    const tj_op_info *op = tj_op_find(name);
    if (!op) {
        print_message("op %s is not in the table; test skipped\n", name);
        skip();
    }
    return op;
}

/* The whole file, NUL-terminated, or NULL. */
static inline char *irt_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *bigger = realloc(buf, (cap *= 2) + 1);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

static inline void irt_assert_text_(const char *got, const char *want, const char *file, int line) {
    if (got && want && strcmp(got, want) == 0) return;
    print_message("%s:%d: texts differ\n--- got:\n%s\n--- expected:\n%s\n", file, line,
                  got ? got : "(null)", want ? want : "(null)");
    fail();
}
#define irt_assert_text(got, want) irt_assert_text_(got, want, __FILE__, __LINE__)

/* Prints g with flags, compares with want and frees the text. */
static inline void irt_assert_prints_(const tj_graph *g, unsigned flags, const char *want,
                                      const char *file, int line) {
    char *s = tj_graph_to_string(g, flags);
    if (!s) print_message("%s:%d: printing failed: %s\n", file, line, tj_last_error());
    irt_assert_text_(s, want, file, line);
    free(s);
}
#define irt_assert_prints(g, flags, want) irt_assert_prints_(g, flags, want, __FILE__, __LINE__)

/* Fails unless the last error contains needle (shows the message). */
static inline void irt_assert_error_(const char *needle, const char *file, int line) {
    if (strstr(tj_last_error(), needle)) return;
    print_message("%s:%d: expected an error containing \"%s\", got \"%s\"\n", file, line, needle,
                  tj_last_error());
    fail();
}
#define irt_assert_error(needle) irt_assert_error_(needle, __FILE__, __LINE__)

#endif
