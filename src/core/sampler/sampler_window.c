/* sampler_window: the sampler's sliding window of per-thread and per-function sample counts. */
#include "config.h"

#include "core/sampler/sampler_window.h"
#include "core/sampler/sampler_window_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/pyobj/code.h"
#include "core/sampler/sampler_heat.h"
#include "core/util/error.h"
#include "core/walk/sample.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"

/* The buckets are numbered by absolute time (floor(now / width)). A sample adds to the
 * entries' window counts and to the newest bucket's deltas; when a bucket falls out of the
 * window its deltas are taken off again, so a sample costs O(frames) and sliding costs
 * O(what the old bucket held). */

enum { DELTAS_MIN_CAP = 16 };

static const double BUCKET_NUMBER_MAX = 4e18;

/* floor(NOW / width), clamped far from overflow; not-a-number counts as the distant past. */
int64_t sampler_window_bucket_number(const struct sampler_window *w, double now)
{
    /* A window without end (since the reset) is one bucket that never slides out. */
    if (isinf(w->width)) {
        return 0;
    }
    double q = now / w->width;
    if (!(q > -BUCKET_NUMBER_MAX)) {
        q = -BUCKET_NUMBER_MAX;
    } else if (q > BUCKET_NUMBER_MAX) {
        q = BUCKET_NUMBER_MAX;
    }
    int64_t k = (int64_t)q; /* rounds toward zero */
    return (double)k > q ? k - 1 : k;
}

static struct sampler_window_bucket *bucket_slot(struct sampler_window *w, int64_t number)
{
    int64_t i = number % SAMPLER_BUCKETS;
    return &w->buckets[i < 0 ? i + SAMPLER_BUCKETS : i];
}

void sampler_window_counts_sub(struct sampler_window_counts *a,
                               const struct sampler_window_counts *b)
{
    a->samples -= b->samples;
    a->errors -= b->errors;
    a->thread_samples -= b->thread_samples;
    a->gc_samples -= b->gc_samples;
    a->gc_unknown_samples -= b->gc_unknown_samples;
    a->dropped_threads -= b->dropped_threads;
    a->dropped_frames -= b->dropped_frames;
}

/* Takes what bucket B added off the window, dropping entries that no longer count. */
static void bucket_expire(struct sampler_window *w, struct sampler_window_bucket *b)
{
    struct sampler_table *t = &w->table;
    if (b->number == INT64_MIN) {
        return;
    }
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const struct thread_delta *d = &b->threads[i];
        struct sampler_table_thread *th = sampler_table_thread_at(t, d->thread);
        th->samples -= d->samples;
        th->seen -= d->seen;
        th->gil -= d->gil;
        th->cpu -= d->cpu;
        th->cpu_known -= d->cpu_known;
        th->gc -= d->gc;
        th->cpu_ns -= d->cpu_ns;
        /* An entry lives while a bucket holds its samples or its CPU time (a thread no sample
         * lists, as --active-only's between its turns, still has its time added). */
        if (th->seen == 0 && th->cpu_ns == 0) {
            sampler_table_drop_thread(t, d->thread);
        }
    }
    for (uint32_t i = 0; i < b->n_pairs; i++) {
        const struct pair_delta *d = &b->pairs[i];
        struct sampler_table_pair *p = sampler_table_pair_at(t, d->pair);
        struct sampler_table_func *f = sampler_table_func_at(t, p->func);
        p->own -= d->own;
        p->total -= d->total;
        p->own_state -= d->own_state;
        p->own_on_cpu -= d->own_on_cpu;
        f->own -= d->own;
        f->total -= d->total;
        f->own_state -= d->own_state;
        f->own_on_cpu -= d->own_on_cpu;
        /* Every delta has total >= 1, and a function's counts sum its pairs'. */
        if (f->total == 0) {
            sampler_table_drop_func(t, p->func);
        }
        if (p->total == 0) {
            sampler_table_drop_pair(t, d->pair);
        }
    }
    sampler_window_counts_sub(&w->counts, &b->c);
    memset(&b->c, 0, sizeof b->c);
    b->n_threads = 0;
    b->n_pairs = 0;
    b->number = INT64_MIN;
}

/* The bucket a sample at NOW goes into, after sliding the window up to NOW. Time that runs
 * backwards (it should not) counts into the newest bucket. */
static struct sampler_window_bucket *window_advance(struct sampler_window *w, double now)
{
    int64_t k = sampler_window_bucket_number(w, now);
    if (w->newest != INT64_MIN && k <= w->newest) {
        return bucket_slot(w, w->newest);
    }
    if (w->newest == INT64_MIN || k - w->newest >= SAMPLER_BUCKETS) {
        for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
            bucket_expire(w, &w->buckets[i]);
        }
    } else {
        for (int64_t j = w->newest + 1; j <= k; j++) {
            bucket_expire(w, bucket_slot(w, j));
        }
    }
    struct sampler_window_bucket *b = bucket_slot(w, k);
    b->number = k;
    w->newest = k;
    return b;
}

/* Grows a delta array by one element; false on out of memory. */
static bool deltas_reserve(void **items, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap) {
        return true;
    }
    uint32_t ncap = *cap < DELTAS_MIN_CAP ? DELTAS_MIN_CAP : *cap * 2;
    if (ncap <= *cap) {
        return false;
    }
    void *fresh = realloc(*items, (size_t)ncap * size);
    if (fresh == NULL) {
        return false;
    }
    *items = fresh;
    *cap = ncap;
    return true;
}

static struct thread_delta *thread_delta(struct sampler_window *w, struct sampler_window_bucket *b,
                                         uint32_t ti)
{
    struct sampler_table_thread *th = sampler_table_thread_at(&w->table, ti);
    if (th->newest.bucket == b->number) {
        return &b->threads[th->newest.index];
    }
    if (!deltas_reserve((void **)&b->threads, b->n_threads, &b->cap_threads, sizeof *b->threads)) {
        return NULL;
    }
    struct thread_delta *d = &b->threads[b->n_threads];
    memset(d, 0, sizeof *d);
    d->thread = ti;
    th->newest.bucket = b->number;
    th->newest.index = b->n_threads++;
    return d;
}

static struct pair_delta *pair_delta(struct sampler_window *w, struct sampler_window_bucket *b,
                                     uint32_t pi)
{
    struct sampler_table_pair *p = sampler_table_pair_at(&w->table, pi);
    if (p->newest.bucket == b->number) {
        return &b->pairs[p->newest.index];
    }
    if (!deltas_reserve((void **)&b->pairs, b->n_pairs, &b->cap_pairs, sizeof *b->pairs)) {
        return NULL;
    }
    struct pair_delta *d = &b->pairs[b->n_pairs];
    memset(d, 0, sizeof *d);
    d->pair = pi;
    p->newest.bucket = b->number;
    p->newest.index = b->n_pairs++;
    return d;
}

/* The frames of one thread-sample, from a snapshot or a compact sample. */
struct frame_source {
    const struct snap_frame *snap;
    const struct sample_frame *compact;
    size_t n;
};

/* What a frame pytop could not read is counted as: no function, but the reason it has none
 * (snapshot_unreadable_label()). */
static struct sampler_func_key unreadable_key(enum snap_unreadable why)
{
    /* No reason given: its code object was not read. */
    why = why != SNAP_UNREADABLE_NONE ? why : SNAP_UNREADABLE_CODE;
    const char *label = snapshot_unreadable_label(why);
    return (struct sampler_func_key){label, strlen(label), NULL, 0, -1, why};
}

/* A snapshot frame's function; one without a name or a file (a frame that was not read) counts
 * as unreadable, never as a function. */
static struct sampler_func_key snap_key(const struct snap_frame *f)
{
    if (f->kind == SNAP_FRAME_UNREADABLE ||
        (f->kind == SNAP_FRAME_PYTHON && f->function.ptr == NULL && f->file.ptr == NULL)) {
        return unreadable_key(f->unreadable);
    }
    return (struct sampler_func_key){f->function.ptr, f->function.len, f->file.ptr,
                                     f->file.len,     f->first_line,   SNAP_UNREADABLE_NONE};
}

/* A compact frame's function as a snapshot would name it (snapshot_frame_label() for the
 * synthetic ones, unreadable_key() for one whose code could not be read). */
static struct sampler_func_key compact_key(const struct sample_frame *f)
{
    if (f->kind == SNAP_FRAME_UNREADABLE || (f->kind == SNAP_FRAME_PYTHON && f->code == NULL)) {
        return unreadable_key(f->unreadable);
    }
    if (f->kind != SNAP_FRAME_PYTHON) {
        const char *label = snapshot_frame_label(f->kind);
        return (struct sampler_func_key){label, strlen(label), NULL, 0, -1, SNAP_UNREADABLE_NONE};
    }
    return (struct sampler_func_key){f->code->qualname,    f->code->qualname_len,
                                     f->code->filename,    f->code->filename_len,
                                     f->code->firstlineno, SNAP_UNREADABLE_NONE};
}

/* Frame I's function entry: the hint when it still is that function, else looked up by its
 * name (and the hint updated). A compact frame's hint is checked by code identity alone, so a
 * steady stack compares no strings. */
static uint32_t frame_func(struct sampler_table *t, struct sampler_table_hint *hint,
                           const struct frame_source *src, size_t i)
{
    struct sampler_func_key k;
    uint64_t code = 0;
    if (src->compact != NULL) {
        const struct sample_frame *f = &src->compact[i];
        /* Frames without code are told apart by kind and reason. */
        code = f->code_serial != 0
                   ? f->code_serial
                   : UINT64_MAX - ((uint64_t)f->unreadable << 8 | (uint64_t)f->kind);
        if (hint != NULL && hint->code == code && hint->func < t->funcs.n) {
            const struct sampler_table_func *e = sampler_table_func_at(t, hint->func);
            if (e->used && e->serial == hint->func_serial) {
                return hint->func;
            }
        }
        k = compact_key(f);
    } else {
        k = snap_key(&src->snap[i]);
        if (hint != NULL && hint->code == 0 && sampler_table_func_is(t, hint->func, &k)) {
            return hint->func;
        }
    }
    uint32_t fi = sampler_table_func(t, &k);
    if (hint != NULL) {
        hint->code = code;
        hint->func = fi;
        hint->func_serial = fi != SAMPLER_TABLE_NONE ? sampler_table_func_at(t, fi)->serial : 0;
    }
    return fi;
}

static uint32_t frame_pair(struct sampler_table *t, uint32_t *hint, uint32_t ti, uint32_t fi)
{
    if (hint != NULL && *hint < t->pairs.n) {
        const struct sampler_table_pair *p = sampler_table_pair_at(t, *hint);
        if (p->used && p->thread == ti && p->func == fi) {
            return *hint;
        }
    }
    uint32_t pi = sampler_table_pair(t, ti, fi);
    if (hint != NULL) {
        *hint = pi;
    }
    return pi;
}

/* Counts frame I of thread TI's stack: in OWN when it is the innermost (with the thread's CPU
 * state CPU, unknown when not read), in TOTAL the first time its function shows up in this
 * stack. HINT: the frame's entries in the thread's last stack, or NULL. Returns the frame's
 * function entry, counted in this stack (NONE: it was dropped for want of memory). */
static uint32_t count_frame(struct sampler_window *w, struct sampler_window_bucket *b, uint32_t ti,
                        const struct frame_source *src, size_t i, bool own, enum snap_bool cpu,
                        struct sampler_table_hint *hint)
{
    struct sampler_table *t = &w->table;
    uint32_t fi = frame_func(t, hint, src, i);
    if (fi == SAMPLER_TABLE_NONE) {
        b->c.dropped_frames++;
        w->counts.dropped_frames++;
        return SAMPLER_TABLE_NONE;
    }
    struct sampler_table_func *fe = sampler_table_func_at(t, fi);
    if (fe->stack_mark == w->stack_serial) {
        return fi;
    }
    uint32_t pi = frame_pair(t, hint != NULL ? &hint->pair : NULL, ti, fi);
    struct pair_delta *d = pi != SAMPLER_TABLE_NONE ? pair_delta(w, b, pi) : NULL;
    if (d == NULL) {
        /* Entries made for this frame alone must not stay with nothing counted. */
        if (pi != SAMPLER_TABLE_NONE && sampler_table_pair_at(t, pi)->total == 0) {
            sampler_table_drop_pair(t, pi);
        }
        if (fe->total == 0) {
            sampler_table_drop_func(t, fi);
        }
        b->c.dropped_frames++;
        w->counts.dropped_frames++;
        return SAMPLER_TABLE_NONE;
    }
    struct sampler_table_pair *p = sampler_table_pair_at(t, pi);
    fe->stack_mark = w->stack_serial;
    d->total++;
    p->total++;
    fe->total++;
    if (own) {
        d->own++;
        p->own++;
        fe->own++;
        if (cpu != SNAP_UNKNOWN) {
            uint32_t on = cpu == SNAP_YES;
            d->own_state++;
            p->own_state++;
            fe->own_state++;
            d->own_on_cpu += on;
            p->own_on_cpu += on;
            fe->own_on_cpu += on;
        }
    }
    return fi;
}

/* What the window counts of one thread-sample besides its frames. */
struct thread_source {
    int64_t interp_id;
    pid_t tid;
    uint64_t thread_id;
    const char *name;
    size_t name_len;
    bool gil;
    enum snap_bool cpu; /* unknown: not read */
    bool gc;
    bool exc;
    bool read; /* false: the sample did not read this thread's stack (--active-only) */
};

/* Whether a thread-sample counts in MODE (DESIGN.md, sampling modes). */
static bool matches(enum sampler_mode mode, const struct thread_source *th)
{
    switch (mode) {
    case SAMPLER_MODE_CPU:
        return th->cpu == SNAP_YES;
    case SAMPLER_MODE_GIL:
        return th->gil;
    case SAMPLER_MODE_EXCEPTION:
        return th->exc;
    case SAMPLER_MODE_WALL:
    case SAMPLER_MODE_COUNT:
        break;
    }
    return true;
}

static bool is_shim(const struct frame_source *src, size_t i)
{
    return src->snap != NULL ? src->snap[i].kind == SNAP_FRAME_SHIM
                             : src->compact[i].kind == SNAP_FRAME_SHIM;
}

/* The source heat view: frame I counts there when it is of the function asked about (a code
 * object known to be, or function entry FI; NONE: only by its code). */
static void heat_look(struct sampler_window *w, const struct frame_source *src, size_t i,
                      uint32_t fi, bool innermost)
{
    struct sampler_heat_state *h = w->heat;
    if (src->compact != NULL) {
        const struct sample_frame *f = &src->compact[i];
        if (f->code == NULL) {
            return;
        }
        int slot = heat_code_slot(h, f->code_serial);
        if (slot < 0) {
            if (fi == SAMPLER_TABLE_NONE || !heat_is_function(h, &w->table, fi)) {
                return;
            }
            slot = heat_claim_code(h, f->code);
        }
        heat_compact_frame(h, slot, f->code, f->offset, innermost);
        return;
    }
    const struct snap_frame *f = &src->snap[i];
    if (fi != SAMPLER_TABLE_NONE && f->kind == SNAP_FRAME_PYTHON &&
        heat_is_function(h, &w->table, fi)) {
        heat_frame(h, HEAT_CODE_SNAPSHOT, f->line,
                   f->op1 != 0 ? f->op_offset : (uint32_t)SAMPLE_OFFSET_UNKNOWN, innermost);
    }
}

/* Counts one thread of a sample. */
static void count_thread(struct sampler_window *w, struct sampler_window_bucket *b,
                         const struct thread_source *th, const struct frame_source *src)
{
    uint32_t ti = sampler_table_thread(&w->table, th->interp_id, th->tid, th->thread_id, th->name,
                                       th->name_len);
    struct thread_delta *d = ti != SAMPLER_TABLE_NONE ? thread_delta(w, b, ti) : NULL;
    if (d == NULL) {
        if (ti != SAMPLER_TABLE_NONE && sampler_table_thread_at(&w->table, ti)->seen == 0) {
            sampler_table_drop_thread(&w->table, ti);
        }
        b->c.dropped_threads++;
        w->counts.dropped_threads++;
        return;
    }
    struct sampler_table_thread *e = sampler_table_thread_at(&w->table, ti);
    d->seen++;
    e->seen++;
    if (!th->read || !matches(w->mode, th)) {
        return;
    }
    bool cpu = th->cpu == SNAP_YES;
    d->samples++;
    e->samples++;
    d->gil += th->gil;
    e->gil += th->gil;
    d->cpu += cpu;
    e->cpu += cpu;
    d->cpu_known += th->cpu != SNAP_UNKNOWN;
    e->cpu_known += th->cpu != SNAP_UNKNOWN;
    d->gc += th->gc;
    e->gc += th->gc;
    b->c.thread_samples++;
    w->counts.thread_samples++;
    w->stack_serial++;
    if (w->heat != NULL) {
        heat_thread_sample(w->heat, b->number);
    }
    size_t n = src->n;
    /* Stacks grow and shrink at the innermost end: hints count from the outermost frame. */
    size_t n_hints = 0;
    struct sampler_table_hint *hints =
        n > 0 ? sampler_table_thread_hints(&w->table, ti, n, &n_hints) : NULL;
    bool innermost = true;
    /* Recursion repeats a code object: a frame running the code of the counted frame before it
     * adds nothing (its function is counted once a stack), so it is not looked up. */
    uint64_t counted_code = 0;
    /* SRC's arrays in locals: count_frame()'s stores could alias them. */
    const struct sample_frame *compact = src->compact;
    for (size_t i = 0; i < n; i++) {
        /* Shims are C-owned entry frames, not Python functions (DESIGN.md). */
        uint64_t code = 0;
        if (compact != NULL) {
            if (compact[i].kind == SNAP_FRAME_SHIM) {
                continue;
            }
            code = compact[i].code_serial;
            if (code != 0 && code == counted_code) {
                if (w->heat != NULL) {
                    heat_look(w, src, i, SAMPLER_TABLE_NONE, false);
                }
                continue;
            }
        } else if (is_shim(src, i)) {
            continue;
        }
        size_t depth = n - 1 - i;
        struct sampler_table_hint *hint = hints != NULL && depth < n_hints ? &hints[depth] : NULL;
        uint32_t fi = count_frame(w, b, ti, src, i, innermost, th->cpu, hint);
        counted_code = fi != SAMPLER_TABLE_NONE ? code : 0;
        if (w->heat != NULL && fi != SAMPLER_TABLE_NONE) {
            heat_look(w, src, i, fi, innermost);
        }
        innermost = false;
    }
}

/* Counts the sample itself, once its threads are. A thread's in_gc is unknown only while a
 * collection runs (unwind.c): then some thread is in it, though which one is not known. */
static void count_whole(struct sampler_window *w, struct sampler_window_bucket *b, bool any_gc,
                        bool gc_unknown)
{
    b->c.samples++;
    w->counts.samples++;
    if (any_gc || gc_unknown) {
        b->c.gc_samples++;
        w->counts.gc_samples++;
    }
    if (gc_unknown) {
        b->c.gc_unknown_samples++;
        w->counts.gc_unknown_samples++;
    }
}

/* A stack read while it changed is no stack the thread had: its thread-sample counts as one
 * unreadable frame, with that reason, so that it is counted apart and said (never as the
 * functions its torn frames seem to name). */
static const struct snap_frame torn_snap_frame = {.kind = SNAP_FRAME_UNREADABLE,
                                                  .unreadable = SNAP_UNREADABLE_STACK};
static const struct sample_frame torn_sample_frame = {NULL, 0, SAMPLE_OFFSET_UNKNOWN,
                                                      SNAP_FRAME_UNREADABLE,
                                                      SNAP_UNREADABLE_STACK};

static void count_snapshot(struct sampler_window *w, struct sampler_window_bucket *b,
                           const struct snapshot *snap)
{
    bool any_gc = false;
    bool gc_unknown = false;
    size_t n = snap->interps != NULL ? snap->n_interps : 0;
    for (size_t i = 0; i < n; i++) {
        const struct snap_interp *in = &snap->interps[i];
        size_t nt = in->threads != NULL ? in->n_threads : 0;
        for (size_t k = 0; k < nt; k++) {
            const struct snap_thread *t = &in->threads[k];
            struct thread_source th = {in->id,
                                       t->tid,
                                       t->thread_id,
                                       t->name.ptr,
                                       t->name.len,
                                       t->gil == SNAP_YES,
                                       t->on_cpu,
                                       t->in_gc == SNAP_YES,
                                       t->has_exception == SNAP_YES,
                                       true};
            struct frame_source src = {t->frames, NULL, t->frames != NULL ? t->n_frames : 0};
            if (t->frames_torn) {
                src = (struct frame_source){&torn_snap_frame, NULL, 1};
            }
            count_thread(w, b, &th, &src);
            any_gc = any_gc || t->in_gc == SNAP_YES;
            gc_unknown = gc_unknown || t->in_gc == SNAP_UNKNOWN;
        }
    }
    count_whole(w, b, any_gc, gc_unknown);
}

static void count_compact(struct sampler_window *w, struct sampler_window_bucket *b,
                          const struct sample *smp, const enum snap_bool *on_cpu)
{
    bool any_gc = false;
    bool gc_unknown = false;
    for (size_t k = 0; k < smp->n_threads; k++) {
        const struct sample_thread *t = &smp->threads[k];
        struct thread_source th = {t->interp_id,
                                   t->tid,
                                   t->thread_id,
                                   t->name,
                                   t->name_len,
                                   t->gil == SNAP_YES,
                                   on_cpu != NULL ? on_cpu[k] : t->on_cpu,
                                   t->in_gc == SNAP_YES,
                                   t->has_exception == SNAP_YES,
                                   !t->not_read};
        struct frame_source src = {NULL, t->frames, t->n_frames};
        if (t->frames_torn) {
            src = (struct frame_source){NULL, &torn_sample_frame, 1};
        }
        count_thread(w, b, &th, &src);
        any_gc = any_gc || t->in_gc == SNAP_YES;
        gc_unknown = gc_unknown || t->in_gc == SNAP_UNKNOWN;
    }
    count_whole(w, b, any_gc, gc_unknown);
}

/* NOW as the window uses it: a time that is not a number is taken as the last one. */
static double usable_now(struct sampler_window *w, double now)
{
    if (!isfinite(now)) {
        now = isfinite(w->last_now) ? w->last_now : 0;
    }
    w->last_now = now;
    if (isnan(w->started)) {
        w->started = now;
    }
    return now;
}

void sampler_window_add(struct sampler_window *w, const struct snapshot *snap, double now)
{
    struct sampler_window_bucket *b = window_advance(w, usable_now(w, now));
    count_snapshot(w, b, snap);
}

void sampler_window_add_sample(struct sampler_window *w, const struct sample *smp,
                               const enum snap_bool *on_cpu, double now)
{
    struct sampler_window_bucket *b = window_advance(w, usable_now(w, now));
    count_compact(w, b, smp, on_cpu);
}

void sampler_window_add_cpu(struct sampler_window *w, uint32_t ti, uint64_t ns, double now)
{
    struct sampler_window_bucket *b = window_advance(w, usable_now(w, now));
    if (ti >= w->table.threads.n || !sampler_table_thread_at(&w->table, ti)->used) {
        return;
    }
    struct thread_delta *d = thread_delta(w, b, ti);
    if (d != NULL) {
        d->cpu_ns += ns;
        sampler_table_thread_at(&w->table, ti)->cpu_ns += ns;
    }
}

void sampler_window_add_error(struct sampler_window *w, double now)
{
    struct sampler_window_bucket *b = window_advance(w, usable_now(w, now));
    b->c.errors++;
    w->counts.errors++;
}

void sampler_window_clear(struct sampler_window *w)
{
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        struct sampler_window_bucket *b = &w->buckets[i];
        b->number = INT64_MIN;
        memset(&b->c, 0, sizeof b->c);
        b->n_threads = 0;
        b->n_pairs = 0;
    }
    sampler_table_clear(&w->table);
    memset(&w->counts, 0, sizeof w->counts);
    w->newest = INT64_MIN;
    w->started = NAN;
    if (w->heat != NULL) {
        heat_clear(w->heat, w->heat->asked); /* the window's span starts afresh too */
    }
}

int sampler_window_set_heat(struct sampler_window *w, const char *function, size_t function_len,
                            const char *file, size_t file_len, int first_line,
                            const struct py_layout *L, double now, struct pt_error *err)
{
    heat_free(w->heat);
    w->heat = NULL;
    if (function == NULL) {
        return 0;
    }
    w->heat = heat_new(function, function_len, file, file_len, first_line, L, now);
    if (w->heat == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "source heat view");
    }
    return 0;
}

int sampler_window_init(struct sampler_window *w, double window_s, struct pt_error *err)
{
    static const struct sampler_table_limits limits = {
        SAMPLER_MAX_THREADS,
        SAMPLER_MAX_FUNCTIONS,
        SAMPLER_MAX_PAIRS,
        SAMPLER_MAX_NAME_BYTES,
    };
    memset(w, 0, sizeof *w);
    w->buckets = calloc(SAMPLER_BUCKETS, sizeof *w->buckets);
    if (w->buckets == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "sampler window");
    }
    w->width = window_s / SAMPLER_BUCKETS;
    w->last_now = NAN;
    sampler_table_init(&w->table, &limits);
    sampler_window_clear(w);
    return 0;
}

/* The new bucket an old one (number NUMBER, OLD_WIDTH seconds) goes into: the one that holds
 * its last moment, so that its samples slide out no earlier than they would have (and no
 * more than one old bucket later). Never past NEWEST, the bucket of now. */
static int64_t rebucket_number(const struct sampler_window *w, int64_t number, double old_width,
                               int64_t newest)
{
    if (isinf(w->width)) {
        return 0;
    }
    double end = (double)(number + 1) * old_width;
    int64_t k = sampler_window_bucket_number(w, end);
    if ((double)k * w->width >= end) {
        k--; /* END itself begins bucket K: the old one's samples lie before it */
    }
    return k < newest ? k : newest;
}

/* Adds old bucket B's deltas to new bucket NB. False when memory ran out. */
static bool rebucket_merge(struct sampler_window *w, const struct sampler_window_bucket *b,
                           struct sampler_window_bucket *nb)
{
    struct sampler_window_counts *c = &nb->c;
    c->samples += b->c.samples;
    c->errors += b->c.errors;
    c->thread_samples += b->c.thread_samples;
    c->gc_samples += b->c.gc_samples;
    c->gc_unknown_samples += b->c.gc_unknown_samples;
    c->dropped_threads += b->c.dropped_threads;
    c->dropped_frames += b->c.dropped_frames;
    for (uint32_t i = 0; i < b->n_threads; i++) {
        const struct thread_delta *d = &b->threads[i];
        struct thread_delta *to = thread_delta(w, nb, d->thread);
        if (to == NULL) {
            return false;
        }
        to->samples += d->samples;
        to->seen += d->seen;
        to->gil += d->gil;
        to->cpu += d->cpu;
        to->cpu_known += d->cpu_known;
        to->gc += d->gc;
        to->cpu_ns += d->cpu_ns;
    }
    for (uint32_t i = 0; i < b->n_pairs; i++) {
        const struct pair_delta *d = &b->pairs[i];
        struct pair_delta *to = pair_delta(w, nb, d->pair);
        if (to == NULL) {
            return false;
        }
        to->own += d->own;
        to->total += d->total;
        to->own_state += d->own_state;
        to->own_on_cpu += d->own_on_cpu;
    }
    return true;
}

static void buckets_free(struct sampler_window_bucket *buckets)
{
    for (size_t i = 0; buckets != NULL && i < SAMPLER_BUCKETS; i++) {
        free(buckets[i].threads);
        free(buckets[i].pairs);
    }
    free(buckets);
}

/* Forgets where the entries' newest deltas sit: the buckets they sat in are going. */
static void forget_newest(struct sampler_table *t)
{
    for (uint32_t i = 0; i < t->threads.n; i++) {
        sampler_table_thread_at(t, i)->newest.bucket = INT64_MIN;
    }
    for (uint32_t i = 0; i < t->pairs.n; i++) {
        sampler_table_pair_at(t, i)->newest.bucket = INT64_MIN;
    }
}

int sampler_window_resize(struct sampler_window *w, double window_s, double now,
                          struct pt_error *err)
{
    double width = window_s / SAMPLER_BUCKETS;
    if (width == w->width) {
        return 0;
    }
    if (w->heat != NULL) {
        /* Its buckets were numbered by the old width: it starts afresh. */
        heat_clear(w->heat, isfinite(now) ? now : w->last_now);
    }
    if (width < w->width) {
        /* The buckets kept are too coarse to cut to a shorter window. */
        sampler_window_clear(w);
        w->width = width;
        return 0;
    }
    struct sampler_window_bucket *fresh = calloc(SAMPLER_BUCKETS, sizeof *fresh);
    if (fresh == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "sampler window");
    }
    for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
        fresh[i].number = INT64_MIN;
    }
    double old_width = w->width;
    struct sampler_window_bucket *old = w->buckets;
    int64_t old_newest = w->newest;
    if (old_newest != INT64_MIN) {
        /* What the old window has let go of by NOW goes first, and the counts kept reach back
         * to the start of its oldest bucket. */
        now = usable_now(w, now);
        int64_t k = sampler_window_bucket_number(w, now);
        window_advance(w, now);
        old_newest = w->newest;
        double lower = (double)(k - SAMPLER_BUCKETS + 1) * old_width;
        if (w->started < lower) {
            w->started = lower;
        }
    }
    w->buckets = fresh;
    w->width = width;
    w->newest = INT64_MIN;
    forget_newest(&w->table);
    bool ok = true;
    int64_t top = sampler_window_bucket_number(w, w->last_now);
    for (int64_t n = old_newest - SAMPLER_BUCKETS + 1; old_newest != INT64_MIN && n <= old_newest;
         n++) {
        struct sampler_window_bucket *b =
            &old[((n % SAMPLER_BUCKETS) + SAMPLER_BUCKETS) % SAMPLER_BUCKETS];
        if (b->number != n) {
            continue;
        }
        int64_t k = rebucket_number(w, n, old_width, top);
        struct sampler_window_bucket *nb = bucket_slot(w, k);
        nb->number = k;
        w->newest = w->newest == INT64_MIN || k > w->newest ? k : w->newest;
        ok = ok && rebucket_merge(w, b, nb);
    }
    buckets_free(old);
    if (!ok) {
        /* Counts that no bucket would take off again must not stay. */
        sampler_window_clear(w);
        return pt_error_set(err, PT_E_NOMEM, 0, "sampler window: the statistics start afresh");
    }
    return 0;
}

void sampler_window_free(struct sampler_window *w)
{
    if (w->buckets != NULL) {
        for (size_t i = 0; i < SAMPLER_BUCKETS; i++) {
            free(w->buckets[i].threads);
            free(w->buckets[i].pairs);
        }
        free(w->buckets);
        w->buckets = NULL;
    }
    sampler_table_free(&w->table);
    heat_free(w->heat);
    w->heat = NULL;
}
