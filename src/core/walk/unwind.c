/* unwind: walk a target's interpreters, threads and frames into a snapshot. */
#include "config.h"

#include "core/model/snapshot_arena.h"
#include "core/model/snapshot_words.h"
#include "core/walk/unwind.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/clock.h"
#include "core/pyobj/code.h"
#include "core/pyobj/codemark.h"
#include "core/util/error.h"
#include "core/walk/frames.h"
#include "core/walk/gc.h"
#include "core/layout/layout.h"
#include "core/layout/opcodes.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/pthreadtid.h"
#include "core/target/runtime.h"
#include "core/walk/sample.h"
#include "core/model/snapshot.h"
#include "core/asyncio/tasks.h"
#include "core/walk/threadnames.h"
#include "core/walk/unwind_threads.h"
#include "core/walk/unwind_verify.h"
#include "core/walk/waits.h"

/* Notes a part that could not be read: in the snapshot, or counted in the sample. */
void unwind_warn(struct unwind *u, const char *fmt, ...)
{
    va_list ap;
    if (u->snap != NULL) {
        char msg[512];
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snapshot_warn(u->snap, "%s", msg);
        return;
    }
    if (u->sample.out.n_warnings++ == 0) {
        va_start(ap, fmt);
        vsnprintf(u->sample.warning, sizeof u->sample.warning, fmt, ap);
        va_end(ap);
    }
}

struct unwind *unwind_new(struct proc *p, const struct runtime *rt, struct pt_error *err)
{
    struct unwind *u = calloc(1, sizeof *u);
    if (u == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    u->proc = p;
    u->rt = rt;
    u->L = &rt->layout;
    u->codes = code_cache_new(err);
    codemark_init(&u->mark, u->L->code_marker);
    u->generation = CODE_GENERATION_NONE;
    u->names = threadnames_new();
    u->code_buf = malloc((size_t)PROC_IOV_MAX * u->L->code.size);
    unwind_threads_span(u->L, &u->ts_lo, &u->ts_len);
    u->code_guess = malloc(UNWIND_CODE_GUESS * sizeof *u->code_guess);
    u->code_guess_next = malloc(UNWIND_CODE_GUESS * sizeof *u->code_guess_next);
    u->code_pre = malloc((size_t)UNWIND_CODE_GUESS * u->L->code.size);
    u->known.addrs = malloc((size_t)LIMIT_THREADS * sizeof *u->known.addrs);
    if (!layout_has(u->L->thread.native_thread_id)) {
        u->tids = pthreadtid_new();
    }
    /* Room for the threads the process has now, at once: grown a doubling at a time from a
     * few, the arrays are copied and zeroed again at each step (a one-shot dump of 50 threads
     * touched 40 pages for them, 18 sized so). */
    size_t first = proc_thread_count(p) + 2;
    first = first < UNWIND_THREADS_FIRST ? UNWIND_THREADS_FIRST : first;
    first = first > LIMIT_THREADS ? LIMIT_THREADS : first;
    if (u->codes == NULL || u->code_buf == NULL || u->names == NULL ||
        !unwind_threads_reserve(u, first) || u->code_guess == NULL ||
        u->code_guess_next == NULL || u->code_pre == NULL || u->known.addrs == NULL) {
        unwind_free(u);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    /* Snapshots read what each thread waits for; out of memory leaves "wait" null. */
    u->waits = waits_new(u->L);
    /* Snapshots read the GC's generations and records; out of memory for them leaves "gc"
     * null (each thread's in_gc is still known). Samples never read them. */
    u->gc = gc_reader_new(u->proc, u->L);
    u->gc_buf = u->gc != NULL ? malloc(GC_STATE_MAX) : NULL;
    if (u->gc_buf == NULL) {
        gc_reader_free(u->gc);
        u->gc = NULL;
    }
    return u;
}


void unwind_free(struct unwind *u)
{
    if (u == NULL) {
        return;
    }
    gc_reader_free(u->gc);
    waits_free(u->waits);
    free(u->gc_buf);
    tasks_free(u->tasks);
    code_cache_free(u->codes);
    threadnames_free(u->names);
    pthreadtid_free(u->tids);
    free(u->code_buf);
    free(u->instr);
    free(u->known.addrs);
    free(u->snap_strs);
    free(u->ts_buf);
    free(u->id_seen);
    for (size_t i = 0; i < u->cap_ts; i++) {
        frames_release(&u->ts[i].fr);
    }
    free(u->ts);
    free(u->code_addrs);
    free(u->code_fails);
    free(u->idents);
    free(u->name_tids);
    free(u->tid_out);
    free(u->fr_ptrs);
    free(u->tid_pre);
    free(u->code_guess);
    free(u->code_guess_next);
    free(u->code_pre);
    free(u->verify_buf);
    unwind_threads_free_hints(u->hints, u->cap_hints);
    unwind_threads_free_hints(u->next_hints, u->cap_next_hints);
    free(u->hint_index);
    free(u->sample.threads);
    free(u->sample.frames);
    free(u);
}

void unwind_set_tasks(struct unwind *u, bool on)
{
    u->tasks_wanted = on;
    if (!on) {
        tasks_free(u->tasks);
        u->tasks = NULL;
    } else if (u->tasks == NULL) {
        /* Out of memory leaves tasks off; the snapshot then says why they are null. */
        u->tasks = tasks_new(u->proc, u->rt, u->codes, NULL);
    }
}

void unwind_set_once(struct unwind *u, bool on)
{
    u->once = on;
    /* Room for every thread at once: growing it twice or three times on the way (each time
     * copied and the new part zeroed) touches more fresh pages than the thread states it
     * holds, and a fresh page costs more than the reads of a one-shot. A hint only: the walk
     * grows the room as ever when the target has more by then. */
    size_t hint = on ? proc_thread_count(u->proc) : 0;
    if (hint > UNWIND_THREADS_FIRST) {
        (void)unwind_threads_reserve(u, hint < LIMIT_THREADS ? hint : LIMIT_THREADS);
    }
}

struct unwind_counters unwind_get_counters(const struct unwind *u)
{
    struct proc_counters pc = proc_get_counters(u->proc);
    struct code_cache_counters cc = code_cache_get_counters(u->codes);
    return (struct unwind_counters){
        .reads = pc.syscalls,
        .bytes = pc.bytes,
        .failed_reads = u->failed_reads,
        .code_hits = cc.hits + u->trusted_hits,
        .code_misses = cc.misses,
        .code_entries = cc.entries,
        .kept_stacks = u->idle_threads,
    };
}

/* The asyncio tasks of one interpreter, when asked for (snapshots only). */
static int read_tasks(struct unwind *u, uint64_t interp, uint64_t modules,
                      const struct thread_ctx *ts, size_t n, struct snap_interp *out)
{
    struct pt_error e = {0};
    if (u->snap == NULL) {
        return 0;
    }
    if (u->tasks == NULL) {
        unwind_warn(u, "interpreter %" PRId64 ": asyncio tasks not read: %s", out->id,
                    u->tasks_wanted ? "out of memory" : "not asked for");
        return 0;
    }
    struct tasks_thread *th = malloc((n ? n : 1) * sizeof *th);
    if (th == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        th[i] = (struct tasks_thread){ts[i].addr, (pid_t)ts[i].native_id, ts[i].thread_id};
    }
    int rc = tasks_read_interp(u->tasks, u->snap, interp, modules, th, n, out, &e);
    free(th);
    return rc;
}

/* The interpreter names its main thread state from 3.13 on; before, the runtime keeps the
 * main thread's ident, which only the main interpreter (id 0) runs Python under. */
static bool thread_is_main(const struct unwind *u, const struct thread_ctx *t,
                           const struct interp_fields *in)
{
    if (layout_has(u->L->interp.threads_main)) {
        return in->threads_main != 0 && in->threads_main == t->addr;
    }
    return in->id == 0 && in->main_thread_ident != 0 && t->thread_id == in->main_thread_ident;
}

/* The kernel thread threading's name of T must have run on (0: any). A name goes only to the
 * thread its Thread ran on, since idents are reused once a thread ends (threadnames.h); the
 * main thread is the exception: its ident is its own while it lives, and in a child of fork()
 * threading updates that Thread's ident but, before 3.13, not its native_id (the parent's). */
static uint64_t name_tid(const struct unwind *u, const struct thread_ctx *t,
                         const struct interp_fields *in)
{
    return thread_is_main(u, t, in) ? 0 : t->native_id;
}

/* Thread names are re-read at most this often unless a new thread shows up. */
static const double NAMES_MAX_AGE = 2.0;

static void update_names(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                         const struct thread_ctx *ts, size_t n)
{
    struct pt_error e = {0};
    for (size_t i = 0; i < n; i++) {
        u->idents[i] = ts[i].thread_id;
        u->name_tids[i] = name_tid(u, &ts[i], in);
    }
    if (in->modules != 0 &&
        threadnames_update(u->names, u->proc, u->L, interp, in->modules, u->idents,
                           u->name_tids, n, clock_now(), NAMES_MAX_AGE, &e) < 0) {
        unwind_warn(u, "interpreter %" PRId64 ": thread names unavailable: %s", (int64_t)in->id,
                    e.msg);
    }
}

/* Where the frame that started a running collection sits in T's chain (3.15+ marks it):
 * its index, or -1 when the collection is not this thread's or unmarked. */
static long gc_frame_index(const struct thread_ctx *t, const struct interp_fields *in)
{
    if (in->gc_collecting == 0 || in->gc_frame == 0) {
        return -1;
    }
    for (size_t i = 0; i < t->fr.n_frames; i++) {
        if (t->fr.frames[i].addr == in->gc_frame) {
            return (long)i;
        }
    }
    return -1;
}

/* Whether T runs a collection: where the interpreter marks the frame that started it (3.15+),
 * the thread whose chain holds that frame; else the thread state gcwatch proved runs it, and
 * unknown for all when it proved nothing (the GIL's holder need not be the collector: the
 * collector may have released the GIL in a finalizer). GC_AT: that frame's index in T's chain,
 * or -1. */
static enum snap_bool thread_in_gc(const struct thread_ctx *t, const struct interp_fields *in,
                                   long gc_at)
{
    if (in->gc_collecting == 0) {
        return SNAP_NO;
    }
    if (in->gc_frame != 0) {
        return gc_at >= 0 ? SNAP_YES : SNAP_NO;
    }
    if (in->gc_collector != 0) {
        return t->addr == in->gc_collector ? SNAP_YES : SNAP_NO;
    }
    return SNAP_UNKNOWN;
}

/* The collector gcwatch named, if it is exactly one of the interpreter's N threads TS and no
 * other thread state shares its OS thread; else 0 (then no thread is said to be outside the
 * collection). */
static uint64_t confirmed_collector(const struct thread_ctx *ts, size_t n, uint64_t collector)
{
    const struct thread_ctx *found = NULL;
    for (size_t i = 0; collector != 0 && i < n; i++) {
        if (ts[i].addr == collector) {
            found = &ts[i];
        }
    }
    for (size_t i = 0; found != NULL && i < n; i++) {
        if (&ts[i] != found && ts[i].thread_id == found->thread_id) {
            return 0;
        }
    }
    return found != NULL ? collector : 0;
}

/* The synthetic frame that stands for the collector, called from the frame after it. */
/* How many <native> frames T's stack gets with --native (none without it). */
static size_t natives_in(const struct unwind *u, const struct frames_thread *fr)
{
    size_t n = 0;
    if (!u->native) {
        return 0;
    }
    for (size_t i = 0; i < fr->n_frames; i++) {
        n += fr->frames[i].native_below;
    }
    return n;
}

/* A frame the interpreter marks (KIND: SNAP_FRAME_GC or SNAP_FRAME_NATIVE), named as CPython's
 * unwinder names it ("<GC>", "<native>"). */
static void marker_frame(struct snapshot *s, struct snap_frame *f, enum snap_frame_kind kind)
{
    const char *name = snapshot_frame_label(kind);
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->function = snapshot_strdup(s, name, strlen(name));
    f->name = f->function;
    f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
}

/* A frame whose code object could not be read, shown and counted as what happened. */
static void unreadable_frame(struct snapshot *s, struct snap_frame *f, enum snap_unreadable why)
{
    const char *label = snapshot_unreadable_label(why);
    memset(f, 0, sizeof *f);
    f->kind = SNAP_FRAME_UNREADABLE;
    f->unreadable = why;
    f->function = snapshot_strdup(s, label, strlen(label));
    f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
}

/* F's function, name and file: those of the code object at CODE_ADDR (decoded as CI), shared
 * with the snapshot's other frames of it when the table has room. */
static void code_strings(struct unwind *u, uint64_t code_addr, const struct code_info *ci,
                         struct snap_frame *f)
{
    struct snapshot *s = u->snap;
    if (u->snap_strs == NULL) {
        u->snap_strs = calloc(UNWIND_SNAP_STRS, sizeof *u->snap_strs);
    }
    struct unwind_code_strs *e = NULL;
    uint64_t h = (code_addr >> 4) * 0x9E3779B97F4A7C15u;
    for (size_t k = 0; u->snap_strs != NULL && k < 8; k++) {
        struct unwind_code_strs *c = &u->snap_strs[((h >> 40) + k) & (UNWIND_SNAP_STRS - 1)];
        /* The same decoded entry: the code cache may have let the address's go and decoded
         * another object there since. */
        if (c->serial == u->snap_serial && c->code_addr == code_addr && c->ci == ci &&
            c->function.len == ci->qualname_len && c->name.len == ci->name_len &&
            c->file.len == ci->filename_len) {
            f->function = c->function;
            f->name = c->name;
            f->file = c->file;
            return;
        }
        if (c->serial != u->snap_serial) {
            e = c;
            break;
        }
    }
    f->function = snapshot_strdup(s, ci->qualname, ci->qualname_len);
    f->name = snapshot_strdup(s, ci->name, ci->name_len);
    f->file = snapshot_strdup(s, ci->filename, ci->filename_len);
    if (e != NULL && f->function.ptr != NULL && f->name.ptr != NULL && f->file.ptr != NULL) {
        *e = (struct unwind_code_strs){u->snap_serial, code_addr, ci, f->function, f->name,
                                       f->file};
    }
}

/* Frame I of T's chain, of code CI, as a snapshot frame F: names, position, and (--opcodes)
 * queued for its instruction. */
static void python_frame(struct unwind *u, const struct thread_ctx *t, size_t i,
                         struct code_info *ci, struct snap_frame *f)
{
    const struct frames_raw *raw = &t->fr.frames[i];
    struct linetable_loc loc = {-1, -1, -1, -1};
    struct pt_error e = {0};
    f->kind = SNAP_FRAME_PYTHON;
    f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
    code_strings(u, raw->code_addr, ci, f);
    f->first_line = ci->firstlineno;
    if (code_location(ci, u->L, raw->instr_ptr, &loc, &e) < 0) {
        unwind_warn(u, "thread %" PRIu64 ": frame %zu (%.*s): %s", t->native_id, i,
                    (int)ci->qualname_len, ci->qualname, e.msg);
    }
    unwind_instr_add(u, f, ci, raw->instr_ptr);
    f->line = loc.line;
    f->end_line = loc.end_line;
    f->col = loc.col;
    f->end_col = loc.end_col;
}

/* Turns a thread's raw frames into snapshot frames. A frame whose code object could not be
 * read is an unreadable frame; when it names no code object at all the frames beyond it were
 * reached through memory that was no frame, and are left out (the stack is marked truncated).
 * A position that cannot be decoded stays unknown, with a warning. GC_AT: the index of the
 * frame the <GC> frame goes above, or -1. */
static int build_frames(struct unwind *u, const struct thread_ctx *t, long gc_at,
                        struct snap_thread *out)
{
    struct snapshot *s = u->snap;
    const struct frames_thread *fr = &t->fr;
    size_t n = fr->n_frames + (gc_at >= 0) + natives_in(u, fr);
    out->frames = snapshot_alloc_array(s, n ? n : 1, sizeof *out->frames);
    if (out->frames == NULL) {
        return -1;
    }
    size_t k = 0;
    bool cut = false;
    for (size_t i = 0; i < fr->n_frames && !cut; i++) {
        if (gc_at >= 0 && (long)i == gc_at) {
            marker_frame(s, &out->frames[k++], SNAP_FRAME_GC);
        }
        struct snap_frame *f = &out->frames[k++];
        enum snap_unreadable why;
        struct code_info *ci = unwind_code_of(u, &fr->frames[i], &why);
        if (ci == NULL) {
            unreadable_frame(s, f, why);
            cut = why == SNAP_UNREADABLE_STACK;
        } else {
            python_frame(u, t, i, ci, f);
        }
        /* --native: below this frame, where C code called into it (a <GC> frame there says
         * more). */
        if (u->native && fr->frames[i].native_below && !cut && (long)i + 1 != gc_at) {
            marker_frame(s, &out->frames[k++], SNAP_FRAME_NATIVE);
        }
    }
    out->n_frames = k;
    out->frames_truncated = fr->truncated || fr->failed || cut;
    out->frames_torn = fr->torn;
    return 0;
}

static void fill_thread(struct unwind *u, uint64_t interp, const struct thread_ctx *t,
                        const struct interp_fields *in, struct snap_thread *out)
{
    struct snapshot *s = u->snap;
    struct proc_task_stat st;
    size_t name_len;
    uint64_t tid = name_tid(u, t, in);
    const char *name = threadnames_get(u->names, interp, t->thread_id, tid, &name_len);
    if (name != NULL) {
        out->name = snapshot_strdup(s, name, name_len);
    } else if (threadnames_is_unreadable(u->names, interp, t->thread_id, tid)) {
        unwind_warn(u, "thread %" PRIu64 ": its threading name is not a readable str",
                    t->native_id);
    }
    out->tid = (pid_t)t->native_id;
    out->thread_id = t->thread_id;
    out->main = thread_is_main(u, t, in);
    out->gil = t->gil;
    out->gil_requested = t->gil_requested;
    out->has_exception = t->has_exception;
    out->on_cpu = SNAP_UNKNOWN;
    if (out->tid > 0 && proc_task_stat(u->proc, out->tid, &st, NULL) == 0) {
        out->on_cpu = st.state == 'R' ? SNAP_YES : SNAP_NO;
    }
    long gc_at = gc_frame_index(t, in);
    out->in_gc = thread_in_gc(t, in, gc_at);
    if (build_frames(u, t, u->no_gc_frames ? -1 : gc_at, out) < 0) {
        unwind_warn(u, "out of memory building frames");
    }
}

/* The interpreter's GC state into OUT->gc, and which of its threads runs a collection. -1 only
 * on out of memory. */
static int read_gc(struct unwind *u, const struct interp_fields *in, bool main_interp,
                   struct snap_interp *out)
{
    struct pt_error e = {0};
    out->gc.present = false;
    /* Before 3.9 one GC serves every interpreter: it is shown once, with the main one. */
    if (!layout_has(u->L->interp.gc) && !main_interp) {
        return 0;
    }
    /* No GC state known (before 3.7 it is statics of Modules/gcmodule.c, found by symbol; a
     * binary that does not name them all leaves it unknown): null, and said so. */
    if (in->gc_addr == 0 && u->gc != NULL) {
        unwind_warn(u,
                    "interpreter %" PRId64 ": GC not shown: pytop does not know where Python %s "
                    "keeps the GC's state",
                    out->id, u->rt->version);
        return 0;
    }
    if (in->gc_state == NULL) {
        return 0;
    }
    if (gc_parse(u->gc, u->snap, out->id, in->gc_addr, in->gc_state, in->gc_len, &out->gc, &e) <
        0) {
        return -1;
    }
    for (size_t i = 0; out->gc.collecting == SNAP_YES && i < out->n_threads; i++) {
        if (out->threads[i].in_gc == SNAP_YES) {
            out->gc.thread = out->threads[i].tid;
            break;
        }
    }
    return 0;
}

/* Leaves *ITEMS allocated even when WANT is 0 (an interpreter without threads, a thread
 * without frames), so that the sample's arrays are never NULL plus an offset. */
static bool sample_reserve(void **items, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap && *items != NULL) {
        return true;
    }
    size_t ncap = *cap ? *cap * 2 : 64;
    ncap = ncap < want ? want : ncap;
    void *fresh = realloc(*items, ncap * size);
    if (fresh == NULL) {
        return false;
    }
    *items = fresh;
    *cap = ncap;
    return true;
}

/* Adds one interpreter's threads to the compact sample. Frame pointers are set once the
 * sample is complete (the frame array may still move). */
static void sample_threads(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                           const struct thread_ctx *ts, size_t n)
{
    struct sample_buf *sb = &u->sample;
    if (!sample_reserve((void **)&sb->threads, &sb->cap_threads, sb->n_threads + n,
                        sizeof *sb->threads)) {
        unwind_warn(u, "out of memory for the sample");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct thread_ctx *t = &ts[i];
        const struct frames_thread *fr = &t->fr;
        long gc_at = gc_frame_index(t, in);
        long gc_shown = u->no_gc_frames ? -1 : gc_at;
        size_t nf = fr->n_frames + (gc_shown >= 0) + natives_in(u, fr);
        if (!sample_reserve((void **)&sb->frames, &sb->cap_frames, sb->n_frames + nf,
                            sizeof *sb->frames)) {
            unwind_warn(u, "out of memory for the sample");
            return;
        }
        struct sample_thread *out = &sb->threads[sb->n_threads++];
        out->interp_id = (int64_t)in->id;
        out->tid = (pid_t)t->native_id;
        out->thread_id = t->thread_id;
        out->name = threadnames_get(u->names, interp, t->thread_id, name_tid(u, t, in),
                                    &out->name_len);
        out->main = thread_is_main(u, t, in);
        out->gil = t->gil;
        out->gil_requested = t->gil_requested;
        out->on_cpu = SNAP_UNKNOWN;
        out->has_exception = t->has_exception;
        out->in_gc = thread_in_gc(t, in, gc_at);
        out->frames_torn = fr->torn;
        out->not_read = t->not_read;
        /* An index until sample_finish() turns it into a pointer. */
        out->frames = (const struct sample_frame *)(uintptr_t)sb->n_frames;
        struct sample_frame *f = sb->frames + sb->n_frames;
        bool cut = false;
        nf = 0;
        /* Frames are taken as build_frames() takes them, unreadable ones included. A settled
         * frame carries its cache entry (unwind_code_of()'s answer, without the call). */
        const struct frames_raw *raws = fr->frames;
        const size_t n_raw = fr->n_frames;
        static const struct sample_frame native = {NULL, 0, SAMPLE_OFFSET_UNKNOWN,
                                                   SNAP_FRAME_NATIVE, SNAP_UNREADABLE_NONE};
        for (size_t j = 0; j < n_raw && !cut; j++) {
            if ((long)j == gc_shown) { /* < 0: no such frame */
                f[nf++] = (struct sample_frame){NULL, 0, SAMPLE_OFFSET_UNKNOWN, SNAP_FRAME_GC,
                                                SNAP_UNREADABLE_NONE};
            }
            const struct frames_raw *raw = &raws[j];
            struct code_info *ci = raw->code;
            if (ci != NULL) {
                f[nf++] = (struct sample_frame){ci, ci->serial, raw->offset, SNAP_FRAME_PYTHON,
                                                SNAP_UNREADABLE_NONE};
            } else {
                enum snap_unreadable why;
                unwind_code_of(u, raw, &why);
                f[nf++] = (struct sample_frame){NULL, 0, SAMPLE_OFFSET_UNKNOWN,
                                                SNAP_FRAME_UNREADABLE, why};
                cut = why == SNAP_UNREADABLE_STACK;
            }
            if (u->native && raw->native_below && !cut && (long)j + 1 != gc_shown) {
                f[nf++] = native;
            }
        }
        out->frames_truncated = fr->truncated || fr->failed || cut;
        out->n_frames = nf;
        sb->n_frames += nf;
    }
}

static void sample_finish(struct sample_buf *sb)
{
    for (size_t i = 0; i < sb->n_threads; i++) {
        sb->threads[i].frames = sb->frames + (uintptr_t)sb->threads[i].frames;
    }
    sb->out.threads = sb->threads;
    sb->out.n_threads = sb->n_threads;
    sb->out.warning = sb->out.n_warnings > 0 ? sb->warning : "";
}

/* What the N threads of the interpreter at INTERP wait for (waits.c), into OUT's threads. */
static void read_waits(struct unwind *u, uint64_t interp, const struct thread_ctx *ts, size_t n,
                       struct snap_interp *out)
{
    if (u->waits == NULL || n == 0) {
        return;
    }
    struct waits_thread *wt = snapshot_alloc_array(u->snap, n, sizeof *wt);
    if (wt == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        wt[i] = (struct waits_thread){&out->threads[i], ts[i].fr.frames, ts[i].fr.n_frames};
    }
    const struct py_layout *L = u->L;
    uint64_t gil = layout_has(L->interp.gil_holder) ? interp + L->interp.gil_holder
                   : layout_has(L->runtime.gil_holder) ? u->rt->runtime_addr + L->runtime.gil_holder
                                                       : 0;
    waits_read_interp(u->waits, u->proc, u->snap, gil, wt, n);
}

static int unwind_interp(struct unwind *u, uint64_t interp, struct interp_fields *in,
                         bool main_interp, struct snap_interp *out)
{
    size_t n = unwind_threads_collect(u, interp, in, main_interp);
    struct thread_ctx *ts = u->ts;
    in->gc_collector = confirmed_collector(ts, n, in->gc_collector);
    /* Names are read again (every NAMES_MAX_AGE, or for a new thread) by snapshots, which the
     * live view and batch take once per refresh; samples only take them over, after the first
     * has read them once. Reading a name costs a dozen reads a thread. */
    if (u->snap != NULL || !u->names_read) {
        update_names(u, interp, in, ts, n);
        u->names_read = true;
    }
    unwind_threads_read_cframes(u, ts, n);
    unwind_threads_read_tids(u, ts, n, in);
    unwind_threads_unshare(u, ts, n);
    unwind_threads_give_hints(u, ts, n);
    /* Idle threads keep the stack the last walk read (unwind_threads.c); the others are
     * walked. */
    size_t n_walk = 0;
    for (size_t i = 0; i < n; i++) {
        /* --active-only: a thread known not to hold the GIL is not read (one whose holding is
         * not known is). */
        ts[i].not_read = u->active_only && u->snap == NULL && ts[i].gil == SNAP_NO;
        if (ts[i].not_read) {
            frames_skip(&ts[i].fr);
            ts[i].idle = false;
            continue;
        }
        if (ts[i].idle) {
            u->idle_threads++;
            continue;
        }
        ts[i].fr.keep_links = u->snap != NULL;
        u->fr_ptrs[n_walk++] = &ts[i].fr;
    }
    frames_walk(u->proc, u->L, u->fr_ptrs, n_walk);
    /* A snapshot's stacks are what is drawn and written: each is checked against a later copy
     * (samples keep their one read and count torn stacks apart). */
    if (u->snap != NULL) {
        unwind_verify_stacks(u, ts, n);
    }
    for (size_t i = 0; i < n; i++) {
        if (ts[i].fr.failed) {
            unwind_warn(u, "thread %" PRIu64 ": stack cut short: %s", ts[i].native_id,
                        ts[i].fr.error);
        }
    }
    unwind_threads_keep_hints(u, ts, n);
    unwind_threads_exc_chains(u, ts, n);
    /* An audit walk reads what the marker vouches for all the same: a code object found
     * replaced under it ends the trust (a marker that does not move, read at a wrong place,
     * serves stale names only until then). */
    uint64_t contradicted = code_cache_get_counters(u->codes).contradicted;
    unwind_code_load(u, ts, n, main_interp,
               main_interp && u->generation != CODE_GENERATION_NONE && !u->auditing);
    if (main_interp && code_cache_get_counters(u->codes).contradicted != contradicted) {
        codemark_fail(&u->mark, "a code object it vouched for was replaced");
    }
    for (size_t i = 0; i < n; i++) {
        unwind_code_settle(u, &ts[i]);
        /* A stack read (or kept) cleanly may be kept by the next walk if the thread idles. */
        const struct frames_thread *fr = &ts[i].fr;
        bool clean = main_interp && fr->done && !fr->failed && !fr->torn;
        ts[i].kept_walk = clean ? u->walk_serial : 0;
        ts[i].kept_frame_input = layout_has(u->L->thread.cframe) ? ts[i].cframe
                                                                  : fr->current_frame;
    }
    if (u->snap == NULL) {
        sample_threads(u, interp, in, ts, n);
        return 0;
    }
    out->id = (int64_t)in->id;
    out->threads = snapshot_alloc(u->snap, (n ? n : 1) * sizeof *out->threads);
    if (out->threads == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        fill_thread(u, interp, &ts[i], in, &out->threads[i]);
    }
    out->n_threads = n;
    read_waits(u, interp, ts, n, out);
    if (read_gc(u, in, main_interp, out) < 0) {
        return -1;
    }
    return read_tasks(u, interp, in->modules, ts, n, out);
}

void unwind_set_holder_only(struct unwind *u, bool on)
{
    u->holder_only = on;
}

void unwind_set_active_only(struct unwind *u, bool on)
{
    u->active_only = on;
}

void unwind_set_native(struct unwind *u, bool on)
{
    u->native = on;
}

void unwind_set_opcodes(struct unwind *u, bool on)
{
    u->opcodes = on;
}

void unwind_set_gc_frames(struct unwind *u, bool on)
{
    u->no_gc_frames = !on;
}

void unwind_name_python(const struct runtime *rt, struct snapshot *s)
{
    s->python.version = snapshot_strdup(s, rt->version, strlen(rt->version));
    s->python.hexversion = rt->layout.hexversion;
    s->python.free_threaded = rt->layout.free_threaded;
    s->python.debug_build = rt->debug_build ? SNAP_YES : SNAP_NO;
    s->python.binary = snapshot_strdup(s, rt->binary, strlen(rt->binary));
}

/* The walk's generation, from the code marker of its first interpreter (at ADDR, fields IN):
 * what the code cache may trust in this walk. */
static void take_marker(struct unwind *u, uint64_t addr, const struct interp_fields *in)
{
    u->generation = codemark_take(&u->mark, addr, in->code_marker_read, in->code_marker);
    /* A snapshot's reads may be served from the read-ahead copy, whose regions were read in
     * address order before the walk (proc_readahead_begin()): a code object there may be older
     * than the marker. So it trusts nothing, and nothing it reads is vouched for later. */
    if (u->snap != NULL) {
        u->generation = CODE_GENERATION_NONE;
    }
    if (u->mark.epoch != u->mark_epoch) {
        code_cache_distrust(u->codes);
        u->mark_epoch = u->mark.epoch;
    }
    code_cache_set_generation(u->codes, u->generation,
                              codemark_version_below(&u->mark, u->generation));
    u->auditing = ++u->walks % UNWIND_AUDIT_EVERY == 0;
}

/* One walk over every interpreter, into u->snap when set, else into the compact sample.
 * INTERPS receives the snapshot's interpreters (LIMIT_INTERPRETERS of room). */
static int walk(struct unwind *u, struct snap_interp *interps, size_t *n_interps,
                struct pt_error *err)
{
    struct runtime_fields rf;
    struct interp_fields in0;
    bool in0_ok;
    size_t n = 0;
    u->n_next_hints = 0; /* what a failed walk left */
    code_cache_begin(u->codes);
    unwind_threads_idle_begin(u);
    if (unwind_threads_read_head(u, &rf, &in0, &in0_ok, err) < 0) {
        return -1;
    }
    uint64_t addr = rf.interpreters_head;
    while (addr != 0 && n < LIMIT_INTERPRETERS) {
        struct interp_fields in;
        struct pt_error e = {0};
        if (n == 0 && in0_ok) {
            in = in0;
        } else if (unwind_threads_read_interp(u, addr, &rf, &in, &e) < 0) {
            if (n == 0) {
                *err = e;
                return -1;
            }
            unwind_warn(u, "interpreter list cut short: %s", e.msg);
            break;
        }
        if (n == 0) {
            take_marker(u, addr, &in);
        }
        if (interps != NULL) {
            memset(&interps[n], 0, sizeof interps[n]);
        }
        if (unwind_interp(u, addr, &in, n == 0, interps != NULL ? &interps[n] : NULL) < 0) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        n++;
        addr = in.next;
    }
    if (addr != 0) {
        unwind_warn(u, "more than %d interpreters, rest not shown", LIMIT_INTERPRETERS);
    }
    if (n == 0) {
        u->known.interp = 0;
    }
    unwind_threads_commit_hints(u);
    unwind_threads_idle_end(u);
    *n_interps = n;
    return 0;
}

struct snapshot *unwind_snapshot(struct unwind *u, struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    struct snap_interp interps[LIMIT_INTERPRETERS];
    size_t n = 0;
    if (s == NULL) {
        return NULL;
    }
    s->pid = proc_pid(u->proc);
    s->time = clock_wall();
    unwind_name_python(u->rt, s);
    u->snap = s;
    u->snap_serial++;
    /* Snapshots repeat once per refresh, and most of what they read (above all the task graph)
     * has not moved: what the last one read is read again in a few batched calls first. */
    if (!u->once) {
        proc_readahead_begin(u->proc);
    }
    u->n_instr = 0;
    int rc = walk(u, interps, &n, err);
    /* --opcodes: the instructions' units, read as part of the snapshot (and so read ahead by
     * the next one). */
    if (rc == 0 && u->opcodes) {
        s->opcodes = unwind_opcode_table(u);
        if (s->opcodes != NULL) {
            unwind_instr_read(u, s);
        } else {
            snapshot_warn(s, "instructions not read: no instruction table for this version");
        }
    }
    u->n_instr = 0;
    proc_readahead_end(u->proc);
    u->snap = NULL;
    if (rc < 0) {
        snapshot_free(s);
        return NULL;
    }
    s->interps = snapshot_alloc(s, (n ? n : 1) * sizeof *s->interps);
    if (s->interps == NULL) {
        snapshot_free(s);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    memcpy(s->interps, interps, n * sizeof *interps);
    s->n_interps = n;
    if (u->waits != NULL) {
        waits_finish(u->waits, s);
    }
    return s;
}

const struct sample *unwind_sample(struct unwind *u, struct pt_error *err)
{
    struct sample_buf *sb = &u->sample;
    size_t n = 0;
    sb->n_threads = 0;
    sb->n_frames = 0;
    sb->out = (struct sample){0};
    sb->warning[0] = '\0';
    if (walk(u, NULL, &n, err) < 0) {
        return NULL;
    }
    sample_finish(sb);
    return &sb->out;
}
