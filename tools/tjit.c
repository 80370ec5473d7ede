/* tjit.c — the tjit command line program: one subcommand per entry of the
 * table below, each in its own tools/tjit_<name>.c file, and the file reading
 * they share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit/tjit.h"
#include "tools/commands.h"

static const struct {
    const char *name, *usage, *help;
    int (*run)(int argc, char **argv);
} commands[] = {
#define TJIT_COMMAND(name, usage, help) {#name, usage, help, tjit_cmd_##name},
#include "tools/commands.def"
};

static void usage(FILE *f) {
    fprintf(f, "usage: tjit COMMAND [ARGS]\n       tjit --version     the version and what this build holds\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-40s %s\n", commands[i].usage, commands[i].help);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("%sthreads: %d (tj_set_num_threads, OMP_NUM_THREADS)\n", tj_build_info(),
               tj_get_num_threads());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tjit: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

char *tjit_read_file(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = NULL;
    for (;;) {
        char *bigger = realloc(buf, cap + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin) fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}
