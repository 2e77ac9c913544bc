/* unwind: walk a target's interpreters, threads and frames into a snapshot. */
#include "config.h"

#include "core/unwind.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
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
#include "core/pthreadtid.h"
#include "core/runtime.h"
#include "core/sample.h"
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
    struct frames_thread fr; /* its buffers are kept for the next walk */
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
    bool records;                /* the GC's records were read ahead with the fields */
};

/* The runtime-wide fields, read once per snapshot. */
struct runtime_fields {
    uint64_t interpreters_head;
    uint64_t main_thread;
    uint64_t gil_locked;
    uint64_t gil_holder;
    uint64_t gc_collecting;
};

/* The frames one thread's walk had to read one by one, remembered for the next walk. ADDRS
 * holds FRAMES_HINT_MAX and is kept. */
struct chain_hint {
    uint64_t tstate;
    uint64_t *addrs;
    size_t n;
};

/* The thread states the main interpreter had at the last walk, read again in one batch. */
struct known_threads {
    uint64_t interp;
    size_t n;
    size_t prefetched;       /* how many of ADDRS the head batch read into ts_buf */
    uint64_t addrs[LIMIT_THREADS];
};

/* The compact sample being built, its arrays kept from one sample to the next. */
struct sample_buf {
    struct sample out;
    struct sample_thread *threads;
    size_t n_threads;
    size_t cap_threads;
    struct sample_frame *frames;
    size_t n_frames;
    size_t cap_frames;
    char warning[256];
};

struct unwind {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct code_cache *codes;
    struct threadnames *names;
    struct pthreadtid *tids;
    uint8_t *code_buf;       /* raw code structs of one batch */
    uint8_t *ts_buf;         /* LIMIT_THREADS thread states */
    uint64_t ts_lo;          /* the part of a thread state the walk reads: from TS_LO, */
    size_t ts_len;           /* TS_LEN bytes (thread_span()) */
    struct known_threads known;
    struct thread_ctx *ts;   /* one interpreter's threads; kept, with their frame buffers */
    size_t cap_ts;
    uint64_t *code_addrs;    /* scratch of load_codes() */
    size_t cap_code_addrs;
    uint64_t *idents;        /* LIMIT_THREADS scratch */
    struct frames_thread **fr_ptrs; /* LIMIT_THREADS scratch: the threads' chains to walk */
    pid_t *tid_out;          /* LIMIT_THREADS scratch */
    /* Hints of the last walk (sorted by thread state) and those of the one being taken;
     * at most LIMIT_THREADS each. */
    struct chain_hint *hints;
    size_t n_hints;
    struct chain_hint *next_hints;
    size_t n_next_hints;
    struct tasks *tasks;     /* NULL: tasks are not read */
    struct gc_reader *gc;    /* NULL: the GC's generations are not read (in_gc still is) */
    uint8_t *gc_buf;         /* GC_STATE_MAX bytes */
    /* The walk in hand: a snapshot (SNAP set) or a compact sample (SNAP NULL). */
    struct snapshot *snap;
    struct sample_buf sample;
    uint64_t trusted_hits;   /* code entries served on the generation's word */
    unsigned guess_backoff;  /* walks left before stacks are read ahead again */
    bool names_read;         /* thread names have been read once */
    uint64_t failed_reads;
};

/* Notes a part that could not be read: in the snapshot, or counted in the sample. */
__attribute__((format(printf, 2, 3))) static void warn(struct unwind *u, const char *fmt, ...)
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

static int cmp_hint(const void *a, const void *b)
{
    const struct chain_hint *x = a;
    const struct chain_hint *y = b;
    return x->tstate < y->tstate ? -1 : x->tstate > y->tstate;
}

/* The hints this walk gathered become the next one's (the arrays swap; buffers stay). */
static void commit_hints(struct unwind *u)
{
    struct chain_hint *t = u->hints;
    u->hints = u->next_hints;
    u->n_hints = u->n_next_hints;
    u->next_hints = t;
    u->n_next_hints = 0;
    qsort(u->hints, u->n_hints, sizeof *u->hints, cmp_hint);
}

/* Hands each thread the frames its walk read one by one last time. */
static void give_hints(const struct unwind *u, struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n && u->n_hints > 0; i++) {
        struct chain_hint key = {.tstate = ts[i].addr};
        const struct chain_hint *h = bsearch(&key, u->hints, u->n_hints, sizeof *u->hints,
                                             cmp_hint);
        if (h != NULL) {
            ts[i].fr.hint = h->addrs;
            ts[i].fr.n_hint = h->n;
        }
    }
}

/* Keeps this walk's one-by-one reads as the next walk's hints (copied into kept buffers). */
static void keep_hints(struct unwind *u, const struct thread_ctx *ts, size_t n)
{
    for (size_t i = 0; i < n && u->n_next_hints < LIMIT_THREADS; i++) {
        const struct frames_thread *fr = &ts[i].fr;
        if (fr->n_read == 0) {
            continue;
        }
        struct chain_hint *h = &u->next_hints[u->n_next_hints];
        if (h->addrs == NULL && (h->addrs = malloc(FRAMES_HINT_MAX * sizeof *h->addrs)) == NULL) {
            return;
        }
        h->tstate = ts[i].addr;
        h->n = fr->n_read < FRAMES_HINT_MAX ? fr->n_read : FRAMES_HINT_MAX;
        memcpy(h->addrs, fr->read_addrs, h->n * sizeof *h->addrs);
        u->n_next_hints++;
    }
}

static void free_hints(struct chain_hint *h)
{
    for (size_t i = 0; h != NULL && i < LIMIT_THREADS; i++) {
        free(h[i].addrs);
    }
    free(h);
}

/* The part of a thread state the walk uses: from its first field to the end of its last. The
 * rest of the struct (hundreds of bytes on 3.13+) is never read. */
static void thread_span(const struct py_layout *L, uint64_t *lo, size_t *len)
{
    const uint64_t offs[] = {
        L->thread.next,           layout_has(L->thread.cframe) ? L->thread.cframe
                                                               : L->thread.current_frame,
        L->thread.datastack_chunk, L->thread.base_frame,     L->thread.thread_id,
        L->thread.native_thread_id, L->thread.holds_gil,     L->thread.status,
        L->thread.gil_requested,   L->thread.current_exception, L->thread.exc_state_value,
    };
    uint64_t a = UINT64_MAX;
    uint64_t b = 0;
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        if (layout_has(offs[i]) && offs[i] < L->thread.size) {
            a = offs[i] < a ? offs[i] : a;
            b = offs[i] + 8 > b ? offs[i] + 8 : b;
        }
    }
    b = b < L->thread.size ? b : L->thread.size;
    if (a >= b) {
        a = 0;
        b = L->thread.size;
    }
    *lo = a;
    *len = (size_t)(b - a);
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
    u->ts_buf = calloc(LIMIT_THREADS, u->L->thread.size);
    thread_span(u->L, &u->ts_lo, &u->ts_len);
    u->idents = malloc((size_t)LIMIT_THREADS * sizeof *u->idents);
    u->tid_out = malloc((size_t)LIMIT_THREADS * sizeof *u->tid_out);
    u->fr_ptrs = malloc((size_t)LIMIT_THREADS * sizeof *u->fr_ptrs);
    u->hints = calloc(LIMIT_THREADS, sizeof *u->hints);
    u->next_hints = calloc(LIMIT_THREADS, sizeof *u->next_hints);
    if (!layout_has(u->L->thread.native_thread_id)) {
        u->tids = pthreadtid_new();
    }
    if (u->codes == NULL || u->code_buf == NULL || u->names == NULL || u->ts_buf == NULL ||
        u->idents == NULL || u->tid_out == NULL || u->fr_ptrs == NULL || u->hints == NULL || u->next_hints == NULL) {
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
    if (u == NULL) {
        return;
    }
    gc_reader_free(u->gc);
    free(u->gc_buf);
    tasks_free(u->tasks);
    code_cache_free(u->codes);
    threadnames_free(u->names);
    pthreadtid_free(u->tids);
    free(u->code_buf);
    free(u->ts_buf);
    for (size_t i = 0; i < u->cap_ts; i++) {
        frames_release(&u->ts[i].fr);
    }
    free(u->ts);
    free(u->code_addrs);
    free(u->idents);
    free(u->tid_out);
    free(u->fr_ptrs);
    free_hints(u->hints);
    free_hints(u->next_hints);
    free(u->sample.threads);
    free(u->sample.frames);
    free(u);
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
    };
}

/* The asyncio tasks of one interpreter, when asked for (snapshots only). */
static int read_tasks(struct unwind *u, uint64_t interp, uint64_t modules,
                      const struct thread_ctx *ts, size_t n, struct snap_interp *out)
{
    struct pt_error e = {0};
    if (u->tasks == NULL || u->snap == NULL) {
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

/* Adds the iovecs of the interpreter fields at ADDR to IOV[*N..] (room for UNWIND_INTERP_IOVS
 * is the caller's). The GC state is read only for snapshots. */
enum { UNWIND_INTERP_IOVS = 12 };

static void interp_iovs(struct unwind *u, uint64_t addr, struct interp_fields *f,
                        struct proc_iov *iov, size_t *n)
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
    memset(f, 0, sizeof *f);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (!layout_has(want[i].off) || want[i].off >= LIMIT_OBJECT_READ * 16ull) {
            continue;
        }
        iov[(*n)++] = (struct proc_iov){addr + want[i].off, want[i].dst, want[i].len};
    }
    /* The GC state: the interpreter's, or before 3.9 the runtime's. */
    if (layout_has(L->interp.gc) && L->interp.gc < LIMIT_OBJECT_READ * 16ull) {
        f->gc_addr = addr + L->interp.gc;
    } else if (layout_has(L->runtime.gc) && L->runtime.gc < L->runtime.size) {
        f->gc_addr = u->rt->runtime_addr + L->runtime.gc;
    }
    if (u->snap != NULL && u->gc != NULL && f->gc_addr != 0 && gc_state_len(u->gc) > 0) {
        uint64_t at;
        void *buf;
        size_t len;
        f->gc_state = u->gc_buf;
        f->gc_len = gc_state_len(u->gc);
        iov[(*n)++] = (struct proc_iov){f->gc_addr, f->gc_state, f->gc_len};
        if (gc_records_hint(u->gc, f->gc_addr, &at, &buf, &len)) {
            iov[(*n)++] = (struct proc_iov){at, buf, len};
            f->records = true;
        }
    }
}

/* What the fields read by interp_iovs() mean once the runtime's are known too. */
static void interp_finish(struct unwind *u, const struct runtime_fields *rf,
                          struct interp_fields *f)
{
    const struct py_layout *L = u->L;
    if (f->records) {
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
}

/* Reads the scattered interpreter fields in one system call. Fields the version lacks are 0. */
static int read_interp(struct unwind *u, uint64_t addr, const struct runtime_fields *rf,
                       struct interp_fields *f, struct pt_error *err)
{
    struct proc_iov iov[UNWIND_INTERP_IOVS];
    size_t n = 0;
    interp_iovs(u, addr, f, iov, &n);
    int rc = proc_read_many(u->proc, iov, n, err);
    if (rc < 0 && f->records) {
        /* The records read ahead (the last entry) may be gone; the rest must not go with them. */
        f->records = false;
        rc = proc_read_many(u->proc, iov, n - 1, err);
    }
    if (rc < 0) {
        return pt_error_prefix(err, "interpreter state at 0x%" PRIx64, addr);
    }
    interp_finish(u, rf, f);
    return 0;
}

static void runtime_iovs(struct unwind *u, struct runtime_fields *rf, struct proc_iov *iov,
                         size_t *n)
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
    memset(rf, 0, sizeof *rf);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        if (layout_has(want[i].off) && want[i].off < L->runtime.size) {
            iov[(*n)++] = (struct proc_iov){base + want[i].off, want[i].dst, want[i].len};
        }
    }
}

/* Room for N thread contexts; the new ones zeroed (their frame buffers empty). */
static bool reserve_threads(struct unwind *u, size_t n)
{
    if (n <= u->cap_ts) {
        return true;
    }
    size_t ncap = u->cap_ts ? u->cap_ts * 2 : 16;
    ncap = ncap < n ? n : ncap;
    struct thread_ctx *nt = realloc(u->ts, ncap * sizeof *nt);
    if (nt == NULL) {
        return false;
    }
    memset(nt + u->cap_ts, 0, (ncap - u->cap_ts) * sizeof *nt);
    u->ts = nt;
    u->cap_ts = ncap;
    return true;
}

enum { GUESS_BACKOFF = 16 };

/* The start of a walk in one system call: the runtime-wide fields and, when the last walk
 * found the main interpreter at a known address, that interpreter's fields and the thread
 * states it had (guesses: *IN0_OK says whether the interpreter is still where it was, and
 * collect_threads() keeps only the thread states the links confirm). */
static int read_head(struct unwind *u, struct runtime_fields *rf, struct interp_fields *in0,
                     bool *in0_ok, struct pt_error *err)
{
    const struct py_layout *L = u->L;
    struct proc_iov iov[PROC_IOV_MAX];
    size_t n = 0;
    runtime_iovs(u, rf, iov, &n);
    size_t n_runtime = n;
    struct known_threads *k = &u->known;
    size_t guessed = 0;
    *in0_ok = false;
    k->prefetched = 0;
    if (k->interp != 0) {
        interp_iovs(u, k->interp, in0, iov, &n);
        size_t room = PROC_IOV_MAX - n;
        size_t m = k->n < room ? k->n : room;
        for (size_t j = 0; j < m; j++) {
            iov[n++] = (struct proc_iov){k->addrs[j] + u->ts_lo,
                                         u->ts_buf + j * L->thread.size + u->ts_lo, u->ts_len};
        }
        k->prefetched = m;
        /* And where those threads' stacks were, so that a steady walk reads nothing more. */
        if (u->guess_backoff > 0) {
            u->guess_backoff--;
        } else if (reserve_threads(u, m)) {
            for (; guessed < m && n < PROC_IOV_MAX; guessed++) {
                struct chain_hint key = {.tstate = k->addrs[guessed]};
                const struct chain_hint *h =
                    u->n_hints > 0 ? bsearch(&key, u->hints, u->n_hints, sizeof *u->hints,
                                             cmp_hint)
                                   : NULL;
                n += frames_guess(L, &u->ts[guessed].fr, k->addrs[guessed],
                                  h != NULL ? h->addrs : NULL, h != NULL ? h->n : 0, iov + n,
                                  PROC_IOV_MAX - n);
            }
        }
    }
    bool ok = n > n_runtime && proc_read_many(u->proc, iov, n, NULL) == 0;
    for (size_t j = 0; j < guessed; j++) {
        frames_guessed(&u->ts[j].fr, ok);
    }
    if (ok) {
        *in0_ok = rf->interpreters_head == k->interp;
        if (*in0_ok) {
            interp_finish(u, rf, in0);
        }
    } else {
        /* Guessing again right away would likely fail again. */
        u->guess_backoff = guessed > 0 ? GUESS_BACKOFF : 0;
        /* The guesses may point at freed memory: the runtime alone must still be read. */
        k->prefetched = 0;
        if (n > n_runtime) {
            u->failed_reads++;
            n_runtime = 0;
            runtime_iovs(u, rf, iov, &n_runtime);
        }
        if (proc_read_many(u->proc, iov, n_runtime, err) < 0) {
            return pt_error_prefix(err, "runtime state at 0x%" PRIx64, u->rt->runtime_addr);
        }
    }
    if (!*in0_ok) {
        k->prefetched = 0;
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
    frames_begin(&t->fr, addr);
    t->addr = addr;
    t->next = 0;
    t->thread_id = 0;
    t->native_id = 0;
    t->cframe = 0;
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
                         const struct thread_ctx *ts, size_t n)
{
    struct pt_error e = {0};
    for (size_t i = 0; i < n; i++) {
        u->idents[i] = ts[i].thread_id;
    }
    if (in->modules != 0 &&
        threadnames_update(u->names, u->proc, u->L, interp, in->modules, u->idents, n,
                           monotonic_seconds(), NAMES_MAX_AGE, &e) < 0) {
        warn(u, "interpreter %" PRId64 ": thread names unavailable: %s", (int64_t)in->id,
             e.msg);
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
static void load_codes(struct unwind *u, struct thread_ctx *ts, size_t n, bool trust_cache)
{
    const struct py_layout *L = u->L;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += ts[i].fr.n_frames;
    }
    if (total > u->cap_code_addrs) {
        uint64_t *fresh = realloc(u->code_addrs, total * sizeof *fresh);
        if (fresh == NULL) {
            warn(u, "out of memory reading code objects");
            return;
        }
        u->code_addrs = fresh;
        u->cap_code_addrs = total;
    }
    uint64_t *addrs = u->code_addrs;
    /* With a code-object generation (3.14+), an unchanged generation vouches for cached
     * entries, which then cost nothing; without one, each entry is checked against its
     * object's current fields. Only the main interpreter's generation is tracked, so
     * subinterpreters always check. */
    size_t k = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < ts[i].fr.n_frames; j++) {
            uint64_t a = ts[i].fr.frames[j].code_addr;
            /* Recursion repeats one code object: skip the run before sorting. */
            if (a == last) {
                continue;
            }
            last = a;
            if (trust_cache && code_cache_find(u->codes, a) != NULL) {
                u->trusted_hits++;
            } else {
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
                warn(u, "code object at 0x%" PRIx64 ": %s", iov[j].addr, e.msg);
            }
        }
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

/* Whether T runs a collection. A collection runs on the thread that holds the GIL; the others
 * cannot be in it. Where the interpreter marks the frame that started it (3.15+), that
 * frame's thread runs it. GC_AT: that frame's index in T's chain, or -1. */
static enum snap_bool thread_in_gc(const struct thread_ctx *t, const struct interp_fields *in,
                                   long gc_at)
{
    if (in->gc_collecting == 0) {
        return SNAP_NO;
    }
    if (in->gc_frame != 0) {
        return gc_at >= 0 ? SNAP_YES : SNAP_NO;
    }
    return t->gil == SNAP_YES ? SNAP_YES : t->gil == SNAP_NO ? SNAP_NO : SNAP_UNKNOWN;
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

/* Turns a thread's raw frames into snapshot frames; a frame that cannot be decoded stays with
 * unknown fields and a warning. GC_AT: the index of the frame the <GC> frame goes above, or
 * -1. */
static int build_frames(struct unwind *u, const struct thread_ctx *t, long gc_at,
                        struct snap_thread *out)
{
    struct snapshot *s = u->snap;
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
        f->function = snapshot_strdup(s, ci->qualname, ci->qualname_len);
        f->name = snapshot_strdup(s, ci->name, ci->name_len);
        f->file = snapshot_strdup(s, ci->filename, ci->filename_len);
        f->first_line = ci->firstlineno;
        if (code_location(ci, u->L, fr->frames[i].instr_ptr, &loc, &e) < 0) {
            warn(u, "thread %" PRIu64 ": frame %zu (%.*s): %s", t->native_id, i,
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

static void fill_thread(struct unwind *u, uint64_t interp, const struct thread_ctx *t,
                        const struct interp_fields *in, struct snap_thread *out)
{
    struct snapshot *s = u->snap;
    struct proc_task_stat st;
    size_t name_len;
    const char *name = threadnames_get(u->names, interp, t->thread_id, &name_len);
    if (name != NULL) {
        out->name = snapshot_strdup(s, name, name_len);
    } else if (threadnames_is_unreadable(u->names, interp, t->thread_id)) {
        warn(u, "thread %" PRIu64 ": its threading name is not a readable str", t->native_id);
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
    if (build_frames(u, t, gc_at, out) < 0) {
        warn(u, "out of memory building frames");
    }
}

/* Where 3.11 and 3.12 threads' chains start: each thread's current _PyCFrame, all read in one
 * batch per PROC_IOV_MAX threads. */
static void read_cframes(struct unwind *u, struct thread_ctx *ts, size_t n)
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
                warn(u, "thread %" PRIu64 ": current frame unreadable", owner[j]->native_id);
            }
        }
    }
}

/* Before 3.11 thread states hold no kernel thread id; pthreadtid finds it. */
static void read_pthread_tids(struct unwind *u, struct thread_ctx *ts, size_t n,
                              const struct interp_fields *in)
{
    if (u->tids == NULL || n == 0) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        u->idents[i] = ts[i].thread_id;
    }
    pthreadtid_fill(u->tids, u->proc, in->main_thread_ident, u->idents, u->tid_out, n);
    for (size_t i = 0; i < n; i++) {
        ts[i].native_id = (uint64_t)u->tid_out[i];
    }
}

/* Reads the thread states the last walk found that the head batch did not, in one batch per
 * PROC_IOV_MAX. The list is a linked list, so this is a guess; collect_threads() keeps only
 * what the links confirm. */
static size_t read_known_threads(struct unwind *u, uint64_t interp)
{
    const struct py_layout *L = u->L;
    const struct known_threads *k = &u->known;
    size_t n = k->interp == interp ? k->n : 0;
    size_t from = k->interp == interp ? k->prefetched : 0;
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t base = from; base < n; base += PROC_IOV_MAX) {
        size_t m = n - base < PROC_IOV_MAX ? n - base : PROC_IOV_MAX;
        for (size_t j = 0; j < m; j++) {
            iov[j] = (struct proc_iov){k->addrs[base + j] + u->ts_lo,
                                       u->ts_buf + (base + j) * L->thread.size + u->ts_lo,
                                       u->ts_len};
        }
        if (proc_read_many(u->proc, iov, m, NULL) < 0) {
            u->failed_reads++;
            return base;
        }
    }
    return n;
}

/* Reads the thread-state list of one interpreter into u->ts (capped, so a cycle ends at the
 * cap). Only the main interpreter's list is remembered for the next walk. */
static size_t collect_threads(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                              bool main_interp)
{
    const struct py_layout *L = u->L;
    size_t n = 0;
    size_t guessed = main_interp ? read_known_threads(u, interp) : 0;
    uint64_t addr = in->threads_head;
    while (addr != 0) {
        struct pt_error e = {0};
        uint8_t *buf = u->ts_buf + (n < LIMIT_THREADS ? n : 0) * L->thread.size;
        if (n == LIMIT_THREADS) {
            warn(u, "interpreter %" PRId64 ": more than %d threads, rest not shown",
                 (int64_t)in->id, LIMIT_THREADS);
            break;
        }
        if (!reserve_threads(u, n + 1)) {
            warn(u, "out of memory reading threads");
            break;
        }
        /* The guess holds while the links lead where the last walk went. */
        if (n >= guessed || u->known.addrs[n] != addr) {
            guessed = 0;
            if (proc_read_bytes(u->proc, addr + u->ts_lo, buf + u->ts_lo, u->ts_len, &e) < 0) {
                warn(u, "interpreter %" PRId64 ": thread list cut short: %s", (int64_t)in->id,
                     e.msg);
                break;
            }
        }
        parse_thread(u, buf, addr, in, &u->ts[n]);
        addr = u->ts[n].next;
        n++;
    }
    if (main_interp) {
        u->known.interp = interp;
        u->known.n = n;
        for (size_t i = 0; i < n; i++) {
            u->known.addrs[i] = u->ts[i].addr;
        }
    }
    return n;
}

/* The interpreter's GC state into OUT->gc, and which of its threads runs a collection. -1 only
 * on out of memory. */
static int read_gc(struct unwind *u, const struct interp_fields *in, bool main_interp,
                   struct snap_interp *out)
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
    if (gc_parse(u->gc, u->snap, out->id, in->gc_addr, in->gc_state, in->gc_len, &out->gc,
                 &e) < 0) {
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

/* The frame's bytecode offset: from its instruction pointer (3.11+) or f_lasti. */
static uint32_t frame_offset(const struct py_layout *L, const struct code_info *ci,
                             const struct frames_raw *f)
{
    if (L->frames == FRAMES_OBJECTS) {
        int32_t lasti = (int32_t)(uint32_t)f->instr_ptr;
        if (lasti < 0) {
            return SAMPLE_OFFSET_UNKNOWN;
        }
        return L->linetable == LINETABLE_V310 ? (uint32_t)lasti * 2 : (uint32_t)lasti;
    }
    uint64_t start = ci->addr + L->code.code_adaptive;
    if (f->instr_ptr < start || f->instr_ptr - start >= SAMPLE_OFFSET_UNKNOWN) {
        return SAMPLE_OFFSET_UNKNOWN;
    }
    return (uint32_t)(f->instr_ptr - start);
}

static bool sample_reserve(void **items, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap) {
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
        warn(u, "out of memory for the sample");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const struct thread_ctx *t = &ts[i];
        const struct frames_thread *fr = &t->fr;
        long gc_at = gc_frame_index(t, in);
        size_t nf = fr->n_frames + (gc_at >= 0);
        if (!sample_reserve((void **)&sb->frames, &sb->cap_frames, sb->n_frames + nf,
                            sizeof *sb->frames)) {
            warn(u, "out of memory for the sample");
            return;
        }
        struct sample_thread *out = &sb->threads[sb->n_threads++];
        out->interp_id = (int64_t)in->id;
        out->tid = (pid_t)t->native_id;
        out->thread_id = t->thread_id;
        out->name = threadnames_get(u->names, interp, t->thread_id, &out->name_len);
        out->main = thread_is_main(u, t, in);
        out->gil = t->gil;
        out->gil_requested = t->gil_requested;
        out->on_cpu = SNAP_UNKNOWN;
        out->has_exception = t->has_exception;
        out->in_gc = thread_in_gc(t, in, gc_at);
        out->frames_truncated = fr->truncated || fr->failed;
        out->n_frames = nf;
        /* An index until sample_finish() turns it into a pointer. */
        out->frames = (const struct sample_frame *)(uintptr_t)sb->n_frames;
        struct sample_frame *f = sb->frames + sb->n_frames;
        const struct code_info *last = NULL;
        for (size_t j = 0; j < fr->n_frames; j++) {
            if (gc_at >= 0 && (long)j == gc_at) {
                *f++ = (struct sample_frame){NULL, 0, SAMPLE_OFFSET_UNKNOWN, SNAP_FRAME_GC};
            }
            const struct frames_raw *raw = &fr->frames[j];
            /* Recursion repeats one code object: reuse the last lookup. */
            const struct code_info *ci = last != NULL && last->addr == raw->code_addr
                                             ? last
                                             : code_cache_find(u->codes, raw->code_addr);
            last = ci;
            *f++ = (struct sample_frame){ci, ci != NULL ? ci->serial : 0,
                                         ci != NULL ? frame_offset(u->L, ci, raw)
                                                    : SAMPLE_OFFSET_UNKNOWN,
                                         SNAP_FRAME_PYTHON};
        }
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

static int unwind_interp(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                         bool main_interp, struct snap_interp *out)
{
    size_t n = collect_threads(u, interp, in, main_interp);
    struct thread_ctx *ts = u->ts;
    /* Names are read again (every NAMES_MAX_AGE, or for a new thread) by snapshots, which the
     * live view and batch take once per refresh; samples only take them over, after the first
     * has read them once. Reading a name costs a dozen reads a thread. */
    if (u->snap != NULL || !u->names_read) {
        update_names(u, interp, in, ts, n);
        u->names_read = true;
    }
    read_cframes(u, ts, n);
    read_pthread_tids(u, ts, n, in);
    give_hints(u, ts, n);
    for (size_t i = 0; i < n; i++) {
        u->fr_ptrs[i] = &ts[i].fr;
    }
    frames_walk(u->proc, u->L, u->fr_ptrs, n);
    for (size_t i = 0; i < n; i++) {
        if (ts[i].fr.failed) {
            warn(u, "thread %" PRIu64 ": stack cut short: %s", ts[i].native_id,
                 ts[i].fr.error);
        }
    }
    keep_hints(u, ts, n);
    load_codes(u, ts, n, main_interp && layout_has(u->L->interp.code_object_generation));
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
    if (read_gc(u, in, main_interp, out) < 0) {
        return -1;
    }
    return read_tasks(u, interp, in->modules, ts, n, out);
}

static void fill_python(const struct runtime *rt, struct snapshot *s)
{
    s->python.version = snapshot_strdup(s, rt->version, strlen(rt->version));
    s->python.hexversion = rt->layout.hexversion;
    s->python.free_threaded = rt->layout.free_threaded;
    s->python.debug_build = rt->debug_build ? SNAP_YES : SNAP_NO;
    s->python.binary = snapshot_strdup(s, rt->binary, strlen(rt->binary));
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
    if (read_head(u, &rf, &in0, &in0_ok, err) < 0) {
        return -1;
    }
    uint64_t addr = rf.interpreters_head;
    while (addr != 0 && n < LIMIT_INTERPRETERS) {
        struct interp_fields in;
        struct pt_error e = {0};
        if (n == 0 && in0_ok) {
            in = in0;
        } else if (read_interp(u, addr, &rf, &in, &e) < 0) {
            if (n == 0) {
                *err = e;
                return -1;
            }
            warn(u, "interpreter list cut short: %s", e.msg);
            break;
        }
        if (n == 0) {
            code_cache_set_generation(u->codes, in.code_generation);
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
        warn(u, "more than %d interpreters, rest not shown", LIMIT_INTERPRETERS);
    }
    if (n == 0) {
        u->known.interp = 0;
    }
    commit_hints(u);
    *n_interps = n;
    return 0;
}

struct snapshot *unwind_snapshot(struct unwind *u, struct pt_error *err)
{
    struct snapshot *s = snapshot_new(err);
    struct snap_interp interps[LIMIT_INTERPRETERS];
    size_t n = 0;
    struct timeval tv;
    if (s == NULL) {
        return NULL;
    }
    gettimeofday(&tv, NULL);
    s->pid = proc_pid(u->proc);
    s->time = (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
    fill_python(u->rt, s);
    u->snap = s;
    /* Snapshots repeat once per refresh, and most of what they read (above all the task graph)
     * has not moved: what the last one read is read again in a few batched calls first. */
    proc_readahead_begin(u->proc);
    int rc = walk(u, interps, &n, err);
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
