/* backends.c — the fusion backends built into this library, by name. */
#include <string.h>

#include "fuser.h"

const tjf_backend *tjf_find_backend(const char *name) {
    const tjf_backend *all[] = {tjf_portable_backend()};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}
