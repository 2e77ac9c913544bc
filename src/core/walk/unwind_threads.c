/* unwind_threads: the start of a walk: the runtime, interpreter and thread states, read in as
 * few batched calls as the last walk allows, and the hints carried from one walk to the next. */
#include "config.h"

#include "core/walk/unwind_threads.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/walk/gc.h"
#include "core/walk/gcwatch.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/target/pthreadtid.h"
#include "core/target/runtime.h"

/* The part of a thread state the walk uses: from its first field to the end of its last. The
 * rest of the struct (hundreds of bytes on 3.13+) is never read. */
void unwind_threads_span(const struct py_layout *L, uint64_t *lo, size_t *len)
{
    const uint64_t offs[] = {
        L->thread.next,
        L->thread.interp,
        layout_has(L->thread.cframe) ? L->thread.cframe : L->thread.current_frame,
        L->thread.datastack_chunk,
        L->thread.base_frame,
        L->thread.thread_id,
        L->thread.native_thread_id,
        L->thread.holds_gil,
        L->thread.status,
        L->thread.gil_requested,
        L->thread.current_exception,
        L->thread.exc_state_value,
        L->thread.exc_info,
        layout_has(L->thread.exc_state) && layout_has(L->errstack.previous)
            ? L->thread.exc_state + L->errstack.previous
            : LAYOUT_NONE,
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

/* The GC state the interpreter at ADDR uses: its own, or before 3.9 the runtime's; 0 unknown. */
static uint64_t gc_state_addr(const struct unwind *u, uint64_t addr)
{
    const struct py_layout *L = u->L;
    /* Before 3.7: the globals, known by the first (the generations). */
    if (u->rt->n_gc_pieces > 0) {
        return u->rt->gc_pieces[0].addr;
    }
    if (layout_has(L->interp.gc) && L->interp.gc < LIMIT_OBJECT_READ * 16ull) {
        return addr + L->interp.gc;
    }
    if (layout_has(L->runtime.gc) && L->runtime.gc < L->runtime.size) {
        return u->rt->runtime_addr + L->runtime.gc;
    }
    return 0;
}

/* Where the LEN bytes at OFF of a collector kept in globals are in the target: inside one
 * piece, or 0. */
static uint64_t gc_piece_addr(const struct unwind *u, uint64_t off, size_t len)
{
    for (size_t i = 0; i < u->rt->n_gc_pieces; i++) {
        const struct runtime_gc_piece *pc = &u->rt->gc_pieces[i];
        if (off >= pc->at && off - pc->at + len <= pc->size) {
            return pc->addr + (off - pc->at);
        }
    }
    return 0;
}

/* What gcwatch reads of the interpreter at INTERP: the switch count of the GIL it uses (its
 * own from 3.12, else the runtime's) into *SWITCHES and, where the GC reader knows where they
 * are, its GC's collection counts into COUNTS (GC_COUNTS_MAX bytes). Returns how many regions
 * of IOV it filled: 0 when the version cannot tell. */
static size_t watch_regions(const struct unwind *u, uint64_t interp, uint64_t *switches,
                            uint8_t *counts, struct proc_iov iov[2])
{
    const struct py_layout *L = u->L;
    uint64_t at;
    uint64_t off;
    size_t len;
    if (layout_has(L->interp.gil_holder)) {
        if (!layout_has(L->interp.gil_switch) ||
            L->interp.gil_switch >= LIMIT_OBJECT_READ * 16ull) {
            return 0;
        }
        at = interp + L->interp.gil_switch;
    } else if (layout_has(L->runtime.gil_switch) && L->runtime.gil_switch < L->runtime.size) {
        at = u->rt->runtime_addr + L->runtime.gil_switch;
    } else {
        return 0;
    }
    *switches = 0;
    iov[0] = (struct proc_iov){at, switches, 8};
    uint64_t gc = gc_state_addr(u, interp);
    if (gc == 0 || !gc_collections_span(u->gc, &off, &len) || off >= GC_STATE_MAX) {
        return 1;
    }
    if (u->rt->n_gc_pieces > 0 && (gc = gc_piece_addr(u, off, len)) == 0) {
        return 1;
    }
    iov[1] = (struct proc_iov){u->rt->n_gc_pieces > 0 ? gc : gc + off, counts, len};
    return 2;
}

/* This walk's word on who collects in the main interpreter IN0 at INTERP (gcwatch.c): the head
 * batch read the GIL and the GC; while a collection runs whose collector the reads may prove,
 * the switch and collection counts are read once more, after it (one more system call). */
static void watch_finish(struct unwind *u, uint64_t interp, struct interp_fields *in0)
{
    struct proc_iov iov[2];
    uint64_t switches;
    uint8_t counts[GC_COUNTS_MAX];
    size_t n = watch_regions(u, interp, &switches, counts, iov);
    /* The counts are compared only when both reads took them at one place. */
    bool same = n > 1 && u->watch_counts_len == iov[1].len;
    struct gcwatch_head head = {
        in0->gc_collecting, in0->gil_holder, u->watch_switches,
        same ? gc_collections_sum(u->gc, u->watch_counts, u->watch_counts_len) : -1};
    struct gcwatch_late late = {false, 0, -1};
    if (gcwatch_wants_late(&u->watch, &head) && n > 0 &&
        proc_read_now(u->proc, iov, n, NULL) == 0) {
        late = (struct gcwatch_late){true, switches,
                                     same ? gc_collections_sum(u->gc, counts, iov[1].len) : -1};
    }
    in0->gc_collector = gcwatch_update(&u->watch, &head, &late);
}

/* Adds the iovecs of the interpreter fields at ADDR to IOV[*N..] (room for UNWIND_INTERP_IOVS
 * is the caller's); with OPTIONAL also the code marker and, for snapshots, the GC state. */
enum { UNWIND_INTERP_IOVS = 12 + RUNTIME_GC_PIECES_MAX };

/* A collector kept in globals (before 3.7): each into its place in F's GC buffer, which the
 * GC layout then reads as one state. A piece that does not fit is left zeroed (the parse then
 * refuses the state). */
static void gc_piece_iovs(struct unwind *u, struct interp_fields *f, struct proc_iov *iov,
                          size_t *n)
{
    memset(f->gc_state, 0, f->gc_len);
    for (size_t i = 0; i < u->rt->n_gc_pieces; i++) {
        const struct runtime_gc_piece *pc = &u->rt->gc_pieces[i];
        if ((uint64_t)pc->at + pc->size <= f->gc_len) {
            iov[(*n)++] = (struct proc_iov){pc->addr, f->gc_state + pc->at, pc->size};
        }
    }
}

static void interp_iovs(struct unwind *u, uint64_t addr, struct interp_fields *f,
                        struct proc_iov *iov, size_t *n, bool optional)
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
    /* The interpreter's code marker, where it keeps one. Its iovec comes before any code
     * object's in a batch (the head batch reads those last): process_vm_readv copies in
     * order, so what the marker vouches for was read after it. */
    uint64_t marker = L->code_marker == CODE_MARKER_GENERATION ? L->interp.code_object_generation
                      : L->code_marker == CODE_MARKER_NEXT_VERSION ? L->interp.func_next_version
                                                                   : LAYOUT_NONE;
    if (optional && layout_has(marker) && marker < LIMIT_OBJECT_READ * 16ull &&
        codemark_is_vouching(&u->mark)) {
        size_t len = L->code_marker == CODE_MARKER_GENERATION ? 8 : 4;
        iov[(*n)++] = (struct proc_iov){addr + marker, &f->code_marker, len};
        f->code_marker_read = true;
    }
    f->gc_addr = gc_state_addr(u, addr);
    if (optional && u->snap != NULL && u->gc != NULL && f->gc_addr != 0 &&
        gc_state_len(u->gc) > 0) {
        uint64_t at;
        void *buf;
        size_t len;
        f->gc_state = u->gc_buf;
        f->gc_len = gc_state_len(u->gc);
        if (u->rt->n_gc_pieces > 0) {
            gc_piece_iovs(u, f, iov, n);
        } else {
            iov[(*n)++] = (struct proc_iov){f->gc_addr, f->gc_state, f->gc_len};
        }
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
    /* 4-byte fields were read into the low half of a zeroed uint64_t (little-endian hosts).
     * Before 3.12 one GIL (and in 3.8 one GC) served the whole runtime. */
    if (!layout_has(L->interp.gil_holder)) {
        f->gil_locked = rf->gil_locked;
        f->gil_holder = rf->gil_holder;
    }
    /* Before 3.7 the GIL's holder is the thread state running, NULL while none holds it. */
    if (L->runtime.globals_only) {
        f->gil_locked = f->gil_holder != 0;
    }
    if (!layout_has(L->interp.gc)) {
        f->gc_collecting = rf->gc_collecting;
    }
    f->main_thread_ident = rf->main_thread;
    /* A runtime-wide code marker serves every interpreter. */
    if (L->code_marker == CODE_MARKER_GLOBAL_NEXT_VERSION) {
        f->code_marker = rf->next_version;
        f->code_marker_read = rf->next_version_read;
    }
}

/* Reads the scattered interpreter fields in one system call. Fields the version lacks are 0. */
int unwind_threads_read_interp(struct unwind *u, uint64_t addr, const struct runtime_fields *rf,
                               struct interp_fields *f, struct pt_error *err)
{
    struct proc_iov iov[UNWIND_INTERP_IOVS];
    size_t n = 0;
    interp_iovs(u, addr, f, iov, &n, true);
    int rc = proc_read_many(u->proc, iov, n, err);
    if (rc < 0 && f->records) {
        /* The records read ahead (the last entry) may be gone; the rest must not go with them. */
        f->records = false;
        rc = proc_read_many(u->proc, iov, n - 1, err);
    }
    if (rc < 0) {
        /* Nor with the other parts the walk can go without (the code marker, the GC's state):
         * a memory image or a build whose marker offset is wrong must still be walked. */
        n = 0;
        interp_iovs(u, addr, f, iov, &n, false);
        rc = proc_read_many(u->proc, iov, n, err);
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
    /* A runtime-wide code marker: read first, before any code object it vouches for. */
    if (L->code_marker == CODE_MARKER_GLOBAL_NEXT_VERSION && u->rt->next_version_addr != 0 &&
        codemark_is_vouching(&u->mark)) {
        iov[(*n)++] = (struct proc_iov){u->rt->next_version_addr, &rf->next_version, 4};
        rf->next_version_read = true;
    }
}

/* Grows the array at *P of CAP items of SIZE bytes to NCAP items, the new ones zeroed. */
static bool grow_zeroed(void *p, size_t cap, size_t ncap, size_t size)
{
    void **items = p;
    uint8_t *fresh = realloc(*items, ncap * size);
    if (fresh == NULL) {
        return false;
    }
    memset(fresh + cap * size, 0, (ncap - cap) * size);
    *items = fresh;
    return true;
}

bool unwind_threads_reserve(struct unwind *u, size_t n)
{
    if (n <= u->cap_ts) {
        return true;
    }
    if (n > LIMIT_THREADS) {
        return false;
    }
    /* Room grows with the threads seen (a few pages for most targets, not LIMIT_THREADS thread
     * states up front). Each array grows before the capacity says so: a failure half-way leaves
     * every one at least CAP_TS long. */
    size_t ncap = u->cap_ts ? u->cap_ts * 2 : UNWIND_THREADS_FIRST;
    ncap = ncap < n ? n : ncap;
    ncap = ncap > LIMIT_THREADS ? LIMIT_THREADS : ncap;
    size_t cap = u->cap_ts;
    if (!grow_zeroed(&u->ts, cap, ncap, sizeof *u->ts) ||
        !grow_zeroed(&u->ts_buf, cap, ncap, u->L->thread.size) ||
        !grow_zeroed(&u->idents, cap, ncap, sizeof *u->idents) ||
        !grow_zeroed(&u->name_tids, cap, ncap, sizeof *u->name_tids) ||
        !grow_zeroed(&u->tid_out, cap, ncap, sizeof *u->tid_out) ||
        !grow_zeroed(&u->fr_ptrs, cap, ncap, sizeof *u->fr_ptrs) ||
        !grow_zeroed(&u->tid_pre, cap, ncap, sizeof *u->tid_pre) ||
        !grow_zeroed(&u->id_seen, 4 * cap, 4 * ncap, sizeof *u->id_seen)) {
        return false;
    }
    u->cap_ts = ncap;
    return true;
}

/* Idle threads. In a GIL build a thread changes its Python stack only while it holds the
 * GIL, and where every thread state that runs takes the GIL first (3.13+:
 * gil_counts_every_switch), a take by another thread state than the last holder bumps the
 * GIL's switch_number (Python/ceval_gil.c, take_gil()). So when the main interpreter's switch
 * count and holder read at the start of this walk equal those read at the start of the last,
 * no thread state but that holder took the GIL in between, and every other thread's stack is
 * what the last walk read (its reads came after that walk's count: a change after them would
 * have moved the count). Such a thread keeps its frames instead of reading them again; its
 * thread state is still read (status bits, the list, its frame field, which must not have
 * moved). Before 3.13 a thread state swapped in under a held GIL (PyThreadState_Swap) runs
 * without a take, so the proof does not hold and every stack is read. */

/* Whether the thread at slot T, whose state is now at ADDR, has a stack the last walk read
 * cleanly, still in hand (this walk's head batch did not start reading it again), and is not
 * the GIL's last holder: one this walk may keep. */
static bool may_keep(const struct unwind *u, const struct thread_ctx *t, uint64_t addr)
{
    return u->idle_known && t->kept_walk != 0 && t->kept_walk + 1 == u->walk_serial &&
           t->guessed_walk != u->walk_serial && t->addr == addr && addr != u->idle_holder;
}

/* This walk's switch count and holder (the head batch read them): the next walk's reference,
 * and compared with the last walk's. */
static void idle_check(struct unwind *u, const struct interp_fields *in0)
{
    if (!u->L->gil_counts_every_switch || u->L->free_threaded || !u->watch_asked) {
        return;
    }
    u->idle_next_known = true;
    u->idle_next_switches = u->watch_switches;
    u->idle_next_holder = in0->gil_holder;
    u->idle_now = u->idle_known && u->watch_switches == u->idle_switches &&
                  in0->gil_holder == u->idle_holder;
}

void unwind_threads_idle_begin(struct unwind *u)
{
    u->walk_serial++;
    u->idle_now = false;
    u->idle_next_known = false;
}

void unwind_threads_idle_end(struct unwind *u)
{
    u->idle_known = u->idle_next_known;
    u->idle_switches = u->idle_next_switches;
    u->idle_holder = u->idle_next_holder;
    u->idle_predict = u->idle_now;
}

enum { GUESS_BACKOFF = 16 };

/* Adds to IOV[0..ROOM) what the walk of known thread J will probably start with: its stack
 * (frames_guess(); not when STACKS is false), on 3.11 and 3.12 its _PyCFrame's newest frame,
 * before 3.11 the kernel id in its struct pthread; each where the last walk saw it. Marks
 * what it asked for (STACK_PRE, CFRAME_PRE, TID_PRE), for the head batch to confirm. Returns
 * how many regions. */
static size_t thread_guesses(struct unwind *u, size_t j, bool stacks, struct proc_iov *iov,
                             size_t room)
{
    const struct py_layout *L = u->L;
    struct thread_ctx *t = &u->ts[j];
    uint64_t tid_at = pthreadtid_offset(u->tids);
    size_t k = 0;
    t->stack_pre = false;
    t->cframe_pre = false;
    t->tid_pre = false;
    if (layout_has(L->thread.cframe) && t->last_cframe != 0 && k < room) {
        iov[k++] = (struct proc_iov){t->last_cframe + L->thread.current_frame, &t->cframe_guess,
                                     8};
        t->cframe_pre = true;
    }
    if (tid_at != 0 && t->last_ident != 0 && k < room) {
        t->tid_guess = 0;
        iov[k++] = (struct proc_iov){t->last_ident + tid_at, &t->tid_guess, 4};
        t->tid_pre = true;
    }
    if (stacks && k < room) {
        uint64_t tstate = u->known.addrs[j];
        const struct chain_hint *h = unwind_threads_hint(u, tstate, j);
        k += frames_guess(L, &t->fr, tstate, h != NULL ? h->addrs : NULL, h != NULL ? h->n : 0,
                          iov + k, room - k);
        t->stack_pre = true;
        /* frames_guess() started the thread's next walk: the stack it had is gone. */
        t->guessed_walk = u->walk_serial;
    }
    return k;
}

/* The start of a walk in one system call: the runtime-wide fields and, when the last walk
 * found the main interpreter at a known address, that interpreter's fields and the thread
 * states it had (guesses: *IN0_OK says whether the interpreter is still where it was, and
 * unwind_threads_collect() keeps only the thread states the links confirm). */
int unwind_threads_read_head(struct unwind *u, struct runtime_fields *rf, struct interp_fields *in0,
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
    u->watch_asked = false;
    if (k->interp != 0) {
        interp_iovs(u, k->interp, in0, iov, &n, true);
        size_t w = watch_regions(u, k->interp, &u->watch_switches, u->watch_counts, iov + n);
        u->watch_asked = w > 0;
        u->watch_counts_len = w > 1 ? iov[n + 1].len : 0;
        n += w;
        size_t room = PROC_IOV_MAX - n;
        size_t m = k->n < room ? k->n : room;
        /* A sample of the GIL holders alone reads no other thread state (collect_holder()),
         * but the last holder's ahead. */
        u->holder_pre = false;
        if (u->holder_only && u->snap == NULL) {
            m = 0;
            if (u->holder_guess != 0 && n < PROC_IOV_MAX && unwind_threads_reserve(u, 1)) {
                iov[n++] = (struct proc_iov){u->holder_guess + u->ts_lo, u->ts_buf + u->ts_lo,
                                             u->ts_len};
                u->holder_pre = true;
            }
        }
        /* The walk that found them made room for them (unwind_threads_collect()). */
        m = unwind_threads_reserve(u, m) ? m : 0;
        for (size_t j = 0; j < m; j++) {
            iov[n++] = (struct proc_iov){k->addrs[j] + u->ts_lo,
                                         u->ts_buf + j * L->thread.size + u->ts_lo, u->ts_len};
        }
        k->prefetched = m;
        /* And, for as many of them as there is room, what their walks start with. */
        bool stacks = u->guess_backoff == 0;
        u->guess_backoff -= u->guess_backoff > 0;
        for (; guessed < m && n < PROC_IOV_MAX; guessed++) {
            bool idle = u->idle_predict && u->snap == NULL &&
                        may_keep(u, &u->ts[guessed], k->addrs[guessed]);
            /* --active-only reads ahead the stack of the thread that held the GIL last. */
            bool skipped = u->active_only && u->snap == NULL && u->ts[guessed].gil == SNAP_NO;
            n += thread_guesses(u, guessed, stacks && !idle && !skipped, iov + n,
                                PROC_IOV_MAX - n);
        }
    }
    /* Without a marker that vouches: the code objects the last walk checked, to be checked
     * again. They come last, after the marker (runtime_iovs(), interp_iovs()). */
    size_t codes = 0;
    u->code_pre_ok = false;
    if (k->interp != 0 && !codemark_is_vouching(&u->mark)) {
        for (; codes < u->n_code_guess && n < PROC_IOV_MAX; codes++) {
            iov[n++] = (struct proc_iov){u->code_guess[codes], u->code_pre + codes * L->code.size,
                                         L->code.size};
        }
    }
    bool ok = n > n_runtime && proc_read_many(u->proc, iov, n, NULL) == 0;
    for (size_t j = 0; j < guessed; j++) {
        struct thread_ctx *t = &u->ts[j];
        frames_guessed(&t->fr, ok && t->stack_pre);
        t->cframe_pre = ok && t->cframe_pre;
        t->tid_pre = ok && t->tid_pre;
    }
    u->holder_pre = u->holder_pre && ok && rf->interpreters_head == k->interp;
    if (codes < u->n_code_guess) {
        u->n_code_guess = codes; /* the rest did not fit: not read ahead */
    }
    u->idle_now = false;
    if (ok) {
        *in0_ok = rf->interpreters_head == k->interp;
        /* Read after the marker of the interpreter the walk starts with, or not used. */
        u->code_pre_ok = codes > 0 && *in0_ok;
        if (*in0_ok) {
            interp_finish(u, rf, in0);
            idle_check(u, in0);
        }
        if (*in0_ok && u->watch_asked) {
            watch_finish(u, k->interp, in0);
        } else {
            gcwatch_reset(&u->watch);
        }
    } else {
        gcwatch_reset(&u->watch);
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

/* Where the thread state TS (L->thread.size bytes) says T's chain starts. */
void unwind_threads_frame_inputs(const struct py_layout *L, const uint8_t *ts, struct thread_ctx *t)
{
    t->cframe = 0;
    t->fr.current_frame = 0;
    t->fr.chunk_addr = 0;
    t->fr.base_frame = 0;
    /* 3.11 and 3.12 keep the newest frame in the thread's current _PyCFrame, read later. */
    if (layout_has(L->thread.cframe)) {
        layout_read_u64(ts, L->thread.size, L->thread.cframe, &t->cframe);
    } else {
        layout_read_u64(ts, L->thread.size, L->thread.current_frame, &t->fr.current_frame);
    }
    layout_read_u64(ts, L->thread.size, L->thread.datastack_chunk, &t->fr.chunk_addr);
    layout_read_u64(ts, L->thread.size, L->thread.base_frame, &t->fr.base_frame);
}

/* The thread state's field the walk starts from: its current frame, or on 3.11 and 3.12 its
 * current _PyCFrame; 0 unknown. */
static uint64_t frame_input(const struct py_layout *L, const uint8_t *ts)
{
    uint64_t v = 0;
    layout_read_u64(ts, L->thread.size,
                    layout_has(L->thread.cframe) ? L->thread.cframe : L->thread.current_frame, &v);
    return v;
}

/* Takes what the walk needs out of the thread state TS (L->thread.size bytes) at ADDR. */
static void parse_thread(const struct unwind *u, const uint8_t *ts, uint64_t addr,
                         const struct interp_fields *in, struct thread_ctx *t)
{
    const struct py_layout *L = u->L;
    if (!t->idle) {
        /* What a head batch read ahead (and the hint it named, in a hints array the next walks
         * reuse) serves only the walk it was read for: a slot this walk's head batch did not
         * guess starts afresh. */
        t->fr.pre_read = t->fr.pre_read && t->guessed_walk == u->walk_serial;
        frames_begin(&t->fr, addr);
    }
    t->addr = addr;
    t->next = 0;
    t->interp = 0;
    t->thread_id = 0;
    t->native_id = 0;
    layout_read_u64(ts, L->thread.size, L->thread.next, &t->next);
    layout_read_u64(ts, L->thread.size, L->thread.interp, &t->interp);
    if (!t->idle) {
        unwind_threads_frame_inputs(L, ts, t);
    }
    layout_read_u64(ts, L->thread.size, L->thread.thread_id, &t->thread_id);
    layout_read_u64(ts, L->thread.size, L->thread.native_thread_id, &t->native_id);
    t->gil = thread_gil(u, ts, in, addr);
    t->gil_requested = read_flag(ts, L->thread.size, L->thread.gil_requested, 4);
    if (t->gil == SNAP_YES && t->gil_requested == SNAP_YES) {
        t->gil_requested = SNAP_NO;
    }
    t->has_exception = unwind_threads_exception(u, ts, addr, t);
}

/* Where 3.11 and 3.12 threads' chains start: each thread's current _PyCFrame, all read in one
 * batch per PROC_IOV_MAX threads. */
void unwind_threads_read_cframes(struct unwind *u, struct thread_ctx *ts, size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    struct thread_ctx *owner[PROC_IOV_MAX];
    if (!layout_has(u->L->thread.cframe)) {
        return;
    }
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t k = 0;
        for (size_t i = base; i < n && i < base + PROC_IOV_MAX; i++) {
            /* Read ahead by the head batch when the thread still uses that _PyCFrame. */
            bool pre = ts[i].cframe_pre && ts[i].cframe == ts[i].last_cframe;
            ts[i].cframe_pre = false;
            ts[i].last_cframe = ts[i].cframe;
            if (pre) {
                ts[i].fr.current_frame = ts[i].cframe_guess;
            } else if (ts[i].cframe != 0) {
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
                unwind_warn(u, "thread %" PRIu64 ": current frame unreadable", owner[j]->native_id);
            }
        }
    }
}

/* Reads the thread states the last walk found that the head batch did not, in one batch per
 * PROC_IOV_MAX. The list is a linked list, so this is a guess; unwind_threads_collect() keeps only
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
            iov[j] =
                (struct proc_iov){k->addrs[base + j] + u->ts_lo,
                                  u->ts_buf + (base + j) * L->thread.size + u->ts_lo, u->ts_len};
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
/* Thread states are allocated one after another, and the list runs from the newest: the next
 * ones are likely at ADDR, ADDR - STRIDE, ... where STRIDE is the distance between the last two.
 * Reads that many guesses (as many as the list has shown so far, at least 4, at most the room
 * the slots have) into slots N on in one batch and notes them as known; returns how many slots
 * are now read ahead (N: none). The links confirm each guess before it is used
 * (unwind_threads_collect()). */
static size_t guess_by_stride(struct unwind *u, size_t n, uint64_t addr)
{
    const struct py_layout *L = u->L;
    uint64_t prev = u->ts[n - 1].addr;
    uint64_t stride = prev > addr ? prev - addr : addr - prev;
    bool down = prev > addr;
    if (stride < L->thread.size || stride > (1u << 20)) {
        return n;
    }
    /* Within the room there is (grown as the list would grow it: new pages cost more than
     * the reads they save). */
    if (u->cap_ts - n < 2 && !unwind_threads_reserve(u, n + 2)) {
        return n;
    }
    size_t k = n < 4 ? 4 : n;
    k = k > PROC_IOV_MAX ? PROC_IOV_MAX : k;
    k = k > u->cap_ts - n ? u->cap_ts - n : k;
    if (k < 2) {
        return n;
    }
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t j = 0; j < k; j++) {
        uint64_t step = stride * j;
        uint64_t a = down ? addr - step : addr + step;
        if ((down && step > addr) || (!down && a < addr) || a + u->ts_lo < a) {
            k = j;
            break;
        }
        u->known.addrs[n + j] = a;
        iov[j] = (struct proc_iov){a + u->ts_lo, u->ts_buf + (n + j) * L->thread.size + u->ts_lo,
                                   u->ts_len};
    }
    if (k < 2 || proc_read_many(u->proc, iov, k, NULL) < 0) {
        return n;
    }
    return n + k;
}

/* A sample of the GIL holders alone (unwind_set_holder_only(), CPython's only_active_thread):
 * the thread state holding interpreter INTERP's GIL (its last holder while it is locked) is
 * the one read. Returns 1, 0 when the GIL is free (or its holder is gone, or no thread), -1
 * when the version does not say who holds it (then the whole list is read). */
static long collect_holder(struct unwind *u, uint64_t interp, const struct interp_fields *in)
{
    const struct py_layout *L = u->L;
    bool told = layout_has(L->interp.gil_holder)
                    ? layout_has(L->interp.gil_locked)
                    : layout_has(L->runtime.gil_holder) &&
                          (layout_has(L->runtime.gil_locked) || L->runtime.globals_only);
    /* The first walk reads the whole list: the head batches that follow read the main
     * interpreter's fields (and the holder's thread state) ahead from where it found them. */
    if (!told || u->known.interp == 0 || !unwind_threads_reserve(u, 1)) {
        return -1;
    }
    if (in->gil_locked == 0 || in->gil_holder == 0) {
        return 0;
    }
    struct pt_error e = {0};
    uint8_t *buf = u->ts_buf;
    bool main_interp = interp == u->known.interp;
    bool pre = main_interp && u->holder_pre && in->gil_holder == u->holder_guess;
    u->holder_pre = false;
    if (main_interp) {
        u->holder_guess = in->gil_holder;
    }
    if (!pre &&
        proc_read_bytes(u->proc, in->gil_holder + u->ts_lo, buf + u->ts_lo, u->ts_len, &e) < 0) {
        unwind_warn(u, "interpreter %" PRId64 ": the GIL holder's thread state not read: %s",
                    (int64_t)in->id, e.msg);
        return 0;
    }
    struct thread_ctx *t = &u->ts[0];
    t->idle = false;
    parse_thread(u, buf, in->gil_holder, in, t);
    /* A holder that ended and was freed meanwhile names no interpreter of ours. */
    return t->interp == interp && t->thread_id != 0 ? 1 : 0;
}

size_t unwind_threads_collect(struct unwind *u, uint64_t interp, const struct interp_fields *in,
                              bool main_interp)
{
    const struct py_layout *L = u->L;
    size_t n = 0;
    if (u->holder_only && u->snap == NULL) {
        long held = collect_holder(u, interp, in);
        if (held >= 0) {
            return (size_t)held; /* the list the snapshots read stays known */
        }
    }
    size_t guessed = main_interp ? read_known_threads(u, interp) : 0;
    uint64_t addr = in->threads_head;
    for (size_t steps = 0; addr != 0 && steps <= LIMIT_THREADS; steps++) {
        struct pt_error e = {0};
        if (n == LIMIT_THREADS) {
            unwind_warn(u, "interpreter %" PRId64 ": more than %d threads, rest not shown",
                        (int64_t)in->id, LIMIT_THREADS);
            break;
        }
        if (!unwind_threads_reserve(u, n + 1)) {
            unwind_warn(u, "out of memory reading threads");
            break;
        }
        /* The guess holds while the links lead where the last walk went (or where the
         * allocation stride pointed). */
        if (n >= guessed || u->known.addrs[n] != addr) {
            guessed = main_interp && n > 0 ? guess_by_stride(u, n, addr) : 0;
        }
        uint8_t *buf = u->ts_buf + n * L->thread.size;
        if (n >= guessed) {
            guessed = 0;
            if (proc_read_bytes(u->proc, addr + u->ts_lo, buf + u->ts_lo, u->ts_len, &e) < 0) {
                unwind_warn(u, "interpreter %" PRId64 ": thread list cut short: %s",
                            (int64_t)in->id, e.msg);
                break;
            }
        }
        u->ts[n].idle = main_interp && u->snap == NULL && u->idle_now &&
                        may_keep(u, &u->ts[n], addr) &&
                        frame_input(u->L, buf) == u->ts[n].kept_frame_input;
        parse_thread(u, buf, addr, in, &u->ts[n]);
        /* A thread state freed while the list was read (a thread that ended) no longer
         * names its interpreter: what it holds now, and what it links to, is not a thread. */
        if (u->ts[n].interp != interp) {
            unwind_warn(u,
                        "interpreter %" PRId64 ": thread list changed while read (the "
                        "thread state at 0x%" PRIx64 " was freed)",
                        (int64_t)in->id, addr);
            break;
        }
        addr = u->ts[n].next;
        /* A thread state made for a thread that has not started yet (the thread starting it
         * makes it) belongs to no thread: no ident, no tid, no frames. */
        if (u->ts[n].thread_id != 0) {
            n++;
        }
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
