/* sampler: snapshots taken at a rate, and what they add up to over a sliding window. */
#ifndef PYTOP_CORE_SAMPLER_H
#define PYTOP_CORE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "core/model/snapshot.h"
#include "core/walk/unwind.h"

struct proc;
struct runtime;
struct pt_error;

/* Bounds on what one window holds. Past them, samples still count but the threads or frames
 * that did not fit are left out, and the statistics say so (threads_truncated,
 * functions_truncated). */
enum {
    SAMPLER_MAX_THREADS = 1 << 16,      /* distinct threads */
    SAMPLER_MAX_FUNCTIONS = 1 << 16,    /* distinct functions (name, file, first line) */
    SAMPLER_MAX_PAIRS = 1 << 20,        /* distinct (thread, function) pairs */
    SAMPLER_MAX_NAME_BYTES = 32 << 20,  /* bytes of thread, function and file names kept */
    SAMPLER_BUCKETS = 64,               /* the window slides by window_s / SAMPLER_BUCKETS */
};

/* Which thread-samples the statistics count (DESIGN.md, sampling modes): every one (WALL), or
 * only those of a thread the kernel has on a CPU (CPU: state R, as CPython's unwinder tells it),
 * that holds the GIL (GIL) or that raises or handles an exception (EXCEPTION). The others still
 * keep their thread known (its kernel CPU time, its place in the Threads view). */
enum sampler_mode {
    SAMPLER_MODE_WALL,
    SAMPLER_MODE_CPU,
    SAMPLER_MODE_GIL,
    SAMPLER_MODE_EXCEPTION,
    SAMPLER_MODE_COUNT
};

/* "wall", "cpu", "gil", "exception". */
const char *sampler_mode_name(enum sampler_mode m);
/* What the thread-samples a mode counts are, for "N thread-samples ...": "" (wall), " on a
 * CPU", " holding the GIL", " handling an exception". */
const char *sampler_mode_words(enum sampler_mode m);
/* The mode named NAME; -1 for no mode. */
int sampler_mode_parse(const char *name);

struct sampler_opts {
    double rate_hz;      /* samples per second; 0 = as fast as possible */
    double window_s;     /* how far back the statistics reach; INFINITY: back to the last
                          * reset (nothing slides out); <= 0 or NAN: 1 s; else at most a day */
    bool blocking;       /* pause the target while each sample is read */
    bool once;           /* one snapshot and no other (--dump): what it reads is not recorded
                          * to be read ahead for a next one (unwind_set_once()) */
    enum sampler_mode mode;
    bool active_only;    /* samples read only the threads holding the GIL (--active-only) */
    bool no_gc_frames;   /* no <GC> frame above a collection's start (--no-gc-frames) */
    bool opcodes;        /* snapshots read each frame's instruction (--opcodes) */
    bool native;         /* <native> frames where C called into Python (--native) */
};

/* One thread over the window. Shares are of that thread's own samples (0-100); a flag the
 * target did not say (unknown) does not count as yes. */
struct sampler_thread {
    pid_t tid;
    uint64_t thread_id;
    struct snap_str name;   /* the last name read; ptr NULL when never known */
    uint64_t samples;       /* samples in which the thread was seen and matched the mode (the base
                             * of its shares; 0: seen but never matched, shares NAN) */
    uint64_t seen;          /* samples in which the thread was seen at all */
    double gil_pct;
    double cpu_pct; /* CPU time the kernel counted over the window's span; for
                     * samples fed through sampler_add() or sampler_add_sample() (snapshots, a
                     * recording), the share of those whose state was read that were on CPU */
    double gc_pct;  /* NAN: unknown (the window holds a collection whose thread was unknown) */
    int64_t interp_id;      /* the interpreter the thread state belongs to */
    uint64_t gil_samples;   /* the counts behind the shares */
    uint64_t cpu_samples;
    uint64_t gc_samples;
    uint64_t cpu_ns; /* the CPU time behind cpu_pct, when the kernel counted it */
};

/* One function over the window. OWN counts thread-samples whose innermost frame it was, TOTAL
 * those in which it was anywhere on the stack (counted once per stack even when recursive).
 * A function is its (function, file, first_line): two lambdas of one file stay apart. */
struct sampler_function {
    struct snap_str function;
    struct snap_str file;
    int first_line;      /* the function's first line; -1 unknown */
    uint64_t own;
    uint64_t total;
    uint64_t own_state;  /* own samples whose thread's CPU state was read with the sample */
    uint64_t own_on_cpu; /* of those, the ones on a CPU */
    enum snap_unreadable unreadable; /* not NONE: the row counts frames pytop could not read,
                                      * FUNCTION says why (snapshot_unreadable_label()) */
};

/* The statistics at one moment: a self-contained copy the caller owns (strings included). */
struct sampler_stats {
    double rate_hz;          /* requested; 0 = max */
    double achieved_hz;      /* samples per second actually taken over the window */
    uint64_t samples;        /* successful samples in the window */
    uint64_t errors;         /* failed samples in the window */
    double window_s;         /* the span the window really covers (shorter at start) */
    double window_limit;     /* how far back it may reach (sampler_opts.window_s; INFINITY:
                              * since the reset) */
    enum sampler_mode mode;  /* which thread-samples count */
    bool active_only;        /* samples read only the GIL holders */
    uint64_t thread_samples; /* sum over samples of the threads seen that matched the mode: the
                              * base of own/total % */
    struct sampler_thread *threads;      /* sorted by interp_id, tid, thread_id; NULL if none */
    size_t n_threads;
    struct sampler_function *functions;  /* sorted by own, then total, descending; NULL if
                                          * none */
    size_t n_functions;
    uint64_t gc_samples;     /* samples in which some thread was in GC (known or not which) */
    struct snapshot *store;  /* owns the arrays and strings above */
    bool threads_truncated;  /* some thread seen in the window did not fit the bounds */
    bool functions_truncated; /* some frame seen in the window was not counted (bounds) */
    bool has_reader;          /* READER holds what the target's reader did since the reset */
    struct unwind_counters reader; /* code_entries: held now */
    uint64_t reader_samples;       /* the samples READER's counts include (with the snapshots
                                    * taken meanwhile) */
    struct snap_str last_error;    /* why the newest failed sample of the window failed; ptr NULL
                                    * when none failed */
    double backoff_s; /* > 0: failed samples in a row, so the next is tried only this long
                       * after the last (longer than the rate's period); 0: sampling at the
                       * rate */
    bool execed;      /* the process exec()ed and the sampler follows the new program */
    double exec_time; /* when it was noticed: seconds since the epoch */
    struct snap_str exec_program; /* the new executable; ptr NULL when unknown */
};

/* The source heat view (DESIGN.md): one function's lines and instructions over the window.
 * Shares are of THREAD_SAMPLES, as the Functions view's are. */
enum { SAMPLER_HEAT_FORMS = 4 }; /* forms of one instruction told apart, at most */

struct sampler_heat_line {
    int line; /* -1: frames whose line was unknown */
    uint64_t own;
    uint64_t total; /* stacks in which the function was at this line (once per stack) */
};

struct sampler_heat_instr {
    int line;
    uint32_t offset; /* bytes into the bytecode: the instruction's start */
    uint64_t own;
    uint64_t total;
    const char *name; /* as dis names it (static); NULL: not read */
    /* The specialised forms the instruction was seen in while counted (static names). */
    const char *forms[SAMPLER_HEAT_FORMS];
    size_t n_forms;
};

struct sampler_heat {
    struct snap_str function; /* what was asked: the key of struct sampler_function */
    struct snap_str file;
    int first_line;
    enum sampler_mode mode;
    double span_s;           /* seconds counted: since it was asked, within the window */
    uint64_t thread_samples; /* over SPAN_S, matching the mode: the base of every share */
    uint64_t own;            /* the function's, over SPAN_S */
    uint64_t total;
    struct sampler_heat_line *lines; /* by line, unknown first */
    size_t n_lines;
    struct sampler_heat_instr *instrs; /* by line, then offset; none without instructions */
    size_t n_instrs;
    bool instructions;       /* INSTRS named (--opcodes) */
    char instr_note[96];     /* why they are not, when asked; "" */
    bool truncated;          /* lines or code objects were left out (bounds) */
};

/* Which thread sampler_stats_thread() tells about: the fields of struct sampler_thread. */
struct sampler_thread_key {
    int64_t interp_id;
    pid_t tid;
    uint64_t thread_id;
};

/* Not thread-safe: a program that samples on one thread and reads statistics on another
 * serialises every call on one sampler (one mutex). The calls that read are quick copies. */
struct sampler;

/* Prepares to sample P (whose runtime RT was located; both outlive the sampler). P and RT may
 * be NULL for a sampler fed only through sampler_add(). Errors: PT_E_NOMEM. */
struct sampler *sampler_new(struct proc *p, const struct runtime *rt,
                            const struct sampler_opts *opts, struct pt_error *err);
void sampler_free(struct sampler *s);

/* What else sees each sample as it is taken (a recording): SAMPLE gets every successful one with
 * the threads' CPU states as read with it (NULL entries unknown) and the layout that reads its
 * code objects, ERROR every failed one. NOW is sampler_sample()'s. Called on the sampling
 * thread, inside sampler_sample(). */
struct sample;
struct py_layout;
struct sampler_hook {
    void (*sample)(void *ctx, const struct sample *smp, const enum snap_bool *on_cpu,
                   const struct py_layout *L, double now);
    void (*error)(void *ctx, const struct pt_error *why, double now);
    void *ctx;
};
/* Sets the hook (copied), or clears it with H NULL. */
void sampler_set_hook(struct sampler *s, const struct sampler_hook *h);

/* Takes one compact sample now (unwind_sample()) and adds it to the window; a failed sample is
 * counted as an error and its error returned (-1): PT_E_GONE once the target has exited,
 * PT_E_EXEC once it has exec()ed (looked for after the first failure of a run, and every
 * quarter second; the message names the new executable), else what unwind_sample() and
 * (--blocking) proc_pause() give. The caller waits until sampler_due() before the next. With
 * opts.blocking the target is paused for the read and always resumed. Every few samples (an eighth
 * of the window, 50 to 250 ms) it also reads each thread's CPU time from the kernel. NOW is a
 * monotonic time in seconds. */
int sampler_sample(struct sampler *s, double now, struct pt_error *err);

/* Reads the CPU time of the threads the sampler knows now, so that statistics taken right
 * after count it to the end (a document's interval, a refresh). */
void sampler_update_cpu(struct sampler *s, double now);

/* When the sample after one planned for PLANNED may be taken: PLANNED, or later while a run of
 * failed samples backs off (the period doubles with each failure in a row, from the rate's
 * own, or 1 ms at --rate max, up to 0.25 s); the first failure of a run keeps the rate. */
double sampler_due(const struct sampler *s, double planned);

/* After sampler_sample() failed with PT_E_EXEC: reopens the process, locates the new
 * program's runtime into *RT (the one the sampler was made with), retrying while the program
 * starts (half a second; 5 s when it is named like python) and following the execs it makes
 * on the way, and starts afresh on it: the window, caches and latest snapshot of the old
 * program are dropped, and the statistics carry the exec (execed, exec_time, exec_program)
 * until the next sampler_reset(). Blocks while it waits. On failure the sampler has no target
 * any more (every sample fails) and ERR's one-line message names the new program and why it
 * cannot be read: PT_E_NOTPY "process 4242 exec()ed /bin/sleep; it is no longer a Python
 * process", PT_E_GONE when it exited meanwhile, else runtime_locate()'s code. */
int sampler_follow_exec(struct sampler *s, struct runtime *rt, struct pt_error *err);

/* Takes a full snapshot now (names, lines, GC, and the task graph when TASKS), with the same
 * caches the samples use, and keeps it as the latest; it is not counted as a sample. NULL on
 * failure (as unwind_snapshot(), or PT_E_EXEC as sampler_sample()). Valid as sampler_latest() is.
 */
const struct snapshot *sampler_snapshot(struct sampler *s, bool tasks, struct pt_error *err);

/* What the sampler's reader has done since it was made (all zero without a target). */
struct unwind_counters sampler_reader_counters(const struct sampler *s);

/* Adds an already-taken snapshot to the window (for tests and replays); the sampler takes
 * ownership of SNAP. */
void sampler_add(struct sampler *s, struct snapshot *snap, double now);

/* Adds a compact sample taken elsewhere (a recording's, recconv_compact()) at NOW, with its
 * threads' CPU states ON_CPU (NULL: unknown), to the window; the hook does not see it. */
void sampler_add_sample(struct sampler *s, const struct sample *smp, const enum snap_bool *on_cpu,
                        double now);

/* Counts one failed sample at NOW. */
void sampler_add_error(struct sampler *s, double now);

/* The most recent snapshot (sampler_snapshot() or sampler_add()), or NULL; owned by the
 * sampler, valid until the next sampler_snapshot()/sampler_add()/sampler_take_latest(). */
const struct snapshot *sampler_latest(const struct sampler *s);

/* Hands the most recent successful snapshot to the caller (who frees it), or NULL; afterwards
 * sampler_latest() is NULL until the next sample. For keeping a picture (freeze) without a
 * copy. */
struct snapshot *sampler_take_latest(struct sampler *s);

/* A copy of the statistics over the window ending at NOW, for the caller to keep (free with
 * sampler_stats_free). NULL on out of memory. */
struct sampler_stats *sampler_stats(const struct sampler *s, double now);

/* Like sampler_stats(), but FUNCTIONS and THREAD_SAMPLES count only the thread KEY (the
 * Functions view of one thread); the thread list is complete. When the thread is not in the
 * window, no functions and thread_samples 0. NULL on out of memory. */
struct sampler_stats *sampler_stats_thread(const struct sampler *s, double now,
                                           const struct sampler_thread_key *key);
void sampler_stats_free(struct sampler_stats *st);

/* The thread of ST with these ids, or NULL; valid as long as ST. */
const struct sampler_thread *sampler_stats_find_thread(const struct sampler_stats *st,
                                                       int64_t interp_id, pid_t tid,
                                                       uint64_t thread_id);

/* The share (0-100) of F's own samples, among those whose thread's state was read, that were
 * on a CPU; NAN when none was read. */
double sampler_function_cpu_pct(const struct sampler_function *f);

/* Counts only the thread-samples that match MODE from now on, forgetting what was counted
 * (the `m` key). */
void sampler_set_mode(struct sampler *s, enum sampler_mode mode);
enum sampler_mode sampler_get_mode(const struct sampler *s);

/* Whether the snapshots taken from now on read each frame's instruction (the `o` key). */
void sampler_set_opcodes(struct sampler *s, bool on);

/* Counts, from NOW on, the lines and instructions of the function (FUNCTION, FILE, FIRST_LINE)
 * (struct sampler_function's key; copied) for the source heat view, in every thread-sample
 * the mode matches; FUNCTION NULL stops (nothing is counted, nothing costs). Asking for another
 * function starts afresh. Errors: PT_E_NOMEM (then nothing is counted). */
int sampler_set_heat(struct sampler *s, const char *function, size_t function_len,
                     const char *file, size_t file_len, int first_line, double now,
                     struct pt_error *err);
/* What the source heat view shows at NOW: a copy the caller frees with free(); NULL when no
 * function is asked about, or out of memory. With opcodes on (--opcodes, `o`), the function's
 * bytecode is read (one read a code object) to name the instructions. */
struct sampler_heat *sampler_heat(struct sampler *s, double now);

/* Forgets everything counted so far (the `r` key). The latest snapshot stays. */
void sampler_reset(struct sampler *s);

/* Makes the statistics reach WINDOW_S seconds back (as sampler_opts.window_s) from NOW on. A
 * longer window keeps what was counted, which then reaches back as far as the old window did
 * at NOW and slides out as the new one says; a shorter one starts afresh, as sampler_reset()
 * does (the counts were kept in buckets too coarse to cut). Errors: PT_E_NOMEM (the statistics
 * then start afresh over the new window). */
int sampler_set_window(struct sampler *s, double window_s, double now, struct pt_error *err);

#endif
