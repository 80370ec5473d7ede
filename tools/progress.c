/* progress.c — status lines and progress lines (see progress.h). */
#include "tools/progress.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tjit_progress_begin_on(tjit_progress *p, FILE *out, bool tty, const char *task,
                            const char *unit, int total, double quiet_s, double line_every_s) {
    if (!p) return;
    *p = (tjit_progress){.out = out, .tty = tty, .task = task, .unit = unit, .total = total,
                         .quiet_s = quiet_s, .line_every_s = line_every_s};
    p->started = now_s();
}

void tjit_progress_begin(tjit_progress *p, const char *task, const char *unit, int total) {
    const char *term = getenv("TERM");
    bool tty = isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
    tjit_progress_begin_on(p, stderr, tty, task, unit, total, 2.0, 10.0);
}

static int terminal_width(const tjit_progress *p) {
    struct winsize ws;
    if (ioctl(fileno(p->out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
    return 80;
}

/* "task: 3/14 done, running item (41 s, about 2 min left)" */
static void describe(const tjit_progress *p, char *buf, size_t n) {
    double elapsed = now_s() - p->started;
    int k = snprintf(buf, n, "%s: %d/%d %s", p->task, p->done, p->total, p->unit);
    if (k < 0 || (size_t)k >= n) return;
    if (p->item[0]) k += snprintf(buf + k, n - (size_t)k, ", %s", p->item);
    if (k < 0 || (size_t)k >= n) return;
    k += snprintf(buf + k, n - (size_t)k, " (%.0f s", elapsed);
    if (k < 0 || (size_t)k >= n) return;
    if (p->done > 0 && p->done < p->total) {
        double left = elapsed / p->done * (p->total - p->done);
        k += left >= 120 ? snprintf(buf + k, n - (size_t)k, ", about %.0f min left", left / 60)
                         : snprintf(buf + k, n - (size_t)k, ", about %.0f s left", left);
    }
    if (k >= 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, ")");
}

static void draw(tjit_progress *p) {
    char line[512];
    describe(p, line, sizeof line);
    if (p->tty) {
        int width = terminal_width(p) - 1; /* a full line would wrap and \r return to its second half */
        if ((int)strlen(line) > width) line[width] = '\0';
        fprintf(p->out, "\r\033[K%s", line);
        p->drawn = true;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->shown = true;
    p->last_shown = now_s();
}

void tjit_progress_item(tjit_progress *p, int done, const char *item) {
    if (!p) return;
    p->done = done;
    snprintf(p->item, sizeof p->item, "%s", item ? item : "");
    draw(p);
}

void tjit_progress_tick(tjit_progress *p, int done) {
    if (!p) return;
    p->done = done;
    double t = now_s();
    if (t - p->started < p->quiet_s) return;
    double every = p->tty ? 0.1 : p->line_every_s;
    if (!p->shown || t - p->last_shown >= every) draw(p);
}

void tjit_progress_clear(tjit_progress *p) {
    if (!p || !p->drawn) return;
    fprintf(p->out, "\r\033[K");
    fflush(p->out);
    p->drawn = false;
}

void tjit_progress_show(tjit_progress *p) {
    if (p && p->tty && p->shown) draw(p);
}

void tjit_progress_end(tjit_progress *p, int done) {
    if (!p) return;
    p->done = done;
    tjit_progress_clear(p);
    if (!p->tty && p->shown) {
        p->item[0] = '\0';
        draw(p);
    }
}
