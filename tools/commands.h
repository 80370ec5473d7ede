/* commands.h — declarations of the tjit program's subcommands (commands.def). */
#ifndef TJIT_TOOLS_COMMANDS_H
#define TJIT_TOOLS_COMMANDS_H

#include <stddef.h>

#define TJIT_COMMAND(name, usage, help) int tjit_cmd_##name(int argc, char **argv);
#include "tools/commands.def"
#undef TJIT_COMMAND

/* The whole file at path ("-": standard input), NUL-terminated and malloc'd;
 * *len excludes the NUL. NULL when it cannot be opened (errno says why) or read. */
char *tjit_read_file(const char *path, size_t *len);

#endif
