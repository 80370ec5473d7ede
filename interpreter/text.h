/* text.h — the growing string that the interpreter's dumps are written into
 * (register code, profile tables, memory plans). Prefix tji_. */
#ifndef TJIT_INTERPRETER_TEXT_H
#define TJIT_INTERPRETER_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tji_text {
    char *s;
    size_t n, cap;
    bool failed; /* out of memory: later puts do nothing */
} tji_text; /* zero-initialised to start */

/* Appends printf-formatted text. */
void tji_put(tji_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string (malloc'd; "" when nothing was put), or NULL with an error when
 * memory ran out; t is spent either way. */
char *tji_text_finish(tji_text *t);

#endif
