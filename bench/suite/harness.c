/* harness.c — bench_suite's measuring harness (see harness.h): compile the
 * tjit variants of a workload, export its data for the PyTorch comparison,
 * time the variants interleaved, write CSV rows and the JSON manifest. */
#include "bench/suite/harness.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { N_VARIANTS = 5 };

typedef struct variant {
    const char *name;
    const char *passes;  /* NULL: the default pipeline */
    const char *backend; /* fusion backend */
    bool eager, extra;
    tj_program *prog;
    bool ok;
    char why[256]; /* when !ok */
    double *t;     /* the timed steps, seconds */
    double warm;   /* the fastest warm-up step */
} variant;

double bs_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double load_1min(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- files -------------------------------------------------------------------- */

static bool make_dir(const char *path) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) /* mkdir -p */
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST) return false;
            *p = '/';
        }
    return !mkdir(buf, 0777) || errno == EEXIST;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void csv_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

bool bs_open(bs_config *cfg) {
    char path[1024];
    if (!make_dir(cfg->out_dir)) return false;
    snprintf(path, sizeof path, "%s/tjit.csv", cfg->out_dir);
    cfg->csv = fopen(path, cfg->append ? "a" : "w");
    snprintf(path, sizeof path, "%s/manifest.jsonl", cfg->out_dir);
    cfg->manifest = fopen(path, cfg->append ? "a" : "w");
    if (!cfg->csv || !cfg->manifest) return false;
    if (ftell(cfg->csv) == 0) fprintf(cfg->csv, "workload,label,variant,median_s,best_s,reps,status,note\n");
    cfg->load_before = load_1min();
    return true;
}

void bs_close(bs_config *cfg) {
    fprintf(cfg->manifest, "{\"run\": {\"threads\": %d, \"llvm_built\": %s, \"load_before\": %.2f, "
                           "\"load_after\": %.2f}}\n",
            cfg->threads, cfg->llvm_built ? "true" : "false", cfg->load_before, load_1min());
    fclose(cfg->manifest);
    fclose(cfg->csv);
}

/* Saves t as dir/name.npy; prints why not on failure. */
static void save(const char *dir, const char *prefix, const char *name, const tj_tensor *t) {
    char path[1200];
    if (snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix, name) >= (int)sizeof path) {
        fprintf(stderr, "bench_suite: a path under %s is too long\n", dir);
        return;
    }
    if (tj_save_npy(path, t)) fprintf(stderr, "bench_suite: saving %s: %s\n", path, tj_last_error());
}

/* ---- one step of a variant ------------------------------------------------------ */

/* One step: the model (eager) or the program, tj_backward and the SGD update
 * when the workload has them. When keep is given the outputs are retained
 * into it and the update and the zeroing of gradients are left out, so the
 * caller can save both. */
static tj_status step(const bs_workload *w, variant *v, tj_tensor **keep) {
    if (v->extra) {
        w->extra.run(w->extra.ctx);
        return TJ_OK;
    }
    tj_tensor *out[BS_MAX_OUT] = {0};
    tj_status st;
    tj_scope_begin(); /* outputs, gradients and temporaries end with it */
    if (v->eager) {
        st = w->fn(w->ctx, w->in, w->n_in, out, w->n_out);
    } else {
        st = tj_run(v->prog, w->in, out);
        if (!st && w->backward) st = tj_backward(v->prog, NULL, NULL);
        for (int i = 0; !st && !keep && w->lr > 0 && i < w->n_params; i++) {
            tj_tensor *g = tj_program_grad(v->prog, tj_tensor_name(w->params[i]));
            if (g && !tj_sub_(w->params[i], g, w->lr)) st = tj_last_status();
        }
        if (!st && !keep && w->backward) tj_program_zero_grad(v->prog);
    }
    for (int k = 0; !st && keep && k < w->n_out; k++) keep[k] = tj_retain(out[k]);
    tj_scope_end();
    return st;
}

static void fail(variant *v, const char *what) {
    v->ok = false;
    snprintf(v->why, sizeof v->why, "%s: %s", what, tj_last_error());
    tj_clear_error();
}

/* Runs each variant once and saves its outputs and gradients. */
static void reference_runs(const bs_workload *w, variant *vs, const char *dir) {
    for (int i = 0; i < N_VARIANTS; i++) {
        variant *v = &vs[i];
        if (!v->ok || v->extra) continue;
        tj_tensor *out[BS_MAX_OUT] = {0};
        if (step(w, v, out)) {
            fail(v, "run");
            continue;
        }
        char prefix[64];
        for (int k = 0; k < w->n_out; k++) {
            snprintf(prefix, sizeof prefix, "out_%s_", v->name);
            char idx[16];
            snprintf(idx, sizeof idx, "%d", k);
            save(dir, prefix, idx, out[k]);
            tj_release(out[k]);
        }
        if (!w->backward || v->eager) continue;
        snprintf(prefix, sizeof prefix, "grad_%s_", v->name);
        for (int p = 0; p < w->n_params; p++) {
            tj_tensor *g = tj_program_grad(v->prog, tj_tensor_name(w->params[p]));
            if (g) save(dir, prefix, tj_tensor_name(w->params[p]), g);
            tj_release(g);
            tj_clear_error();
        }
        tj_program_zero_grad(v->prog);
    }
}

/* ---- the workload ------------------------------------------------------------- */

static void setup_variants(const bs_config *cfg, const bs_workload *w, variant *vs) {
    static const struct { const char *name, *passes, *backend; } kinds[4] = {
        {"eager", NULL, NULL}, {"replay", "dce,cse", "portable"}, {"fused", NULL, "portable"},
        {"llvm", NULL, "llvm"}};
    memset(vs, 0, sizeof(variant) * N_VARIANTS);
    tj_graph *g = tj_trace(w->fn, w->ctx, (tj_tensor *const *)w->in, w->n_in, w->n_out, NULL);
    char trace_error[200] = "";
    if (!g) snprintf(trace_error, sizeof trace_error, "%s", tj_last_error());
    tj_clear_error();
    for (int i = 0; i < 4; i++) {
        variant *v = &vs[i];
        v->name = kinds[i].name;
        v->passes = kinds[i].passes;
        v->backend = kinds[i].backend;
        v->eager = i == 0;
        v->ok = true;
        if (v->eager) {
            if (w->backward) {
                v->ok = false;
                snprintf(v->why, sizeof v->why, "tjit has no eager autograd");
            }
            continue;
        }
        if (!strcmp(v->backend, "llvm") && !cfg->llvm_built) {
            v->ok = false;
            snprintf(v->why, sizeof v->why, "this build has no LLVM backend (TJIT_LLVM=OFF)");
            continue;
        }
        if (!g) {
            v->ok = false;
            snprintf(v->why, sizeof v->why, "trace: %s", trace_error);
            continue;
        }
        tj_compile_options o = {.passes = v->passes, .backend = v->backend,
                                .grad_parameters = w->backward};
        v->prog = tj_compile(g, &o);
        if (!v->prog) fail(v, "compile");
    }
    tj_graph_free(g);
    variant *x = &vs[4];
    x->name = w->extra.run ? w->extra.variant : "none";
    x->extra = true;
    x->ok = w->extra.run != NULL;
}

static void write_rows(bs_config *cfg, const bs_workload *w, variant *vs, int reps) {
    for (int i = 0; i < N_VARIANTS; i++) {
        variant *v = &vs[i];
        if (v->extra && !w->extra.run) continue;
        fprintf(cfg->csv, "%s,", w->id);
        csv_str(cfg->csv, w->label);
        if (v->ok) {
            qsort(v->t, (size_t)reps, sizeof(double), cmp_double);
            double med = reps % 2 ? v->t[reps / 2] : 0.5 * (v->t[reps / 2 - 1] + v->t[reps / 2]);
            fprintf(cfg->csv, ",%s,%.9g,%.9g,%d,ok,\"\"\n", v->name, med, v->t[0], reps);
            printf("  %-8s %10.4f ms  (best %.4f)\n", v->name, med * 1e3, v->t[0] * 1e3);
        } else {
            fprintf(cfg->csv, ",%s,,,0,n/a,", v->name);
            csv_str(cfg->csv, v->why);
            fputc('\n', cfg->csv);
            printf("  %-8s        n/a  (%s)\n", v->name, v->why);
        }
    }
    fflush(cfg->csv);
    fflush(stdout);
}

static void write_manifest(bs_config *cfg, const bs_workload *w, double load) {
    FILE *f = cfg->manifest;
    fprintf(f, "{\"id\": ");
    json_str(f, w->id);
    fprintf(f, ", \"label\": ");
    json_str(f, w->label);
    fprintf(f, ", \"kind\": ");
    json_str(f, w->kind);
    fprintf(f, ", \"n_in\": %d, \"n_out\": %d, \"backward\": %s, \"lr\": %g, \"bytes\": %.17g,"
               " \"flops\": %.17g, \"ops\": %d, \"load\": %.2f, \"params\": [",
            w->n_in, w->n_out, w->backward ? "true" : "false", w->lr, w->bytes, w->flops, w->ops,
            load);
    for (int p = 0; p < w->n_params; p++) {
        if (p) fputs(", ", f);
        json_str(f, tj_tensor_name(w->params[p]));
    }
    fputs("]}\n", f);
    fflush(f);
}

void bs_run_workload(bs_config *cfg, const bs_workload *w) {
    double load = load_1min();
    tjit_progress_clear(cfg->progress);
    printf("%s — %s (load %.2f)\n", w->id, w->label, load);
    fflush(stdout);
    tjit_progress_show(cfg->progress);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/data/%s", cfg->out_dir, w->id);
    if (!make_dir(dir)) fprintf(stderr, "bench_suite: cannot make %s\n", dir);
    /* the data before any step changes it (SGD, running statistics) */
    for (int k = 0; k < w->n_in; k++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", k);
        save(dir, "in_", idx, w->in[k]);
    }
    for (int p = 0; p < w->n_params; p++) save(dir, "param_", tj_tensor_name(w->params[p]), w->params[p]);

    variant vs[N_VARIANTS];
    setup_variants(cfg, w, vs);
    reference_runs(w, vs, dir);

    /* warm-up; its fastest steps size the repetitions to the budget */
    double round = 0;
    for (int i = 0; i < N_VARIANTS; i++) {
        variant *v = &vs[i];
        v->warm = 1e30;
        for (int r = 0; v->ok && r < cfg->warmup; r++) {
            double t0 = bs_now();
            if (step(w, v, NULL)) {
                fail(v, "run");
                break;
            }
            double dt = bs_now() - t0;
            if (dt < v->warm) v->warm = dt;
        }
        if (v->ok) round += v->warm;
    }
    int reps = round > 0 ? (int)(cfg->budget_s / round) : cfg->max_reps;
    if (reps < cfg->min_reps) reps = cfg->min_reps;
    if (reps > cfg->max_reps) reps = cfg->max_reps;

    for (int i = 0; i < N_VARIANTS; i++) vs[i].t = calloc((size_t)reps, sizeof(double));
    unsigned rng = 0x9e3779b9u;
    for (int r = 0; r < reps; r++) {
        int order[N_VARIANTS];
        for (int i = 0; i < N_VARIANTS; i++) order[i] = i;
        for (int i = N_VARIANTS - 1; i > 0; i--) { /* a random order each round */
            rng = rng * 1103515245u + 12345u;
            int j = (int)((rng >> 16) % (unsigned)(i + 1)), tmp = order[i];
            order[i] = order[j];
            order[j] = tmp;
        }
        for (int i = 0; i < N_VARIANTS; i++) {
            variant *v = &vs[order[i]];
            if (!v->ok) continue;
            double t0 = bs_now();
            tj_status st = step(w, v, NULL);
            v->t[r] = bs_now() - t0;
            if (st) fail(v, "run");
        }
        tjit_progress_tick(cfg->progress, cfg->progress ? cfg->progress->done : 0);
    }
    tjit_progress_clear(cfg->progress);
    write_rows(cfg, w, vs, reps);
    write_manifest(cfg, w, load);
    for (int i = 0; i < N_VARIANTS; i++) {
        tj_program_free(vs[i].prog);
        free(vs[i].t);
    }
}
