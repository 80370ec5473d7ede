/* scope.c — autorelease scopes: tensors returned to user code inside a scope
 * are released when it ends, unless kept. Per thread, nestable. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core.h"

typedef struct scope {
    tj_tensor **items;
    int n, cap;
} scope;

/* The first levels live in a fixed array, so that opening the outermost
 * scopes cannot fail: a scope that could not be opened hands its tensors to
 * the enclosing one, and the outermost has none. Deeper levels grow on the heap. */
enum { FIXED_LEVELS = 8 };
static _Thread_local scope fixed[FIXED_LEVELS];
static _Thread_local scope *grown; /* all levels, once deeper than FIXED_LEVELS */
static _Thread_local int n_scopes, cap_grown;
static scope *levels(void) { return grown ? grown : fixed; }

/* Room for n more tensors in s. */
static bool reserve(scope *s, int n) {
    if (s->n + n <= s->cap) return true;
    int cap = s->cap ? 2 * s->cap : 32;
    while (cap < s->n + n) cap *= 2;
    tj_tensor **items = tjc_realloc(s->items, (size_t)cap * sizeof *items);
    if (!items) return false;
    s->items = items;
    s->cap = cap;
    return true;
}

static bool push(scope *s, tj_tensor *t) {
    if (!reserve(s, 1)) return false;
    s->items[s->n++] = t;
    return true;
}

/* Scopes whose tj_scope_begin could not allocate: their tj_scope_end must
 * not close the enclosing scope, whose tensors the caller still uses. Their
 * tensors go to the enclosing scope instead. */
static _Thread_local int n_unbacked;

/* Room for one more level. */
static bool grow_levels(void) {
    int cap = grown ? cap_grown : FIXED_LEVELS;
    if (n_scopes < cap) return true;
    scope *more = tjc_realloc(grown, (size_t)(2 * cap) * sizeof *more);
    if (!more) return false;
    if (!grown)
        for (int i = 0; i < FIXED_LEVELS; i++) more[i] = fixed[i];
    grown = more;
    cap_grown = 2 * cap;
    return true;
}

void tj_scope_begin(void) {
    if (n_unbacked > 0 || !grow_levels()) {
        n_unbacked++;
        tjc_error(TJ_ERR_MEMORY, "tj_scope_begin: out of memory; tensors of this scope are "
                  "released with the enclosing one");
        return;
    }
    levels()[n_scopes++] = (scope){0};
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
    scope *s = &levels()[--n_scopes];
    for (int i = s->n - 1; i >= 0; i--) tj_release(s->items[i]);
    tjc_free(s->items);
    if (n_scopes == 0 && grown) {
        tjc_free(grown);
        grown = NULL;
        cap_grown = 0;
    }
}

bool tjc_scope_reserve(int n) {
    if (n_scopes == 0 || reserve(&levels()[n_scopes - 1], n)) return true;
    tjc_error(TJ_ERR_MEMORY, "out of memory registering a result with the open tj_scope");
    return false;
}

void tjc_scope_track(tj_tensor *t) {
    if (n_scopes == 0) return;
    if (!push(&levels()[n_scopes - 1], t)) /* only a caller that did not reserve gets here */
        tjc_error(TJ_ERR_MEMORY, "out of memory tracking a tensor in a scope; it will leak");
}

tj_tensor *tj_keep(tj_tensor *t) {
    if (!t) return tjc_last_or(TJ_ERR_ARG, "tj_keep: tensor is NULL"), NULL;
    tjc_check_live(t, "tj_keep");
    if (n_scopes == 0) return t;
    /* only the innermost scope: keeping twice, or keeping a tensor an outer
     * scope owns, changes nothing */
    int k = n_scopes - 1;
    scope *s = &levels()[k];
    for (int i = s->n - 1; i >= 0; i--) {
        if (s->items[i] != t) continue;
        if (k > 0 && !reserve(&levels()[k - 1], 1)) /* it stays where it is */
            return tjc_error(TJ_ERR_MEMORY, "tj_keep: out of memory moving a tensor to the "
                             "enclosing scope"), NULL;
        s->items[i] = s->items[--s->n];
        if (k > 0) push(&levels()[k - 1], t);
        return t;
    }
    return t; /* not in the innermost scope: already the caller's or an outer scope's */
}

bool tjc_track_created(tj_tensor *t) {
    if (tjc_op_depth() != 0) return true;
    if (!tjc_scope_reserve(1)) return false;
    tjc_scope_track(t);
    const tj_record_hook *h = tjc_record_hook();
    if (h && h->created) h->created(h->ctx, t);
    return true;
}
