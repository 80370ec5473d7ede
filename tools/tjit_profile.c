/* tjit_profile.c — `tjit profile MODEL|FILE.ir`: compiles an example model
 * (its parameters and example inputs) or a graph file (on random inputs of
 * its declared types), replays it, with --backward also its gradients, a few
 * times to warm up (fusion kernels compile at their first run), then --runs
 * times with profiling on; prints the table of tj_profile_report and, with
 * --chrome-trace, writes the trace for Perfetto. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "fuser/fuser.h"
#include "tools/commands.h"
#include "tools/progress.h"

enum { MAX_IO = 64 };

static int usage(void) {
    fprintf(stderr, "usage: tjit profile MODEL|FILE.ir [--backward] [--runs N] [--warmup N]\n"
                    "                    [--backend NAME] [--passes P] [--chrome-trace OUT.json]\n"
                    "MODEL is one of `tjit list models`; --runs defaults to 10, --warmup to 2.\n");
    return 2;
}

typedef struct subject {
    const tjx_model *model; /* or NULL for a graph file */
    void *params;
    tj_graph *graph;
    tj_tensor *inputs[MAX_IO];
    int n_in, n_out;
} subject;

static void subject_free(subject *s) {
    for (int i = 0; i < s->n_in; i++) tj_release(s->inputs[i]);
    tj_graph_free(s->graph);
    if (s->model && s->params) s->model->destroy(s->params);
}

/* The model traced on its example inputs, or the graph file parsed with
 * random inputs; false with a message on stderr. */
static bool load(const char *what, subject *s, tj_generator *gen) {
    s->model = tjx_find_model(what);
    if (s->model) {
        s->n_in = s->model->n_in;
        s->n_out = s->model->n_out;
        s->params = s->model->create(gen);
        if (!s->params || s->model->make_inputs(s->params, gen, s->inputs) != TJ_OK ||
            !(s->graph = tj_trace(s->model->forward, s->params, s->inputs, s->n_in, s->n_out, NULL))) {
            fprintf(stderr, "tjit profile: %s: %s\n", what, tj_last_error());
            return false;
        }
        return true;
    }
    size_t len = 0;
    char *text = tjit_read_file(what, &len);
    if (!text) {
        fprintf(stderr, "tjit profile: '%s' is neither an example model (tjit list models) nor a "
                        "readable file: %s\n", what, strerror(errno));
        return false;
    }
    s->graph = tj_graph_parse_n(text, len, NULL);
    free(text);
    if (!s->graph) {
        fprintf(stderr, "%s:%s\n", what, tj_last_error());
        return false;
    }
    s->n_in = tj_graph_num_inputs(s->graph);
    s->n_out = tj_graph_num_outputs(s->graph);
    if (s->n_in > MAX_IO || s->n_out > MAX_IO) {
        fprintf(stderr, "tjit profile: at most %d inputs and outputs\n", MAX_IO);
        s->n_in = 0;
        return false;
    }
    for (int i = 0; i < s->n_in; i++) {
        tj_value *v = tj_graph_input(s->graph, i);
        s->inputs[i] = tjit_random_input("tjit profile", tj_value_type(v), i, tj_value_name(v), gen);
        if (!s->inputs[i]) {
            if (tj_last_status()) fprintf(stderr, "tjit profile: %s\n", tj_last_error());
            return false;
        }
    }
    return true;
}

/* One replay, and the backward one with gradients (as a training step would:
 * parameter gradients cleared after each). */
static tj_status step(tj_program *p, subject *s, bool backward) {
    tj_tensor *out[MAX_IO] = {0};
    tj_status st = tj_run(p, s->inputs, out);
    for (int i = 0; i < s->n_out; i++) tj_release(out[i]);
    if (st || !backward) return st;
    tj_tensor *grads[MAX_IO] = {0};
    st = tj_backward(p, NULL, grads);
    for (int i = 0; i < MAX_IO; i++) tj_release(grads[i]);
    tj_program_zero_grad(p);
    return st;
}

static bool parse_count(const char *opt, const char *text, int min, int *out) {
    char *end;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || v < min || v > 100000000) {
        fprintf(stderr, "tjit profile: %s takes a whole number from %d, got '%s'\n", opt, min, text);
        return false;
    }
    *out = (int)v;
    return true;
}

int tjit_cmd_profile(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') return usage();
    int runs = 10, warmup = 2;
    bool backward = false;
    const char *trace = NULL, *backend = NULL, *passes = NULL;
    for (int i = 2; i < argc; i++) {
        bool more = i + 1 < argc;
        if (!strcmp(argv[i], "--backward")) backward = true;
        else if (!strcmp(argv[i], "--runs") && more) {
            if (!parse_count("--runs", argv[++i], 1, &runs)) return 2;
        } else if (!strcmp(argv[i], "--warmup") && more) {
            if (!parse_count("--warmup", argv[++i], 0, &warmup)) return 2;
        } else if (!strcmp(argv[i], "--chrome-trace") && more) trace = argv[++i];
        else if (!strcmp(argv[i], "--backend") && more) backend = argv[++i];
        else if (!strcmp(argv[i], "--passes") && more) passes = argv[++i];
        else {
            fprintf(stderr, "tjit profile: unknown option '%s'\n", argv[i]);
            return usage();
        }
    }
    tj_generator *gen = tj_generator_new(0);
    subject s = {0};
    tj_program *p = NULL;
    int rc = 1;
    if (!load(argv[1], &s, gen)) goto done;
    bool wants[MAX_IO];
    for (int i = 0; i < s.n_in; i++) wants[i] = !s.model && tj_dtype_is_float(tj_tensor_dtype(s.inputs[i]));
    tj_compile_options opts = {.backend = backend, .passes = passes};
    if (backward) { /* a model's parameters, a graph file's floating-point inputs */
        opts.grad_parameters = s.model != NULL;
        opts.requires_grad = s.model ? NULL : wants;
    }
    if (!(p = tj_compile(s.graph, &opts))) {
        fprintf(stderr, "tjit profile: %s\n", tj_last_error());
        goto done;
    }
    for (int r = 0; r < warmup; r++)
        if (step(p, &s, backward) != TJ_OK) {
            fprintf(stderr, "tjit profile: %s\n", tj_last_error());
            goto done;
        }
    tjit_progress progress;
    tjit_progress_begin(&progress, "tjit profile", "runs done", runs);
    tj_program_profile(p, true);
    for (int r = 0; r < runs; r++) {
        if (step(p, &s, backward) != TJ_OK) {
            tjit_progress_end(&progress, r);
            fprintf(stderr, "tjit profile: run %d: %s\n", r + 1, tj_last_error());
            goto done;
        }
        tjit_progress_tick(&progress, r + 1);
    }
    tj_program_profile(p, false);
    tjit_progress_end(&progress, runs);
    char *table = tj_profile_report(p);
    if (!table) {
        fprintf(stderr, "tjit profile: %s\n", tj_last_error());
        goto done;
    }
    int threads = tj_get_num_threads();
    printf("%s: %d runs%s after %d to warm up, fusion backend %s, %d thread%s\n\n", argv[1], runs,
           backward ? " of forward and backward" : "", warmup, backend ? backend : tjf_default_backend_name(),
           threads, threads == 1 ? "" : "s");
    fputs(table, stdout);
    free(table);
    if (trace) {
        if (tj_profile_write_trace(p, trace) != TJ_OK) {
            fprintf(stderr, "tjit profile: %s\n", tj_last_error());
            goto done;
        }
        printf("\ntrace: %s (open it in ui.perfetto.dev or chrome://tracing)\n", trace);
    }
    rc = 0;
done:
    tj_program_free(p);
    subject_free(&s);
    tj_generator_free(gen);
    return rc;
}
