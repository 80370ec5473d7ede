/* tjit_list.c — `tjit list`: the op table. */
#include <stdio.h>
#include <string.h>

#include "tjit/tjit.h"
#include "tools/commands.h"

int tjit_cmd_list(int argc, char **argv) {
    if (argc > 2 || (argc == 2 && strcmp(argv[1], "ops") != 0)) {
        fprintf(stderr, "usage: tjit list [ops]\n");
        return 2;
    }
    printf("ops (%d):\n", tj_op_count());
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tj_op_at(i);
        printf("  %-28s %-10s %s\n", tj_op_name(op), tj_op_kind_name(tj_op_kind_of(op)),
               tj_op_schema_text(op));
    }
    return 0;
}
