/* waits: what each thread waits for. The kernel says where a thread sleeps
 * (/proc/PID/task/TID/syscall: the call and its arguments); the target's memory says what that
 * is. A futex word inside the GIL's state (or, before 3.7, one of the GIL's globals) is the GIL;
 * another futex is a lock (waits_lock.c); any other call a sleep, descriptors or a child
 * (waits_sys.c). Across interpreters, owners named by thread ident become tids, each wait is
 * aged from snapshot to snapshot, and threads waiting for each other in a cycle are a deadlock.
 */
#include "config.h"

#include "core/walk/waits.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/gen_wait.h"
#include "core/layout/layout.h"
#include "core/model/snapshot.h"
#include "core/target/proc.h"
#include "core/target/proc_wait.h"
#include "core/target/runtime.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/util/memory.h"
#include "core/walk/waits_int.h"

struct waits *waits_new(const struct py_layout *L, const struct runtime *rt)
{
    struct waits *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return NULL;
    }
    w->L = L;
    w->gen = layout_wait_gen(LAYOUT_VERSION_KEY(L->hexversion));
    for (size_t i = 0; rt != NULL && w->gen != NULL && i < w->gen->n_gil_globals &&
                       w->n_gil < RUNTIME_GIL_GLOBALS_MAX;
         i++) {
        const struct layout_gil_global *g = &w->gen->gil_globals[i];
        uint64_t addr = runtime_symbol_addr(rt, g->symbol);
        if (addr != 0 && g->size > 0) {
            w->gil[w->n_gil++] = (struct gil_global){addr, (uint64_t)g->size, g->indirect != 0};
        }
    }
    w->net = proc_net_new();
    if (w->net == NULL) {
        free(w);
        return NULL;
    }
    return w;
}

void waits_free(struct waits *w)
{
    if (w == NULL) {
        return;
    }
    proc_net_free(w->net);
    free(w->seen);
    free(w->next);
    free(w->pending);
    free(w);
}

/* Whether futex word F is the GIL's: inside the GIL state whose last_holder is at GIL, or
 * (before 3.7) inside one of its globals, or the semaphore one of them points to. */
static bool gil_futex(struct waits *w, struct proc *p, uint64_t gil, uint64_t f)
{
    uint64_t at = w->L->wait.gil_holder_at;
    if (gil != 0 && layout_has(at) && layout_has(w->L->wait.gil_size) && f >= gil - at &&
        f < gil - at + w->L->wait.gil_size) {
        return true;
    }
    for (size_t i = 0; i < w->n_gil; i++) {
        uint64_t sem = 0;
        if (w->gil[i].indirect ? waits_read_word(p, w->gil[i].addr, &sem) && sem != 0 && f == sem
                               : f >= w->gil[i].addr && f - w->gil[i].addr < w->gil[i].size) {
            return true;
        }
    }
    return false;
}

static void read_one(struct waits *w, struct proc *p, struct snapshot *s, uint64_t gil,
                     const struct waits_thread *t, struct pending *pd)
{
    struct snap_wait *out = &t->out->wait;
    *out = (struct snap_wait){
        .fd = -1, .since = -1, .left = -1, .requested = -1, .owner_held = -1};
    struct proc_syscall sc;
    struct pt_error e = {0};
    if (t->out->tid <= 0) {
        out->kind = SNAP_WAIT_UNKNOWN;
        out->reason = waits_text(s, "its kernel thread is not known");
        return;
    }
    if (proc_task_syscall(p, t->out->tid, &sc, &e) < 0) {
        out->kind = SNAP_WAIT_UNKNOWN;
        char why[320];
        snprintf(why, sizeof why, "/proc/%d/task/%d/syscall: %s", (int)proc_pid(p),
                 (int)t->out->tid, e.msg);
        out->reason = waits_text(s, why);
        return;
    }
    if (sc.running) {
        out->kind = SNAP_WAIT_RUNNING;
        return;
    }
    if (sc.nr < 0) {
        struct proc_task_stat st;
        out->kind = SNAP_WAIT_UNKNOWN;
        char state = proc_task_stat(p, t->out->tid, &st, &e) == 0 ? st.state : '?';
        char why[96];
        if (state == 't') {
            snprintf(why, sizeof why, "stopped by a tracer (such as --blocking) outside a system "
                                      "call: it was running");
        } else if (state == 'T') {
            snprintf(why, sizeof why, "stopped (a stop signal) outside a system call");
        } else {
            snprintf(why, sizeof why, "not in a system call (state %c)", state);
        }
        out->reason = waits_text(s, why);
        return;
    }
    const char *name = proc_syscall_name(sc.nr);
    if (name != NULL) {
        out->syscall = waits_text(s, name);
    } else {
        char buf[32];
        snprintf(buf, sizeof buf, "syscall %ld", sc.nr);
        out->syscall = waits_text(s, buf);
    }
    pd->key = waits_mix(pd->key, (uint64_t)sc.nr);
    if (proc_syscall_class(sc.nr) != PROC_SYS_FUTEX) {
        waits_read_syscall(w, p, s, &sc, out, &pd->key);
    } else if (gil_futex(w, p, gil, sc.args[0])) {
        out->kind = SNAP_WAIT_GIL;
    } else {
        waits_set_lock(w, p, s, t, sc.args[0], pd);
    }
}

static struct pending *add_pending(struct waits *w)
{
    if (!memory_grow((void **)&w->pending, &w->cap_pending, w->n_pending + 1, sizeof *w->pending,
                     64)) {
        return NULL;
    }
    return &w->pending[w->n_pending++];
}

/* How long the holder of the GIL at GIL (its last_holder field), thread HOLDER, has held it
 * with no other thread taking it: since the first snapshot that saw the same holder and switch
 * count (switch_number counts the takes by another thread than the last holder). < 0 unknown. */
static double gil_held(struct waits *w, struct proc *p, uint64_t gil, pid_t holder, double now)
{
    uint64_t switches = 0;
    if (gil == 0 || holder <= 0 || !layout_has(w->L->gil_switch_from_holder) ||
        !waits_read_word(p, gil + w->L->gil_switch_from_holder, &switches)) {
        return -1;
    }
    struct gil_seen *g = NULL;
    for (size_t i = 0; i < w->n_gils && g == NULL; i++) {
        g = w->gils[i].gil == gil ? &w->gils[i] : NULL;
    }
    if (g == NULL && w->n_gils < WAIT_GILS) {
        g = &w->gils[w->n_gils++];
        *g = (struct gil_seen){.gil = gil};
    }
    if (g == NULL) {
        return -1;
    }
    if (g->holder == holder && g->switches == switches) {
        return now - g->since;
    }
    *g = (struct gil_seen){gil, holder, switches, now};
    return -1;
}

void waits_read_interp(struct waits *w, struct proc *p, struct snapshot *s, uint64_t gil,
                       const struct waits_thread *ts, size_t n)
{
    pid_t holder = 0;
    for (size_t i = 0; i < n; i++) {
        if (ts[i].out->gil == SNAP_YES) {
            holder = holder == 0 ? ts[i].out->tid : -1;
        }
    }
    double held = gil_held(w, p, gil, holder, clock_now());
    for (size_t i = 0; i < n; i++) {
        /* Out of memory, the wait is still read, but not aged nor followed to its owner. */
        struct pending scratch;
        struct pending *pd = add_pending(w);
        pd = pd != NULL ? pd : &scratch;
        *pd = (struct pending){.t = ts[i].out, .key = 0xcbf29ce484222325ull};
        read_one(w, p, s, gil, &ts[i], pd);
        if (pd->t->wait.kind == SNAP_WAIT_GIL && holder > 0 && holder != pd->t->tid) {
            pd->t->wait.owner_tid = holder;
            pd->t->wait.owner_held = held;
        }
    }
}

/* ---- across interpreters ---- */

static int seen_cmp(const void *a, const void *b)
{
    pid_t x = ((const struct seen *)a)->tid, y = ((const struct seen *)b)->tid;
    return (x > y) - (x < y);
}

static void owners_and_ages(struct waits *w, struct snapshot *s, double now)
{
    if (w->cap_seen < w->n_pending) {
        struct seen *a = realloc(w->seen, w->n_pending * sizeof *a);
        struct seen *b = a == NULL ? NULL : realloc(w->next, w->n_pending * sizeof *b);
        if (a != NULL) {
            w->seen = a;
        }
        if (b == NULL) {
            w->n_seen = 0;
            return;
        }
        w->next = b;
        w->cap_seen = w->n_pending;
    }
    w->n_next = 0;
    for (size_t i = 0; i < w->n_pending; i++) {
        struct pending *pd = &w->pending[i];
        struct snap_wait *wt = &pd->t->wait;
        /* The owner, by ident, among the snapshot's threads. */
        for (size_t k = 0; pd->owner_ident != 0 && k < s->n_interps; k++) {
            for (size_t j = 0; j < s->interps[k].n_threads; j++) {
                const struct snap_thread *o = &s->interps[k].threads[j];
                if (o->thread_id == pd->owner_ident && o->tid > 0) {
                    wt->owner_tid = o->tid;
                }
            }
        }
        /* The same wait with the same stack as last time: waited since then. */
        uint64_t key = waits_mix(pd->key, (uint64_t)wt->kind);
        for (size_t f = 0; f < pd->t->n_frames; f++) {
            key = waits_mix_str(waits_mix(key, (uint64_t)pd->t->frames[f].line), pd->t->frames[f].function);
        }
        struct seen probe = {.tid = pd->t->tid};
        struct seen *old = pd->t->tid > 0 && w->n_seen > 0
                               ? bsearch(&probe, w->seen, w->n_seen, sizeof *w->seen, seen_cmp)
                               : NULL;
        double since = now;
        if (old != NULL && old->key == key) {
            since = old->since;
            wt->since = now - since;
        }
        if (pd->t->tid > 0 && w->n_next < WAIT_THREADS) {
            w->next[w->n_next++] = (struct seen){pd->t->tid, key, since};
        }
    }
    if (w->n_next > 1) {
        qsort(w->next, w->n_next, sizeof *w->next, seen_cmp);
    }
    struct seen *t = w->seen;
    w->seen = w->next;
    w->next = t;
    w->n_seen = w->n_next;
}

struct by_tid {
    pid_t tid;
    size_t at; /* in w->pending */
};

static int by_tid_cmp(const void *a, const void *b)
{
    pid_t x = ((const struct by_tid *)a)->tid, y = ((const struct by_tid *)b)->tid;
    return (x > y) - (x < y);
}

/* Adds the cycle through pending thread FIRST (LEN threads, NEXT[] leading round it) to S's
 * deadlocks, starting at its smallest tid. */
static void add_cycle(struct waits *w, struct snapshot *s, const long *next, size_t first,
                      size_t len)
{
    size_t start = first;
    for (size_t k = 0, at = first; k < len; k++, at = (size_t)next[at]) {
        start = w->pending[at].t->tid < w->pending[start].t->tid ? at : start;
    }
    struct snap_deadlock *grown =
        snapshot_alloc_array(s, s->n_deadlocks + 1, sizeof *s->deadlocks);
    if (grown == NULL) {
        return;
    }
    if (s->n_deadlocks > 0) {
        memcpy(grown, s->deadlocks, s->n_deadlocks * sizeof *grown);
    }
    s->deadlocks = grown;
    struct snap_deadlock *d = &s->deadlocks[s->n_deadlocks];
    d->threads = snapshot_alloc_array(s, len, sizeof *d->threads);
    d->locks = snapshot_alloc_array(s, len, sizeof *d->locks);
    if (d->threads == NULL || d->locks == NULL) {
        return;
    }
    for (size_t k = 0, at = start; k < len; k++, at = (size_t)next[at]) {
        d->threads[k] = w->pending[at].t->tid;
        d->locks[k] = w->pending[at].t->wait.lock;
    }
    d->n = len;
    s->n_deadlocks++;
}

/* Cycles of threads each waiting for a lock the next owns. Each thread waits for one lock, so
 * the owners form a graph of out-degree one: one pass with colours finds every cycle, in
 * O(n log n) for the owners' lookup however the target chains its locks. */
static void find_deadlocks(struct waits *w, struct snapshot *s)
{
    size_t n = w->n_pending;
    struct by_tid *idx = n > 1 ? malloc(n * sizeof *idx) : NULL;
    long *next = idx != NULL ? malloc(n * sizeof *next) : NULL;
    unsigned char *colour = next != NULL ? calloc(n, 1) : NULL; /* 0 new, 1 on path, 2 done */
    if (colour == NULL) {
        free(idx);
        free(next);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        idx[i] = (struct by_tid){w->pending[i].t->tid, i};
    }
    qsort(idx, n, sizeof *idx, by_tid_cmp);
    for (size_t i = 0; i < n; i++) {
        const struct snap_wait *wt = &w->pending[i].t->wait;
        struct by_tid key = {wt->owner_tid, 0};
        const struct by_tid *o = wt->kind == SNAP_WAIT_LOCK && wt->owner_tid > 0
                                     ? bsearch(&key, idx, n, sizeof *idx, by_tid_cmp)
                                     : NULL;
        next[i] = o != NULL ? (long)o->at : -1;
    }
    for (size_t i = 0; i < n; i++) {
        long at = (long)i;
        while (at >= 0 && colour[at] == 0) {
            colour[at] = 1;
            at = next[at];
        }
        if (at >= 0 && colour[at] == 1) {
            /* The walk came back onto its own path: AT is on a cycle. */
            size_t len = 1;
            for (long k = next[at]; k != at; k = next[k]) {
                len++;
            }
            add_cycle(w, s, next, (size_t)at, len);
        }
        for (long k = (long)i; k >= 0 && colour[k] == 1; k = next[k]) {
            colour[k] = 2;
        }
    }
    free(idx);
    free(next);
    free(colour);
}

void waits_finish(struct waits *w, struct snapshot *s)
{
    s->waits_present = true;
    owners_and_ages(w, s, clock_now());
    find_deadlocks(w, s);
    w->n_pending = 0;
    proc_net_reset(w->net);
}
