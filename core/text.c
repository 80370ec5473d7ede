/* text.c — the growing string (text.h). */
#include "text.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/alloc.h"
#include "core/core.h"

void tjc_vput(tjc_text *t, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int k = vsnprintf(NULL, 0, fmt, ap);
    if (k < 0 || t->failed) {
        va_end(again);
        return;
    }
    if (t->n + (size_t)k + 1 > t->cap) {
        size_t cap = (t->cap + (size_t)k + 1) * 2;
        char *s = tjc_realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            va_end(again);
            return;
        }
        t->s = s;
        t->cap = cap;
    }
    vsnprintf(t->s + t->n, t->cap - t->n, fmt, again);
    va_end(again);
    t->n += (size_t)k;
}

void tjc_put(tjc_text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tjc_vput(t, fmt, ap);
    va_end(ap);
}

char *tjc_text_finish(tjc_text *t) {
    if (!t->failed && !t->s) tjc_put(t, "%s", "");
    if (t->failed) {
        tjc_free(t->s);
        t->s = NULL;
        return tjc_error(TJ_ERR_MEMORY, "out of memory writing text"), NULL;
    }
    return t->s;
}
