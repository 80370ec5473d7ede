/* test_progress.c — tools/progress.c, the progress of long work: a status
 * line redrawn in place on a terminal (done/total, the item, the time) that
 * other output can clear and show again; plain lines elsewhere; ticks quiet
 * until the work has taken long enough. Written to memory streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/testing.h"
#include "tools/progress.h"

typedef struct sink {
    char *text;
    size_t len;
    FILE *f;
} sink;

static void sink_open(sink *s) {
    s->text = NULL;
    s->len = 0;
    s->f = open_memstream(&s->text, &s->len);
    assert_non_null(s->f);
}

static void sink_close(sink *s) {
    fclose(s->f);
    free(s->text);
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_terminal(void **state) {
    (void)state;
    sink s;
    sink_open(&s);
    tjit_progress p;
    tjit_progress_begin_on(&p, s.f, true, "bench_suite", "done", 3, 0.0, 10.0);
    tjit_progress_item(&p, 0, "lstm_fwd_b1");
    fflush(s.f);
    assert_non_null(strstr(s.text, "\r\033[Kbench_suite: 0/3 done, lstm_fwd_b1 (0 s)"));
    assert_null(strchr(s.text, '\n')); /* one line, redrawn */
    tjit_progress_clear(&p);
    fprintf(s.f, "a line of other output\n");
    tjit_progress_show(&p);
    tjit_progress_item(&p, 1, "mlp_train");
    tjit_progress_end(&p, 3);
    fflush(s.f);
    assert_non_null(strstr(s.text, "\r\033[Ka line of other output\n\r\033[Kbench_suite: 0/3 done, lstm_fwd_b1"));
    assert_non_null(strstr(s.text, "1/3 done, mlp_train"));
    assert_int_equal(count(s.text, "\n"), 1); /* only the other output's */
    assert_true(s.len >= 4 && !strcmp(s.text + s.len - 4, "\r\033[K")); /* end leaves the line clear */
    sink_close(&s);
}

static void test_plain_lines(void **state) {
    (void)state;
    sink s;
    sink_open(&s);
    tjit_progress p;
    tjit_progress_begin_on(&p, s.f, false, "bench_suite", "done", 2, 0.0, 10.0);
    tjit_progress_item(&p, 0, "lstm_fwd_b1");
    tjit_progress_clear(&p); /* nothing to clear on a plain stream */
    tjit_progress_show(&p);
    tjit_progress_item(&p, 1, "mlp_train");
    tjit_progress_end(&p, 2);
    fflush(s.f);
    assert_null(strchr(s.text, '\r'));
    assert_null(strchr(s.text, '\033'));
    assert_int_equal(count(s.text, "\n"), 3);
    assert_non_null(strstr(s.text, "bench_suite: 0/2 done, lstm_fwd_b1 (0 s)\n"));
    assert_non_null(strstr(s.text, "bench_suite: 1/2 done, mlp_train (0 s"));
    assert_non_null(strstr(s.text, "bench_suite: 2/2 done (0 s)\n"));
    sink_close(&s);
}

/* Ticks: nothing while the work is young; then, with an estimate of the
 * time left, lines no more often than asked. */
static void test_ticks(void **state) {
    (void)state;
    sink s;
    sink_open(&s);
    tjit_progress p;
    tjit_progress_begin_on(&p, s.f, false, "tjit profile", "runs done", 100, 1e9, 10.0);
    for (int r = 1; r <= 100; r++) tjit_progress_tick(&p, r);
    tjit_progress_end(&p, 100);
    fflush(s.f);
    assert_int_equal(s.len, 0); /* quick work prints nothing */
    sink_close(&s);

    sink_open(&s);
    tjit_progress_begin_on(&p, s.f, false, "tjit profile", "runs done", 100, 0.0, 1e9);
    for (int r = 1; r <= 50; r++) tjit_progress_tick(&p, r);
    tjit_progress_end(&p, 50);
    fflush(s.f);
    assert_int_equal(count(s.text, "\n"), 2); /* the first tick, and the end */
    assert_non_null(strstr(s.text, "tjit profile: 1/100 runs done (0 s, about 0 s left)\n"));
    assert_non_null(strstr(s.text, "tjit profile: 50/100 runs done (0 s, about 0 s left)\n"));
    sink_close(&s);

    tjit_progress_item(NULL, 0, "x"); /* no progress: nothing happens */
    tjit_progress_tick(NULL, 1);
    tjit_progress_end(NULL, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_terminal),
        cmocka_unit_test(test_plain_lines),
        cmocka_unit_test(test_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
