/* commands.h — declarations of the tjit program's subcommands (commands.def). */
#ifndef TJIT_TOOLS_COMMANDS_H
#define TJIT_TOOLS_COMMANDS_H

#include <stddef.h>

#include "tjit/tjit.h"

#define TJIT_COMMAND(name, usage, help) int tjit_cmd_##name(int argc, char **argv);
#include "tools/commands.def"
#undef TJIT_COMMAND

/* The whole file at path ("-": standard input), NUL-terminated and malloc'd;
 * *len excludes the NUL. NULL when it cannot be opened (errno says why) or read. */
char *tjit_read_file(const char *path, size_t *len);

/* A random tensor of a fully known type t, for graph input index (named
 * name, or NULL): normal values, small non-negative ones for integers and
 * booleans. NULL with a message from command on stderr otherwise. */
tj_tensor *tjit_random_input(const char *command, const tj_type *t, int index, const char *name,
                             tj_generator *gen);

#endif
