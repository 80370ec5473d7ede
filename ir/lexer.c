/* lexer.c — tokens of the IR text form, with their line and column, and the
 * parser's error helpers. The input need not end in a NUL: every read checks
 * the length, and a NUL byte inside it is an unexpected character. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

static int peek(const tjir_parser *p, size_t k) {
    return p->pos + k < p->len ? (unsigned char)p->src[p->pos + k] : -1;
}

static void advance(tjir_parser *p, size_t k) {
    for (size_t i = 0; i < k && p->pos < p->len; i++) {
        if (p->src[p->pos] == '\n') {
            p->line++;
            p->col = 1;
        } else {
            p->col++;
        }
        p->pos++;
    }
}

static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alnum(int c) { return is_alpha(c) || is_digit(c); }

void tjir_lex_init(tjir_parser *p, const char *src, size_t len) {
    p->src = src;
    p->len = len;
    p->pos = 0;
    p->line = p->col = 1;
    tjir_next(p);
}

bool tjir_fail_at(tjir_parser *p, int line, int col, const char *fmt, ...) {
    if (p->failed) return false;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->failed = true;
    if (p->status == TJ_OK) p->status = TJ_ERR_PARSE;
    tjc_error(p->status, "%d:%d: %s", line, col, msg);
    return false;
}

/* Printable text of at most 32 bytes; others shown as \xHH. */
static void quote_text(char *buf, size_t n, const char *s, size_t len) {
    size_t k = 0;
    bool cut = len > 32;
    if (cut) len = 32;
    for (size_t i = 0; i < len && k + 5 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f) buf[k++] = (char)c;
        else k += (size_t)snprintf(buf + k, n - k, "\\x%02x", c);
    }
    if (cut && k + 4 < n) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = '\0';
}

const char *tjir_tok_desc(const tjir_parser *p, char *buf, size_t n) {
    char text[160];
    const tjir_tok *t = &p->tok;
    quote_text(text, sizeof text, t->text, t->len);
    switch (t->kind) {
    case TOK_EOF: snprintf(buf, n, "end of input"); break;
    case TOK_STRING: snprintf(buf, n, "string %s", text); break;
    case TOK_VALUE: snprintf(buf, n, "value %%%s", text); break;
    default: snprintf(buf, n, "'%s'", text);
    }
    return buf;
}

bool tjir_expected(tjir_parser *p, const char *what) {
    char got[200];
    return tjir_fail_at(p, p->tok.line, p->tok.col, "expected %s, got %s", what,
                        tjir_tok_desc(p, got, sizeof got));
}

bool tjir_is(const tjir_parser *p, tjir_tok_kind k) { return !p->failed && p->tok.kind == k; }

bool tjir_is_ident(const tjir_parser *p, const char *word) {
    size_t n = strlen(word);
    return tjir_is(p, TOK_IDENT) && p->tok.len == n && memcmp(p->tok.text, word, n) == 0;
}

bool tjir_eat(tjir_parser *p, tjir_tok_kind k, const char *what) {
    if (p->failed) return false;
    if (p->tok.kind != k) return tjir_expected(p, what);
    tjir_next(p);
    return !p->failed;
}

bool tjir_eat_ident(tjir_parser *p, const char *word) {
    if (p->failed) return false;
    if (!tjir_is_ident(p, word)) {
        char what[64];
        snprintf(what, sizeof what, "'%s'", word);
        return tjir_expected(p, what);
    }
    tjir_next(p);
    return !p->failed;
}

char *tjir_tok_copy(tjir_parser *p) {
    char *s = tjir_strndup(&p->scratch, p->tok.text, p->tok.len);
    if (!s) {
        p->status = TJ_ERR_MEMORY;
        tjir_fail_at(p, p->tok.line, p->tok.col, "out of memory");
    }
    return s;
}

/* ---- tokens ---------------------------------------------------------------------- */

static void skip_space(tjir_parser *p) {
    for (;;) {
        int c = peek(p, 0);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            advance(p, 1);
        } else if (c == '#') { /* a comment runs to the end of the line */
            while (peek(p, 0) != -1 && peek(p, 0) != '\n') advance(p, 1);
        } else {
            return;
        }
    }
}

/* A number: -?digits, then an optional fraction and exponent; "-inf". */
static void lex_number(tjir_parser *p) {
    size_t k = 0;
    if (peek(p, 0) == '-') k++;
    if (peek(p, k) == 'i' && peek(p, k + 1) == 'n' && peek(p, k + 2) == 'f' &&
        !is_alnum(peek(p, k + 3))) {
        p->tok.kind = TOK_FLOAT;
        p->tok.len = k + 3;
        return;
    }
    p->tok.kind = TOK_INT;
    while (is_digit(peek(p, k))) k++;
    if (peek(p, k) == '.' && !(peek(p, k + 1) == '.')) {
        p->tok.kind = TOK_FLOAT;
        k++;
        while (is_digit(peek(p, k))) k++;
    }
    if ((peek(p, k) == 'e' || peek(p, k) == 'E') &&
        (is_digit(peek(p, k + 1)) ||
         ((peek(p, k + 1) == '-' || peek(p, k + 1) == '+') && is_digit(peek(p, k + 2))))) {
        p->tok.kind = TOK_FLOAT;
        k += 2;
        while (is_digit(peek(p, k))) k++;
    }
    p->tok.len = k;
}

static bool lex_string(tjir_parser *p) {
    size_t k = 1;
    for (;;) {
        int c = peek(p, k);
        if (c == -1 || c == '\n') {
            p->tok.len = k;
            advance(p, k);
            return tjir_fail_at(p, p->line, p->col, "expected '\"' closing the string, got %s",
                                c == -1 ? "end of input" : "end of line");
        }
        if (c == '"') break;
        k += c == '\\' && peek(p, k + 1) != -1 && peek(p, k + 1) != '\n' ? 2 : 1;
    }
    p->tok.kind = TOK_STRING;
    p->tok.len = k + 1;
    return true;
}

void tjir_next(tjir_parser *p) {
    if (p->failed) return;
    /* the previous token is consumed here, so its text stays valid until now */
    advance(p, p->tok.kind == TOK_EOF && p->tok.text == NULL ? 0 : p->tok.len);
    skip_space(p);
    tjir_tok *t = &p->tok;
    t->text = p->src + p->pos;
    t->line = p->line;
    t->col = p->col;
    t->len = 1;
    int c = peek(p, 0);
    if (c == -1) {
        t->kind = TOK_EOF;
        t->len = 0;
        return;
    }
    if (is_alpha(c)) {
        size_t k = 1;
        while (is_alnum(peek(p, k))) k++;
        t->kind = TOK_IDENT;
        if (peek(p, k) == ':' && peek(p, k + 1) == ':' && is_alpha(peek(p, k + 2))) {
            t->kind = TOK_KIND;
            k += 2;
            while (is_alnum(peek(p, k)) || peek(p, k) == '.') k++;
        }
        t->len = k;
        return;
    }
    if (is_digit(c) || (c == '-' && (is_digit(peek(p, 1)) || peek(p, 1) == 'i'))) {
        lex_number(p);
        if (t->len == 1 && c == '-') goto bad; /* "-i" not followed by "nf" */
        return;
    }
    switch (c) {
    case '%': {
        size_t k = 1;
        while (is_alnum(peek(p, k)) || peek(p, k) == '.') k++;
        if (k == 1) {
            advance(p, 1);
            char got[64];
            int d = peek(p, 0);
            if (d == -1) snprintf(got, sizeof got, "end of input");
            else if (d >= 0x20 && d < 0x7f) snprintf(got, sizeof got, "'%c'", d);
            else snprintf(got, sizeof got, "byte 0x%02x", d);
            tjir_fail_at(p, p->line, p->col, "expected a value name after '%%', got %s", got);
            return;
        }
        t->kind = TOK_VALUE;
        t->text++; /* the name without its '%' */
        t->len = k - 1;
        advance(p, 1);
        return;
    }
    case '"': lex_string(p); return;
    case '(': t->kind = TOK_LPAREN; return;
    case ')': t->kind = TOK_RPAREN; return;
    case '[': t->kind = TOK_LBRACKET; return;
    case ']': t->kind = TOK_RBRACKET; return;
    case ',': t->kind = TOK_COMMA; return;
    case ':': t->kind = TOK_COLON; return;
    case '=': t->kind = TOK_EQUALS; return;
    case '*': t->kind = TOK_STAR; return;
    case '.':
        if (peek(p, 1) == '.' && peek(p, 2) == '.') {
            t->kind = TOK_ELLIPSIS;
            t->len = 3;
            return;
        }
        break;
    default: break;
    }
bad:
    if (c >= 0x20 && c < 0x7f)
        tjir_fail_at(p, p->line, p->col, "expected a token, got character '%c'", c);
    else
        tjir_fail_at(p, p->line, p->col, "expected a token, got byte 0x%02x", c);
}

/* ---- literals ------------------------------------------------------------------------ */

bool tjir_read_int(tjir_parser *p, int64_t *v, const char *what) {
    if (!tjir_is(p, TOK_INT)) return tjir_expected(p, what);
    char buf[32];
    if (p->tok.len >= sizeof buf) return tjir_expected(p, "an integer that fits in 64 bits");
    memcpy(buf, p->tok.text, p->tok.len);
    buf[p->tok.len] = '\0';
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno == ERANGE) return tjir_expected(p, "an integer that fits in 64 bits");
    *v = x;
    tjir_next(p);
    return !p->failed;
}

bool tjir_read_float(tjir_parser *p, double *v, const char *what) {
    if (tjir_is_ident(p, "inf") || tjir_is_ident(p, "nan")) {
        *v = p->tok.text[0] == 'i' ? INFINITY : NAN;
        tjir_next(p);
        return !p->failed;
    }
    if (!tjir_is(p, TOK_INT) && !tjir_is(p, TOK_FLOAT)) return tjir_expected(p, what);
    if (p->tok.len > 400) return tjir_expected(p, "a number of at most 400 characters");
    char buf[408];
    memcpy(buf, p->tok.text, p->tok.len);
    buf[p->tok.len] = '\0';
    *v = strtod(buf, NULL); /* out of range reads as inf or 0, as in C */
    tjir_next(p);
    return !p->failed;
}

static int hex_digit(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char *tjir_read_string(tjir_parser *p) {
    if (!tjir_is(p, TOK_STRING)) {
        tjir_expected(p, "a string");
        return NULL;
    }
    const char *s = p->tok.text + 1;
    size_t n = p->tok.len - 2;
    char *out = tjir_alloc(&p->scratch, n + 1);
    if (!out) {
        p->status = TJ_ERR_MEMORY;
        tjir_fail_at(p, p->tok.line, p->tok.col, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c != '\\') {
            if (c == '\0') {
                tjir_fail_at(p, p->tok.line, p->tok.col + (int)i + 1,
                             "expected a character, got byte 0x00 in a string");
                return NULL;
            }
            out[k++] = (char)c;
            continue;
        }
        int e = s[++i];
        int col = p->tok.col + (int)i;
        switch (e) {
        case 'n': out[k++] = '\n'; break;
        case 't': out[k++] = '\t'; break;
        case 'r': out[k++] = '\r'; break;
        case '"': out[k++] = '"'; break;
        case '\\': out[k++] = '\\'; break;
        case 'x': {
            int hi = i + 1 < n ? hex_digit(s[i + 1]) : -1;
            int lo = i + 2 < n ? hex_digit(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                tjir_fail_at(p, p->tok.line, col, "expected two hex digits (not 00) after \\x");
                return NULL;
            }
            out[k++] = (char)(hi * 16 + lo);
            i += 2;
            break;
        }
        default: {
            char got[16];
            quote_text(got, sizeof got, s + i, 1);
            tjir_fail_at(p, p->tok.line, col,
                         "expected an escape (\\n \\t \\r \\\" \\\\ \\xHH), got '\\%s'", got);
            return NULL;
        }
        }
    }
    out[k] = '\0';
    tjir_next(p);
    return p->failed ? NULL : out;
}
