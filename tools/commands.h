/* commands.h — declarations of the tjit program's subcommands (commands.def). */
#ifndef TJIT_TOOLS_COMMANDS_H
#define TJIT_TOOLS_COMMANDS_H

#define TJIT_COMMAND(name, usage, help) int tjit_cmd_##name(int argc, char **argv);
#include "tools/commands.def"
#undef TJIT_COMMAND

#endif
