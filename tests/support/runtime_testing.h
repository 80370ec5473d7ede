/* runtime_testing.h — helpers for the tests of tracing, replay, functions,
 * .npy files and the command line: exact tensor comparison, temporary
 * directories, graph queries and deep copies of the example models' inputs.
 * Prefix tt_, like testing.h. */
#ifndef TJIT_RUNTIME_TESTING_H
#define TJIT_RUNTIME_TESTING_H

#include "tests/support/testing.h"

/* Fails unless got has want's dtype and sizes and bit-identical values (NaNs
 * match NaNs). */
void tt_assert_same_(const tj_tensor *got, const tj_tensor *want, const char *file, int line);
#define tt_assert_same(got, want) tt_assert_same_(got, want, __FILE__, __LINE__)

/* A fresh contiguous copy with the same values, owned by the current scope
 * like a tj_ function's result. */
tj_tensor *tt_copy(tj_tensor *t);

/* Number of nodes of g's block whose name (tj_node_name) is name. */
int tt_count_nodes(const tj_graph *g, const char *name);
/* The first node named name, or NULL. */
tj_node *tt_find_node(const tj_graph *g, const char *name);

/* A new directory under $TMPDIR (or /tmp); malloc'd path. tt_rmtree removes
 * it with everything in it (one level of subdirectories) and frees path. */
char *tt_mkdtemp(void);
void tt_rmtree(char *path);
/* dir/name, malloc'd. */
char *tt_path(const char *dir, const char *name);
/* Writes n bytes to path; fails the test if it cannot. */
void tt_write_file(const char *path, const void *data, size_t n);
/* The whole file, NUL-terminated and malloc'd; NULL when it cannot be read. */
char *tt_read_file(const char *path);

#endif
