/* tjit_list.c — `tjit list [ops|models]`: the example models and the op table. */
#include <stdio.h>
#include <string.h>

#include "examples/models/models.h"
#include "tools/commands.h"

int tjit_cmd_list(int argc, char **argv) {
    bool ops = argc < 2 || !strcmp(argv[1], "ops"), models = argc < 2 || !strcmp(argv[1], "models");
    if (argc > 2 || (!ops && !models)) {
        fprintf(stderr, "usage: tjit list [ops|models]\n");
        return 2;
    }
    if (models) {
        printf("models (%d):\n", tjx_num_models());
        for (int i = 0; i < tjx_num_models(); i++)
            printf("  %-12s %s\n", tjx_model_at(i)->name, tjx_model_at(i)->description);
    }
    if (models && ops) printf("\n");
    if (ops) {
        printf("ops (%d):\n", tj_op_count());
        for (int i = 0; i < tj_op_count(); i++) {
            const tj_op_info *op = tj_op_at(i);
            printf("  %-40s %-10s %s\n", tj_op_name(op), tj_op_kind_name(tj_op_kind_of(op)),
                   tj_op_schema_text(op));
        }
    }
    return 0;
}
