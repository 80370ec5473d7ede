/* runtime_testing.c — see runtime_testing.h. */
#include "tests/support/runtime_testing.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void tt_assert_same_(const tj_tensor *got, const tj_tensor *want, const char *file, int line) {
    if (!got || !want) {
        fprintf(stderr, "%s:%d: a tensor is NULL (%s)\n", file, line, tj_last_error());
        fail();
    }
    if (tj_tensor_dtype(got) != tj_tensor_dtype(want)) {
        fprintf(stderr, "%s:%d: dtype %s, expected %s\n", file, line,
                tj_dtype_name(tj_tensor_dtype(got)), tj_dtype_name(tj_tensor_dtype(want)));
        fail();
    }
    tt_assert_sizes_(got, tj_sizes(want), tj_ndim(want), file, line);
    tt_ref r = tt_ref_of(want);
    tt_assert_close_ref_(got, &r, 0, 0, file, line);
    tt_ref_free(&r);
}

tj_tensor *tt_copy(tj_tensor *t) {
    tj_tensor *c = tj_clone(t);
    assert_non_null(c);
    return c;
}

int tt_count_nodes(const tj_graph *g, const char *name) {
    int n = 0;
    for (tj_node *k = tj_block_first(tj_graph_block((tj_graph *)g)); k; k = tj_node_next(k))
        n += strcmp(tj_node_name(k), name) == 0;
    return n;
}

tj_node *tt_find_node(const tj_graph *g, const char *name) {
    for (tj_node *k = tj_block_first(tj_graph_block((tj_graph *)g)); k; k = tj_node_next(k))
        if (!strcmp(tj_node_name(k), name)) return k;
    return NULL;
}

char *tt_path(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *tt_mkdtemp(void) {
    const char *base = getenv("TMPDIR");
    char *templ = tt_path(base && *base ? base : "/tmp", "tjit-test-XXXXXX");
    assert_non_null(mkdtemp(templ));
    return templ;
}

static void remove_entries(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = tt_path(dir, e->d_name);
        struct stat st;
        if (depth > 0 && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            remove_entries(p, depth - 1);
            rmdir(p);
        } else {
            unlink(p);
        }
        free(p);
    }
    closedir(d);
}

void tt_rmtree(char *path) {
    if (!path) return;
    remove_entries(path, 1);
    rmdir(path);
    free(path);
}

void tt_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

char *tt_read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    while (s) {
        n += fread(s + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        char *grown = realloc(s, cap *= 2);
        if (!grown) free(s);
        s = grown;
    }
    fclose(f);
    if (s) s[n] = '\0';
    return s;
}
