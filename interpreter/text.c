/* text.c — the interpreter's growing string (text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/core.h"

void tji_put(tji_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || t->failed) return;
    if (t->n + (size_t)k + 1 > t->cap) {
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *s = tjc_realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    t->n += (size_t)k;
}

char *tji_text_finish(tji_text *t) {
    if (!t->failed && !t->s) tji_put(t, "%s", "");
    if (t->failed) {
        tjc_free(t->s);
        t->s = NULL;
        return tjc_error(TJ_ERR_MEMORY, "out of memory writing text"), NULL;
    }
    return t->s;
}
