/* profile_report.c — what tj_program_profile recorded, as the table of
 * tj_profile_report (rows grouped by op and by fusion kernel) and as a
 * Chrome trace-event file (tj_profile_write_trace). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "profile.h"
#include "program.h"
#include "core/text.h"

enum { LABEL = 256, NAME_WIDTH = 60 };

/* The profiles of a program: its own code's, then its backward program's. */
static int profiles_of(const tj_program *p, tji_profile **out) {
    int n = 0;
    tji_profile *f = atomic_load((_Atomic(tji_profile *) *)&p->code.profile);
    if (f) out[n++] = f;
    if (p->backward && (f = atomic_load((_Atomic(tji_profile *) *)&p->backward->code.profile)))
        out[n++] = f;
    return n;
}

static tj_status never_profiled(const char *fn) {
    return tjc_error(TJ_ERR_ARG, "%s: the program was never profiled; call "
                     "tj_program_profile(p, true) before tj_run", fn);
}

/* ---- the table ------------------------------------------------------------------ */

typedef struct row {
    char label[LABEL];
    const char *backend;
    int instrs;
    int64_t calls, ns;
    double bytes, flops; /* < 0: not known */
} row;

typedef struct phase_rows {
    const char *phase;
    int64_t replays, replay_ns;
    row *rows;
    int n;
} phase_rows;

static int slowest_first(const void *a, const void *b) {
    const row *x = a, *y = b;
    return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->label, y->label);
}

/* One row per (label, backend) of the instructions that ran. */
static tj_status collect(tji_profile *p, phase_rows *out) {
    const tji_code *code = p->code;
    out->phase = p->phase;
    out->n = 0;
    out->rows = tjc_calloc((size_t)(code->n_instrs ? code->n_instrs : 1), sizeof(row));
    if (!out->rows) return tjc_error(TJ_ERR_MEMORY, "tj_profile_report: out of memory");
    pthread_mutex_lock(&p->lock);
    out->replays = p->replays;
    out->replay_ns = p->replay_ns;
    for (int k = 0; k < code->n_instrs; k++) {
        const tji_instr_stats *s = &p->stats[k];
        if (!s->calls) continue;
        char label[LABEL];
        tji_instr_label(&code->instrs[k], label, sizeof label);
        const char *backend = tji_instr_backend(&code->instrs[k]);
        int r = 0;
        while (r < out->n && (strcmp(out->rows[r].label, label) || strcmp(out->rows[r].backend, backend)))
            r++;
        row *w = &out->rows[r];
        if (r == out->n) {
            out->n++;
            snprintf(w->label, sizeof w->label, "%s", label);
            w->backend = backend;
        }
        w->instrs++;
        w->calls += s->calls;
        w->ns += s->ns;
        w->bytes = w->bytes < 0 || s->bytes < 0 ? -1 : w->bytes + s->bytes;
        w->flops = w->flops < 0 || s->flops < 0 ? -1 : w->flops + s->flops;
    }
    pthread_mutex_unlock(&p->lock);
    qsort(out->rows, (size_t)out->n, sizeof(row), slowest_first);
    return TJ_OK;
}


/* A figure, or "-" when it is not known. */
static const char *figure(char *buf, size_t n, double v, const char *fmt) {
    if (v < 0) snprintf(buf, n, "-");
    else snprintf(buf, n, fmt, v);
    return buf;
}

static void put_row(tjc_text *t, int width, const char *label, const char *backend, int instrs,
                    int64_t calls, int64_t ns, double share, double bytes, double flops, bool is_total) {
    char name[LABEL], mean[32], mb[32], gbs[32], gflops[32];
    if ((int)strlen(label) > width) snprintf(name, sizeof name, "%.*s...", width - 3, label);
    else snprintf(name, sizeof name, "%s", label);
    double s = (double)ns * 1e-9;
    figure(mean, sizeof mean, calls && !is_total ? (double)ns * 1e-3 / (double)calls : -1, "%.1f");
    figure(mb, sizeof mb, bytes < 0 || !calls ? -1 : bytes / 1e6 / (double)calls, "%.3f");
    figure(gbs, sizeof gbs, bytes <= 0 || s <= 0 ? -1 : bytes / 1e9 / s, "%.2f"); /* views: none */
    figure(gflops, sizeof gflops, flops < 0 || s <= 0 ? -1 : flops / 1e9 / s, "%.2f");
    tjc_put(t, "  %-*s %-8s %6d %8lld %10.3f %9s %6.1f%% %9s %8s %8s\n", width, name, backend, instrs,
        (long long)calls, (double)ns * 1e-6, mean, 100.0 * share, mb, gbs, gflops);
}

char *tj_profile_report(const tj_program *p) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_profile_report: program is NULL"), NULL;
    tji_profile *profs[2];
    int n_profs = profiles_of(p, profs);
    if (!n_profs) return never_profiled("tj_profile_report"), NULL;
    phase_rows phases[2] = {{0}};
    tj_status st = TJ_OK;
    for (int i = 0; i < n_profs && !st; i++) st = collect(profs[i], &phases[i]);
    int64_t all_ns = 0;
    int width = (int)strlen("op / kernel");
    for (int i = 0; i < n_profs; i++)
        for (int r = 0; r < phases[i].n; r++) {
            all_ns += phases[i].rows[r].ns;
            int len = (int)strlen(phases[i].rows[r].label);
            width = len > width ? (len < NAME_WIDTH ? len : NAME_WIDTH) : width;
        }
    tjc_text t = {0};
    for (int i = 0; !st && i < n_profs; i++) {
        const phase_rows *ph = &phases[i];
        if (!ph->replays) {
            tjc_put(&t, "%s: no replays recorded\n", ph->phase);
            continue;
        }
        int64_t sum_ns = 0, calls = 0;
        int instrs = 0;
        for (int r = 0; r < ph->n; r++) {
            sum_ns += ph->rows[r].ns;
            calls += ph->rows[r].calls;
            instrs += ph->rows[r].instrs;
        }
        double per_replay = (double)ph->replay_ns / (double)ph->replays;
        tjc_put(&t, "%s: %lld replays, %.3f ms each; the instructions take %.3f ms of it (%.1f%%)\n",
            ph->phase, (long long)ph->replays, per_replay * 1e-6, (double)sum_ns / (double)ph->replays * 1e-6,
            ph->replay_ns ? 100.0 * (double)sum_ns / (double)ph->replay_ns : 0.0);
        tjc_put(&t, "  %-*s %-8s %6s %8s %10s %9s %7s %9s %8s %8s\n", width, "op / kernel", "backend",
            "instrs", "calls", "total ms", "mean us", "share", "MB/call", "GB/s", "GFLOP/s");
        for (int r = 0; r < ph->n; r++) {
            const row *w = &ph->rows[r];
            put_row(&t, width, w->label, w->backend, w->instrs, w->calls, w->ns,
                    all_ns ? (double)w->ns / (double)all_ns : 0.0, w->bytes, w->flops, false);
        }
        put_row(&t, width, "total", "-", instrs, calls, sum_ns, all_ns ? (double)sum_ns / (double)all_ns : 0.0,
                -1, -1, true);
    }
    for (int i = 0; i < n_profs; i++) tjc_free(phases[i].rows);
    if (st) {
        tjc_free(t.s);
        return NULL;
    }
    return tjc_text_finish(&t);
}

/* ---- the trace file ------------------------------------------------------------- */

typedef struct traced {
    tji_event ev;
    const tji_profile *prof;
} traced;

/* By start; an enclosing replay before the instruction that starts with it. */
static int by_start(const void *a, const void *b) {
    const tji_event *x = &((const traced *)a)->ev, *y = &((const traced *)b)->ev;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return (x->instr != TJI_REPLAY) - (y->instr != TJI_REPLAY);
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void write_event(FILE *f, const traced *e, int64_t origin, int pid) {
    const tji_event *ev = &e->ev;
    const tji_code *code = e->prof->code;
    char label[LABEL];
    if (ev->instr == TJI_REPLAY) snprintf(label, sizeof label, "replay (%s)", e->prof->phase);
    else tji_instr_label(&code->instrs[ev->instr], label, sizeof label);
    fprintf(f, "{\"ph\": \"X\", \"name\": ");
    json_string(f, label);
    fprintf(f, ", \"cat\": \"%s\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d, "
               "\"args\": {\"replay\": %lld", e->prof->phase, (double)(ev->start_ns - origin) * 1e-3,
            (double)ev->dur_ns * 1e-3, pid, ev->thread, (long long)ev->replay);
    if (ev->instr != TJI_REPLAY) {
        const tji_instr *I = &code->instrs[ev->instr];
        fprintf(f, ", \"instr\": %d, \"node\": \"%%%d\", \"backend\": \"%s\"", ev->instr,
                tj_node_id(I->node), tji_instr_backend(I));
        if (ev->bytes >= 0) fprintf(f, ", \"bytes\": %.0f", ev->bytes);
        if (ev->flops >= 0) fprintf(f, ", \"flops\": %.0f", ev->flops);
    }
    fprintf(f, "}}");
}

tj_status tj_profile_write_trace(const tj_program *p, const char *path) {
    if (!p || !path) return tjc_last_or(TJ_ERR_ARG, "tj_profile_write_trace: NULL argument");
    tji_profile *profs[2];
    int n_profs = profiles_of(p, profs);
    if (!n_profs) return never_profiled("tj_profile_write_trace");
    int64_t n = 0, dropped = 0;
    for (int i = 0; i < n_profs; i++) {
        pthread_mutex_lock(&profs[i]->lock);
        n += profs[i]->n_events;
        pthread_mutex_unlock(&profs[i]->lock);
    }
    traced *all = tjc_malloc(sizeof(traced) * (size_t)(n ? n : 1));
    if (!all) return tjc_error(TJ_ERR_MEMORY, "tj_profile_write_trace: out of memory");
    int64_t m = 0;
    for (int i = 0; i < n_profs; i++) { /* events that came meanwhile wait for the next trace */
        pthread_mutex_lock(&profs[i]->lock);
        for (int64_t e = 0; e < profs[i]->n_events && m < n; e++) all[m++] = (traced){profs[i]->events[e], profs[i]};
        dropped += profs[i]->dropped;
        pthread_mutex_unlock(&profs[i]->lock);
    }
    qsort(all, (size_t)m, sizeof(traced), by_start);
    FILE *f = fopen(path, "w");
    if (!f) {
        tjc_free(all);
        return tjc_error(TJ_ERR_IO, "tj_profile_write_trace: cannot write %s: %s", path, strerror(errno));
    }
    int pid = (int)getpid();
    int64_t origin = m ? all[0].ev.start_ns : 0;
    fprintf(f, "{\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"tjit_version\": \"%s\", "
               "\"dropped_events\": %lld},\n\"traceEvents\": [\n",
            tj_version(), (long long)dropped);
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, "
               "\"args\": {\"name\": \"tjit\"}}", pid);
    int max_thread = 0;
    for (int64_t e = 0; e < m; e++) max_thread = all[e].ev.thread > max_thread ? all[e].ev.thread : max_thread;
    bool *named = tjc_calloc((size_t)max_thread + 1, sizeof(bool)); /* tracks given a name */
    for (int64_t e = 0; named && e < m; e++) {
        int th = all[e].ev.thread;
        if (!named[th]) {
            named[th] = true;
            fprintf(f, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, "
                       "\"args\": {\"name\": \"replay thread %d\"}}", pid, th, th);
        }
    }
    for (int64_t e = 0; e < m; e++) {
        fputs(",\n", f);
        write_event(f, &all[e], origin, pid);
    }
    fputs("\n]}\n", f);
    tjc_free(named);
    tjc_free(all);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        return tjc_error(TJ_ERR_IO, "tj_profile_write_trace: writing %s failed", path);
    return TJ_OK;
}
