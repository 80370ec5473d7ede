/* scope.c — autorelease scopes: tensors returned to user code inside a scope
 * are released when it ends, unless kept. Per thread, nestable. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core.h"

typedef struct scope {
    tj_tensor **items;
    int n, cap;
} scope;

static _Thread_local scope *scopes;
static _Thread_local int n_scopes, cap_scopes;

static bool push(scope *s, tj_tensor *t) {
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        tj_tensor **items = tjc_realloc(s->items, (size_t)cap * sizeof *items);
        if (!items) return false;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = t;
    return true;
}

/* Scopes whose tj_scope_begin could not allocate: their tj_scope_end must
 * not close the enclosing scope, whose tensors the caller still uses. Their
 * tensors go to the enclosing scope instead. */
static _Thread_local int n_unbacked;

void tj_scope_begin(void) {
    if (n_unbacked == 0 && n_scopes == cap_scopes) {
        int cap = cap_scopes ? 2 * cap_scopes : 8;
        scope *grown = tjc_realloc(scopes, (size_t)cap * sizeof *grown);
        if (grown) {
            scopes = grown;
            cap_scopes = cap;
        }
    }
    if (n_unbacked > 0 || n_scopes == cap_scopes) {
        n_unbacked++;
        tjc_error(TJ_ERR_MEMORY, "tj_scope_begin: out of memory; tensors of this scope are "
                  "released with the enclosing one");
        return;
    }
    scopes[n_scopes++] = (scope){0};
}

void tj_scope_end(void) {
    if (n_unbacked > 0) {
        n_unbacked--;
        return;
    }
    if (n_scopes == 0) {
        tjc_error(TJ_ERR_ARG, "tj_scope_end: no scope is open on this thread");
        return;
    }
    scope *s = &scopes[--n_scopes];
    for (int i = s->n - 1; i >= 0; i--) tj_release(s->items[i]);
    tjc_free(s->items);
    if (n_scopes == 0) {
        tjc_free(scopes);
        scopes = NULL;
        cap_scopes = 0;
    }
}

void tjc_scope_track(tj_tensor *t) {
    if (n_scopes == 0) return;
    if (!push(&scopes[n_scopes - 1], t))
        tjc_error(TJ_ERR_MEMORY, "out of memory tracking a tensor in a scope; it will leak");
}

tj_tensor *tj_keep(tj_tensor *t) {
    if (!t || n_scopes == 0) return t;
    /* only the innermost scope: keeping twice, or keeping a tensor an outer
     * scope owns, changes nothing */
    int k = n_scopes - 1;
    scope *s = &scopes[k];
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->items[i] != t) continue;
        s->items[i] = s->items[--s->n];
        if (k > 0 && !push(&scopes[k - 1], t))
            tjc_error(TJ_ERR_MEMORY, "tj_keep: out of memory; the tensor now belongs to "
                      "the caller");
        return t;
    }
    return t; /* not in the innermost scope: already the caller's or an outer scope's */
}

void tjc_track_created(tj_tensor *t) {
    if (tjc_op_depth() != 0) return;
    tjc_scope_track(t);
    const tj_record_hook *h = tjc_record_hook();
    if (h && h->created) h->created(h->ctx, t);
}
