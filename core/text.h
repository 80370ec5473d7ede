/* text.h — the growing string that dumps and generated code are written into
 * (register code, profile tables, memory plans, the fusion report, CUDA
 * sources). Prefix tjc_. */
#ifndef TJIT_CORE_TEXT_H
#define TJIT_CORE_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct tjc_text {
    char *s;
    size_t n, cap;
    bool failed; /* out of memory: later puts do nothing */
} tjc_text; /* zero-initialised to start */

/* Appends printf-formatted text. */
void tjc_put(tjc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tjc_vput(tjc_text *t, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* The string (malloc'd; "" when nothing was put), or NULL with an error when
 * memory ran out; t is spent either way. */
char *tjc_text_finish(tjc_text *t);

#endif
