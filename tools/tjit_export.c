/* tjit_export.c — `tjit export MODEL|FILE.ir --onnx OUT.onnx`: writes an
 * example model's traced graph, or a graph read from text, as an ONNX model;
 * `tjit export --ops` prints the op mapping table of docs/onnx.md. Also the
 * graph loading that dump and run share: FILE.ir as text, FILE.onnx through
 * the importer, and tensors from .npy or ONNX .pb files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "examples/models/models.h"
#include "tools/commands.h"

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

bool tjit_is_onnx(const char *path) { return ends_with(path, ".onnx"); }
bool tjit_is_graph_file(const char *path) { return tjit_is_onnx(path) || ends_with(path, ".ir"); }

tj_tensor *tjit_load_tensor(const char *path) {
    return ends_with(path, ".pb") ? tj_onnx_load_tensor(path) : tj_load_npy(path);
}

tj_graph *tjit_load_graph(const char *path, const char *const *names, tj_tensor *const *given, int n) {
    if (tjit_is_onnx(path)) { /* the given inputs fix sizes the model leaves symbolic */
        tj_type types[64];
        int k = n < 64 ? n : 64;
        for (int i = 0; i < k; i++) types[i] = tj_type_contiguous(tj_tensor_dtype(given[i]), tj_sizes(given[i]), tj_ndim(given[i]));
        tj_onnx_import_options o = {.input_names = names, .input_types = types, .n_inputs = k};
        return tj_graph_import_onnx_ex(path, &o);
    }
    size_t len = 0;
    char *text = tjit_read_file(path, &len);
    if (!text) {
        tjc_error(TJ_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    tj_graph *g = tj_graph_parse_n(text, len, NULL);
    free(text);
    if (!g) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s:%s", path, tj_last_error());
        tjc_error(TJ_ERR_PARSE, "%s", msg);
    }
    return g;
}

static int usage(void) {
    fprintf(stderr, "usage: tjit export MODEL|FILE.ir --onnx OUT.onnx [--opset N] [--params-as-inputs]\n"
                    "                   [--allow-size-change]\n"
                    "       tjit export --ops       the ONNX form of every op\n"
                    "  --opset N             the default domain's opset, %d to %d (default %d)\n"
                    "  --params-as-inputs    parameters as graph inputs, not initializers\n"
                    "  --allow-size-change   symbolic input sizes (as tj_compile's allow_size_change)\n",
            TJ_ONNX_MIN_EXPORT_OPSET, TJ_ONNX_MAX_OPSET, TJ_ONNX_DEFAULT_OPSET);
    return 2;
}

static int print_ops(void) {
    printf("| tjit op | ONNX |\n|---|---|\n");
    for (int id = 0; id < tj_op_count(); id++) {
        bool ok;
        const char *form = tj_onnx_export_form(tj_op_at(id), &ok);
        printf("| `%s` | %s%s |\n", tj_op_name(tj_op_at(id)), ok ? "" : "not exportable: ", form);
    }
    return 0;
}

int tjit_cmd_export(int argc, char **argv) {
    const char *src = NULL, *out = NULL;
    tj_onnx_export_options opts = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops")) return print_ops();
        if (!strcmp(argv[i], "--onnx") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--opset") && i + 1 < argc) opts.opset = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--params-as-inputs")) opts.params_as_inputs = true;
        else if (!strcmp(argv[i], "--allow-size-change")) opts.allow_size_change = true;
        else if (argv[i][0] == '-' || src) return usage();
        else src = argv[i];
    }
    if (!src || !out) return usage();
    const tjx_model *model = tjx_find_model(src);
    tj_generator *gen = tj_generator_new(0);
    void *params = NULL;
    tj_tensor *inputs[8] = {0};
    tj_graph *g = NULL;
    if (model) {
        params = gen ? model->create(gen) : NULL;
        if (params && model->make_inputs(params, gen, inputs) == TJ_OK)
            g = tj_trace(model->forward, params, inputs, model->n_in, model->n_out, NULL);
    } else {
        g = tjit_load_graph(src, NULL, NULL, 0);
    }
    int rc = 1;
    if (!g) fprintf(stderr, "tjit export: %s\n", tj_last_error());
    else if (tj_graph_export_onnx(g, out, &opts) != TJ_OK) fprintf(stderr, "tjit export: %s\n", tj_last_error());
    else rc = 0;
    tj_graph_free(g);
    if (model)
        for (int i = 0; i < model->n_in; i++) tj_release(inputs[i]);
    if (params) model->destroy(params);
    tj_generator_free(gen);
    return rc;
}
