/* tjit_run.c — `tjit run FILE.ir`: parses a graph (or imports FILE.onnx),
 * runs it on inputs read from .npy or ONNX .pb files (or random ones of the declared types), prints a summary of
 * each output and saves the outputs as .npy files. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tjit/tjit.h"
#include "tools/commands.h"

enum { MAX_INPUTS = 64 };

tj_tensor *tjit_random_input(const char *command, const tj_type *t, int index, const char *name,
                             tj_generator *gen) {
    bool known = t->kind == TJ_TYPE_TENSOR && t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN;
    for (int d = 0; known && d < t->ndim; d++) known = t->sizes[d] != TJ_UNKNOWN_DIM;
    bool can_give = !strcmp(command, "tjit run");
    if (!known) {
        fprintf(stderr, "%s: input %d%s%s has no complete tensor type%s%s%s\n", command, index,
                name ? " %" : "", name ? name : "", can_give ? "; give it with --input " : "",
                can_give ? (name ? name : "N") : "", can_give ? "=FILE.npy" : "");
        return NULL;
    }
    tj_tensor *x = tj_randn(t->sizes, t->ndim, TJ_F64, gen);
    if (!x) return NULL;
    if (t->dtype == TJ_I64 || t->dtype == TJ_BOOL) { /* small non-negative integers */
        tj_tensor *m = tj_abs(x);
        tj_tensor *a = tj_mul_scalar(m, 2.0);
        tj_release(m);
        tj_release(x);
        x = tj_floor(a);
        tj_release(a);
    }
    tj_tensor *y = tj_to_dtype(x, (tj_dtype)t->dtype);
    tj_release(x);
    return y;
}

static void summary(const char *label, const tj_tensor *t) {
    tj_type ty = tj_type_of_tensor(t);
    char *type = tj_type_to_string(&ty, TJ_PRINT_NO_STRIDES);
    printf("%s : %s\n", label, type ? type : "?");
    free(type);
    int64_t n = tj_numel(t);
    if (n == 0) return;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (int64_t k = 0; k < n; k++) {
        double v = tj_get(t, idx);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
        for (int d = tj_ndim(t) - 1; d >= 0 && ++idx[d] == tj_sizes(t)[d]; d--) idx[d] = 0;
    }
    printf("  min %.6g  max %.6g  mean %.6g\n", lo, hi, sum / (double)n);
}

/* The gradients of the floating-point inputs for the given (or all-ones)
 * gradients of the outputs, summarised and saved as DIR/grad_NAME.npy. */
static int run_backward(tj_graph *g, tj_program *p, tj_tensor *const *inputs, int n_in, int n_out,
                        const char *const *names, const char *const *files, int n_files,
                        const char *out_dir) {
    tj_tensor *gout[MAX_INPUTS] = {0}, *grads[MAX_INPUTS] = {0};
    int rc = 0;
    for (int k = 0; k < n_files; k++) {
        int found = -1;
        for (int o = 0; o < n_out; o++) {
            const char *name = tj_value_name(tj_graph_output(g, o));
            char pos[16];
            snprintf(pos, sizeof pos, "%d", o);
            if ((name && !strcmp(name, names[k])) || !strcmp(pos, names[k])) found = o;
        }
        if (found < 0) {
            fprintf(stderr, "tjit run: the graph has no output named '%s'\n", names[k]);
            rc = 1;
        } else if (!(gout[found] = tj_load_npy(files[k]))) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            rc = 1;
        }
    }
    if (!rc && tj_backward(p, gout, grads) != TJ_OK) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        rc = 1;
    }
    for (int i = 0; !rc && i < n_in; i++) {
        if (!grads[i]) continue;
        const char *name = tj_value_name(tj_graph_input(g, i));
        char label[256], path[4096];
        if (name) snprintf(label, sizeof label, "grad_%s", name);
        else snprintf(label, sizeof label, "grad_%d", i);
        summary(label, grads[i]);
        if (!out_dir) continue;
        snprintf(path, sizeof path, "%s/%s.npy", out_dir, label);
        if (tj_save_npy(path, grads[i]) != TJ_OK) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            rc = 1;
        }
    }
    (void)inputs;
    for (int i = 0; i < MAX_INPUTS; i++) {
        tj_release(gout[i]);
        tj_release(grads[i]);
    }
    return rc;
}

int tjit_cmd_run(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: tjit run FILE.ir|FILE.onnx [--input NAME=FILE.npy|FILE.pb]... [--out DIR]\n"
                        "                [--backward [--grad-output NAME=FILE.npy]...]\n");
        return 2;
    }
    const char *given_name[MAX_INPUTS], *given_file[MAX_INPUTS], *out_dir = NULL;
    const char *gout_name[MAX_INPUTS], *gout_file[MAX_INPUTS];
    int n_given = 0, n_gout = 0;
    bool backward = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--backward")) {
            backward = true;
        } else if (!strcmp(argv[i], "--grad-output") && i + 1 < argc && n_gout < MAX_INPUTS) {
            char *eq = strchr(argv[++i], '=');
            if (!eq) {
                fprintf(stderr, "tjit run: --grad-output takes NAME=FILE.npy, got '%s'\n", argv[i]);
                return 2;
            }
            *eq = '\0';
            gout_name[n_gout] = argv[i];
            gout_file[n_gout++] = eq + 1;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (!strcmp(argv[i], "--input") && i + 1 < argc && n_given < MAX_INPUTS) {
            char *eq = strchr(argv[++i], '=');
            if (!eq) {
                fprintf(stderr, "tjit run: --input takes NAME=FILE.npy, got '%s'\n", argv[i]);
                return 2;
            }
            *eq = '\0';
            given_name[n_given] = argv[i];
            given_file[n_given++] = eq + 1;
        } else {
            fprintf(stderr, "tjit run: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    int rc = 1;
    tj_tensor *given[MAX_INPUTS] = {0};
    bool onnx = tjit_is_onnx(argv[1]); /* its given inputs fix symbolic sizes: read them first */
    for (int k = 0; onnx && k < n_given; k++)
        if (!(given[k] = tjit_load_tensor(given_file[k]))) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            for (int j = 0; j < k; j++) tj_release(given[j]);
            return 1;
        }
    tj_graph *g = tjit_load_graph(argv[1], given_name, given, onnx ? n_given : 0);
    tj_program *p = NULL;
    tj_generator *gen = tj_generator_new(0);
    tj_tensor *inputs[MAX_INPUTS] = {0}, *outputs[MAX_INPUTS] = {0};
    int n_in = g ? tj_graph_num_inputs(g) : 0, n_out = g ? tj_graph_num_outputs(g) : 0;
    if (!g) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        goto done;
    }
    if (n_in > MAX_INPUTS || n_out > MAX_INPUTS) {
        fprintf(stderr, "tjit run: at most %d inputs and outputs\n", MAX_INPUTS);
        goto done;
    }
    for (int k = 0; k < n_given; k++) { /* every --input must name an input */
        bool found = false;
        for (int i = 0; i < n_in && !found; i++) {
            const char *name = tj_value_name(tj_graph_input(g, i));
            char pos[16];
            snprintf(pos, sizeof pos, "%d", i);
            found = (name && !strcmp(name, given_name[k])) || !strcmp(pos, given_name[k]);
        }
        if (!found) {
            fprintf(stderr, "tjit run: the graph has no input named '%s'\n", given_name[k]);
            goto done;
        }
    }
    for (int i = 0; i < n_in; i++) {
        tj_value *v = tj_graph_input(g, i);
        const char *name = tj_value_name(v);
        char pos[16];
        snprintf(pos, sizeof pos, "%d", i);
        if (tj_graph_input_binding(g, i)) continue; /* a parameter of an ONNX model */
        int file = -1;
        for (int k = 0; k < n_given; k++)
            if ((name && !strcmp(name, given_name[k])) || !strcmp(pos, given_name[k])) file = k;
        if (file >= 0 && !given[file]) given[file] = tjit_load_tensor(given_file[file]);
        inputs[i] = file >= 0 ? tj_retain(given[file])
                              : tjit_random_input("tjit run", tj_value_type(v), i, name, gen);
        if (!inputs[i]) {
            if (file >= 0 || tj_last_status()) fprintf(stderr, "tjit run: %s\n", tj_last_error());
            goto done;
        }
    }
    if (n_gout && !backward) {
        fprintf(stderr, "tjit run: --grad-output needs --backward\n");
        goto done;
    }
    bool wants[MAX_INPUTS];
    for (int i = 0; i < n_in; i++) wants[i] = inputs[i] && tj_dtype_is_float(tj_tensor_dtype(inputs[i]));
    tj_compile_options opts = {.requires_grad = backward ? wants : NULL};
    p = tj_compile(g, &opts);
    if (!p || tj_run(p, inputs, outputs) != TJ_OK) {
        fprintf(stderr, "tjit run: %s\n", tj_last_error());
        goto done;
    }
    if (out_dir && mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "tjit run: cannot create %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    rc = 0;
    if (backward && run_backward(g, p, inputs, n_in, n_out, gout_name, gout_file, n_gout, out_dir)) {
        rc = 1;
        goto done;
    }
    for (int i = 0; i < n_out; i++) {
        const char *name = tj_value_name(tj_graph_output(g, i));
        char label[256], path[4096];
        if (name) snprintf(label, sizeof label, "%s", name);
        else snprintf(label, sizeof label, "%d", i);
        summary(label, outputs[i]);
        if (!out_dir) continue;
        snprintf(path, sizeof path, "%s/%s.npy", out_dir, label);
        if (tj_save_npy(path, outputs[i]) != TJ_OK) {
            fprintf(stderr, "tjit run: %s\n", tj_last_error());
            rc = 1;
        }
    }
done:
    for (int i = 0; i < MAX_INPUTS; i++) {
        tj_release(given[i]);
        tj_release(inputs[i]);
        tj_release(outputs[i]);
    }
    tj_program_free(p);
    tj_graph_free(g);
    tj_generator_free(gen);
    return rc;
}
