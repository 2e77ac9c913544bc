/* sampler: snapshots taken at a rate, and what they add up to over a sliding window. */
#include "config.h"

#include "core/sampler/sampler.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/walk/sample.h"
#include "core/sampler/sampler_heat.h"
#include "core/sampler/sampler_window.h"
#include "core/sampler/sampler_window_int.h"
#include "core/model/snapshot_arena.h"
#include "core/walk/unwind.h"

static const double WINDOW_DEFAULT_S = 1.0;
static const double WINDOW_MIN_S = 0.01;
/* With at most 1e6 samples a second, one bucket's counts then still fit 32 bits. */
static const double WINDOW_MAX_S = 86400.0;
/* How often each thread's CPU time is read: an eighth of the window, within these bounds. */
static const double CPU_PERIOD_MIN_S = 0.25;
static const double CPU_PERIOD_MAX_S = 2.5;
/* Failed samples in a row wait ever longer for the next: from the rate's period (this at
 * --rate max, so that a failing sample never spins), doubling up to the cap. */
static const double BACKOFF_MIN_S = 0.001;
static const double BACKOFF_MAX_S = 0.25;
/* An exec is looked for this often while samples succeed (and at the first failure): reads of
 * a new image of the same non-PIE binary may well succeed, and one read a quarter second
 * costs nothing. */
static const double EXEC_CHECK_S = 0.25;
/* How long a new program has to show a runtime after an exec: ld.so maps libpython within
 * milliseconds, but a Python that is still starting may take longer on a loaded machine. */
static const double EXEC_SETTLE_S = 0.5;
static const double EXEC_SETTLE_PYTHON_S = 5.0;
static const double EXEC_RETRY_S = 0.01;
/* How long a runtime found without its micro version waits for the new Python to write it. */
static const double EXEC_VERSION_WAIT_S = 1.0;

/* Outside --mode cpu, which reads every thread's state with every sample, the states behind the
 * Functions view's CPU column are read a few threads a sample, in turn, taking at most this
 * share of the time sampling takes (a state is a read of /proc/PID/task/TID/stat, 2-3 us). */
static const double STATE_SHARE = 0.10;
/* ... but at least one state every this many samples, so that a loaded machine (where a read
 * seems to take long) still gives the column a basis. */
static const unsigned STATE_FLOOR_SAMPLES = 8;

/* Each thread's CPU time (ns) as the kernel counted it at the last look. */
struct cpu_seen {
    pid_t tid;
    uint64_t ns;
    int64_t interp_id;
    uint64_t thread_id;
};

struct sampler {
    struct proc *proc;
    struct unwind *unwind; /* NULL: fed through sampler_add() only */
    struct sampler_opts opts;
    struct sampler_window window;
    struct snapshot *latest;
    /* %CPU comes from the kernel's per-thread CPU time, read every CPU_PERIOD rather than a
     * thread state per sample: exact, and far cheaper at a high rate. */
    double cpu_period;
    double next_cpu;
    struct cpu_seen *cpu; /* LIMIT_THREADS, sorted by tid */
    size_t n_cpu;
    struct cpu_seen *cpu_next;
    struct unwind_counters reader_base; /* the reader's counters at the last reset */
    uint64_t reader_samples;            /* samples taken since then */
    /* A run of failed samples: how many, the period between them now, when the next may be
     * tried, and why the newest failed. */
    unsigned fail_run;
    double backoff;
    double retry_at;
    char last_error[sizeof((struct pt_error *)0)->msg];
    double next_exec_check;
    /* The exec the sampler followed, until the next reset. */
    bool execed;
    double exec_time;
    char exec_program[PATH_MAX];
    /* When the target started (read once: an exec keeps it); < 0 not known yet. */
    double started;
    /* Each thread's state as read with the newest sample (sampler_window_add_sample()), the
     * thread to read next in turn, and the time spent reading states and sampling. */
    enum snap_bool *on_cpu;
    size_t cap_on_cpu;
    size_t state_next;
    double state_s;
    double sample_s;
    double state_cost; /* seconds one state read took lately */
    unsigned since_state; /* samples since a state was last read */
    struct sampler_hook hook;
};

/* Whether samples read only the threads holding the GIL: asked for, or all the mode counts. */
static bool picks_gil_holders(const struct sampler_opts *o)
{
    return o->active_only || o->mode == SAMPLER_MODE_GIL;
}

static double window_length(double w)
{
    if (isinf(w) && w > 0) {
        return w;
    }
    if (!isfinite(w) || w <= 0) {
        return WINDOW_DEFAULT_S;
    }
    return w < WINDOW_MIN_S ? WINDOW_MIN_S : w > WINDOW_MAX_S ? WINDOW_MAX_S : w;
}

/* How often each thread's CPU time is read: once a window, within bounds. Each read is a
 * system call per thread (a thousand threads read eight times a window made 9 000 a second,
 * a third of the live view's time); the live view and the batch stream read it again before
 * each picture, so a window's share is exact at every refresh, and a thread that ends loses
 * at most a window's CPU time. */
static double cpu_period(double window_s)
{
    double p = window_s;
    return p < CPU_PERIOD_MIN_S ? CPU_PERIOD_MIN_S : p > CPU_PERIOD_MAX_S ? CPU_PERIOD_MAX_S : p;
}

/* Gives the unwinder (a new one after an exec too) the options that concern it. */
static void configure_unwind(struct sampler *s)
{
    if (s->unwind != NULL) {
        unwind_set_once(s->unwind, s->opts.once);
        unwind_set_active_only(s->unwind, picks_gil_holders(&s->opts));
        unwind_set_holder_only(s->unwind, s->opts.active_only);
        unwind_set_gc_frames(s->unwind, !s->opts.no_gc_frames);
        unwind_set_opcodes(s->unwind, s->opts.opcodes);
        unwind_set_native(s->unwind, s->opts.native);
    }
}

void sampler_set_opcodes(struct sampler *s, bool on)
{
    s->opts.opcodes = on;
    configure_unwind(s);
}

struct sampler *sampler_new(struct proc *p, const struct runtime *rt,
                            const struct sampler_opts *opts, struct pt_error *err)
{
    struct sampler *s = calloc(1, sizeof *s);
    if (s == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "sampler");
        return NULL;
    }
    s->opts = *opts;
    s->started = -1;
    s->state_cost = 2e-6;
    s->opts.window_s = window_length(opts->window_s);
    s->opts.rate_hz = isfinite(opts->rate_hz) && opts->rate_hz > 0 ? opts->rate_hz : 0;
    if (sampler_window_init(&s->window, s->opts.window_s, err) < 0) {
        free(s);
        return NULL;
    }
    if (p != NULL && rt != NULL && (s->unwind = unwind_new(p, rt, err)) == NULL) {
        sampler_free(s);
        return NULL;
    }
    s->opts.mode = (unsigned)opts->mode < SAMPLER_MODE_COUNT ? opts->mode : SAMPLER_MODE_WALL;
    s->window.mode = s->opts.mode;
    configure_unwind(s);
    s->proc = p;
    if (s->unwind != NULL) {
        s->cpu = malloc((size_t)LIMIT_THREADS * sizeof *s->cpu);
        s->cpu_next = malloc((size_t)LIMIT_THREADS * sizeof *s->cpu_next);
        if (s->cpu == NULL || s->cpu_next == NULL) {
            sampler_free(s);
            pt_error_set(err, PT_E_NOMEM, 0, "sampler");
            return NULL;
        }
    }
    s->reader_base = sampler_reader_counters(s);
    s->reader_samples = 0;
    s->cpu_period = cpu_period(s->opts.window_s);
    return s;
}

int sampler_set_window(struct sampler *s, double window_s, double now, struct pt_error *err)
{
    window_s = window_length(window_s);
    if (window_s == s->opts.window_s) {
        return 0;
    }
    bool longer = window_s > s->opts.window_s;
    s->opts.window_s = window_s;
    s->cpu_period = cpu_period(window_s);
    int rc = sampler_window_resize(&s->window, window_s, now, err);
    if (!longer || rc < 0) {
        /* The counts start afresh, as at a reset. */
        s->reader_base = sampler_reader_counters(s);
        s->reader_samples = 0;
        s->execed = false;
    }
    return rc;
}

void sampler_free(struct sampler *s)
{
    if (s == NULL) {
        return;
    }
    sampler_window_free(&s->window);
    unwind_free(s->unwind);
    snapshot_free(s->latest);
    free(s->cpu);
    free(s->cpu_next);
    free(s->on_cpu);
    free(s);
}

void sampler_add(struct sampler *s, struct snapshot *snap, double now)
{
    if (snap == NULL) {
        return;
    }
    sampler_window_add(&s->window, snap, now);
    snapshot_free(s->latest);
    s->latest = snap;
}

void sampler_add_error(struct sampler *s, double now)
{
    sampler_window_add_error(&s->window, now);
}

static int cmp_seen(const void *a, const void *b)
{
    const struct cpu_seen *x = a;
    const struct cpu_seen *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Adds to the window the CPU time thread (INTERP_ID, TID, THREAD_ID) used since the last look
 * at it, and remembers this one in cpu_next[*N]. A thread seen for the first time only sets
 * its baseline. */
static void account_cpu(struct sampler *s, int64_t interp_id, pid_t tid, uint64_t thread_id,
                        double now, size_t *n)
{
    uint64_t ns;
    if (tid <= 0 || *n == LIMIT_THREADS || proc_task_cputime(s->proc, tid, &ns, NULL) < 0) {
        return;
    }
    struct cpu_seen key = {.tid = tid};
    const struct cpu_seen *old =
        s->n_cpu > 0 ? bsearch(&key, s->cpu, s->n_cpu, sizeof *s->cpu, cmp_seen) : NULL;
    if (old != NULL && ns > old->ns) {
        uint32_t ti = sampler_table_find_thread(&s->window.table, interp_id, tid, thread_id);
        if (ti != SAMPLER_TABLE_NONE) {
            sampler_window_add_cpu(&s->window, ti, ns - old->ns, now);
        }
    }
    s->cpu_next[(*n)++] = (struct cpu_seen){tid, ns, interp_id, thread_id};
}

static void cpu_commit(struct sampler *s, size_t n)
{
    qsort(s->cpu_next, n, sizeof *s->cpu_next, cmp_seen);
    struct cpu_seen *tmp = s->cpu;
    s->cpu = s->cpu_next;
    s->cpu_next = tmp;
    s->n_cpu = n;
}

/* The CPU time of each thread of SMP since the last look, and of each thread looked at last
 * time that SMP lacks: a sample of the GIL holder alone (--active-only) lists a thread only
 * while it holds the GIL, and its time must run on between its turns. A thread that is gone
 * (its time cannot be read) is dropped; one the window no longer holds keeps its baseline, and
 * its time counts again once it is seen. */
static void read_cpu(struct sampler *s, const struct sample *smp, double now)
{
    size_t n = 0;
    for (size_t i = 0; i < smp->n_threads; i++) {
        const struct sample_thread *t = &smp->threads[i];
        account_cpu(s, t->interp_id, t->tid, t->thread_id, now, &n);
    }
    size_t listed = n;
    qsort(s->cpu_next, listed, sizeof *s->cpu_next, cmp_seen);
    for (size_t i = 0; i < s->n_cpu; i++) {
        const struct cpu_seen *c = &s->cpu[i];
        if (bsearch(c, s->cpu_next, listed, sizeof *s->cpu_next, cmp_seen) == NULL) {
            account_cpu(s, c->interp_id, c->tid, c->thread_id, now, &n);
        }
    }
    cpu_commit(s, n);
}

/* --active-only: a thread seen holding the GIL for the first time gets its CPU time's baseline
 * at once. The periodic read meets it only if it holds the GIL at that very sample: a thread
 * holding it a tenth of the time went on showing no CPU time for seconds. A sample lists a
 * holder per interpreter, so this is a few lookups. */
static void baseline_new_threads(struct sampler *s, const struct sample *smp)
{
    for (size_t i = 0; i < smp->n_threads && s->cpu != NULL; i++) {
        const struct sample_thread *t = &smp->threads[i];
        struct cpu_seen key = {.tid = t->tid};
        uint64_t ns;
        if (t->tid <= 0 || s->n_cpu >= LIMIT_THREADS ||
            (s->n_cpu > 0 && bsearch(&key, s->cpu, s->n_cpu, sizeof *s->cpu, cmp_seen) != NULL) ||
            proc_task_cputime(s->proc, t->tid, &ns, NULL) < 0) {
            continue;
        }
        size_t at = 0;
        while (at < s->n_cpu && s->cpu[at].tid < t->tid) {
            at++;
        }
        memmove(&s->cpu[at + 1], &s->cpu[at], (s->n_cpu - at) * sizeof *s->cpu);
        s->cpu[at] = (struct cpu_seen){t->tid, ns, t->interp_id, t->thread_id};
        s->n_cpu++;
    }
}

void sampler_update_cpu(struct sampler *s, double now)
{
    size_t n = 0;
    if (s->cpu == NULL) {
        return;
    }
    for (size_t i = 0; i < s->n_cpu; i++) {
        const struct cpu_seen *c = &s->cpu[i];
        account_cpu(s, c->interp_id, c->tid, c->thread_id, now, &n);
    }
    cpu_commit(s, n);
    s->next_cpu = now + s->cpu_period;
}

/* Whether the kernel has thread TID on a CPU (state R, as CPython's unwinder tells it). */
static enum snap_bool thread_on_cpu(struct sampler *s, pid_t tid)
{
    struct proc_task_stat st;
    if (tid <= 0 || proc_task_stat(s->proc, tid, &st, NULL) < 0) {
        return SNAP_UNKNOWN;
    }
    return st.state == 'R' ? SNAP_YES : SNAP_NO;
}

/* The state of SMP's threads into s->on_cpu: of every thread read in --mode cpu (whose counting
 * depends on it), else of the next few in turn within STATE_SHARE of the time sampling took
 * (and one at least every STATE_FLOOR_SAMPLES samples)
 * (SPENT: this sample). NULL on out of memory (no state is then known). */
static const enum snap_bool *read_states(struct sampler *s, const struct sample *smp, double spent)
{
    size_t n = smp->n_threads;
    if (n > s->cap_on_cpu) {
        enum snap_bool *fresh = realloc(s->on_cpu, n * sizeof *fresh);
        if (fresh == NULL) {
            return NULL;
        }
        s->on_cpu = fresh;
        s->cap_on_cpu = n;
    }
    for (size_t i = 0; i < n; i++) {
        s->on_cpu[i] = SNAP_UNKNOWN;
    }
    if (s->opts.mode == SAMPLER_MODE_CPU) {
        for (size_t i = 0; i < n; i++) {
            if (!smp->threads[i].not_read) {
                s->on_cpu[i] = thread_on_cpu(s, smp->threads[i].tid);
            }
        }
        return s->on_cpu;
    }
    s->sample_s += spent > 0 ? spent : 0;
    double start = clock_now();
    size_t k = 0;
    bool due = ++s->since_state >= STATE_FLOOR_SAMPLES;
    while (k < n && ((k == 0 && due) ||
                     s->state_s + (double)(k + 1) * s->state_cost <= STATE_SHARE * s->sample_s)) {
        size_t i = s->state_next++ % n;
        if (!smp->threads[i].not_read) {
            s->on_cpu[i] = thread_on_cpu(s, smp->threads[i].tid);
        }
        k++;
    }
    if (k > 0) {
        s->since_state = 0;
        double took = clock_now() - start;
        s->state_s += took;
        s->state_cost = 0.75 * s->state_cost + 0.25 * (took / (double)k);
    }
    return s->on_cpu;
}

/* Counts a failed sample with its reason, and backs off when it is not the first in a row. */
static void note_failure(struct sampler *s, double now, const struct pt_error *e)
{
    double base = s->opts.rate_hz > 0 ? 1.0 / s->opts.rate_hz : BACKOFF_MIN_S;
    double cap = base > BACKOFF_MAX_S ? base : BACKOFF_MAX_S;
    s->fail_run++;
    s->backoff = s->fail_run == 1 ? base : 2 * s->backoff > cap ? cap : 2 * s->backoff;
    s->retry_at = now + s->backoff;
    snprintf(s->last_error, sizeof s->last_error, "%s", e->msg);
    sampler_add_error(s, now);
}

double sampler_due(const struct sampler *s, double planned)
{
    return s->fail_run > 0 && s->retry_at > planned ? s->retry_at : planned;
}

/* The executable of the process now, into BUF ("?" when it cannot be read). */
static void current_program(struct proc *p, char *buf, size_t size)
{
    if (proc_exe(p, buf, size, NULL) < 0) {
        snprintf(buf, size, "?");
    }
}

/* Fails with PT_E_EXEC (or PT_E_GONE) when the process no longer runs the image the sampler
 * reads. Returns 0 when it does, or cannot tell. */
static int check_exec(struct sampler *s, double now, struct pt_error *e)
{
    char exe[PATH_MAX];
    s->next_exec_check = now + EXEC_CHECK_S;
    int rc = proc_exec_check(s->proc, e);
    if (rc <= 0) {
        return rc;
    }
    current_program(s->proc, exe, sizeof exe);
    return pt_error_set(e, PT_E_EXEC, 0, "process %d exec()ed %s", (int)proc_pid(s->proc), exe);
}

/* --blocking: the target stands still while it is read (hold() before, release() after), and
 * always runs on afterwards, also when pausing failed half-way. Returns -1 when it could not
 * be stopped (and runs on). */
static int hold(struct sampler *s, struct pt_error *err)
{
    if (s->opts.blocking && proc_pause(s->proc, err) < 0) {
        proc_resume(s->proc);
        return -1;
    }
    return 0;
}

static void release(struct sampler *s)
{
    if (s->opts.blocking) {
        proc_resume(s->proc);
    }
}

void sampler_add_sample(struct sampler *s, const struct sample *smp, const enum snap_bool *on_cpu,
                        double now)
{
    sampler_window_add_sample(&s->window, smp, on_cpu, now);
}

void sampler_set_hook(struct sampler *s, const struct sampler_hook *h)
{
    s->hook = h != NULL ? *h : (struct sampler_hook){0};
}

int sampler_sample(struct sampler *s, double now, struct pt_error *err)
{
    struct pt_error local = {0};
    struct pt_error *e = err != NULL ? err : &local;
    if (s->unwind == NULL) {
        pt_error_set(e, PT_E_IO, 0, "no target to sample");
        note_failure(s, now, e);
        return -1;
    }
    if (!(now < s->next_exec_check) && check_exec(s, now, e) < 0) {
        note_failure(s, now, e);
        return -1;
    }
    const struct sample *smp = NULL;
    double start = clock_now();
    if (hold(s, e) == 0) {
        smp = unwind_sample(s->unwind, e);
        release(s);
    }
    if (smp == NULL) {
        /* Reads that fail may mean the image is gone: find out at once, not in a second. */
        struct pt_error ex = {0};
        if (s->fail_run == 0 && e->code != PT_E_GONE && check_exec(s, now, &ex) < 0) {
            *e = ex;
        }
        note_failure(s, now, e);
        if (s->hook.error != NULL) {
            s->hook.error(s->hook.ctx, e, now);
        }
        return -1;
    }
    s->fail_run = 0;
    s->reader_samples++;
    /* States are read once the target runs again (--blocking): a stopped thread resumes the
     * state it had, running or asleep. */
    const enum snap_bool *on_cpu = read_states(s, smp, clock_now() - start);
    sampler_window_add_sample(&s->window, smp, on_cpu, now);
    if (s->hook.sample != NULL) {
        s->hook.sample(s->hook.ctx, smp, on_cpu, unwind_layout(s->unwind), now);
    }
    if (!(now < s->next_cpu)) {
        read_cpu(s, smp, now);
        s->next_cpu = now + s->cpu_period;
    } else if (s->opts.active_only) {
        baseline_new_threads(s, smp);
    }
    return 0;
}

/* Whether the program at PATH is likely to become a Python: named like one. */
static bool named_python(const char *path)
{
    const char *slash = strrchr(path, '/');
    return strstr(slash != NULL ? slash + 1 : path, "python") != NULL;
}

/* Whether VERSION names the micro version ("3.9.18", not "3.9"). */
static bool version_is_complete(const char *version)
{
    const char *dot = strchr(version, '.');
    return dot != NULL && strchr(dot + 1, '.') != NULL;
}

/* Whether a failure to locate the runtime may pass while the new program starts. */
static bool may_settle(const struct pt_error *e)
{
    return e->code == PT_E_NOTPY || e->code == PT_E_BADLAYOUT || e->code == PT_E_READ ||
           e->code == PT_E_FORMAT || e->code == PT_E_IO || e->code == PT_E_LIMIT;
}

/* Locates the runtime of the program the process runs now into *NEXT, waiting while it starts
 * (and following the execs it makes on the way, as `env python3` does). PROGRAM gets its
 * executable. */
static int locate_new(struct sampler *s, struct runtime *next, char *program, size_t size,
                      struct pt_error *e)
{
    double start = clock_now();
    struct runtime found;
    bool have = false;
    current_program(s->proc, program, size);
    for (;;) {
        double settle = named_python(program) ? EXEC_SETTLE_PYTHON_S : EXEC_SETTLE_S;
        bool late = clock_now() - start >= settle;
        if (runtime_locate(s->proc, &found, e) == 0) {
            *next = found;
            have = true;
            /* Found before the new Python wrote its version out (before 3.11 the micro
             * version may be read from Py_GetVersion()'s buffer only): soon it will have. */
            if (version_is_complete(found.version) || late ||
                clock_now() - start >= EXEC_VERSION_WAIT_S) {
                return 0;
            }
        } else if (have || !may_settle(e) || late) {
            return have ? 0 : -1;
        }
        struct timespec ts = {0, (long)(EXEC_RETRY_S * 1e9)};
        nanosleep(&ts, NULL);
        struct pt_error ex = {0};
        int again = proc_exec_check(s->proc, &ex);
        if (again < 0) {
            *e = ex;
            return -1;
        }
        if (again > 0 && proc_reopen(s->proc, e) < 0) {
            return -1;
        }
        have = have && again == 0;
        current_program(s->proc, program, size);
    }
}

/* The source heat view after an exec: the same function asked about, counted afresh in the new
 * program (its code objects are another cache's, whose serials may repeat). */
static void rearm_heat(struct sampler *s)
{
    struct sampler_heat_state *h = s->window.heat;
    if (h == NULL) {
        return;
    }
    s->window.heat = NULL;
    sampler_window_set_heat(&s->window, h->function, h->function_len, h->file, h->file_len,
                            h->first_line, unwind_layout(s->unwind), clock_now(), NULL);
    heat_free(h);
}

int sampler_set_heat(struct sampler *s, const char *function, size_t function_len,
                     const char *file, size_t file_len, int first_line, double now,
                     struct pt_error *err)
{
    const struct py_layout *L = s->unwind != NULL ? unwind_layout(s->unwind) : NULL;
    return sampler_window_set_heat(&s->window, function, function_len, file, file_len,
                                   first_line, L, now, err);
}

/* heat_stats()'s reader: a code object's bytecode through the sampler's unwinder. */
static long read_bytecode(void *ctx, const struct heat_code *c, uint8_t *buf, size_t cap)
{
    struct sampler *s = ctx;
    return unwind_read_bytecode(s->unwind, c->addr, c->n_units, buf, cap, NULL);
}

struct sampler_heat *sampler_heat(struct sampler *s, double now)
{
    struct sampler_heat_state *h = s->window.heat;
    if (h == NULL) {
        return NULL;
    }
    double span = sampler_window_span(&s->window, now);
    if (isfinite(h->asked) && now - h->asked < span) {
        span = now > h->asked ? now - h->asked : 0;
    }
    bool names = s->opts.opcodes && s->unwind != NULL;
    return heat_stats(h, sampler_window_bucket_number(&s->window, now), span, s->opts.mode,
                      names ? unwind_opcode_table(s->unwind) : NULL, names ? read_bytecode : NULL,
                      s);
}

int sampler_follow_exec(struct sampler *s, struct runtime *rt, struct pt_error *err)
{
    struct pt_error e = {0};
    struct runtime next;
    char program[PATH_MAX];
    pid_t pid = proc_pid(s->proc);
    /* The old program's samples stay counted until the new one can be read. */
    if (s->window.heat != NULL) {
        s->window.heat->L = NULL; /* the old program's layout: no compact sample until rearmed */
    }
    unwind_free(s->unwind);
    s->unwind = NULL;
    snapshot_free(s->latest);
    s->latest = NULL;
    s->n_cpu = 0;
    s->next_exec_check = 0;
    snprintf(program, sizeof program, "?");
    if (proc_reopen(s->proc, &e) < 0 || locate_new(s, &next, program, sizeof program, &e) < 0) {
        if (e.code == PT_E_NOTPY) {
            return pt_error_set(err, e.code, 0,
                                "process %d exec()ed %s; it is no longer a Python process",
                                (int)pid, program);
        }
        if (e.code == PT_E_GONE || e.code == PT_E_NOPROC) {
            return pt_error_set(err, e.code, 0, "process %d exec()ed %s, then exited", (int)pid,
                                program);
        }
        return pt_error_set(err, e.code, e.sys_errno,
                            "process %d exec()ed %s; pytop cannot read it: %s", (int)pid, program,
                            e.msg);
    }
    *rt = next;
    sampler_window_clear(&s->window);
    s->fail_run = 0;
    if ((s->unwind = unwind_new(s->proc, rt, err)) == NULL) {
        sampler_window_set_heat(&s->window, NULL, 0, NULL, 0, 0, NULL, 0, NULL);
        return -1;
    }
    configure_unwind(s);
    rearm_heat(s);
    s->reader_base = sampler_reader_counters(s);
    s->reader_samples = 0;
    s->execed = true;
    s->exec_time = clock_wall();
    snprintf(s->exec_program, sizeof s->exec_program, "%s", program);
    return 0;
}

/* Names the target in SNAP: its command line (read with every snapshot: a program may rewrite
 * it, as setproctitle does) and when it started. What cannot be read stays unknown. */
static void name_target(struct sampler *s, struct snapshot *snap)
{
    char args[LIMIT_CMDLINE];
    size_t len = 0;
    bool cut = false;
    if (proc_argv(s->proc, args, sizeof args, &len, &cut, NULL) == 0 && len > 0) {
        snapshot_set_cmdline(snap, args, len, cut, NULL);
        if (cut) {
            snapshot_warn(snap, "command line longer than %d bytes: cut short", LIMIT_CMDLINE);
        }
    }
    if (s->started < 0 && proc_started(s->proc, &s->started, NULL) < 0) {
        s->started = -1;
    }
    snap->started = s->started;
}

const struct snapshot *sampler_snapshot(struct sampler *s, bool tasks, struct pt_error *err)
{
    if (s->unwind == NULL) {
        pt_error_set(err, PT_E_IO, 0, "no target to sample");
        return NULL;
    }
    unwind_set_tasks(s->unwind, tasks);
    if (hold(s, err) < 0) {
        return NULL;
    }
    struct snapshot *snap = unwind_snapshot(s->unwind, err);
    release(s);
    if (snap == NULL) {
        struct pt_error ex = {0};
        if (check_exec(s, clock_now(), &ex) < 0 && err != NULL) {
            *err = ex;
        }
        return NULL;
    }
    name_target(s, snap);
    snapshot_free(s->latest);
    s->latest = snap;
    return snap;
}

struct unwind_counters sampler_reader_counters(const struct sampler *s)
{
    return s->unwind != NULL ? unwind_get_counters(s->unwind) : (struct unwind_counters){0};
}

const struct snapshot *sampler_latest(const struct sampler *s)
{
    return s->latest;
}

struct snapshot *sampler_take_latest(struct sampler *s)
{
    struct snapshot *snap = s->latest;
    s->latest = NULL;
    return snap;
}

double sampler_function_cpu_pct(const struct sampler_function *f)
{
    return f->own_state > 0 ? 100.0 * (double)f->own_on_cpu / (double)f->own_state : NAN;
}

const char *sampler_mode_name(enum sampler_mode m)
{
    static const char *const names[SAMPLER_MODE_COUNT] = {"wall", "cpu", "gil", "exception"};
    return (unsigned)m < SAMPLER_MODE_COUNT ? names[m] : "?";
}

const char *sampler_mode_words(enum sampler_mode m)
{
    static const char *const words[SAMPLER_MODE_COUNT] = {"", " on a CPU", " holding the GIL",
                                                          " handling an exception"};
    return (unsigned)m < SAMPLER_MODE_COUNT ? words[m] : "";
}

int sampler_mode_parse(const char *name)
{
    for (int m = 0; m < SAMPLER_MODE_COUNT; m++) {
        if (strcmp(name, sampler_mode_name((enum sampler_mode)m)) == 0) {
            return m;
        }
    }
    return -1;
}

void sampler_set_mode(struct sampler *s, enum sampler_mode mode)
{
    s->opts.mode = (unsigned)mode < SAMPLER_MODE_COUNT ? mode : SAMPLER_MODE_WALL;
    s->window.mode = s->opts.mode;
    if (s->unwind != NULL) {
        unwind_set_active_only(s->unwind, picks_gil_holders(&s->opts));
    }
    sampler_reset(s);
}

enum sampler_mode sampler_get_mode(const struct sampler *s)
{
    return s->opts.mode;
}

void sampler_reset(struct sampler *s)
{
    sampler_window_clear(&s->window);
    s->reader_base = sampler_reader_counters(s);
    s->reader_samples = 0;
    s->execed = false;
}

/* ---- statistics: copies out of the window ---- */

/* A copy of a name in ST's store; false when memory ran out (unknown stays unknown). */
static bool copy_name(struct sampler_stats *st, const char *p, size_t len, struct snap_str *out)
{
    *out = (struct snap_str){NULL, 0};
    if (p == NULL) {
        return true;
    }
    *out = snapshot_strdup(st->store, p, len);
    return out->ptr != NULL;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

static int compare_threads(const void *a, const void *b)
{
    const struct sampler_thread *x = a;
    const struct sampler_thread *y = b;
    if (x->interp_id != y->interp_id) {
        return x->interp_id < y->interp_id ? -1 : 1;
    }
    if (x->tid != y->tid) {
        return x->tid < y->tid ? -1 : 1;
    }
    return x->thread_id < y->thread_id ? -1 : x->thread_id > y->thread_id;
}

static bool copy_threads(struct sampler_stats *st, const struct sampler_table *t,
                         const struct sampler_window_view *v, bool kernel_cpu)
{
    double span = v->span;
    size_t n = 0;
    for (uint32_t i = 0; i < t->threads.n; i++) {
        n += sampler_table_thread_at(t, i)->used && v->threads[i].seen > 0;
    }
    if (n == 0) {
        return true;
    }
    st->threads = snapshot_alloc_array(st->store, n, sizeof *st->threads);
    if (st->threads == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < t->threads.n; i++) {
        const struct sampler_table_thread *th = sampler_table_thread_at(t, i);
        const struct sampler_window_thread_counts *c = &v->threads[i];
        if (!th->used || c->seen == 0) {
            continue;
        }
        struct sampler_thread *out = &st->threads[st->n_threads++];
        out->seen = c->seen;
        out->tid = th->tid;
        out->thread_id = th->thread_id;
        out->interp_id = th->interp_id;
        out->samples = c->samples;
        out->gil_samples = c->gil;
        out->cpu_samples = c->cpu;
        out->gc_samples = c->gc;
        out->gil_pct = percent(c->gil, c->samples);
        /* The kernel's CPU time over the window's span where the sampler read it; otherwise
         * (samples fed from snapshots or a recording) the share of the samples whose state was
         * read that were on a CPU. */
        out->cpu_ns = c->cpu_ns;
        out->cpu_pct = kernel_cpu ? (span > 0 ? 100.0 * (double)c->cpu_ns / (span * 1e9) : 0)
                                  : percent(c->cpu, c->cpu_known);
        /* While the window holds samples of a collection whose thread was unknown, no
         * thread's share of it is known. */
        out->gc_pct = v->counts.gc_unknown_samples > 0 ? NAN : percent(c->gc, c->samples);
        if (c->samples == 0) { /* seen, never matching the mode: no share is known */
            out->gil_pct = NAN;
            out->gc_pct = NAN;
            out->cpu_pct = kernel_cpu ? out->cpu_pct : NAN;
        }
        if (!copy_name(st, th->name, th->name_len, &out->name)) {
            return false;
        }
    }
    qsort(st->threads, st->n_threads, sizeof *st->threads, compare_threads);
    return true;
}

/* Most own samples first, then most total; ties by name, so the order is reproducible. */
static int compare_functions(const void *a, const void *b)
{
    const struct sampler_function *x = a;
    const struct sampler_function *y = b;
    if (x->own != y->own) {
        return x->own > y->own ? -1 : 1;
    }
    if (x->total != y->total) {
        return x->total > y->total ? -1 : 1;
    }
    int c = snapshot_str_compare(x->function, y->function, SNAP_STR_BYTES);
    c = c != 0 ? c : snapshot_str_compare(x->file, y->file, SNAP_STR_BYTES);
    return c != 0 ? c : (x->first_line > y->first_line) - (x->first_line < y->first_line);
}

static bool copy_functions(struct sampler_stats *st, const struct sampler_table *t,
                           const struct sampler_window_view *v)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t->funcs.n; i++) {
        n += sampler_table_func_at(t, i)->used && v->funcs[i].total > 0;
    }
    if (n == 0) {
        return true;
    }
    st->functions = snapshot_alloc_array(st->store, n, sizeof *st->functions);
    if (st->functions == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < t->funcs.n; i++) {
        const struct sampler_table_func *f = sampler_table_func_at(t, i);
        if (!f->used || v->funcs[i].total == 0) {
            continue;
        }
        struct sampler_function *out = &st->functions[st->n_functions++];
        out->first_line = f->first_line;
        out->unreadable = f->unreadable;
        out->own = v->funcs[i].own;
        out->total = v->funcs[i].total;
        out->own_state = v->funcs[i].own_state;
        out->own_on_cpu = v->funcs[i].own_on_cpu;
        if (!copy_name(st, f->function, f->function_len, &out->function) ||
            !copy_name(st, f->file, f->file_len, &out->file)) {
            return false;
        }
    }
    qsort(st->functions, st->n_functions, sizeof *st->functions, compare_functions);
    return true;
}

static struct sampler_stats *stats_build(const struct sampler *s, double now,
                                         const struct sampler_thread_key *key)
{
    const struct sampler_table *t = &s->window.table;
    struct sampler_window_view v = {.one = key != NULL, .only = SAMPLER_TABLE_NONE};
    struct sampler_stats *st = calloc(1, sizeof *st);
    if (key != NULL) {
        v.only = sampler_table_find_thread(t, key->interp_id, key->tid, key->thread_id);
    }
    if (st == NULL || (st->store = snapshot_new(NULL)) == NULL ||
        !sampler_window_view(&s->window, now, &v)) {
        goto fail;
    }
    st->rate_hz = s->opts.rate_hz;
    st->mode = s->window.mode;
    st->active_only = s->opts.active_only;
    st->samples = v.counts.samples;
    st->errors = v.counts.errors;
    st->window_s = v.span;
    st->window_limit = s->opts.window_s;
    st->achieved_hz = v.span > 0 ? (double)v.counts.samples / v.span : 0;
    st->gc_samples = v.counts.gc_samples;
    st->thread_samples = v.counts.thread_samples;
    if (key != NULL) {
        st->thread_samples = v.only != SAMPLER_TABLE_NONE ? v.threads[v.only].samples : 0;
    }
    if (s->unwind != NULL) {
        struct unwind_counters now_c = unwind_get_counters(s->unwind);
        const struct unwind_counters *b = &s->reader_base;
        st->has_reader = true;
        st->reader_samples = s->reader_samples;
        st->reader = (struct unwind_counters){
            now_c.reads - b->reads,
            now_c.bytes - b->bytes,
            now_c.failed_reads - b->failed_reads,
            now_c.code_hits - b->code_hits,
            now_c.code_misses - b->code_misses,
            now_c.code_entries,
            now_c.kept_stacks - b->kept_stacks,
        };
    }
    if (st->errors > 0 && s->last_error[0] != '\0' &&
        !copy_name(st, s->last_error, strlen(s->last_error), &st->last_error)) {
        goto fail;
    }
    st->backoff_s = s->fail_run > 1 ? s->backoff : 0;
    st->execed = s->execed;
    st->exec_time = s->exec_time;
    if (s->execed && !copy_name(st, s->exec_program, strlen(s->exec_program), &st->exec_program)) {
        goto fail;
    }
    st->threads_truncated = v.counts.dropped_threads > 0;
    st->functions_truncated = v.counts.dropped_threads > 0 || v.counts.dropped_frames > 0;
    if (!copy_threads(st, t, &v, s->unwind != NULL) || !copy_functions(st, t, &v)) {
        goto fail;
    }
    sampler_window_view_free(&v);
    return st;
fail:
    sampler_window_view_free(&v);
    sampler_stats_free(st);
    return NULL;
}

struct sampler_stats *sampler_stats(const struct sampler *s, double now)
{
    return stats_build(s, now, NULL);
}

struct sampler_stats *sampler_stats_thread(const struct sampler *s, double now,
                                           const struct sampler_thread_key *key)
{
    return stats_build(s, now, key);
}

void sampler_stats_free(struct sampler_stats *st)
{
    if (st != NULL) {
        snapshot_free(st->store);
        free(st);
    }
}

const struct sampler_thread *sampler_stats_find_thread(const struct sampler_stats *st,
                                                       int64_t interp_id, pid_t tid,
                                                       uint64_t thread_id)
{
    struct sampler_thread key = {.interp_id = interp_id, .tid = tid, .thread_id = thread_id};
    if (st == NULL || st->threads == NULL) {
        return NULL;
    }
    return bsearch(&key, st->threads, st->n_threads, sizeof *st->threads, compare_threads);
}
