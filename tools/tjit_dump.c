/* tjit_dump.c — `tjit dump MODEL|FILE.ir|FILE.onnx`: traces an example model on
 * its example inputs (or parses FILE.ir, or imports FILE.onnx) and prints the graph (with the tracer's warnings), its register code
 * or its Graphviz form; with --after, the graph after chosen passes of the
 * pipeline (the default one, or --passes LIST); with --kernels, the LLVM
 * kernel of each fusion group (and --asm its assembly), or with --device
 * cuda its CUDA C and PTX (traced on cuda:0 where there is one); with --plan, the
 * static plan's memory (with --grad, the backward program's too); with
 * --fusion-report, why fusion stopped where it did (tj_fusion_report). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tools/commands.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"
#endif
#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/driver.h"
#include "backends/cuda/fusion.h"
#endif

static int usage(void) {
    fprintf(stderr, "usage: tjit dump MODEL|FILE.ir|FILE.onnx [--canonical] [--code] [--dot] [--after PASS[,PASS]]\n"
                    "                 [--passes LIST] [--grad] [--kernels [--asm]] [--plan]\n"
                    "                 [--fusion-report] [--device cpu|cuda]\n"
                    "  --grad               the forward graph extended for backward, and the\n"
                    "                       backward graph of the parameters' gradients\n"
                    "  --after PASS[,PASS]  run the pipeline and print the graph after each\n"
                    "                       named pass (\"all\": after every pass)\n"
                    "  --passes LIST        the pipeline (default \"%s\")\n"
                    "  --kernels            each fusion group's LLVM IR after optimisation\n"
                    "  --asm                with --kernels: its assembly too\n"
                    "  --device cuda        trace on cuda:0 (the CPU where there is no GPU); with\n"
                    "                       --kernels: each group's CUDA C and its PTX\n"
                    "  --plan               the replay plan's memory: offset, bytes and live\n"
                    "                       range of each value's buffer, the arena's size, and\n"
                    "                       the peak against the sum of all intermediates\n"
                    "  --fusion-report      after the pipeline's fuse pass: the nodes left outside\n"
                    "                       fusion groups and the groups not merged, with why\n"
                    "models: ", tj_default_pipeline());
    for (int i = 0; i < tjx_num_models(); i++)
        fprintf(stderr, "%s%s", i ? ", " : "", tjx_model_at(i)->name);
    fprintf(stderr, "\n");
    return 2;
}

/* Copies the next comma-separated name of *list into name; false at the end. */
static bool next_name(const char **list, char *name, size_t cap) {
    const char *s = *list;
    while (*s == ',' || *s == ' ') s++;
    if (!*s) return false;
    size_t n = strcspn(s, ", ");
    *list = s + n;
    if (n >= cap) n = cap - 1;
    memcpy(name, s, n);
    name[n] = '\0';
    return true;
}

static bool has_name(const char *list, const char *name) {
    char item[64];
    while (next_name(&list, item, sizeof item))
        if (!strcmp(item, name) || !strcmp(item, "all")) return true;
    return false;
}

/* Whether every name in `after` is a pass of the pipeline (or "all"). */
static bool check_after(const char *pipeline, const char *after) {
    char name[64];
    for (const char *s = after; next_name(&s, name, sizeof name);)
        if (strcmp(name, "all") && !has_name(pipeline, name)) {
            fprintf(stderr, "tjit dump: --after %s: no pass '%s' in the pipeline \"%s\"\n",
                    after, name, pipeline);
            return false;
        }
    return true;
}

/* Runs pipeline one pass at a time, printing the graph after each pass
 * named in `after` (which may be NULL) and the fusion report after each fuse
 * pass when report is set. */
static tj_status run_pipeline(tj_graph *g, const char *pipeline, const char *after, bool canonical,
                              bool dot, bool report) {
    char name[64];
    for (const char *s = pipeline; next_name(&s, name, sizeof name);) {
        tj_status st = tj_run_passes(g, name);
        if (st != TJ_OK) return st;
        if (report && !strcmp(name, "fuse")) {
            char *text = tj_fusion_report(g);
            if (!text) return tj_last_status();
            fputs(text, stdout);
            free(text);
        }
        if (!after) continue;
        if (!has_name(after, name)) continue;
        char *text = dot ? tj_graph_to_dot(g, 0) : tj_graph_to_string(g, canonical ? TJ_PRINT_CANONICAL : 0);
        if (!text) return tj_last_status();
        printf("# after %s\n%s", name, text);
        free(text);
    }
    return TJ_OK;
}

/* The LLVM kernels of the fusion groups of g compiled with the pipeline. */
static bool dump_kernels(const tj_graph *g, const char *passes, bool with_asm) {
#ifdef TJIT_HAVE_LLVM
    tj_compile_options opts = {.passes = passes, .backend = "llvm"};
    tj_program *p = tj_compile(g, &opts);
    bool ok = p && tjl_dump_kernels(tj_program_graph(p), with_asm, stdout) == TJ_OK;
    tj_program_free(p);
    return ok;
#else
    (void)g;
    (void)passes;
    (void)with_asm;
    return false;
#endif
}

/* The CUDA kernels of the fusion groups of g compiled with the pipeline, for
 * the GPU's architecture (sm_90 where there is none). */
static bool dump_cuda_kernels(const tj_graph *g, const char *passes) {
#ifdef TJIT_HAVE_CUDA
    tj_compile_options opts = {.passes = passes};
    tj_program *p = tj_compile(g, &opts);
    char arch[32] = "sm_90";
    const tjcu_driver *drv = tjcu_current_driver();
    if (drv && !strcmp(drv->name, "cuda")) drv->arch(0, arch, sizeof arch);
    bool ok = p && tjcu_fuse_dump(tj_program_graph(p), arch, stdout) == TJ_OK;
    tj_program_free(p);
    return ok;
#else
    (void)g;
    (void)passes;
    fprintf(stderr, "tjit dump: --device cuda needs a tjit built with the CUDA backend\n");
    return false;
#endif
}

/* The model's parameters and buffers, and its inputs, on dev. */
static tj_status move_model(const tjx_model *m, void *params, tj_tensor **inputs, tj_device dev) {
    tj_tensor *ps[64];
    int n = m->parameters(params, ps, 64);
    if (m->buffers) n += m->buffers(params, ps + n, 64 - n);
    for (int i = 0; i < n; i++)
        if (tj_move_to_device(ps[i], dev)) return tj_last_status();
    for (int i = 0; i < m->n_in; i++)
        if (tj_move_to_device(inputs[i], dev)) return tj_last_status();
    return TJ_OK;
}

/* FILE.ir or FILE.onnx stands in the place of a model: it has no inputs to make */
static const tjx_model file_model = {.name = "FILE"};

int tjit_cmd_dump(int argc, char **argv) {
    if (argc < 2) return usage();
    const tjx_model *model = tjx_find_model(argv[1]);
    if (!model && tjit_is_graph_file(argv[1])) model = &file_model;
    if (!model) {
        fprintf(stderr, "tjit dump: no model named '%s'\n", argv[1]);
        return usage();
    }
    bool canonical = false, code = false, dot = false, grad = false, kernels = false, with_asm = false,
         plan = false, fusion_report = false, cuda = false;
    const char *after = NULL, *passes = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--canonical")) canonical = true;
        else if (!strcmp(argv[i], "--after") && i + 1 < argc) after = argv[++i];
        else if (!strcmp(argv[i], "--passes") && i + 1 < argc) passes = argv[++i];
        else if (!strcmp(argv[i], "--code")) code = true;
        else if (!strcmp(argv[i], "--dot")) dot = true;
        else if (!strcmp(argv[i], "--kernels")) kernels = true;
        else if (!strcmp(argv[i], "--asm")) with_asm = true;
        else if (!strcmp(argv[i], "--grad")) grad = true;
        else if (!strcmp(argv[i], "--plan")) plan = true;
        else if (!strcmp(argv[i], "--fusion-report")) fusion_report = true;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cuda")) cuda = ++i;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cpu")) ++i;
        else {
            fprintf(stderr, "tjit dump: unknown option '%s'\n", argv[i]);
            return usage();
        }
    }
    if (after && !check_after(passes ? passes : tj_default_pipeline(), after)) return 2;
    if (fusion_report && grad) {
        fprintf(stderr, "tjit dump: --fusion-report reports on the forward graph, not with --grad "
                        "(TJIT_DUMP=fusion-report reports on every graph compiled)\n");
        return 2;
    }
    if (fusion_report && !has_name(passes ? passes : tj_default_pipeline(), "fuse")) {
        fprintf(stderr, "tjit dump: --fusion-report: the pipeline \"%s\" has no fuse pass\n",
                passes ? passes : tj_default_pipeline());
        return 2;
    }
#ifndef TJIT_HAVE_LLVM
    if (kernels && !cuda) {
        fprintf(stderr, "tjit dump: --kernels needs a tjit built with LLVM (TJIT_LLVM=ON)\n");
        return 2;
    }
#endif
    int rc = 1;
    tj_generator *gen = tj_generator_new(0);
    void *params = gen && model != &file_model ? model->create(gen) : NULL;
    tj_tensor *inputs[8] = {0};
    tj_graph *g = NULL;
    tj_program *p = NULL;
    if (model == &file_model) { /* a graph file: parsed or imported, not traced */
        params = gen;
        g = tjit_load_graph(argv[1], NULL, NULL, 0);
    } else if (params && model->make_inputs(params, gen, inputs) == TJ_OK) {
        if (cuda && !tj_cuda_is_available())
            printf("# no CUDA device here: traced on the CPU; the kernels are those a GPU would compile\n");
        else if (cuda && move_model(model, params, inputs, TJ_DEVICE_CUDA(0)) != TJ_OK)
            goto done;
        g = tj_trace(model->forward, params, inputs, model->n_in, model->n_out, NULL);
    }
    if (!g) goto done;
    for (int i = 0; i < tj_graph_num_warnings(g); i++) printf("# warning: %s\n", tj_graph_warning(g, i));
    if (grad) { /* the parameters' gradients: extended forward and backward, after the passes */
        tj_compile_options opts = {.passes = passes, .grad_parameters = true};
        p = tj_compile(g, &opts);
        if (!p) goto done;
        unsigned flags = canonical ? TJ_PRINT_CANONICAL : 0;
        char *fwd = tj_graph_to_string(tj_program_graph(p), flags);
        char *bwd = tj_graph_to_string(tj_program_backward_graph(p), flags);
        if (fwd && bwd)
            printf("# forward, extended with the values backward reads\n%s\n# backward: "
                   "gradients of the outputs and the saved values in, gradients of the "
                   "parameters out\n%s", fwd, bwd);
        free(fwd);
        free(bwd);
        if (!fwd || !bwd) goto done;
    } else if (after || fusion_report) {
        if (run_pipeline(g, passes ? passes : tj_default_pipeline(), after, canonical, dot,
                         fusion_report) != TJ_OK)
            goto done;
    } else {
        char *text = dot ? tj_graph_to_dot(g, 0) : tj_graph_to_string(g, canonical ? TJ_PRINT_CANONICAL : 0);
        if (!text) goto done;
        fputs(text, stdout);
        free(text);
    }
    if (kernels && !(cuda ? dump_cuda_kernels(g, passes) : dump_kernels(g, passes, with_asm))) goto done;
    if ((code || plan) && !p) {
        tj_compile_options opts = {.passes = passes};
        p = tj_compile(g, &opts);
    }
    if (code) {
        char *c = p ? tj_program_code_to_string(p) : NULL;
        if (!c) goto done;
        printf("\n%s", c);
        free(c);
    }
    if (plan) {
        char *c = p ? tj_program_plan_to_string(p) : NULL;
        if (!c) goto done;
        printf("\n%s", c);
        free(c);
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "tjit dump: %s\n", tj_last_error());
    tj_program_free(p);
    tj_graph_free(g);
    for (int i = 0; i < model->n_in; i++) tj_release(inputs[i]);
    if (params && model != &file_model) model->destroy(params);
    tj_generator_free(gen);
    return rc;
}
