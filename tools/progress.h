/* progress.h — how far long work has got: on a terminal one status line,
 * redrawn in place ("bench_suite: 3/14 done, running lstm_fwd_b64 (41 s)");
 * elsewhere (a pipe, a log file, ctest) plain lines. Used by tjit profile's
 * runs and bench_suite's workloads. Prefix tjit_progress.
 *
 * Long items (a benchmark workload) are announced as they start; many short
 * steps (replays) tick, and are shown only once the work has taken longer
 * than a moment, so quick commands print nothing extra. Other output to the
 * same terminal calls tjit_progress_clear first and tjit_progress_show after.
 * Every function takes NULL for "no progress".
 */
#ifndef TJIT_TOOLS_PROGRESS_H
#define TJIT_TOOLS_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct tjit_progress {
    FILE *out;
    bool tty;           /* a status line redrawn in place, else plain lines */
    const char *task;   /* "bench_suite", "tjit profile" */
    const char *unit;   /* what is counted: "done", "runs done" */
    int total, done;
    char item[160];     /* what runs now */
    double started, last_shown;
    double quiet_s;     /* ticks: nothing is shown before this much time has passed */
    double line_every_s; /* ticks without a terminal: a line this often */
    bool drawn;         /* a status line is on the terminal now */
    bool shown;         /* anything was shown */
} tjit_progress;

/* On stderr, as a status line when stderr is a terminal (TERM not "dumb"). */
void tjit_progress_begin(tjit_progress *p, const char *task, const char *unit, int total);
/* On out, with the mode and timings given (tests). */
void tjit_progress_begin_on(tjit_progress *p, FILE *out, bool tty, const char *task,
                            const char *unit, int total, double quiet_s, double line_every_s);
/* Item done + 1 of total starts: shown at once. */
void tjit_progress_item(tjit_progress *p, int done, const char *item);
/* done steps are finished: shown when due (see above). */
void tjit_progress_tick(tjit_progress *p, int done);
/* Erases the status line before other output; tjit_progress_show draws it again. */
void tjit_progress_clear(tjit_progress *p);
void tjit_progress_show(tjit_progress *p);
/* The work ends with done items or steps finished: erases the status line,
 * or writes a last plain line when lines were shown. */
void tjit_progress_end(tjit_progress *p, int done);

#endif
