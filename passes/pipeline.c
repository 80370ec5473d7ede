/* pipeline.c — the registry of passes by name, running a comma-separated
 * pipeline of them (tj_run_passes), the default pipeline, the TJIT_DUMP
 * environment variable, and the verifier run after every pass in builds with
 * TJIT_VERIFY_PASSES. docs/passes.md explains the default order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "passes/passes_internal.h"

static const struct {
    const char *name;
    tj_pass_fn fn;
} registry[] = {
    {"functionalize", tj_pass_functionalize},
    {"dce", tj_pass_dce},
    {"cse", tj_pass_cse},
    {"constant_fold", tj_pass_constant_fold},
    {"peephole", tj_pass_peephole},
    {"canonicalize", tj_pass_canonicalize},
    {"merge_linears", tj_pass_merge_linears},
    {"fold_batch_norm", tj_pass_fold_batch_norm},
    {"split_batch_norm", tj_pass_split_batch_norm},
    {"fuse", tj_pass_fuse}, /* fuser/fuse.c */
};
enum { N_PASSES = sizeof registry / sizeof registry[0] };

int tj_num_passes(void) { return N_PASSES; }

const char *tj_pass_name(int i) {
    if (i >= 0 && i < N_PASSES) return registry[i].name;
    return tjc_error(TJ_ERR_ARG, "tj_pass_name: pass %d is out of range (0 to %d)", i,
                     N_PASSES - 1), NULL;
}

tj_pass_fn tj_find_pass(const char *name) {
    if (!name) return tjc_error(TJ_ERR_ARG, "tj_find_pass: the name is NULL"), NULL;
    for (int i = 0; i < N_PASSES; i++)
        if (!strcmp(registry[i].name, name)) return registry[i].fn;
    return tjc_error(TJ_ERR_ARG, "tj_find_pass: no pass is named '%.100s'", name), NULL;
}

const char *tj_default_pipeline(void) {
    return "functionalize,dce,constant_fold,peephole,merge_linears,fold_batch_norm,split_batch_norm,cse,"
           "dce,canonicalize,fuse,canonicalize";
}

/* ---- names in a comma-separated list ------------------------------------------------------ */

#define NAME_MAX_LEN 64

/* Copies the next name of *list (spaces trimmed) into name and advances;
 * false at the end. A name too long to be a pass comes back truncated,
 * which matches no pass. */
static bool next_name(const char **list, char *name) {
    const char *s = *list;
    while (*s == ',' || *s == ' ' || *s == '\t') s++;
    if (!*s) return false;
    size_t n = strcspn(s, ",");
    *list = s + n;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n >= NAME_MAX_LEN) n = NAME_MAX_LEN - 1;
    memcpy(name, s, n);
    name[n] = '\0';
    return true;
}

static bool list_has(const char *list, const char *name) {
    char item[NAME_MAX_LEN];
    while (list && next_name(&list, item))
        if (!strcmp(item, "all") || !strcmp(item, name)) return true;
    return false;
}

static tj_status unknown(const char *name) {
    char known[512] = "";
    size_t len = 0;
    for (int i = 0; i < N_PASSES && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                registry[i].name);
    return tjc_error(TJ_ERR_ARG, "tj_run_passes: unknown pass '%s'; known passes: %s", name, known);
}

/* ---- running --------------------------------------------------------------------------------- */

static void dump(const tj_graph *g, const char *pass) {
    char *text = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    fprintf(stderr, "# after %s\n%s", pass, text ? text : "(cannot print the graph)\n");
    tjc_free(text);
}

/* Whether the TJIT_DUMP list names an item that is not a pass, such as the fusion
 * report or the passes' times ("all" does not: it means every pass's graph). */
static bool names_item(const char *list, const char *want) {
    char item[NAME_MAX_LEN];
    while (next_name(&list, item))
        if (!strcmp(item, want)) return true;
    return false;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report_fusion(const tj_graph *g) {
    char *text = tj_fusion_report(g);
    fprintf(stderr, "%s", text ? text : "# fusion report: cannot make it\n");
    if (!text) tj_clear_error();
    tjc_free(text);
}

static tj_status run_pipeline(tj_graph *g, const char *pipeline, bool verify_first) {
    if (!g) return tjc_last_or(TJ_ERR_ARG, "tj_run_passes: the graph is NULL");
    if (!pipeline) return tjc_error(TJ_ERR_ARG, "tj_run_passes: the pipeline is NULL");
    char name[NAME_MAX_LEN];
    /* every name is checked before any pass changes the graph */
    for (const char *s = pipeline; next_name(&s, name);)
        if (!tj_find_pass(name)) return unknown(name);
    /* passes trust the invariants of docs/ir.md; a graph read from text may break them */
    tj_status vst = verify_first ? tj_graph_verify(g) : TJ_OK;
    if (vst == TJ_ERR_MEMORY) return vst;
    if (vst != TJ_OK) {
        char cause[768];
        snprintf(cause, sizeof cause, "%s", tj_last_error());
        return tjc_error(TJ_ERR_ARG, "tj_run_passes: the graph is malformed: %s", cause);
    }
    const char *dump_list = getenv("TJIT_DUMP");
    bool times = dump_list && names_item(dump_list, "pass-times");
    for (const char *s = pipeline; next_name(&s, name);) {
        int nodes_before = times ? tj_block_num_nodes(tj_graph_block(g)) : 0;
        double start = times ? seconds_now() : 0;
        tj_status st = tj_find_pass(name)(g);
        if (times)
            fprintf(stderr, "# pass %-16s %9.3f ms  %d -> %d nodes\n", name,
                    1e3 * (seconds_now() - start), nodes_before,
                    tj_block_num_nodes(tj_graph_block(g)));
        if (st != TJ_OK) {
            char cause[768];
            snprintf(cause, sizeof cause, "%s", tj_last_error());
            return tjc_error(st, "pass '%s' failed: %s", name, cause);
        }
#ifdef TJIT_VERIFY_PASSES
        if ((st = tj_graph_verify(g)) == TJ_ERR_MEMORY) return st;
        if (st != TJ_OK) {
            char cause[768];
            snprintf(cause, sizeof cause, "%s", tj_last_error());
            return tjc_error(TJ_ERR_INTERNAL, "pass '%s' left a malformed graph: %s", name, cause);
        }
#endif
        if (dump_list && list_has(dump_list, name)) dump(g, name);
        if (dump_list && !strcmp(name, "fuse") && names_item(dump_list, "fusion-report")) report_fusion(g);
    }
    return TJ_OK;
}

tj_status tj_run_passes(tj_graph *g, const char *pipeline) { return run_pipeline(g, pipeline, true); }

tj_status tjp_run_passes_trusted(tj_graph *g, const char *pipeline) {
#ifdef TJIT_VERIFY_PASSES
    return run_pipeline(g, pipeline, true);
#else
    return run_pipeline(g, pipeline, false);
#endif
}
