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

/* tjit_export.c: whether path names an ONNX model, or a graph file (FILE.ir
 * or FILE.onnx); a graph from FILE.ir or
 * FILE.onnx (the given tensors, named, fix an ONNX model's symbolic sizes);
 * a tensor from .npy or an ONNX .pb file. NULL with tj_last_error(). */
bool tjit_is_onnx(const char *path);
bool tjit_is_graph_file(const char *path);
tj_graph *tjit_load_graph(const char *path, const char *const *names, tj_tensor *const *given, int n);
tj_tensor *tjit_load_tensor(const char *path);

#endif
