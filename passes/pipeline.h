/* pipeline.h — running a pipeline of passes on a graph the library itself
 * made: a copy of a verified graph (tj_compile's), or autodiff's graphs. */
#ifndef TJIT_PASSES_PIPELINE_H
#define TJIT_PASSES_PIPELINE_H

#include "tjit/passes.h"

/* tj_run_passes without its check of the graph first (a whole walk of it,
 * with hash maps), which such a graph passes by construction; builds with
 * TJIT_VERIFY_PASSES check it all the same. */
tj_status tjp_run_passes_trusted(tj_graph *g, const char *pipeline);

#endif
