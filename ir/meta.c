/* meta.c — what a traced graph carries beside its nodes: graph inputs bound
 * to tensors (a model's parameters, which a compiled program reads by
 * reference) and the tracer's warnings. The graph holds a reference to each
 * bound tensor until it is freed. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"
#include "tjit/runtime.h"

typedef struct tjir_meta {
    tj_tensor **bound; /* by graph input index; NULL for plain inputs */
    int cap_bound;
    char **warnings;
    int n_warnings, cap_warnings;
} tjir_meta;

static tjir_meta *meta_of(tj_graph *g) {
    if (!g->meta) {
        g->meta = tjc_calloc(1, sizeof(tjir_meta));
        if (!g->meta) tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    return g->meta;
}

void tjir_meta_free(tj_graph *g) {
    tjir_meta *m = g->meta;
    if (!m) return;
    for (int i = 0; i < m->cap_bound; i++) tj_release(m->bound[i]);
    tjc_free(m->bound);
    for (int i = 0; i < m->n_warnings; i++) tjc_free(m->warnings[i]);
    tjc_free(m->warnings);
    tjc_free(m);
    g->meta = NULL;
}

tj_status tj_graph_bind_input(tj_graph *g, int input, tj_tensor *t) {
    if (!g) return tjc_error(TJ_ERR_ARG, "tj_graph_bind_input: graph is NULL");
    if (input < 0 || input >= tj_graph_num_inputs(g))
        return tjc_error(TJ_ERR_ARG, "tj_graph_bind_input: the graph has no input %d", input);
    tjir_meta *m = meta_of(g);
    if (!m) return TJ_ERR_MEMORY;
    if (input >= m->cap_bound) {
        int cap = input + 16;
        tj_tensor **bound = tjc_realloc(m->bound, sizeof *bound * (size_t)cap);
        if (!bound) return tjc_error(TJ_ERR_MEMORY, "out of memory");
        memset(bound + m->cap_bound, 0, sizeof *bound * (size_t)(cap - m->cap_bound));
        m->bound = bound;
        m->cap_bound = cap;
    }
    tj_retain(t);
    tj_release(m->bound[input]);
    m->bound[input] = t;
    return TJ_OK;
}

tj_tensor *tj_graph_input_binding(const tj_graph *g, int input) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_graph_input_binding: graph is NULL"), NULL;
    if (input < 0 || input >= tj_graph_num_inputs(g))
        return tjc_error(TJ_ERR_ARG, "tj_graph_input_binding: the graph has no input %d", input),
               NULL;
    if (!g->meta || input >= g->meta->cap_bound) return NULL; /* a plain input */
    return g->meta->bound[input];
}

tj_status tj_graph_add_warning(tj_graph *g, const char *message) {
    if (!g || !message) return tjc_error(TJ_ERR_ARG, "tj_graph_add_warning: NULL argument");
    tjir_meta *m = meta_of(g);
    if (!m) return TJ_ERR_MEMORY;
    for (int i = 0; i < m->n_warnings; i++)
        if (strcmp(m->warnings[i], message) == 0) return TJ_OK; /* once is enough */
    if (!tjir_grow_heap((void **)&m->warnings, &m->cap_warnings, m->n_warnings + 1, sizeof(char *)))
        return tjc_error(TJ_ERR_MEMORY, "out of memory");
    char *copy = tjc_strdup(message);
    if (!copy) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    m->warnings[m->n_warnings++] = copy;
    return TJ_OK;
}

int tj_graph_num_warnings(const tj_graph *g) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_graph_num_warnings: graph is NULL"), -1;
    return g->meta ? g->meta->n_warnings : 0;
}

const char *tj_graph_warning(const tj_graph *g, int i) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_graph_warning: graph is NULL"), NULL;
    if (!g->meta || i < 0 || i >= g->meta->n_warnings)
        return tjc_error(TJ_ERR_ARG, "tj_graph_warning: warning %d is out of range (the graph has "
                         "%d)", i, g->meta ? g->meta->n_warnings : 0), NULL;
    return g->meta->warnings[i];
}
