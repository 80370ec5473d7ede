/* test_profile.c — tj_program_profile: the table of tj_profile_report adds
 * up to the replay time measured around tj_run (within 10%), has a row for
 * every instruction (forward and backward), and knows the bytes and flops of
 * a linear layer; the trace of tj_profile_write_trace parses as JSON with
 * the trace-event fields, one track per replaying thread; recording stops
 * when profiling is off and restarts after tj_profile_reset; the errors. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"
#include "fuser/fuser.h"
#include "tests/support/runtime_testing.h"

/* ---- the table, parsed -------------------------------------------------------------- */

enum { MAX_ROWS = 128 };

typedef struct prow {
    char phase[16];
    char name[160], backend[16];
    int instrs;
    long long calls;
    double total_ms;
    char gflops[32];
} prow;

typedef struct ptable {
    prow rows[MAX_ROWS];
    int n;
    long long replays[2]; /* forward, backward */
    double replay_ms[2];  /* the header's mean wall time per replay */
} ptable;

/* Rows are "  NAME BACKEND INSTRS CALLS TOTAL MEAN SHARE MB GB/S GFLOP/S"; the
 * name may hold spaces, so the nine columns are taken from the right. */
static void parse_table(const char *text, ptable *t) {
    memset(t, 0, sizeof *t);
    char phase[16] = "";
    char *copy = strdup(text), *lines = NULL;
    for (char *line = strtok_r(copy, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
        if (line[0] != ' ') {
            int k = strncmp(line, "backward:", 9) == 0;
            snprintf(phase, sizeof phase, "%s", k ? "backward" : "forward");
            assert_int_equal(sscanf(strchr(line, ':') + 1, "%lld replays, %lf ms each", &t->replays[k],
                                    &t->replay_ms[k]), 2);
            continue;
        }
        if (strstr(line, "op / kernel")) continue;
        char *tok[64], *words = NULL;
        int n = 0;
        for (char *w = strtok_r(line, " ", &words); w && n < 64; w = strtok_r(NULL, " ", &words)) tok[n++] = w;
        assert_true(n >= 10);
        assert_true(t->n < MAX_ROWS);
        prow *r = &t->rows[t->n++];
        snprintf(r->phase, sizeof r->phase, "%s", phase);
        r->name[0] = '\0';
        for (int i = 0; i < n - 9; i++) {
            if (i) strcat(r->name, " ");
            strncat(r->name, tok[i], sizeof r->name - strlen(r->name) - 2);
        }
        snprintf(r->backend, sizeof r->backend, "%s", tok[n - 9]);
        r->instrs = atoi(tok[n - 8]);
        r->calls = atoll(tok[n - 7]);
        r->total_ms = atof(tok[n - 6]);
        snprintf(r->gflops, sizeof r->gflops, "%s", tok[n - 1]);
    }
    free(copy);
}

static const prow *find_row(const ptable *t, const char *phase, const char *prefix) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].phase, phase) && !strncmp(t->rows[i].name, prefix, strlen(prefix)))
            return &t->rows[i];
    return NULL;
}

/* Every node of g (the graph a code was lowered from, one instruction each)
 * has its row in phase, and the rows count as many instructions. */
static void assert_names_every_instruction(const ptable *t, const char *phase, const tj_graph *graph) {
    tj_graph *g = (tj_graph *)graph;
    int nodes = 0;
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n), nodes++) {
        char label[64];
        if (tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP) snprintf(label, sizeof label, "fusion %%%d:", tj_node_id(n));
        else snprintf(label, sizeof label, "%s", tj_node_name(n));
        tt_context("%s node %%%d, row '%s'", phase, tj_node_id(n), label);
        assert_non_null(find_row(t, phase, label));
    }
    const prow *total = find_row(t, phase, "total");
    assert_non_null(total);
    assert_int_equal(total->instrs, nodes);
    int sum = 0;
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].phase, phase) && strcmp(t->rows[i].name, "total")) sum += t->rows[i].instrs;
    assert_int_equal(sum, nodes);
    tt_context(NULL);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct fixture {
    void *cell;
    tj_tensor *in[3];
    tj_graph *g;
} fixture;

static void fixture_open(fixture *f) {
    tj_generator *gen = tj_generator_new(3);
    f->cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){32, 256, 256, 1, 1});
    assert_non_null(f->cell);
    assert_int_equal(tjx_lstm_cell.make_inputs(f->cell, gen, f->in), TJ_OK);
    f->g = tj_trace(tjx_lstm_cell.forward, f->cell, f->in, 3, 2, NULL);
    assert_non_null(f->g);
    tj_generator_free(gen);
}

static void fixture_close(fixture *f) {
    tj_graph_free(f->g);
    for (int i = 0; i < 3; i++) tj_release(f->in[i]);
    tjx_lstm_cell.destroy(f->cell);
}

/* ---- the table -------------------------------------------------------------------- */

enum { RUNS = 8 };

/* A plain program's table: its rows add up to the time tj_run took, seen
 * from outside (tries again on a busy machine: another process may take the
 * CPU between two instructions). */
static void test_table_sums_to_replay_time(void **state) {
    (void)state;
    fixture f;
    fixture_open(&f);
    tj_program *p = tj_compile(f.g, NULL);
    assert_non_null(p);
    tj_tensor *out[2];
    for (int r = 0; r < 2; r++) { /* warm-up: the fusion kernel compiles at its first run */
        assert_int_equal(tj_run(p, f.in, out), TJ_OK);
        tj_release(out[0]), tj_release(out[1]);
    }
    assert_int_equal(tj_program_profile(p, true), TJ_OK);
    double ratio = 0;
    ptable t;
    for (int attempt = 0; attempt < 3 && !(ratio >= 0.9 && ratio <= 1.0); attempt++) {
        assert_int_equal(tj_profile_reset(p), TJ_OK);
        double measured = 0;
        for (int r = 0; r < RUNS; r++) {
            double t0 = now_s();
            assert_int_equal(tj_run(p, f.in, out), TJ_OK);
            measured += now_s() - t0;
            tj_release(out[0]), tj_release(out[1]);
        }
        char *text = tj_profile_report(p);
        assert_non_null(text);
        parse_table(text, &t);
        const prow *total = find_row(&t, "forward", "total");
        assert_non_null(total);
        ratio = total->total_ms * 1e-3 / measured;
        printf("attempt %d: rows %.3f ms, tj_run %.3f ms (%.1f%%)\n%s", attempt, total->total_ms,
               measured * 1e3, 100 * ratio, text);
        free(text);
        assert_int_equal(t.replays[0], RUNS);
        assert_true(t.replay_ms[0] * RUNS <= measured * 1e3);
    }
    assert_true(ratio >= 0.9 && ratio <= 1.0);
    assert_names_every_instruction(&t, "forward", tj_program_graph(p));
    /* a linear layer [32, 256] x [1024, 256]^T: its flops are known */
    const prow *linear = find_row(&t, "forward", "aten::linear");
    assert_non_null(linear);
    /* merge_linears made the second product an addmm accumulating into this one */
    assert_int_equal(linear->instrs, 1);
    assert_int_equal(linear->calls, RUNS);
    assert_non_null(find_row(&t, "forward", "aten::addmm"));
    assert_string_equal(linear->backend, "cpu");
    assert_true(atof(linear->gflops) > 0);
    const prow *fused = find_row(&t, "forward", "fusion %");
    assert_non_null(fused);
    assert_string_equal(fused->backend, tjf_default_backend_name());
    assert_string_equal(fused->gflops, "-");
    tj_program_free(p);
    fixture_close(&f);
}

/* With gradients: the backward program's instructions have rows too. */
static void test_table_with_backward(void **state) {
    (void)state;
    fixture f;
    fixture_open(&f);
    tj_program *p = tj_compile(f.g, &(tj_compile_options){.grad_parameters = true});
    assert_non_null(p);
    tj_tensor *out[2];
    double ratio[2] = {0, 0};
    ptable t;
    for (int attempt = 0; attempt < 3 && !(ratio[0] >= 0.9 && ratio[1] >= 0.9); attempt++) {
        assert_int_equal(tj_program_profile(p, false), TJ_OK);
        assert_int_equal(tj_run(p, f.in, out), TJ_OK); /* warm-up */
        tj_release(out[0]), tj_release(out[1]);
        assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);
        assert_int_equal(tj_program_profile(p, true), TJ_OK);
        assert_int_equal(tj_profile_reset(p), TJ_OK);
        double measured[2] = {0, 0};
        for (int r = 0; r < RUNS; r++) {
            tj_program_zero_grad(p);
            double t0 = now_s();
            assert_int_equal(tj_run(p, f.in, out), TJ_OK);
            double t1 = now_s();
            tj_release(out[0]), tj_release(out[1]);
            double t2 = now_s();
            assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);
            measured[0] += t1 - t0;
            measured[1] += now_s() - t2;
        }
        char *text = tj_profile_report(p);
        assert_non_null(text);
        parse_table(text, &t);
        for (int k = 0; k < 2; k++) {
            const prow *total = find_row(&t, k ? "backward" : "forward", "total");
            assert_non_null(total);
            ratio[k] = total->total_ms * 1e-3 / measured[k];
            assert_true(ratio[k] <= 1.0);
            assert_int_equal(t.replays[k], RUNS);
        }
        printf("attempt %d: forward %.1f%%, backward %.1f%% of the time measured\n%s", attempt,
               100 * ratio[0], 100 * ratio[1], text);
        free(text);
    }
    assert_true(ratio[0] >= 0.9 && ratio[1] >= 0.9);
    assert_names_every_instruction(&t, "forward", tj_program_graph(p));
    assert_names_every_instruction(&t, "backward", tj_program_backward_graph(p));
    tj_program_free(p);
    fixture_close(&f);
}

/* ---- the trace file: JSON, parsed ------------------------------------------------------ */

typedef struct json {
    char type; /* 'o' object, 'a' array, 's' string, 'n' number, 'b' true/false, 'z' null */
    double num;
    char *str;
    int n;
    char **keys;        /* objects */
    struct json *items; /* objects' values, arrays' elements */
} json;

typedef struct reader {
    const char *s;
    bool bad;
} reader;

static void skip_space(reader *r) {
    while (*r->s == ' ' || *r->s == '\n' || *r->s == '\t' || *r->s == '\r') r->s++;
}

static char *read_string(reader *r) {
    if (*r->s != '"') return r->bad = true, NULL;
    r->s++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    while (*r->s && *r->s != '"') {
        char c = *r->s++;
        if (c == '\\') {
            char e = *r->s++;
            if (e == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", *r->s++) || !r->s[-1]) r->bad = true;
                c = '?';
            } else if (strchr("\"\\/", e)) {
                c = e;
            } else if (strchr("bfnrt", e)) {
                c = ' ';
            } else {
                r->bad = true;
            }
        } else if ((unsigned char)c < 0x20) {
            r->bad = true;
        }
        if (n + 2 > cap) out = realloc(out, cap *= 2);
        out[n++] = c;
    }
    if (*r->s != '"') r->bad = true;
    else r->s++;
    out[n] = '\0';
    return out;
}

static void read_value(reader *r, json *v, int depth);

static void read_members(reader *r, json *v, char close, int depth) {
    r->s++;
    skip_space(r);
    if (*r->s == close) {
        r->s++;
        return;
    }
    for (int cap = 0;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            v->items = realloc(v->items, sizeof(json) * (size_t)cap);
            if (close == '}') v->keys = realloc(v->keys, sizeof(char *) * (size_t)cap);
        }
        skip_space(r);
        if (close == '}') {
            v->keys[v->n] = read_string(r);
            skip_space(r);
            if (*r->s++ != ':') r->bad = true;
        }
        read_value(r, &v->items[v->n++], depth + 1);
        skip_space(r);
        if (r->bad) return;
        if (*r->s == ',') {
            r->s++;
            continue;
        }
        if (*r->s++ != close) r->bad = true;
        return;
    }
}

static void read_value(reader *r, json *v, int depth) {
    memset(v, 0, sizeof *v);
    skip_space(r);
    if (depth > 32) r->bad = true;
    if (r->bad) return;
    char c = *r->s;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? 'o' : 'a';
        read_members(r, v, c == '{' ? '}' : ']', depth);
    } else if (c == '"') {
        v->type = 's';
        v->str = read_string(r);
    } else if (!strncmp(r->s, "true", 4) || !strncmp(r->s, "false", 5)) {
        v->type = 'b';
        r->s += c == 't' ? 4 : 5;
    } else if (!strncmp(r->s, "null", 4)) {
        v->type = 'z';
        r->s += 4;
    } else {
        char *end;
        v->type = 'n';
        v->num = strtod(r->s, &end);
        if (end == r->s || !(c == '-' || (c >= '0' && c <= '9'))) r->bad = true;
        r->s = end;
    }
}

static void json_free(json *v) {
    for (int i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

static const json *member(const json *o, const char *key) {
    for (int i = 0; o->type == 'o' && i < o->n; i++)
        if (!strcmp(o->keys[i], key)) return &o->items[i];
    return NULL;
}

static const json *member_of_type(const json *o, const char *key, char type) {
    const json *m = member(o, key);
    tt_context("event member '%s'", key);
    assert_non_null(m);
    assert_int_equal(m->type, type);
    tt_context(NULL);
    return m;
}

/* The file parses as one JSON object whose traceEvents are trace events:
 * each has ph, name, pid, tid; a complete event ("X") ts and dur in
 * microseconds. Returns the events (in *doc, to be freed). */
static const json *read_trace(const char *path, json *doc) {
    char *text = tt_read_file(path);
    assert_non_null(text);
    reader r = {text, false};
    read_value(&r, doc, 0);
    skip_space(&r);
    assert_false(r.bad);
    assert_int_equal(*r.s, '\0');
    free(text);
    assert_int_equal(doc->type, 'o');
    const json *events = member_of_type(doc, "traceEvents", 'a');
    for (int i = 0; i < events->n; i++) {
        const json *e = &events->items[i];
        assert_int_equal(e->type, 'o');
        const char *ph = member_of_type(e, "ph", 's')->str;
        member_of_type(e, "name", 's');
        member_of_type(e, "pid", 'n');
        member_of_type(e, "tid", 'n');
        assert_true(!strcmp(ph, "X") || !strcmp(ph, "M"));
        if (!strcmp(ph, "X")) {
            assert_true(member_of_type(e, "ts", 'n')->num >= 0);
            assert_true(member_of_type(e, "dur", 'n')->num >= 0);
            member_of_type(e, "cat", 's');
            member_of_type(e, "args", 'o');
        }
    }
    return events;
}

typedef struct worker {
    tj_program *p;
    tj_tensor **in;
    tj_status st;
} worker;

static void *replay_twice(void *arg) {
    worker *w = arg;
    for (int r = 0; r < 2 && !w->st; r++) {
        tj_tensor *out[2];
        w->st = tj_run(w->p, w->in, out);
        if (!w->st) tj_release(out[0]), tj_release(out[1]);
    }
    return NULL;
}

/* Two threads replay one program: every replay and instruction is an event,
 * on the track of its thread, and the linear layers carry their bytes and
 * flops. */
static void test_trace_file(void **state) {
    (void)state;
    fixture f;
    fixture_open(&f);
    tj_program *p = tj_compile(f.g, NULL);
    assert_non_null(p);
    assert_int_equal(tj_program_profile(p, true), TJ_OK);
    worker w[2] = {{p, f.in, TJ_OK}, {p, f.in, TJ_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, replay_twice, &w[i]), 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].st, TJ_OK);
    }
    char *dir = tt_mkdtemp(), *path = tt_path(dir, "trace.json");
    assert_int_equal(tj_profile_write_trace(p, path), TJ_OK);
    json doc;
    const json *events = read_trace(path, &doc);
    int n_instrs = tj_block_num_nodes(tj_graph_block((tj_graph *)tj_program_graph(p)));
    int replays = 0, instrs = 0, track_names = 0, tracks[8] = {0};
    for (int i = 0; i < events->n; i++) {
        const json *e = &events->items[i];
        const char *name = member(e, "name")->str;
        int tid = (int)member(e, "tid")->num;
        if (!strcmp(member(e, "ph")->str, "M")) {
            track_names += !strcmp(name, "thread_name");
            continue;
        }
        assert_true(tid >= 1 && tid < 8);
        tracks[tid]++;
        assert_string_equal(member(e, "cat")->str, "forward");
        if (!strncmp(name, "replay", 6)) {
            replays++;
            continue;
        }
        instrs++;
        const json *args = member(e, "args");
        assert_non_null(member(args, "node"));
        assert_non_null(member(args, "backend"));
        if (!strcmp(name, "aten::linear")) { /* [32, 256] x [1024, 256]^T + [1024] */
            assert_true(member_of_type(args, "flops", 'n')->num == 2.0 * 32 * 256 * 1024);
            assert_true(member_of_type(args, "bytes", 'n')->num == 4.0 * (32 * 256 + 1024 * 256 + 1024 + 32 * 1024));
        }
    }
    assert_int_equal(replays, 4);
    assert_int_equal(instrs, 4 * n_instrs);
    int used = 0;
    for (int k = 0; k < 8; k++) used += tracks[k] > 0;
    assert_int_equal(used, 2);
    assert_int_equal(track_names, 2);
    json_free(&doc);
    tt_rmtree(dir);
    free(path);
    tj_program_free(p);
    fixture_close(&f);
}

/* Off records nothing; reset forgets; the errors name what is wrong. */
static void test_switches_and_errors(void **state) {
    (void)state;
    fixture f;
    fixture_open(&f);
    tj_program *p = tj_compile(f.g, NULL);
    assert_non_null(p);
    assert_null(tj_profile_report(p));
    tt_assert_error("was never profiled; call tj_program_profile(p, true)");
    tj_clear_error();
    assert_int_equal(tj_profile_write_trace(p, "/tmp/unused.json"), TJ_ERR_ARG);
    tj_clear_error();
    tj_tensor *out[2];
    assert_int_equal(tj_program_profile(p, true), TJ_OK);
    for (int r = 0; r < 3; r++) {
        if (r == 2) assert_int_equal(tj_program_profile(p, false), TJ_OK);
        assert_int_equal(tj_run(p, f.in, out), TJ_OK);
        tj_release(out[0]), tj_release(out[1]);
    }
    char *text = tj_profile_report(p);
    ptable t;
    parse_table(text, &t);
    free(text);
    assert_int_equal(t.replays[0], 2);
    assert_int_equal(tj_profile_reset(p), TJ_OK);
    text = tj_profile_report(p);
    assert_non_null(strstr(text, "forward: no replays recorded"));
    free(text);
    assert_int_equal(tj_profile_write_trace(p, "/nonexistent-dir/trace.json"), TJ_ERR_IO);
    tt_assert_error("cannot write /nonexistent-dir/trace.json");
    tj_clear_error();
    assert_int_equal(tj_program_profile(NULL, true), TJ_ERR_ARG);
    tj_clear_error();
    assert_null(tj_profile_report(NULL));
    tj_clear_error();
    tj_program_free(p);
    fixture_close(&f);
}

/* ---- the version ------------------------------------------------------------------ */

static void test_version(void **state) {
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TJIT_VERSION_MAJOR, TJIT_VERSION_MINOR, TJIT_VERSION_PATCH);
    assert_string_equal(tj_version(), want);
    assert_string_equal(TJIT_VERSION_STRING, want);
    assert_int_equal(TJIT_VERSION, TJIT_VERSION_MAJOR * 10000 + TJIT_VERSION_MINOR * 100 + TJIT_VERSION_PATCH);
    const char *info = tj_build_info();
    char first[64];
    snprintf(first, sizeof first, "tjit %s (", want);
    assert_true(!strncmp(info, first, strlen(first)));
    assert_non_null(strstr(info, "fusion backends: portable"));
    assert_non_null(strstr(info, "BLAS: OpenBLAS"));
    assert_non_null(strstr(info, "\nISA: "));
    assert_non_null(strstr(info, "\nCPU kernels: "));
    assert_non_null(strstr(info, "\ncompiled for:"));
#ifdef TJIT_HAVE_LLVM
    assert_non_null(strstr(info, ", llvm, llvm-libm\n"));
    assert_non_null(strstr(info, "LLVM: 19."));
#else
    assert_non_null(strstr(info, "LLVM: not built in"));
#endif
}

int main(void) {
    /* no scope around the tests: the models' parameters and inputs, and the
     * replays' outputs, are released by the tests themselves */
#define T(f) cmocka_unit_test(f)
    const struct CMUnitTest tests[] = {
        T(test_table_sums_to_replay_time),
        T(test_table_with_backward),
        T(test_trace_file),
        T(test_switches_and_errors),
        T(test_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
