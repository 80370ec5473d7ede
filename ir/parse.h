/* parse.h — the parser's shared state: tokens, the lexer and the error
 * helpers (lexer.c), the readers of types and attribute literals
 * (parse_values.c) and the grammar of graphs (parser.c). Prefix tjir_. */
#ifndef TJIT_IR_PARSE_H
#define TJIT_IR_PARSE_H

#include "ir_internal.h"

typedef enum tjir_tok_kind {
    TOK_EOF,
    TOK_IDENT,    /* graph, Float, cpu, True, inf, ... */
    TOK_KIND,     /* ns::name with an optional .overload: aten::add.Scalar */
    TOK_VALUE,    /* %name or %12; text excludes the '%' */
    TOK_INT,
    TOK_FLOAT,
    TOK_STRING,   /* text includes the quotes; escapes are decoded on demand */
    TOK_LPAREN,
    TOK_RPAREN,
    TOK_LBRACKET,
    TOK_RBRACKET,
    TOK_COMMA,
    TOK_COLON,
    TOK_EQUALS,
    TOK_STAR,
    TOK_ELLIPSIS
} tjir_tok_kind;

typedef struct tjir_tok {
    tjir_tok_kind kind;
    const char *text;
    size_t len;
    int line, col;
} tjir_tok;

/* A subgraph reference waiting for its `with` section. */
typedef struct tjir_ref {
    tj_node *node;
    char *name;
    int from; /* the graph it appears in: -1 main, else a section */
    int line, col;
} tjir_ref;

typedef struct tjir_section {
    char *name;
    tj_graph *g;
    int line, col;
    int user;  /* the graph whose node holds it, -2 while unused */
    int depth;
} tjir_section;

typedef struct tjir_parser {
    const char *src;
    size_t len, pos;
    int line, col;
    tjir_tok tok;
    bool failed;
    tj_status status;
    tjir_arena scratch;  /* token copies, freed with the parser */
    tjir_map vals;       /* token text -> value, for the graph being read */
    tj_graph *g;         /* the graph being read */
    int graph_index;     /* -1 main, else a section */
    int64_t max_id;      /* largest %number in the graph being read */
    tjir_ref *refs;
    int n_refs, cap_refs;
    tjir_section *secs;
    int n_secs, cap_secs;
} tjir_parser;

/* ---- lexer.c ------------------------------------------------------------------ */

void tjir_lex_init(tjir_parser *p, const char *src, size_t len);
void tjir_next(tjir_parser *p); /* reads the next token into p->tok */
/* Records the first error: "line:col: message". Returns false. */
bool tjir_fail_at(tjir_parser *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "expected <what>, got <the current token>" at the current token. */
bool tjir_expected(tjir_parser *p, const char *what);
/* The current token described for messages: 'foo', end of input, ... */
const char *tjir_tok_desc(const tjir_parser *p, char *buf, size_t n);
bool tjir_is(const tjir_parser *p, tjir_tok_kind k);
bool tjir_is_ident(const tjir_parser *p, const char *word);
/* Consumes a token of kind k or fails with "expected <what>". */
bool tjir_eat(tjir_parser *p, tjir_tok_kind k, const char *what);
bool tjir_eat_ident(tjir_parser *p, const char *word);
/* The current token's text as a NUL-terminated copy in the scratch arena. */
char *tjir_tok_copy(tjir_parser *p);
/* Reads an integer token (with its sign) into *v; checks the range. */
bool tjir_read_int(tjir_parser *p, int64_t *v, const char *what);
/* Reads a number (int or float token, inf, nan) into *v. */
bool tjir_read_float(tjir_parser *p, double *v, const char *what);
/* Decodes the current string token into the scratch arena. */
char *tjir_read_string(tjir_parser *p);

/* ---- parse_values.c --------------------------------------------------------------- */

bool tjir_parse_type(tjir_parser *p, tj_type *t);
/* Reads the attribute list of n ("[" already current), checks and fills it;
 * attributes the text leaves out take their defaults. `declared` is the
 * first output's declared type (NULL when none), which picks the kind of an
 * empty list in prim::Constant. */
bool tjir_parse_attrs(tjir_parser *p, tj_node *n, const tj_type *declared);
/* Fills the attributes still unset (schema defaults) or fails at line:col. */
bool tjir_finish_attrs(tjir_parser *p, tj_node *n, int line, int col);
/* The nearest known op or prim name to an unknown one, or NULL. */
const char *tjir_suggest_kind(const char *name);

/* ---- plain_names.c ---------------------------------------------------------------- */

/* The ops whose name without its overload is name (none when name has one). */
int tjir_overloads(const char *name, const tj_op_info **out, int cap);
/* The one candidate that takes these attribute names and this many inputs;
 * else NULL with err saying why, listing the candidates. */
const tj_op_info *tjir_match_overloads(const char *name, const tj_op_info *const *cands, int n_cands,
                                       const char *const *attrs, int n_attrs, int n_inputs,
                                       char *err, size_t err_len);
/* The op a name without overload stands for in the statement at the current
 * token (the name): NULL when it has no overloads (nothing reported) or no
 * single one fits (reported at line:col). */
const tj_op_info *tjir_resolve_plain(tjir_parser *p, const char *name, int line, int col);

#endif
