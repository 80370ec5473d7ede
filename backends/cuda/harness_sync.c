/* harness_sync.c — what a host-compiled kernel calls to wait: block barriers
 * (__syncthreads and its _count/_and/_or forms) and warp collectives
 * (__syncwarp, shuffles, votes, matches, reductions), with the checks a
 * device leaves undefined: a barrier must be reached by every thread of the
 * block at the same call, a collective by every lane its mask names with the
 * same op. The first thread that makes a wait impossible (it returns, or
 * reaches another barrier) fails the block with a message naming both sides.
 *
 * Shuffles follow PTX's shfl.sync: a width splits the warp into segments; a
 * lane whose source falls outside its segment, or is not in the mask, gets
 * its own value.
 */
#include <stdio.h>

#include "harness_internal.h"

static const char *const warp_op_names[TJCU_WARP_N_OPS] = {
    "__syncwarp",        "__shfl_sync",       "__shfl_up_sync",    "__shfl_down_sync",
    "__shfl_xor_sync",   "__all_sync",        "__any_sync",        "__ballot_sync",
    "__match_any_sync",  "__match_all_sync",  "__reduce_add_sync", "__reduce_min_sync",
    "__reduce_max_sync", "__reduce_and_sync", "__reduce_or_sync",  "__reduce_xor_sync",
};
static const char *const bar_names[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                        "__syncthreads_or"};

static const char *warp_op_name(int op) {
    int kind = op & 0xff;
    return kind < TJCU_WARP_N_OPS ? warp_op_names[kind] : "an unknown warp op";
}

void tjh_make_ready(tjh_exec *e, tjh_thread *t) {
    t->state = TJH_RUNNING;
    e->ready[(e->ready_head + e->ready_count) % TJH_MAX_THREADS] = t;
    e->ready_count++;
}

void tjh_block_reset(tjh_exec *e) {
    e->n = e->block_dim.x * e->block_dim.y * e->block_dim.z;
    e->next = 0;
    e->exited = 0;
    e->bar_arrived = 0;
    e->ready_head = e->ready_count = 0;
    e->failed = false;
    e->message[0] = '\0';
    unsigned n_warps = (e->n + TJH_WARP - 1) / TJH_WARP, tail = e->n % TJH_WARP;
    for (unsigned w = 0; w < n_warps; w++) {
        e->warps[w].exist = (w == n_warps - 1 && tail) ? (1u << tail) - 1 : ~0u;
        e->warps[w].exited = 0;
        e->warps[w].n_groups = 0;
    }
}

/* ---- block barriers ------------------------------------------------------------ */

static const tjh_thread *first_in_state(const tjh_exec *e, int state) {
    for (unsigned i = 0; i < e->next; i++)
        if (e->threads[i].state == state) return &e->threads[i];
    return NULL;
}

static int block_sync(tjcu_thread *pub, int op, int pred, int line) {
    tjh_thread *t = (tjh_thread *)pub;
    tjh_exec *e = t->e;
    char a[48], b[48];
    if ((unsigned)op > TJCU_BAR_OR) tjh_fail(e, "thread %s: unknown barrier op %d", tjh_thread_name(t, a, sizeof a), op);
    if (e->exited)
        tjh_fail(e, "thread %s reached %s (line %d) after thread %s returned; a barrier must be reached "
                 "by every thread of the block", tjh_thread_name(t, a, sizeof a), bar_names[op], line,
                 tjh_thread_name(first_in_state(e, TJH_EXITED), b, sizeof b));
    if (e->bar_arrived == 0) {
        e->bar_op = op;
        e->bar_line = line;
        e->bar_acc = op == TJCU_BAR_AND;
    } else if (op != e->bar_op || line != e->bar_line) {
        tjh_fail(e, "divergent barriers: thread %s reached %s (line %d) while %u threads wait at %s "
                 "(line %d)", tjh_thread_name(t, a, sizeof a), bar_names[op], line, e->bar_arrived,
                 bar_names[e->bar_op], e->bar_line);
    }
    if (op == TJCU_BAR_COUNT) e->bar_acc += pred;
    else if (op == TJCU_BAR_AND) e->bar_acc &= pred;
    else if (op == TJCU_BAR_OR) e->bar_acc |= pred;
    if (++e->bar_arrived < e->n) {
        t->state = TJH_AT_BARRIER;
        t->line = line;
        tjh_schedule(e, t->fiber);
        return t->bar_result;
    }
    int result = op == TJCU_BAR_SYNC ? 0 : e->bar_acc;
    e->bar_arrived = 0;
    for (unsigned i = 0; i < e->n; i++) {
        tjh_thread *w = &e->threads[i];
        if (w->state != TJH_AT_BARRIER) continue;
        w->bar_result = result;
        tjh_make_ready(e, w);
    }
    return result;
}

/* ---- warp collectives ---------------------------------------------------------- */

static unsigned shfl_source(int kind, unsigned lane, int arg, int width) {
    int l = (int)lane, b = arg & 31, base = l & ~(width - 1), end = base + width - 1, j;
    switch (kind) {
    case TJCU_SHFL_IDX: return (unsigned)(base | (b & (width - 1)));
    case TJCU_SHFL_UP: j = l - b; return (unsigned)(j >= base ? j : l);
    case TJCU_SHFL_DOWN: j = l + b; return (unsigned)(j <= end ? j : l);
    default: j = l ^ b; return (unsigned)(j <= end ? j : l); /* TJCU_SHFL_XOR */
    }
}

static unsigned long long reduce(int op, unsigned long long acc, unsigned long long v) {
    int kind = op & 0xff;
    unsigned a = (unsigned)acc, x = (unsigned)v;
    bool sgn = op & TJCU_WARP_SIGNED;
    switch (kind) {
    case TJCU_REDUCE_ADD: return a + x;
    case TJCU_REDUCE_MIN: return sgn ? (unsigned)((int)a < (int)x ? a : x) : (a < x ? a : x);
    case TJCU_REDUCE_MAX: return sgn ? (unsigned)((int)a > (int)x ? a : x) : (a > x ? a : x);
    case TJCU_REDUCE_AND: return a & x;
    case TJCU_REDUCE_OR: return a | x;
    default: return a ^ x; /* TJCU_REDUCE_XOR */
    }
}

/* Every lane of g arrived: each one's result, then the waiters run again. */
static void complete(tjh_exec *e, tjh_thread *self, const tjh_warp_group *g) {
    tjh_thread *lanes = &e->threads[self->warp * TJH_WARP];
    int kind = g->op & 0xff;
    unsigned mask = g->mask;
    unsigned long long all = 0;
    unsigned first = (unsigned)__builtin_ctz(mask);
    if (kind >= TJCU_VOTE_ALL && kind <= TJCU_VOTE_BALLOT) {
        for (unsigned m = mask; m; m &= m - 1)
            if (lanes[__builtin_ctz(m)].value) all |= 1ull << __builtin_ctz(m);
        if (kind == TJCU_VOTE_ALL) all = all == mask;
        else if (kind == TJCU_VOTE_ANY) all = all != 0;
    } else if (kind == TJCU_MATCH_ALL) {
        all = mask | 1ull << 32;
        for (unsigned m = mask; m; m &= m - 1)
            if (lanes[__builtin_ctz(m)].value != lanes[first].value) all = 0;
    } else if (kind >= TJCU_REDUCE_ADD) {
        all = lanes[first].value;
        for (unsigned m = mask & (mask - 1); m; m &= m - 1) all = reduce(g->op, all, lanes[__builtin_ctz(m)].value);
        all = (unsigned)all;
    }
    for (unsigned m = mask; m; m &= m - 1) {
        unsigned l = (unsigned)__builtin_ctz(m);
        tjh_thread *t = &lanes[l];
        if (kind >= TJCU_SHFL_IDX && kind <= TJCU_SHFL_XOR) {
            unsigned j = shfl_source(kind, l, t->arg, g->width);
            t->result = (mask >> j & 1) ? lanes[j].value : t->value;
        } else if (kind == TJCU_MATCH_ANY) {
            unsigned same = 0;
            for (unsigned k = mask; k; k &= k - 1)
                if (lanes[__builtin_ctz(k)].value == t->value) same |= 1u << __builtin_ctz(k);
            t->result = same;
        } else {
            t->result = all; /* 0 for __syncwarp */
        }
        if (t != self) tjh_make_ready(e, t);
    }
}

static unsigned long long warp_op(tjcu_thread *pub, int op, unsigned mask, unsigned long long value,
                                  int arg, int width, int line) {
    tjh_thread *t = (tjh_thread *)pub;
    tjh_exec *e = t->e;
    tjh_warp *w = &e->warps[t->warp];
    unsigned bit = 1u << t->lane;
    int kind = op & 0xff;
    char a[48];
    const char *name = warp_op_name(op);
    if (kind >= TJCU_WARP_N_OPS) tjh_fail(e, "thread %s: unknown warp op %d", tjh_thread_name(t, a, sizeof a), op);
    if (!(mask & bit))
        tjh_fail(e, "thread %s called %s (line %d) with mask 0x%08x, which does not name its lane %u",
                 tjh_thread_name(t, a, sizeof a), name, line, mask, t->lane);
    if (kind >= TJCU_SHFL_IDX && kind <= TJCU_SHFL_XOR && (width < 1 || width > 32 || (width & (width - 1))))
        tjh_fail(e, "thread %s called %s (line %d) with width %d, not a power of two up to 32",
                 tjh_thread_name(t, a, sizeof a), name, line, width);
    mask &= w->exist; /* lanes past the block's last thread take no part */
    if (mask & w->exited)
        tjh_fail(e, "thread %s called %s (line %d) with mask 0x%08x, but lanes 0x%08x of its warp returned",
                 tjh_thread_name(t, a, sizeof a), name, line, mask, mask & w->exited);
    /* Lanes may wait at several collectives with different masks at once (a
     * lane done with one goes on to the next); a lane joins the one of its
     * mask. Two ops waiting for the same lanes can never both complete. */
    tjh_warp_group *g = NULL;
    for (int i = 0; i < w->n_groups && !g; i++)
        if (w->groups[i].mask == mask) g = &w->groups[i];
    if (g && (g->op != op || g->width != width))
        tjh_fail(e, "divergent warp collectives: thread %s called %s (line %d) while lanes 0x%08x wait at %s "
                 "(line %d), both with mask 0x%08x", tjh_thread_name(t, a, sizeof a), name, line, g->arrived,
                 warp_op_name(g->op), g->line, mask);
    if (!g) {
        g = &w->groups[w->n_groups++];
        *g = (tjh_warp_group){.mask = mask, .arrived = 0, .op = op, .width = width, .line = line};
    }
    t->value = value;
    t->arg = arg;
    g->arrived |= bit;
    if (g->arrived != g->mask) {
        t->state = TJH_AT_WARP_OP;
        t->line = line;
        t->op = op;
        tjh_schedule(e, t->fiber);
        return t->result;
    }
    tjh_warp_group done = *g;
    *g = w->groups[--w->n_groups];
    complete(e, t, &done);
    return t->result;
}

static unsigned active_mask(tjcu_thread *pub) {
    tjh_thread *t = (tjh_thread *)pub;
    const tjh_warp *w = &t->e->warps[t->warp];
    return w->exist & ~w->exited;
}

static void trap(tjcu_thread *pub, int line) {
    tjh_thread *t = (tjh_thread *)pub;
    char a[48];
    tjh_fail(t->e, "thread %s called __trap() (line %d)", tjh_thread_name(t, a, sizeof a), line);
}

const tjcu_runtime tjh_runtime = {TJCU_ABI_VERSION, block_sync, warp_op, active_mask, trap};

/* ---- leaving ------------------------------------------------------------------- */

void tjh_thread_exited(tjh_exec *e, tjh_thread *t) {
    tjh_warp *w = &e->warps[t->warp];
    unsigned bit = 1u << t->lane;
    char a[48];
    t->state = TJH_EXITED;
    e->exited++;
    w->exited |= bit;
    if (e->bar_arrived)
        tjh_fail(e, "thread %s returned while %u threads wait at %s (line %d); a barrier must be reached "
                 "by every thread of the block", tjh_thread_name(t, a, sizeof a), e->bar_arrived,
                 bar_names[e->bar_op], e->bar_line);
    for (int i = 0; i < w->n_groups; i++)
        if (w->groups[i].mask & bit)
            tjh_fail(e, "thread %s returned while lanes 0x%08x of its warp wait for it at %s (line %d) "
                     "with mask 0x%08x", tjh_thread_name(t, a, sizeof a), w->groups[i].arrived,
                     warp_op_name(w->groups[i].op), w->groups[i].line, w->groups[i].mask);
}

void tjh_describe_deadlock(tjh_exec *e) {
    const tjh_thread *bar = first_in_state(e, TJH_AT_BARRIER), *warp = first_in_state(e, TJH_AT_WARP_OP);
    char a[48], b[48];
    int at = snprintf(e->message, sizeof e->message, "deadlock: %u of %u threads wait", e->n - e->exited, e->n);
    if (bar && at > 0 && (size_t)at < sizeof e->message)
        at += snprintf(e->message + at, sizeof e->message - (size_t)at, ", thread %s at %s (line %d)",
                       tjh_thread_name(bar, a, sizeof a), bar_names[e->bar_op], bar->line);
    if (warp && at > 0 && (size_t)at < sizeof e->message)
        snprintf(e->message + at, sizeof e->message - (size_t)at, ", thread %s at %s (line %d)",
                 tjh_thread_name(warp, b, sizeof b), warp_op_name(warp->op), warp->line);
    e->failed = true;
}
