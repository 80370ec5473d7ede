/* tjit.c — the tjit command line program: one subcommand per entry of the
 * table below, each in its own tools/tjit_<name>.c file. */
#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

static const struct {
    const char *name, *usage, *help;
    int (*run)(int argc, char **argv);
} commands[] = {
#define TJIT_COMMAND(name, usage, help) {#name, usage, help, tjit_cmd_##name},
#include "tools/commands.def"
};

static void usage(FILE *f) {
    fprintf(f, "usage: tjit COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-40s %s\n", commands[i].usage, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tjit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
