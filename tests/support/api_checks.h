/* api_checks.h — what tests/test_public_api.c expects of a public function
 * given bad arguments, and its checks of the graph API (api_checks_ir.c),
 * which share its fixtures. */
#ifndef TJIT_TESTS_API_CHECKS_H
#define TJIT_TESTS_API_CHECKS_H

#include "tests/support/testing.h"

static inline void tt_expect_error(const char *call, const char *file, int line) {
    if (tj_last_status() == TJ_OK || tj_last_error()[0] == '\0')
        fail_msg("%s:%d: %s failed without an error message", file, line, call);
}
#define expect_error tt_expect_error


/* call returns NULL (or bad) and leaves a message */
#define FAILS_NULL(call) FAILS_WITH(call, NULL)
#define FAILS_WITH(call, bad)                                                        \
    do {                                                                             \
        tj_clear_error();                                                            \
        if (!((call) == (bad))) fail_msg("%s:%d: %s did not fail", __FILE__, __LINE__, #call); \
        expect_error(#call, __FILE__, __LINE__);                                     \
    } while (0)
/* call returns a status other than TJ_OK, the one tj_last_status() holds */
#define FAILS_STATUS(call)                                                           \
    do {                                                                             \
        tj_clear_error();                                                            \
        tj_status st_ = (call);                                                      \
        if (st_ == TJ_OK) fail_msg("%s:%d: %s returned TJ_OK", __FILE__, __LINE__, #call); \
        expect_error(#call, __FILE__, __LINE__);                                     \
        assert_int_equal(st_, tj_last_status());                                     \
    } while (0)
/* a void function, or one returning a struct: the message is the failure */
#define FAILS_SILENTLY(call)                                                         \
    do {                                                                             \
        tj_clear_error();                                                            \
        call;                                                                        \
        expect_error(#call, __FILE__, __LINE__);                                     \
    } while (0)
/* no invalid input: called on an edge value, it sets no error */
#define WORKS(call)                                                                  \
    do {                                                                             \
        tj_clear_error();                                                            \
        call;                                                                        \
        if (tj_last_status() != TJ_OK)                                               \
            fail_msg("%s:%d: %s set an error: %s", __FILE__, __LINE__, #call, tj_last_error()); \
    } while (0)

/* Made by the test's setup: valid objects beside which one argument is bad. */
typedef struct tt_api_fixture {
    tj_tensor *t;   /* f32 [2, 3] */
    tj_graph *g;    /* y = relu(x) */
    tj_block *b;    /* g's block */
    tj_node *n;     /* the relu node */
    tj_value *v;    /* g's input */
    tj_program *p;  /* g compiled, without gradients */
} tt_api_fixture;
extern tt_api_fixture tt_api;
#define TT_API_SIZES ((const int64_t[]){2, 3})
/* Short names for the fixture in the checks' tables (files that include this
 * header are the checks alone). */
#define T tt_api.t
#define G tt_api.g
#define B tt_api.b
#define N tt_api.n
#define V tt_api.v
#define P tt_api.p
#define SIZES TT_API_SIZES

void tt_api_types(void);
void tt_api_graphs(void);
void tt_api_blocks(void);
void tt_api_node_creation(void);
void tt_api_node_access(void);
void tt_api_node_attrs(void);
void tt_api_editing(void);
void tt_api_values(void);
void tt_api_cloning(void);
void tt_api_text(void);
void tt_api_passes(void);
void tt_api_onnx(void);

#endif
