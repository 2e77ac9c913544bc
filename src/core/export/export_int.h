/* export_int: what the exporters share: the samples counted so far, interned as functions,
 * frames (function, line), stacks (arrays of frames) and (thread, stack) pairs, and each
 * thread's runs of one stack over time. Private to src/core/export/. */
#ifndef PYTOP_CORE_EXPORT_INT_H
#define PYTOP_CORE_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/export/export.h"
#include "core/model/snapshot.h"
#include "core/util/error.h"
#include "core/util/strbuf.h"

/* Bounds on what one export holds; past them exporter_add() fails with PT_E_LIMIT. */
enum {
    EXPORT_MAX_THREADS = 1 << 16,
    EXPORT_MAX_FUNCTIONS = 1 << 20,
    EXPORT_MAX_FRAMES = 1 << 22,      /* distinct (function, line) */
    EXPORT_MAX_STACKS = 1 << 22,      /* distinct stacks */
    EXPORT_MAX_STACK_WORDS = 1 << 26, /* frame ids the distinct stacks hold together */
    EXPORT_MAX_PAIRS = 1 << 22,       /* distinct (thread, stack) */
    EXPORT_MAX_RUNS = 1 << 25,        /* runs of one stack, all threads together */
    EXPORT_MAX_NAME_BYTES = 64 << 20, /* bytes of function, file and thread names kept */
};

enum { EXPORT_NONE = UINT32_MAX };

/* An open-addressing table of indexes into one of the arrays below, each slot holding the
 * index + 1 (0: empty) and the key's hash. */
struct export_index {
    uint32_t *slots;
    uint32_t *hashes;
    size_t mask; /* capacity - 1; capacity 0 before the first insert */
    size_t used;
};

/* A function as the exports name it: one per (function, file, first_line). A synthetic one
 * (<native>, <GC>, an unreadable frame) has its label as FUNCTION, no file and SYNTHETIC set. */
struct export_func {
    struct snap_str function; /* owned; ptr NULL unknown */
    struct snap_str name;
    struct snap_str file;
    int first_line;
    bool synthetic;
};

/* A code object of the recording (rec_code.id) and the function it is. */
struct export_code {
    uint32_t id;
    uint32_t func;
};

struct export_frame {
    uint32_t func;
    int line; /* -1 unknown */
};

/* The frames of a stack are FRAMES_POOL[off .. off + len), innermost first. */
struct export_stack {
    uint32_t off;
    uint32_t len;
};

struct export_pair {
    uint32_t thread;
    uint32_t stack;
    uint64_t count;
    int64_t weight_ns;
};

/* Consecutive thread-samples of one thread with one stack and no gap between them:
 * [start_ns, end_ns) is the time they stand for together. */
struct export_run {
    uint32_t stack;
    uint32_t count;
    int64_t start_ns;
    int64_t end_ns;
};

/* What a thread's previous stack was made of, as the recording said it (before interning):
 * an unchanged stack is recognised by these and costs no lookup. */
struct export_raw_frame {
    uint32_t code; /* rec_code.id */
    int32_t line;
    uint8_t kind; /* enum snap_frame_kind; 0xff (RAW_PYTHON in export.c) with a code */
    uint8_t why;  /* enum snap_unreadable */
};

/* One frame of a thread's previous stack: as recorded, its frame id, and the hash of the
 * stack from it outwards (so a stack that changes at the inner end is hashed only there). */
struct export_cached {
    struct export_raw_frame raw;
    uint32_t frame;
    uint32_t hash;
};

/* A small direct-mapped cache of frames looked up: a stack that changes mostly goes back to
 * frames seen before. */
enum { EXPORT_FRAME_CACHE = 4096 };

struct export_frame_cache {
    struct export_raw_frame raw;
    uint32_t frame; /* EXPORT_NONE: empty */
};

struct export_thread {
    pid_t tid;
    uint64_t thread_id;
    struct snap_str name;         /* owned; the last known name; ptr NULL never known */
    struct export_cached *cached; /* the previous stack, innermost first (shims left out) */
    size_t n_cached;
    size_t cap_cached;
    uint32_t last_stack; /* EXPORT_NONE before the first sample */
    uint32_t last_pair;
    struct export_run *runs; /* kept for the formats that show time (speedscope, chrome) */
    size_t n_runs;
    size_t cap_runs;
};

struct exporter {
    enum export_format format;
    struct export_opts opts;
    bool keep_runs;
    int64_t cap_ns;    /* the most one thread-sample stands for */
    int64_t period_ns; /* 0 unknown */

    struct export_func *funcs;
    size_t n_funcs;
    size_t cap_funcs;
    struct export_index func_index;
    struct export_code *codes;
    struct export_index code_index;
    size_t n_codes;
    size_t cap_codes;
    uint32_t synthetic[8][8]; /* [kind][why] -> function */

    struct export_frame *frames;
    size_t n_frames;
    size_t cap_frames;
    struct export_index frame_index;

    uint32_t *pool;
    size_t n_pool;
    size_t cap_pool;
    struct export_stack *stacks;
    size_t n_stacks;
    size_t cap_stacks;
    struct export_index stack_index;

    struct export_pair *pairs;
    size_t n_pairs;
    size_t cap_pairs;
    struct export_index pair_index;

    struct export_thread *threads;
    size_t n_threads;
    size_t cap_threads;
    struct export_index thread_index;

    size_t name_bytes;
    size_t n_runs; /* over all threads */

    /* The thread-samples of the last sample counted, waiting for the next sample's time to
     * know what they stand for (thread indexes). */
    struct export_cached *scratch; /* the stack being counted, swapped with a thread's */
    size_t cap_scratch;
    uint32_t *scratch_ids;
    size_t cap_scratch_ids;
    struct export_frame_cache frame_cache[EXPORT_FRAME_CACHE];
    uint32_t *thread_hint; /* by position in the last sample: the thread index it had */
    size_t cap_hint;

    uint32_t *pending;
    size_t n_pending;
    size_t cap_pending;
    int64_t pending_ns;  /* their sample's time */
    int64_t last_gap_ns; /* -1: no gap seen yet */
    int64_t first_ns;    /* the first counted sample's time; -1 none */
    int64_t end_ns;      /* where the last counted thread-sample ends */
    uint64_t thread_samples;

    bool failed; /* an add failed: ERR says why, and finish reports it */
    struct pt_error err;
};

/* Grows *ARR (of ELEM-byte items, *CAP of them) to hold at least N. Returns 0, or -1 out of
 * memory. */
int export_grow(void *arr, size_t *cap, size_t n, size_t elem);

/* Interning; each returns an index, or EXPORT_NONE with ERR set (PT_E_NOMEM, PT_E_LIMIT). */
uint32_t export_code_func(struct exporter *x, const struct rec_code *code, struct pt_error *err);
uint32_t export_synthetic_func(struct exporter *x, enum snap_frame_kind kind,
                               enum snap_unreadable why, struct pt_error *err);
uint32_t export_frame_id(struct exporter *x, uint32_t func, int line, struct pt_error *err);
/* The stack of FRAMES[0..N) (innermost first), whose hash is HASH (export_stack_hash()). */
uint32_t export_stack_id(struct exporter *x, const uint32_t *frames, size_t n, uint32_t hash,
                         struct pt_error *err);
/* The hash of a stack whose frames from the next one outwards hash to OUTER (0 for none)
 * and whose next frame is FRAME. */
static inline uint32_t export_stack_hash(uint32_t outer, uint32_t frame)
{
    uint64_t h = ((uint64_t)outer << 32 | frame) * 0x9e3779b97f4a7c15ULL;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}
uint32_t export_pair_id(struct exporter *x, uint32_t thread, uint32_t stack, struct pt_error *err);
/* The thread with TID (or, when TID is 0, THREAD_ID). */
uint32_t export_thread_id(struct exporter *x, pid_t tid, uint64_t thread_id, struct pt_error *err);
/* Copies S into owned memory (counted against EXPORT_MAX_NAME_BYTES). Returns 0 or -1. */
int export_copy_str(struct exporter *x, struct snap_str s, struct snap_str *out,
                    struct pt_error *err);
/* Frees everything the interning tables hold. */
void export_intern_free(struct exporter *x);

/* The frames of stack S, innermost first, and how many. */
static inline const uint32_t *export_stack_frames(const struct exporter *x, uint32_t s, size_t *n)
{
    *n = x->stacks[s].len;
    return x->pool + x->stacks[s].off;
}

/* The writers: each writes the whole profile to OUT. Returns 0, or -1 (PT_E_IO, PT_E_NOMEM). */
int export_write_collapsed(struct exporter *x, FILE *out, struct pt_error *err);
int export_write_speedscope(struct exporter *x, FILE *out, struct pt_error *err);
int export_write_pprof(struct exporter *x, FILE *out, struct pt_error *err);
int export_write_chrome(struct exporter *x, FILE *out, struct pt_error *err);

/* Shared by the writers. */
/* The function's name for display: its label, its name, or "?". */
struct snap_str export_func_title(const struct export_func *f);
/* The thread's number as the writers show it, into BUF: its tid, or when that is unknown its
 * thread_id in hex ("0x7f3a..."). Returns BUF. */
const char *export_thread_number(const struct export_thread *t, char *buf, size_t size);
/* The thread's name, or when unknown "thread NUMBER" formatted into BUF. */
struct snap_str export_thread_name(const struct export_thread *t, char *buf, size_t size);
/* Appends V in decimal; export_put_decimal() V / 10^DECIMALS with DECIMALS digits after the
 * point ("0.010000000" for 10000000, 9). Faster than strbuf_printf() where a document is
 * mostly numbers. */
void export_put_u64(struct strbuf *sb, uint64_t v);
void export_put_decimal(struct strbuf *sb, int64_t v, int decimals);
/* Ends a document: drains SB and maps its failure or a write's to ERR. Returns 0 or -1. */
int export_flush(struct strbuf *sb, FILE *out, int *write_errno, const char *what,
                 struct pt_error *err);

#endif
