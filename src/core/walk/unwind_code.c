/* unwind_code: the code objects a walk's frames run: brought into the code cache in batched
 * reads (trusted on the target's change marker where it has one), then given to each frame
 * with its instruction offset, dropping frames that have not started and marking stacks that
 * changed while read. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pyobj/code.h"
#include "core/pyobj/codemark.h"
#include "core/util/error.h"
#include "core/walk/frames.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"
#include "core/walk/unwind_threads.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Notes that the code object at ADDR could not be read (E says how; STRUCT_READ: not even its
 * struct), for the frames that name it. A frame whose code pointer leads to no code object
 * was read while its thread's stack changed (or the stack is corrupt). */
static void code_failed(struct unwind *u, uint64_t addr, const struct pt_error *e, bool struct_read)
{
    enum snap_unreadable why = SNAP_UNREADABLE_CODE;
    if (struct_read || e->code == PT_E_BADLAYOUT) {
        why = SNAP_UNREADABLE_STACK;
    } else if (e->code == PT_E_LIMIT &&
               code_cache_get_counters(u->codes).entries >= LIMIT_CODE_CACHE) {
        /* Not a line table over its limit: the cache had no room. */
        why = SNAP_UNREADABLE_CACHE;
    } else if (e->code == PT_E_NOMEM) {
        why = SNAP_UNREADABLE_NOMEM;
    }
    unwind_warn(u, "unreadable frame: %s: code object at 0x%" PRIx64 ": %s",
                snapshot_unreadable_reason(why), addr, e->msg);
    /* Room for every address of the walk was made with code_addrs. */
    if (u->n_code_fails < u->cap_code_addrs) {
        u->code_fails[u->n_code_fails++] = (struct code_failure){addr, why};
    }
}

static int cmp_failure(const void *a, const void *b)
{
    return cmp_u64(&((const struct code_failure *)a)->addr,
                   &((const struct code_failure *)b)->addr);
}

/* The cache entry of raw frame F's code object (unwind_code_settle() found it), or NULL with *WHY
 * saying why there is none. */
struct code_info *unwind_code_of(const struct unwind *u, const struct frames_raw *f,
                                    enum snap_unreadable *why)
{
    struct code_info *ci = f->code;
    if (ci != NULL) {
        *why = SNAP_UNREADABLE_NONE;
        return ci;
    }
    struct code_failure key = {f->code_addr, SNAP_UNREADABLE_NONE};
    const struct code_failure *hit =
        u->n_code_fails > 0
            ? bsearch(&key, u->code_fails, u->n_code_fails, sizeof *u->code_fails, cmp_failure)
            : NULL;
    /* Every failure is noted but when memory ran out before the reads. */
    *why = hit != NULL ? hit->why : SNAP_UNREADABLE_NOMEM;
    return NULL;
}

/* Checks the code object at ADDR, whose struct is RAW, through the cache; a failure is noted
 * for the frames that name it. The main interpreter's co_versions go to the marker's checks. */
static void check_code(struct unwind *u, uint64_t addr, const uint8_t *raw, bool main_interp)
{
    struct pt_error e = {0};
    struct code_info *ci =
        code_cache_get(u->codes, u->proc, u->L, u->rt->code_type_addr, addr, raw, &e);
    if (ci == NULL) {
        code_failed(u, addr, &e, false);
    } else if (main_interp) {
        codemark_saw_version(&u->mark, ci->key[CODE_KEY_VERSION]);
    }
}

/* Brings every code object the threads' frames name into the cache: their structs are read in
 * batches of one system call; strings and tables only for objects not cached yet. */
void unwind_code_load(struct unwind *u, struct thread_ctx *ts, size_t n, bool main_interp,
                       bool trust_cache)
{
    const struct py_layout *L = u->L;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        total += ts[i].fr.n_frames;
    }
    u->n_code_fails = 0;
    if (total > u->cap_code_addrs) {
        uint64_t *fresh = realloc(u->code_addrs, total * sizeof *fresh);
        struct code_failure *fails =
            fresh != NULL ? realloc(u->code_fails, total * sizeof *fails) : NULL;
        if (fresh != NULL) {
            u->code_addrs = fresh;
        }
        if (fails == NULL) {
            unwind_warn(u, "out of memory reading code objects");
            return;
        }
        u->code_fails = fails;
        u->cap_code_addrs = total;
    }
    uint64_t *addrs = u->code_addrs;
    /* With a code marker that vouches (codemark.c), an entry read under the walk's generation
     * costs nothing; without one, each entry is checked against its object's current fields.
     * Only the main interpreter's marker is read, so subinterpreters always check. */
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
            if (trust_cache && code_cache_trust(u->codes, a) != NULL) {
                u->trusted_hits++;
            } else {
                addrs[k++] = a;
            }
        }
    }
    if (k > 0) {
        qsort(addrs, k, sizeof *addrs, cmp_u64);
    }
    size_t uniq = 0;
    for (size_t i = 0; i < k; i++) {
        if (uniq == 0 || addrs[uniq - 1] != addrs[i]) {
            addrs[uniq++] = addrs[i];
        }
    }
    /* The next walk's head batch reads these ahead (already sorted). */
    size_t n_next = 0;
    if (main_interp && !trust_cache) {
        n_next = uniq < UNWIND_CODE_GUESS ? uniq : UNWIND_CODE_GUESS;
    }
    /* No frame at all (a target dying, threads not started): ADDRS may be NULL. */
    if (n_next > 0) {
        memcpy(u->code_guess_next, addrs, n_next * sizeof *addrs);
    }
    /* Those the head batch read ahead are checked from its copy; the rest are read now. */
    size_t left = 0;
    for (size_t i = 0; i < uniq; i++) {
        const uint64_t *hit = u->code_pre_ok ? bsearch(&addrs[i], u->code_guess, u->n_code_guess,
                                                       sizeof *u->code_guess, cmp_u64)
                                             : NULL;
        if (hit == NULL) {
            addrs[left++] = addrs[i];
        } else {
            check_code(u, addrs[i], u->code_pre + (size_t)(hit - u->code_guess) * L->code.size,
                       main_interp);
        }
    }
    if (main_interp && !trust_cache) {
        uint64_t *tmp = u->code_guess;
        u->code_guess = u->code_guess_next;
        u->code_guess_next = tmp;
        u->n_code_guess = n_next;
    }
    u->code_pre_ok = false;
    uniq = left;
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t base = 0; base < uniq; base += PROC_IOV_MAX) {
        size_t m = uniq - base < PROC_IOV_MAX ? uniq - base : PROC_IOV_MAX;
        for (size_t j = 0; j < m; j++) {
            iov[j] = (struct proc_iov){addrs[base + j], u->code_buf + j * L->code.size,
                                       L->code.size};
        }
        bool batch_ok = proc_read_many(u->proc, iov, m, NULL) == 0;
        /* The strings and tables of those not cached, read ahead together. */
        if (batch_ok) {
            code_cache_prefetch(u->codes, u->proc, L, u->rt->code_type_addr, addrs + base,
                                u->code_buf, m);
        }
        for (size_t j = 0; j < m; j++) {
            struct pt_error e = {0};
            if (!batch_ok &&
                proc_read_bytes(u->proc, iov[j].addr, iov[j].dst, iov[j].len, &e) < 0) {
                code_failed(u, iov[j].addr, &e, true);
            } else {
                check_code(u, iov[j].addr, iov[j].dst, main_interp);
            }
        }
        code_cache_prefetch_end(u->codes);
    }
    if (u->n_code_fails > 1) {
        qsort(u->code_fails, u->n_code_fails, sizeof *u->code_fails, cmp_failure);
    }
}

/* The frame's bytecode offset, as the line tables take it (code_instr_offset()). */
static uint32_t frame_offset(const struct py_layout *L, const struct code_info *ci,
                             const struct frames_raw *f)
{
    uint64_t off;
    if (!code_instr_offset(ci, L, f->instr_ptr, &off) || off >= SAMPLE_OFFSET_UNKNOWN) {
        return SAMPLE_OFFSET_UNKNOWN;
    }
    return (uint32_t)off;
}

/* Whether T keeps the stack the walk before settled (an idle thread), or took again the very
 * frames it settled (frames_same_as_kept(): a parked thread, walked because others ran), whose
 * frames' entries are all still allocated and checked in this round: then each frame settles
 * to what it did (its entry, instruction pointer and generator flag are the same), and so does
 * the stack. The entries count as used. A thousand parked threads each sample: 60 % of
 * settling. */
static bool settled_before(struct unwind *u, const struct thread_ctx *t)
{
    const struct frames_thread *fr = &t->fr;
    if (!(t->idle || frames_same_as_kept(fr)) || t->settled_walk == 0 ||
        t->settled_walk + 1 != u->walk_serial ||
        t->settled_changes != code_cache_changes(u->codes)) {
        return false;
    }
    for (size_t i = 0; i < fr->n_frames; i++) {
        if (fr->frames[i].code == NULL || !code_cache_renew(u->codes, fr->frames[i].code)) {
            return false;
        }
    }
    return true;
}

/* Gives each of T's frames its code-cache entry (unwind_code_load() brought them in), drops those
 * that have not started (code_frame_incomplete(): the __init__ cleanup shim, a frame caught
 * before its first instruction) as Python's own views do, and marks T's frames torn when one
 * runs no code object or stands at an instruction outside its code: a stack that changed
 * while it was read (frames.c checks the chain itself). One pass, one lookup a frame at most:
 * recursion repeats the entry of the frame before. A stack kept and settled by the walk
 * before, with nothing changed under it (settled_before()), is left as it is. */
void unwind_code_settle(struct unwind *u, struct thread_ctx *t)
{
    struct frames_thread *fr = &t->fr;
    const struct py_layout *L = u->L;
    bool again = settled_before(u, t);
    t->settled_walk = u->walk_serial;
    t->settled_changes = code_cache_changes(u->codes);
    if (again) {
        return;
    }
    fr->n_kept = 0; /* the frames below are settled again (and may be compacted) */
    bool incomplete_known = layout_has(L->code.firsttraceable);
    /* The frame before: recursion repeats its code object, and often its instruction. */
    struct code_info *last = NULL;
    uint64_t last_instr = 0;
    bool last_gen = false;
    bool last_incomplete = false;
    bool last_inside = false;
    uint32_t last_offset = SAMPLE_OFFSET_UNKNOWN;
    size_t kept = 0;
    /* In locals: the stores through F below could alias FR's fields, which would otherwise be
     * loaded again for each of hundreds of frames. */
    struct frames_raw *frames = fr->frames;
    const size_t n = fr->n_frames;
    bool torn = fr->torn;
    for (size_t i = 0; i < n; i++) {
        struct frames_raw *f = &frames[i];
        struct code_info *ci = last != NULL && last->addr == f->code_addr
                                   ? last
                                   : code_cache_find(u->codes, f->code_addr);
        bool incomplete = false;
        bool inside = false;
        uint32_t offset = SAMPLE_OFFSET_UNKNOWN;
        if (ci != NULL && ci == last && f->instr_ptr == last_instr && f->generator == last_gen) {
            incomplete = last_incomplete;
            inside = last_inside;
            offset = last_offset;
        } else if (ci != NULL) {
            incomplete = incomplete_known &&
                         code_frame_incomplete(ci, L, f->instr_ptr, f->generator);
            inside = code_instr_inside(ci, L, f->instr_ptr);
            offset = frame_offset(L, ci, f);
            last = ci;
            last_instr = f->instr_ptr;
            last_gen = f->generator;
            last_incomplete = incomplete;
            last_inside = inside;
            last_offset = offset;
        }
        f->code = ci;
        f->offset = offset;
        /* A frame whose code object is unknown stays. */
        if (incomplete) {
            continue;
        }
        if (kept != i) {
            frames[kept] = *f;
        }
        if (!torn && !inside) {
            torn = true;
            fr->torn = true;
            snprintf(fr->error, sizeof fr->error, "frame %zu at 0x%" PRIx64 " %s", kept,
                     f->addr,
                     ci == NULL ? "runs no code object" : "is at an instruction outside its code");
        }
        kept++;
    }
    fr->n_frames = kept;
    /* Kept for the next walk to compare with: a stack settled clean (a torn one is settled
     * again, and found torn again, should the same frames come back). */
    fr->n_kept = fr->torn ? 0 : kept;
    if (fr->torn) {
        unwind_warn(u, "thread %" PRIu64 ": its stack changed while it was read (%s)", t->native_id,
                    fr->error);
    }
}
