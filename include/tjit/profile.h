/* profile.h — where a replay's time goes: per-instruction wall times of a
 * compiled program, as a table and as a trace file.
 *
 *   tj_program_profile(p, true);          every later tj_run (and tj_backward) is timed
 *   for (...) tj_run(p, inputs, outputs);
 *   char *table = tj_profile_report(p);   grouped by op and by fusion kernel
 *   tj_profile_write_trace(p, "replay.json");   open in Perfetto or chrome://tracing
 *
 * While profiling is off, a replay only tests a flag around each
 * instruction; nothing is recorded.
 */
/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_PROFILE_H
#define TJIT_PROFILE_H

#include "tjit/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Turns the recording of p's replays on or off; for a program with gradients
 * this includes the backward program that tj_backward runs. What was
 * recorded stays until tj_profile_reset or tj_program_free. Thread-safe:
 * replays on several threads are recorded each on its own track. */
tj_status tj_program_profile(tj_program *p, bool on);
/* Forgets what was recorded (profiling stays on or off). */
tj_status tj_profile_reset(tj_program *p);

/* The recorded replays as a table, one row per op (calls of the same op
 * added up) or fusion kernel, forward and backward apart, slowest first:
 * instructions, calls, total and mean time, share of the time of all rows,
 * bytes each call reads and writes where known (the tensors an instruction
 * takes and makes; views move none), GB/s, and GFLOP/s for matrix products
 * and convolutions. A header line per phase gives the replays and their mean
 * wall time, against which the rows' sum can be read. malloc'd; free with
 * free(). NULL with an error when profiling was never turned on. */
char *tj_profile_report(const tj_program *p);

/* Writes every recorded instruction as a complete event ("ph": "X") of the
 * Chrome trace-event format, which Perfetto (ui.perfetto.dev) and
 * chrome://tracing open: one track per replaying thread, each replay an
 * event enclosing its instructions, times in microseconds. The arguments of
 * an event name the instruction, its node, backend, bytes and flops. */
tj_status tj_profile_write_trace(const tj_program *p, const char *path);

#ifdef __cplusplus
}
#endif

#endif
