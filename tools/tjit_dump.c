/* tjit_dump.c — `tjit dump MODEL`: traces an example model on its example
 * inputs and prints the graph (with the tracer's warnings), its register code
 * or its Graphviz form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tools/commands.h"

static int usage(void) {
    fprintf(stderr, "usage: tjit dump MODEL [--canonical] [--code] [--dot]\n"
                    "models: ");
    for (int i = 0; i < tjx_num_models(); i++)
        fprintf(stderr, "%s%s", i ? ", " : "", tjx_model_at(i)->name);
    fprintf(stderr, "\n");
    return 2;
}

int tjit_cmd_dump(int argc, char **argv) {
    if (argc < 2) return usage();
    const tjx_model *model = tjx_find_model(argv[1]);
    if (!model) {
        fprintf(stderr, "tjit dump: no model named '%s'\n", argv[1]);
        return usage();
    }
    bool canonical = false, code = false, dot = false;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--canonical")) canonical = true;
        else if (!strcmp(argv[i], "--code")) code = true;
        else if (!strcmp(argv[i], "--dot")) dot = true;
        else {
            fprintf(stderr, "tjit dump: unknown option '%s'\n", argv[i]);
            return usage();
        }
    }
    int rc = 1;
    tj_generator *gen = tj_generator_new(0);
    void *params = gen ? model->create(gen) : NULL;
    tj_tensor *inputs[8] = {0};
    tj_graph *g = NULL;
    tj_program *p = NULL;
    if (!params || model->make_inputs(params, gen, inputs) != TJ_OK) goto done;
    g = tj_trace(model->forward, params, inputs, model->n_in, model->n_out, NULL);
    if (!g) goto done;
    for (int i = 0; i < tj_graph_num_warnings(g); i++) printf("# warning: %s\n", tj_graph_warning(g, i));
    char *text = dot ? tj_graph_to_dot(g, 0) : tj_graph_to_string(g, canonical ? TJ_PRINT_CANONICAL : 0);
    if (!text) goto done;
    fputs(text, stdout);
    free(text);
    if (code) {
        p = tj_compile(g, NULL);
        char *c = p ? tj_program_code_to_string(p) : NULL;
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
    if (params) model->destroy(params);
    tj_generator_free(gen);
    return rc;
}
