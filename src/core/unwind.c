/* unwind: walk a target's interpreters, threads and frames into a snapshot. */
#include "config.h"

#include "core/unwind.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "core/code.h"
#include "core/error.h"
#include "core/frames.h"
#include "core/gc.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"
#include "core/runtime.h"
#include "core/snapshot.h"
#include "core/tasks.h"
#include "core/threadnames.h"

/* What one thread state says, and where its frames are. */
struct thread_ctx {
    uint64_t addr;
    uint64_t next;
    uint64_t thread_id;
    uint64_t native_id;
    uint64_t cframe;         /* the current _PyCFrame (3.11, 3.12); 0 otherwise */
    enum snap_bool gil;
    enum snap_bool gil_requested;
    enum snap_bool has_exception;
    struct frames_thread fr;
};

/* The interpreter-state fields the walk needs, read in one batch. */
struct interp_fields {
    uint64_t id;
    uint64_t next;
    uint64_t threads_head;
    uint64_t threads_main;
    uint64_t gil_locked;
    uint64_t gil_holder;
    uint64_t code_generation;
    uint64_t gc_collecting;
    uint64_t gc_frame;           /* the frame that started the collection (3.15+); 0 none */
    uint64_t modules;
    uint64_t main_thread_ident;  /* from the runtime; 0 unknown */
    uint64_t gc_addr;            /* the GC state this interpreter uses; 0 unknown */
    uint8_t *gc_state;           /* its bytes, when the snapshot reads the GC (u->gc) */
    size_t gc_len;
};

/* The runtime-wide fields, read once per snapshot. */
struct runtime_fields {
    uint64_t interpreters_head;
    uint64_t main_thread;
    uint64_t gil_locked;
    uint64_t gil_holder;
    uint64_t gc_collecting;
};

/* The frames one thread's walk had to read one by one, remembered for the next walk. */
struct chain_hint {
    uint64_t tstate;
    uint64_t *addrs;
    size_t n;
};

/* A thread's ident (its pthread_t) and the kernel id found in its struct pthread. */
struct tid_pair {
    uint64_t ident;
    pid_t tid;
};

/* The thread states one interpreter had at the last snapshot, read again in one batch. */
struct known_threads {
    uint64_t interp;
    size_t n;
    uint64_t addrs[LIMIT_THREADS];
};

struct unwind {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct code_cache *codes;
    struct threadnames *names;
    uint8_t *code_buf;       /* raw code structs of one batch */
    uint8_t *ts_buf;         /* LIMIT_THREADS thread states */
    struct known_threads known;
    /* Before 3.11 thread states hold no kernel thread id; glibc keeps it in its struct pthread,
     * at an offset found once by looking for the main thread's id (= the pid). 0: not yet. */
    uint64_t pthread_tid_at;
    bool pthread_tid_failed;
    struct tid_pair *tids;   /* (ident, tid) pairs the last snapshot confirmed, by ident */
    size_t n_tids;
    /* Hints of the last snapshot (sorted by thread state) and those of the one being taken;
     * at most LIMIT_THREADS each. */
    struct chain_hint *hints;
    size_t n_hints;
    struct chain_hint *next_hints;
    size_t n_next_hints;
    struct tasks *tasks;     /* NULL: tasks are not read */
    struct gc_reader *gc;    /* NULL: the GC's generations are not read (in_gc still is) */
    uint8_t *gc_buf;         /* GC_STATE_MAX bytes */
};

static void drop_hints(struct chain_hint *h, size_t *n)
{
    for (size_t i = 0; h != NULL && i < *n; i++) {
        free(h[i].addrs);
    }
    *n = 0;
}

static int cmp_hint(const void *a, const void *b)
{
    const struct chain_hint *x = a;
    const struct chain_hint *y = b;
    return x->tstate < y->tstate ? -1 : x->tstate > y->tstate;
}

/* The hints this snapshot gathered become the next one's. */
static void commit_hints(struct unwind *u)
{
    drop_hints(u->hints, &u->n_hints);
    struct chain_hint *t = u->hints;
    u->hints = u->next_hints;
    u->n_hints = u->n_next_hints;
    u->next_hints = t;
    u->n_next_hints = 0;
    qsort(u->hints, u->n_hints, sizeof *u->hints, cmp_hint);
}

/* Hands each thread the frames its walk read one by one last time, then keeps this walk's. */
static void give_hints(const struct unwind *u, const struct thread_ctx *ts,
                       struct frames_thread *fr, size_t n)
{
    for (size_t i = 0; i < n && u->n_hints > 0; i++) {
        struct chain_hint key = {.tstate = ts[i].addr};
        const struct chain_hint *h = bsearch(&key, u->hints, u->n_hints, sizeof *u->hints,
                                             cmp_hint);
        if (h != NULL) {
            fr[i].hint = h->addrs;
            fr[i].n_hint = h->n;
        }
    }
}

static void keep_hints(struct unwind *u, const struct thread_ctx *ts, struct frames_thread *fr,
                       size_t n)
{
    for (size_t i = 0; i < n && u->n_next_hints < LIMIT_THREADS; i++) {
        if (fr[i].n_read > 0) {
            u->next_hints[u->n_next_hints++] =
                (struct chain_hint){ts[i].addr, fr[i].read_addrs, fr[i].n_read};
            fr[i].read_addrs = NULL;
            fr[i].n_read = 0;
        }
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
    u->names = threadnames_new();
    u->code_buf = malloc((size_t)PROC_IOV_MAX * u->L->code.size);
    u->ts_buf = malloc((size_t)LIMIT_THREADS * u->L->thread.size);
    u->tids = malloc((size_t)LIMIT_THREADS * sizeof *u->tids);
    u->hints = calloc(LIMIT_THREADS, sizeof *u->hints);
    u->next_hints = calloc(LIMIT_THREADS, sizeof *u->next_hints);
    if (u->codes == NULL || u->code_buf == NULL || u->names == NULL || u->ts_buf == NULL ||
        u->tids == NULL || u->hints == NULL || u->next_hints == NULL) {
        unwind_free(u);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    unwind_set_gc(u, true);
    return u;
}

void unwind_set_gc(struct unwind *u, bool on)
{
    if (!on) {
        gc_reader_free(u->gc);
        u->gc = NULL;
    } else if (u->gc == NULL) {
        /* Out of memory leaves the GC off; the snapshot then says nothing of it. */
        u->gc = gc_reader_new(u->proc, u->L);
        if (u->gc_buf == NULL) {
            u->gc_buf = malloc(GC_STATE_MAX);
        }
        if (u->gc_buf == NULL) {
            gc_reader_free(u->gc);
            u->gc = NULL;
        }
    }
}

void unwind_free(struct unwind *u)
{
    if (u != NULL) {
        gc_reader_free(u->gc);
        free(u->gc_buf);
        tasks_free(u->tasks);
        code_cache_free(u->codes);
        threadnames_free(u->names);
        free(u->code_buf);
        free(u->ts_buf);
        free(u->tids);
        drop_hints(u->hints, &u->n_hints);
        drop_hints(u->next_hints, &u->n_next_hints);
        free(u->hints);
        free(u->next_hints);
        free(u);
    }
}

void unwind_set_tasks(struct unwind *u, bool on)
{
    if (!on) {
        tasks_free(u->tasks);
        u->tasks = NULL;
    } else if (u->tasks == NULL) {
        /* Out of memory leaves tasks off; the snapshot then says nothing of them. */
        u->tasks = tasks_new(u->proc, u->rt, u->codes, NULL);
    }
}

/* The asyncio tasks of one interpreter, when asked for. */
static int read_tasks(struct unwind *u, uint64_t interp, uint64_t modules,
                      const struct thread_ctx *ts, size_t n, struct snapshot *s,
                      struct snap_interp *out)
{
    struct pt_error e = {0};
    if (u->tasks == NULL) {
        return 0;
    }
    struct tasks_thread *th = malloc((n ? n : 1) * sizeof *th);
    if (th == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        th[i] = (struct tasks_thread){ts[i].addr, (pid_t)ts[i].native_id, ts[i].thread_id};
    }
    int rc = tasks_read_interp(u->tasks, s, interp, modules, th, n, out, &e);
    free(th);
    return rc;
}

struct unwind_stats unwind_get_stats(const struct unwind *u)
{
    struct unwind_stats st = {
        .code_cache_entries = code_cache_size(u->codes),
        .code_cache_hits = code_cache_hits(u->codes),
    };
    return st;
}

/* Reads the scattered interpreter fields in one system call. Fields the version lacks are 0. */
static int read_interp(struct unwind *u, uint64_t addr, const struct runtime_fields *rf,
                       struct interp_fields *f, struct pt_error *err)
{
    const struct py_layout *L = u->L;
    struct {
        uint64_t off;
        uint64_t *dst;
        size_t len;
    } want[] = {
        {L->interp.id, &f->id, 8},
        {L->interp.next, &f->next, 8},
        {L->interp.threads_head, &f->threads_head, 8},
        {L->interp.threads_main, &f->threads_main, 8},
        {L->interp.gil_locked, &f->gil_locked, 4},
        {L->interp.gil_holder, &f->gil_holder, 8},
        {L->interp.code_object_generation, &f->code_generation, 8},
        {layout_has(L->interp.gc) ? L->interp.gc + L->gc.collecting : LAYOUT_NONE,
         &f->gc_collecting, 4},
        {layout_has(L->interp.gc) && layout_has(L->gc.frame) ? L->interp.gc + L->gc.frame
                                                              : LAYOUT_NONE,
         &f->gc_frame, 8},
        {L->interp.imports_modules, &f->modules, 8},
    };
    struct proc_iov iov[sizeof want / sizeof want[0] + 2];
    size_t n = 0;
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!layout_has(want[i].off) || want[i].off >= LIMIT_OBJECT_READ * 16ull) {
            continue;
        }
        iov[n].addr = addr + want[i].off;
        iov[n].dst = want[i].dst;
        iov[n].len = want[i].len;
        n++;
    }
    /* The GC state: the interpreter's, or before 3.9 the runtime's. */
    if (layout_has(L->interp.gc) && L->interp.gc < LIMIT_OBJECT_READ * 16ull) {
        f->gc_addr = addr + L->interp.gc;
    } else if (layout_has(L->runtime.gc) && L->runtime.gc < L->runtime.size) {
        f->gc_addr = u->rt->runtime_addr + L->runtime.gc;
    }
    bool records = false;
    if (u->gc != NULL && f->gc_addr != 0 && gc_state_len(u->gc) > 0) {
        uint64_t at;
        void *buf;
        size_t len;
        f->gc_state = u->gc_buf;
        f->gc_len = gc_state_len(u->gc);
        iov[n++] = (struct proc_iov){f->gc_addr, f->gc_state, f->gc_len};
        if (gc_records_hint(u->gc, f->gc_addr, &at, &buf, &len)) {
            iov[n++] = (struct proc_iov){at, buf, len};
            records = true;
        }
    }
    int rc = proc_read_many(u->proc, iov, n, err);
    if (rc < 0 && records) {
        /* The records read ahead (the last entry) may be gone; the rest must not go with them. */
        records = false;
        rc = proc_read_many(u->proc, iov, n - 1, err);
    }
    if (rc < 0) {
        return pt_error_prefix(err, "interpreter state at 0x%" PRIx64, addr);
    }
    if (records) {
        gc_records_prefetched(u->gc);
    }
    /* 4-byte fields were read into the low half of a zeroed uint64_t (little-endian hosts). */
    if (!layout_has(L->interp.code_object_generation)) {
        f->code_generation = UINT64_MAX;
    }
    /* Before 3.12 one GIL (and in 3.8 one GC) served the whole runtime. */
    if (!layout_has(L->interp.gil_holder)) {
        f->gil_locked = rf->gil_locked;
        f->gil_holder = rf->gil_holder;
    }
    if (!layout_has(L->interp.gc)) {
        f->gc_collecting = rf->gc_collecting;
    }
    f->main_thread_ident = rf->main_thread;
    return 0;
}

/* Reads the runtime-wide fields of a snapshot in one system call. */
static int read_runtime(struct unwind *u, struct runtime_fields *rf, struct pt_error *err)
{
    const struct py_layout *L = u->L;
    uint64_t base = u->rt->runtime_addr;
    const struct {
        uint64_t off;
        uint64_t *dst;
        size_t len;
    } want[] = {
        {L->runtime.interpreters_head, &rf->interpreters_head, 8},
        {L->runtime.main_thread, &rf->main_thread, 8},
        {L->runtime.gil_locked, &rf->gil_locked, 4},
        {L->runtime.gil_holder, &rf->gil_holder, 8},
        {L->runtime.gc_collecting, &rf->gc_collecting, 4},
    };
    struct proc_iov iov[sizeof want / sizeof want[0]];
    size_t n = 0;
    memset(rf, 0, sizeof *rf);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (layout_has(want[i].off) && want[i].off < L->runtime.size) {
            iov[n++] = (struct proc_iov){base + want[i].off, want[i].dst, want[i].len};
        }
    }
    if (proc_read_many(u->proc, iov, n, err) < 0) {
        return pt_error_prefix(err, "runtime state at 0x%" PRIx64, base);
    }
    return 0;
}

static enum snap_bool read_flag(const uint8_t *buf, size_t size, uint64_t off, unsigned width)
{
    uint64_t v;
    if (!layout_has(off) || !layout_read_uint(buf, size, off, width, &v)) {
        return SNAP_UNKNOWN;
    }
    return v != 0 ? SNAP_YES : SNAP_NO;
}

static enum snap_bool thread_gil(const struct unwind *u, const uint8_t *ts,
                                 const struct interp_fields *in, uint64_t ts_addr)
{
    const struct py_layout *L = u->L;
    uint64_t status;
    switch (L->gil_source) {
    case GIL_FROM_THREAD:
        return read_flag(ts, L->thread.size, L->thread.holds_gil, 4);
    case GIL_FROM_STATUS_BIT:
        if (!layout_read_uint(ts, L->thread.size, L->thread.status, 4, &status)) {
            return SNAP_UNKNOWN;
        }
        return (status >> L->thread.holds_gil_bit) & 1u ? SNAP_YES : SNAP_NO;
    case GIL_FROM_HOLDER:
        return in->gil_locked != 0 && in->gil_holder == ts_addr ? SNAP_YES : SNAP_NO;
    }
    return SNAP_UNKNOWN;
}

/* An exception is being raised (current_exception) or handled (exc_state holds one). */
static enum snap_bool thread_exception(const struct unwind *u, const uint8_t *ts)
{
    const struct py_layout *L = u->L;
    uint64_t cur = 0;
    uint64_t handled = 0;
    bool know_cur = layout_read_u64(ts, L->thread.size, L->thread.current_exception, &cur);
    bool know_handled = layout_read_u64(ts, L->thread.size, L->thread.exc_state_value, &handled);
    if (!know_cur && !know_handled) {
        return SNAP_UNKNOWN;
    }
    if (handled == u->rt->none_addr) {
        handled = 0;
    }
    return cur != 0 || handled != 0 ? SNAP_YES : SNAP_NO;
}

/* Takes what the walk needs out of the thread state TS (L->thread.size bytes) at ADDR. */
static void parse_thread(const struct unwind *u, const uint8_t *ts, uint64_t addr,
                         const struct interp_fields *in, struct thread_ctx *t)
{
    const struct py_layout *L = u->L;
    memset(t, 0, sizeof *t);
    t->addr = addr;
    layout_read_u64(ts, L->thread.size, L->thread.next, &t->next);
    /* 3.11 and 3.12 keep the newest frame in the thread's current _PyCFrame, read later. */
    if (layout_has(L->thread.cframe)) {
        layout_read_u64(ts, L->thread.size, L->thread.cframe, &t->cframe);
    } else {
        layout_read_u64(ts, L->thread.size, L->thread.current_frame, &t->fr.current_frame);
    }
    layout_read_u64(ts, L->thread.size, L->thread.datastack_chunk, &t->fr.chunk_addr);
    layout_read_u64(ts, L->thread.size, L->thread.base_frame, &t->fr.base_frame);
    layout_read_u64(ts, L->thread.size, L->thread.thread_id, &t->thread_id);
    layout_read_u64(ts, L->thread.size, L->thread.native_thread_id, &t->native_id);
    t->gil = thread_gil(u, ts, in, addr);
    t->gil_requested = read_flag(ts, L->thread.size, L->thread.gil_requested, 4);
    if (t->gil == SNAP_YES && t->gil_requested == SNAP_YES) {
        t->gil_requested = SNAP_NO;
    }
    t->has_exception = thread_exception(u, ts);
}

/* Thread names are re-read at most this often unless a new thread shows up. */
static const double NAMES_MAX_AGE = 2.0;

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void update_names(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                         const struct thread_ctx *ts, size_t n, struct snapshot *s)
{
    uint64_t idents[LIMIT_THREADS];
    struct pt_error e = {0};
    for (size_t i = 0; i < n; i++) {
        idents[i] = ts[i].thread_id;
    }
    if (in->modules != 0 &&
        threadnames_update(u->names, u->proc, u->L, interp, in->modules, idents, n,
                           monotonic_seconds(), NAMES_MAX_AGE, &e) < 0) {
        snapshot_warn(s, "interpreter %" PRId64 ": thread names unavailable: %s",
                      (int64_t)in->id, e.msg);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Brings every code object the threads' frames name into the cache: their structs are read in
 * batches of one system call; strings and tables only for objects not cached yet. */
static void load_codes(struct unwind *u, struct thread_ctx *ts, size_t n, bool trust_cache,
                       struct snapshot *s)
{
    const struct py_layout *L = u->L;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += ts[i].fr.n_frames;
    }
    uint64_t *addrs = malloc((total ? total : 1) * sizeof *addrs);
    if (addrs == NULL) {
        snapshot_warn(s, "out of memory reading code objects");
        return;
    }
    /* With a code-object generation (3.14+), an unchanged generation vouches for cached
     * entries, which then cost nothing; without one, each entry is checked against its
     * object's current fields. Only the main interpreter's generation is tracked, so
     * subinterpreters always check. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < ts[i].fr.n_frames; j++) {
            uint64_t a = ts[i].fr.frames[j].code_addr;
            if (!trust_cache || code_cache_find(u->codes, a) == NULL) {
                addrs[k++] = a;
            }
        }
    }
    qsort(addrs, k, sizeof *addrs, cmp_u64);
    size_t uniq = 0;
    for (size_t i = 0; i < k; i++) {
        if (uniq == 0 || addrs[uniq - 1] != addrs[i]) {
            addrs[uniq++] = addrs[i];
        }
    }
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t base = 0; base < uniq; base += PROC_IOV_MAX) {
        size_t m = uniq - base < PROC_IOV_MAX ? uniq - base : PROC_IOV_MAX;
        for (size_t j = 0; j < m; j++) {
            iov[j] = (struct proc_iov){addrs[base + j], u->code_buf + j * L->code.size,
                                       L->code.size};
        }
        bool batch_ok = proc_read_many(u->proc, iov, m, NULL) == 0;
        for (size_t j = 0; j < m; j++) {
            struct pt_error e = {0};
            if ((!batch_ok && proc_read_bytes(u->proc, iov[j].addr, iov[j].dst, iov[j].len,
                                              &e) < 0) ||
                code_cache_get(u->codes, u->proc, L, u->rt->code_type_addr, iov[j].addr,
                               iov[j].dst, &e) == NULL) {
                snapshot_warn(s, "code object at 0x%" PRIx64 ": %s", iov[j].addr, e.msg);
            }
        }
    }
    free(addrs);
}

static struct snap_str arena_str(struct snapshot *s, const char *p, size_t len)
{
    return snapshot_strdup(s, p, len);
}

/* Turns a thread's raw frames into snapshot frames; a frame that cannot be decoded stays with
 * unknown fields and a warning. */
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

/* The synthetic frame that stands for the collector, called from the frame after it. */
static void gc_frame(struct snapshot *s, struct snap_frame *f)
{
    const char *name = snapshot_frame_label(SNAP_FRAME_GC);
    memset(f, 0, sizeof *f);
    f->kind = SNAP_FRAME_GC;
    f->function = snapshot_strdup(s, name, strlen(name));
    f->name = f->function;
    f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
}

/* GC_AT: the index of the frame the <GC> frame goes above, or -1. */
static int build_frames(struct unwind *u, const struct thread_ctx *t, long gc_at,
                        struct snapshot *s, struct snap_thread *out)
{
    const struct frames_thread *fr = &t->fr;
    size_t n = fr->n_frames + (gc_at >= 0);
    out->frames = snapshot_alloc_array(s, n ? n : 1, sizeof *out->frames);
    if (out->frames == NULL) {
        return -1;
    }
    if (gc_at >= 0) {
        gc_frame(s, &out->frames[gc_at]);
    }
    for (size_t i = 0; i < fr->n_frames; i++) {
        struct snap_frame *f = &out->frames[gc_at >= 0 && (long)i >= gc_at ? i + 1 : i];
        struct code_info *ci = code_cache_find(u->codes, fr->frames[i].code_addr);
        struct linetable_loc loc = {-1, -1, -1, -1};
        struct pt_error e = {0};
        f->kind = SNAP_FRAME_PYTHON;
        f->line = f->end_line = f->col = f->end_col = f->first_line = -1;
        if (ci == NULL) {
            continue;
        }
        f->function = arena_str(s, ci->qualname, ci->qualname_len);
        f->name = arena_str(s, ci->name, ci->name_len);
        f->file = arena_str(s, ci->filename, ci->filename_len);
        f->first_line = ci->firstlineno;
        if (code_location(ci, u->L, fr->frames[i].instr_ptr, &loc, &e) < 0) {
            snapshot_warn(s, "thread %" PRIu64 ": frame %zu (%.*s): %s", t->native_id, i,
                          (int)ci->qualname_len, ci->qualname, e.msg);
        }
        f->line = loc.line;
        f->end_line = loc.end_line;
        f->col = loc.col;
        f->end_col = loc.end_col;
    }
    out->n_frames = n;
    out->frames_truncated = fr->truncated || fr->failed;
    return 0;
}

static void fill_thread(struct unwind *u, uint64_t interp, const struct thread_ctx *t,
                        const struct interp_fields *in, struct snapshot *s,
                        struct snap_thread *out)
{
    struct proc_task_stat st;
    size_t name_len;
    const char *name = threadnames_get(u->names, interp, t->thread_id, &name_len);
    if (name != NULL) {
        out->name = snapshot_strdup(s, name, name_len);
    } else if (threadnames_is_unreadable(u->names, interp, t->thread_id)) {
        snapshot_warn(s, "thread %" PRIu64 ": its threading name is not a readable str",
                      t->native_id);
    }
    out->tid = (pid_t)t->native_id;
    out->thread_id = t->thread_id;
    /* The interpreter names its main thread state from 3.13 on; before, the runtime keeps the
     * main thread's ident, which only the main interpreter (id 0) runs Python under. */
    if (layout_has(u->L->interp.threads_main)) {
        out->main = in->threads_main != 0 && in->threads_main == t->addr;
    } else {
        out->main = in->id == 0 && in->main_thread_ident != 0 &&
                    t->thread_id == in->main_thread_ident;
    }
    out->gil = t->gil;
    out->gil_requested = t->gil_requested;
    out->has_exception = t->has_exception;
    out->on_cpu = SNAP_UNKNOWN;
    if (out->tid > 0 && proc_task_stat(u->proc, out->tid, &st, NULL) == 0) {
        out->on_cpu = st.state == 'R' ? SNAP_YES : SNAP_NO;
    }
    /* A collection runs on the thread that holds the GIL; the others cannot be in it. Where
     * the interpreter marks the frame that started it (3.15+), that frame's thread runs it. */
    long gc_at = gc_frame_index(t, in);
    if (in->gc_collecting == 0) {
        out->in_gc = SNAP_NO;
    } else if (in->gc_frame != 0) {
        out->in_gc = gc_at >= 0 ? SNAP_YES : SNAP_NO;
    } else {
        out->in_gc = t->gil == SNAP_YES ? SNAP_YES : t->gil == SNAP_NO ? SNAP_NO : SNAP_UNKNOWN;
    }
    if (build_frames(u, t, gc_at, s, out) < 0) {
        snapshot_warn(s, "out of memory building frames");
    }
}

enum {
    PTHREAD_SCAN = 2048,   /* bytes of the main thread's struct pthread searched for its tid */
};

/* Finds where struct pthread keeps the kernel thread id: the main thread's pthread_t (its
 * thread ident) points at its struct pthread, and the main thread's tid is the pid. The offset
 * must hold the pid exactly once in the searched span, or the guess is refused. */
static void find_pthread_tid(struct unwind *u, uint64_t main_ident)
{
    uint8_t buf[PTHREAD_SCAN];
    uint32_t pid = (uint32_t)proc_pid(u->proc);
    uint64_t found = 0;
    int hits = 0;
    u->pthread_tid_failed = true;
    if (main_ident == 0 || proc_read_bytes(u->proc, main_ident, buf, sizeof buf, NULL) < 0) {
        return;
    }
    for (uint64_t off = 0; off + 4 <= sizeof buf; off += 4) {
        uint64_t v;
        layout_read_uint(buf, sizeof buf, off, 4, &v);
        if (v == pid) {
            found = off;
            hits++;
        }
    }
    if (hits == 1) {
        u->pthread_tid_at = found;
        u->pthread_tid_failed = false;
    }
}

static int cmp_pair(const void *a, const void *b)
{
    const struct tid_pair *x = a;
    const struct tid_pair *y = b;
    return x->ident < y->ident ? -1 : x->ident > y->ident;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a;
    pid_t y = *(const pid_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether the pair IDENT/TID was confirmed by the last snapshot. */
static bool tid_known(const struct unwind *u, uint64_t ident, uint32_t tid)
{
    struct tid_pair key = {ident, (pid_t)tid};
    const struct tid_pair *hit =
        u->n_tids ? bsearch(&key, u->tids, u->n_tids, sizeof *u->tids, cmp_pair) : NULL;
    return hit != NULL && (uint32_t)hit->tid == tid;
}

/* Keeps only the tids in TIDS[0..K) that the process lists among its threads; the listing is
 * read at most once per snapshot, and only when some pair is new. */
static void confirm_tids(struct unwind *u, struct thread_ctx *ts, const uint32_t *tids,
                         size_t k, pid_t *real, size_t *n_real, bool *listed)
{
    for (size_t j = 0; j < k; j++) {
        if (tids[j] == 0) {
            continue;
        }
        if (tid_known(u, ts[j].thread_id, tids[j])) {
            ts[j].native_id = tids[j];
            continue;
        }
        if (!*listed) {
            *listed = true;
            if (proc_tasks(u->proc, real, LIMIT_THREADS, n_real, NULL) < 0) {
                *n_real = 0;
            }
        }
        pid_t want = (pid_t)tids[j];
        if (*n_real > 0 && bsearch(&want, real, *n_real, sizeof *real, cmp_pid) != NULL) {
            ts[j].native_id = tids[j];
        }
    }
}

/* Fills each thread's kernel id from its struct pthread, in one batch; an id is trusted when
 * the last snapshot confirmed the same (ident, tid) pair, or the process lists it among its
 * threads now (a reused struct pthread then shows a new pair and is checked again). */
static void read_pthread_tids(struct unwind *u, struct thread_ctx *ts, size_t n,
                              const struct interp_fields *in)
{
    struct proc_iov iov[PROC_IOV_MAX];
    uint32_t tids[PROC_IOV_MAX];
    pid_t *real = NULL;
    size_t n_real = 0;
    bool listed = false;
    if (layout_has(u->L->thread.native_thread_id) || n == 0) {
        return;
    }
    if (u->pthread_tid_at == 0 && !u->pthread_tid_failed) {
        find_pthread_tid(u, in->main_thread_ident);
    }
    if (u->pthread_tid_failed || (real = malloc(LIMIT_THREADS * sizeof *real)) == NULL) {
        return;
    }
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t k = 0;
        for (size_t i = base; i < n && i < base + PROC_IOV_MAX; i++) {
            tids[k] = 0;
            iov[k] = (struct proc_iov){ts[i].thread_id + u->pthread_tid_at, &tids[k], 4};
            k++;
        }
        if (proc_read_many(u->proc, iov, k, NULL) == 0) {
            confirm_tids(u, ts + base, tids, k, real, &n_real, &listed);
        }
    }
    free(real);
    /* What this snapshot confirmed is what the next one trusts. */
    u->n_tids = 0;
    for (size_t i = 0; i < n && u->n_tids < LIMIT_THREADS; i++) {
        if (ts[i].native_id != 0) {
            u->tids[u->n_tids++] = (struct tid_pair){ts[i].thread_id, (pid_t)ts[i].native_id};
        }
    }
    qsort(u->tids, u->n_tids, sizeof *u->tids, cmp_pair);
}

/* Where 3.11 and 3.12 threads' chains start: each thread's current _PyCFrame, all read in one
 * batch per PROC_IOV_MAX threads. */
static void read_cframes(struct unwind *u, struct thread_ctx *ts, size_t n, struct snapshot *s)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct thread_ctx *owner[PROC_IOV_MAX];
    if (!layout_has(u->L->thread.cframe)) {
        return;
    }
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t k = 0;
        for (size_t i = base; i < n && i < base + PROC_IOV_MAX; i++) {
            if (ts[i].cframe != 0) {
                iov[k] = (struct proc_iov){ts[i].cframe + u->L->thread.current_frame,
                                           &ts[i].fr.current_frame, 8};
                owner[k++] = &ts[i];
            }
        }
        if (proc_read_many(u->proc, iov, k, NULL) == 0) {
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            if (proc_read_bytes(u->proc, iov[j].addr, iov[j].dst, 8, NULL) < 0) {
                owner[j]->fr.current_frame = 0;
                snapshot_warn(s, "thread %" PRIu64 ": current frame unreadable",
                              owner[j]->native_id);
            }
        }
    }
}

static bool grow_threads(struct thread_ctx **ts, size_t n, size_t *cap)
{
    if (n < *cap) {
        return true;
    }
    size_t ncap = *cap ? *cap * 2 : 16;
    struct thread_ctx *nt = realloc(*ts, ncap * sizeof *nt);
    if (nt == NULL) {
        return false;
    }
    *ts = nt;
    *cap = ncap;
    return true;
}

/* Reads the thread states the last snapshot found, in one batch per PROC_IOV_MAX. The list is
 * a linked list, so this is a guess; collect_threads() keeps only what the links confirm. */
static size_t read_known_threads(struct unwind *u, uint64_t interp)
{
    const struct py_layout *L = u->L;
    const struct known_threads *k = &u->known;
    size_t n = k->interp == interp ? k->n : 0;
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t m = n - base < PROC_IOV_MAX ? n - base : PROC_IOV_MAX;
        for (size_t j = 0; j < m; j++) {
            iov[j] = (struct proc_iov){k->addrs[base + j], u->ts_buf + (base + j) * L->thread.size,
                                       L->thread.size};
        }
        if (proc_read_many(u->proc, iov, m, NULL) < 0) {
            return base;
        }
    }
    return n;
}

/* Reads the thread-state list of one interpreter (capped, so a cycle ends at the cap). */
static size_t collect_threads(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                              struct thread_ctx **out, struct snapshot *s)
{
    const struct py_layout *L = u->L;
    struct thread_ctx *ts = NULL;
    size_t n = 0;
    size_t cap = 0;
    size_t guessed = read_known_threads(u, interp);
    uint64_t addr = in->threads_head;
    while (addr != 0) {
        struct pt_error e = {0};
        uint8_t *buf = u->ts_buf + (n < LIMIT_THREADS ? n : 0) * L->thread.size;
        if (n == LIMIT_THREADS) {
            snapshot_warn(s, "interpreter %" PRId64 ": more than %d threads, rest not shown",
                          (int64_t)in->id, LIMIT_THREADS);
            break;
        }
        if (!grow_threads(&ts, n, &cap)) {
            snapshot_warn(s, "out of memory reading threads");
            break;
        }
        /* The guess holds while the links lead where the last snapshot went. */
        if (n >= guessed || u->known.addrs[n] != addr) {
            guessed = 0;
            if (proc_read_bytes(u->proc, addr, buf, L->thread.size, &e) < 0) {
                snapshot_warn(s, "interpreter %" PRId64 ": thread list cut short: %s",
                              (int64_t)in->id, e.msg);
                break;
            }
        }
        parse_thread(u, buf, addr, in, &ts[n]);
        addr = ts[n].next;
        n++;
    }
    u->known.interp = interp;
    u->known.n = n;
    for (size_t i = 0; i < n; i++) {
        u->known.addrs[i] = ts[i].addr;
    }
    *out = ts;
    return n;
}

static void free_threads(struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        frames_release(&ts[i].fr);
    }
    free(ts);
}

/* The interpreter's GC state into OUT->gc, and which of its threads runs a collection. -1 only
 * on out of memory. */
static int read_gc(struct unwind *u, const struct interp_fields *in, bool main_interp,
                   struct snapshot *s, struct snap_interp *out)
{
    struct pt_error e = {0};
    out->gc.present = false;
    if (in->gc_state == NULL) {
        return 0;
    }
    /* Before 3.9 one GC serves every interpreter: it is shown once, with the main one. */
    if (!layout_has(u->L->interp.gc) && !main_interp) {
        return 0;
    }
    if (gc_parse(u->gc, s, out->id, in->gc_addr, in->gc_state, in->gc_len, &out->gc, &e) < 0) {
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

static int unwind_interp(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                         bool main_interp, struct snapshot *s, struct snap_interp *out)
{
    struct thread_ctx *ts = NULL;
    size_t n = collect_threads(u, interp, in, &ts, s);
    update_names(u, interp, in, ts, n, s);
    read_cframes(u, ts, n, s);
    read_pthread_tids(u, ts, n, in);
    struct frames_thread *fr = malloc((n ? n : 1) * sizeof *fr);
    if (fr == NULL) {
        free_threads(ts, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        fr[i] = ts[i].fr;
    }
    give_hints(u, ts, fr, n);
    frames_walk(u->proc, u->L, fr, n);
    keep_hints(u, ts, fr, n);
    for (size_t i = 0; i < n; i++) {
        ts[i].fr = fr[i];
        if (ts[i].fr.failed) {
            snapshot_warn(s, "thread %" PRIu64 ": stack cut short: %s", ts[i].native_id,
                          ts[i].fr.error);
        }
    }
    free(fr);
    load_codes(u, ts, n, main_interp && layout_has(u->L->interp.code_object_generation), s);
    out->id = (int64_t)in->id;
    out->threads = snapshot_alloc(s, (n ? n : 1) * sizeof *out->threads);
    if (out->threads == NULL) {
        free_threads(ts, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        fill_thread(u, interp, &ts[i], in, s, &out->threads[i]);
    }
    out->n_threads = n;
    if (read_gc(u, in, main_interp, s, out) < 0) {
        free_threads(ts, n);
        return -1;
    }
    int rc = read_tasks(u, interp, in->modules, ts, n, s, out);
    free_threads(ts, n);
    return rc;
}

static void fill_python(const struct runtime *rt, struct snapshot *s)
{
    s->python.version = snapshot_strdup(s, rt->version, strlen(rt->version));
    s->python.hexversion = rt->layout.hexversion;
    s->python.free_threaded = rt->layout.free_threaded;
    s->python.debug_build = rt->debug_build ? SNAP_YES : SNAP_NO;
    s->python.binary = snapshot_strdup(s, rt->binary, strlen(rt->binary));
}

struct snapshot *unwind_snapshot(struct unwind *u, struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    struct snap_interp interps[LIMIT_INTERPRETERS];
    size_t n = 0;
    uint64_t addr = 0;
    struct timeval tv;
    drop_hints(u->next_hints, &u->n_next_hints); /* what a failed snapshot left */
    if (s == NULL) {
        return NULL;
    }
    gettimeofday(&tv, NULL);
    s->pid = proc_pid(u->proc);
    s->time = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
    fill_python(u->rt, s);
    struct runtime_fields rf;
    if (read_runtime(u, &rf, err) < 0) {
        snapshot_free(s);
        return NULL;
    }
    addr = rf.interpreters_head;
    while (addr != 0 && n < LIMIT_INTERPRETERS) {
        struct interp_fields in;
        struct pt_error e = {0};
        if (read_interp(u, addr, &rf, &in, &e) < 0) {
            if (n == 0) {
                *err = e;
                snapshot_free(s);
                return NULL;
            }
            snapshot_warn(s, "interpreter list cut short: %s", e.msg);
            break;
        }
        if (n == 0) {
            code_cache_set_generation(u->codes, in.code_generation);
        }
        memset(&interps[n], 0, sizeof interps[n]);
        if (unwind_interp(u, addr, &in, n == 0, s, &interps[n]) < 0) {
            snapshot_free(s);
            pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            return NULL;
        }
        n++;
        addr = in.next;
    }
    if (addr != 0) {
        snapshot_warn(s, "more than %d interpreters, rest not shown", LIMIT_INTERPRETERS);
    }
    s->interps = snapshot_alloc(s, (n ? n : 1) * sizeof *s->interps);
    if (s->interps == NULL) {
        snapshot_free(s);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    memcpy(s->interps, interps, n * sizeof *interps);
    s->n_interps = n;
    commit_hints(u);
    return s;
}
