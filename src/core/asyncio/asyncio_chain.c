/* asyncio_chain: stage 3 of the asyncio pipeline, the one walker of coroutine chains: a task's
 * coroutine stack down its await chain, for every version pytop reads tasks of (frame objects up
 * to 3.10, embedded interpreter frames from 3.11), many chains side by side in batched reads. */
#include "config.h"

#include "core/asyncio/asyncio_chain.h"

#include <stdlib.h>
#include <string.h>

#include "core/asyncio/asyncio_common.h"
#include "core/util/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"

enum {
    PREFETCH_BYTES = 1 << 20, /* coroutine bytes read for one batch of chains */
    OP_MEMO = 64,             /* opcodes remembered a walk (up to 3.10) */
    BUILT_MAX = 1 << 16,      /* distinct stacks shared per snapshot, at most (a table of 2 MiB) */
};

/* One chain while a batch of them is followed level by level. */
struct walk {
    uint64_t coro;  /* the coroutine at this level */
    uint64_t type;  /* its type: what it awaits must be of the same */
    uint64_t saved; /* Brent's saved coroutine: meeting it again is a loop */
    uint64_t awaited;
    uint64_t awaited_type;
    size_t n;       /* frames so far */
    size_t fill;    /* frames gathered into the chain's run of SEQ */
    size_t at;      /* where that run starts */
    bool have_head; /* the coroutine's bytes are in the batch buffer already */
    bool active;
    bool trunc;
};

/* A frame of some chain, in the order the levels were walked: its code object and where it
 * stands, turned into a snapshot frame once the chain is whole. */
struct pool_frame {
    uint64_t code;
    uint64_t instr;
    uint32_t chain;
};

/* A stack built in the snapshot since asyncio_chain_begin(), for chains that end up with the
 * same one to share it: thousands of tasks parked at one await make a few distinct stacks, and
 * a one-shot dump pays a page fault for each page it fills. Valid when GEN is the chain's. */
struct built_stack {
    uint64_t hash;
    const struct snap_frame *frames;
    size_t n;
    uint32_t gen;
};

/* One coroutine's frame, as the walk needs it. */
struct level {
    uint64_t code;
    uint64_t instr;
    uint64_t state;       /* gi_frame_state (embedded frames) */
    const uint8_t *frame; /* the frame object's bytes, or the embedded frame's */
    size_t frame_len;
};

struct asyncio_chain {
    struct proc *proc;
    const struct py_layout *L;
    struct layout_asyncio A;
    struct asyncio_common *common;
    struct snapshot *s;
    bool frame_objects;
    size_t head_len;  /* bytes of a coroutine read: up to gi_frame, or its whole frame */
    size_t frame_len; /* bytes of a frame object read (frame objects only) */
    size_t batch;     /* chains per walk; slot BATCH is asyncio_chain_walk_one()'s */
    uint8_t *heads;   /* (batch + 1) * head_len */
    uint8_t *frames;  /* (batch + 1) * frame_len (frame objects) */
    struct walk *w;   /* batch + 1 */
    struct proc_iov *iov;
    uint32_t *who;
    bool *ok;
    uint8_t (*next)[2]; /* batch + 1: the bytes after each slot's instruction (3.11, 3.12) */
    bool *next_ok;
    /* Up to 3.10: the opcode at a code object's offset, for the walk in hand (coroutines of
     * one code object wait at the same few places). */
    struct op_memo {
        bool used; /* in this walk */
        uint64_t code;
        uint64_t at;
        uint8_t op;
        bool ok;
    } memo[OP_MEMO];
    struct pool_frame *pool; /* the frames of the chains being walked */
    size_t n_pool;
    size_t cap_pool;
    struct pool_frame *seq;  /* the pool gathered chain by chain, innermost first */
    size_t cap_seq;
    struct snap_frame *tmp;  /* one chain's frames, before they go into the snapshot */
    size_t cap_tmp;
    struct built_stack *built; /* open addressing by hash; a power of two entries */
    size_t cap_built;
    size_t n_built;
    uint32_t gen;
    size_t levels; /* coroutines followed since asyncio_chain_begin() */
};

/* A field of WIDTH bytes at OFF inside SIZE bytes (false for LAYOUT_NONE). */
static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
    uint64_t end;
    return !__builtin_add_overflow(off, width, &end) && end <= size;
}

/* Without the version's asyncio table, a coroutine as the debug offsets describe it (3.14+):
 * an embedded frame, marked delegating by its state, the delegate AWAIT_SLOT items below its
 * stack pointer. */
static bool from_debug_offsets(const struct py_layout *L, struct layout_asyncio *A)
{
    memset(A, 0, sizeof *A);
    A->gen_frame = LAYOUT_NONE;
    A->gen_iframe = L->gen.gi_iframe;
    A->gen_frame_state = L->gen.gi_frame_state;
    A->yield_from = LAYOUT_YF_FRAME_STATE;
    A->stack = LAYOUT_STACK_FRAME_POINTER;
    A->stack_top = L->frame_stackpointer;
    A->await_slot = (unsigned)L->gen.await_slot;
    A->state_created = -1;
    return L->gen.state_cleared >= 0 && L->gen.state_yield_from >= 0 && L->gen.await_slot > 0 &&
           L->gen.await_slot <= 4 && fits(L->gen.gi_iframe, L->frame.size, LIMIT_OBJECT_READ) &&
           fits(L->gen.gi_frame_state, 1, LIMIT_OBJECT_READ) &&
           fits(L->frame_stackpointer, 8, L->frame.size);
}

static bool buffers_new(struct asyncio_chain *c)
{
    size_t per = c->head_len + (c->frame_objects ? c->frame_len : 0);
    /* Two reads a chain at most per call (the list reader reads names with the coroutines). */
    c->batch = PREFETCH_BYTES / per < PROC_IOV_MAX / 2 ? PREFETCH_BYTES / per : PROC_IOV_MAX / 2;
    size_t b = c->batch + 1;
    c->heads = malloc(b * c->head_len);
    c->frames = malloc(c->frame_objects ? b * c->frame_len : 1);
    c->w = malloc(b * sizeof *c->w);
    c->iov = malloc(b * sizeof *c->iov);
    c->who = malloc(b * sizeof *c->who);
    c->ok = malloc(b * sizeof *c->ok);
    c->next = malloc(b * sizeof *c->next);
    c->next_ok = malloc(b * sizeof *c->next_ok);
    return c->batch > 0 && c->heads != NULL && c->frames != NULL && c->w != NULL &&
           c->iov != NULL && c->who != NULL && c->ok != NULL && c->next != NULL &&
           c->next_ok != NULL;
}

struct asyncio_chain *asyncio_chain_new(struct proc *p, const struct py_layout *L,
                                        const struct layout_asyncio *A,
                                        struct asyncio_common *common, struct pt_error *err)
{
    struct asyncio_chain *c = calloc(1, sizeof *c);
    if (c == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    c->proc = p;
    c->L = L;
    c->common = common;
    if (A != NULL) {
        c->A = *A;
    } else if (!from_debug_offsets(L, &c->A)) {
        free(c);
        pt_error_set(err, PT_E_BADLAYOUT, 0, "no coroutine layout");
        return NULL;
    }
    c->frame_objects = layout_has(c->A.gen_frame);
    if (c->frame_objects) {
        uint64_t a = L->object.ob_type > c->A.gen_frame ? L->object.ob_type : c->A.gen_frame;
        c->head_len = a + 8;
        c->frame_len = L->frame.size;
    } else {
        c->head_len = c->A.gen_iframe + L->frame.size;
        /* The debug offsets' object size, where it is one (gi_frame_state may lie past the
         * frame's header). */
        if (layout_has(L->gen.size) && L->gen.size <= LIMIT_OBJECT_READ &&
            L->gen.size > c->head_len) {
            c->head_len = L->gen.size;
        }
        c->frame_len = 1;
    }
    if (c->head_len > LIMIT_OBJECT_READ || c->frame_len > LIMIT_OBJECT_READ ||
        (!c->frame_objects && !fits(c->A.gen_frame_state, 1, c->head_len))) {
        pt_error_set(err, PT_E_BADLAYOUT, 0, "coroutine layout too large");
        free(c);
        return NULL;
    }
    if (!buffers_new(c)) {
        asyncio_chain_free(c);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    return c;
}

void asyncio_chain_free(struct asyncio_chain *c)
{
    if (c != NULL) {
        free(c->heads);
        free(c->frames);
        free(c->w);
        free(c->iov);
        free(c->next);
        free(c->next_ok);
        free(c->who);
        free(c->ok);
        free(c->pool);
        free(c->seq);
        free(c->tmp);
        free(c->built);
        free(c);
    }
}

void asyncio_chain_begin(struct asyncio_chain *c, struct snapshot *s)
{
    c->s = s;
    c->levels = 0;
    c->n_built = 0;
    if (++c->gen == 0) {
        memset(c->built, 0, c->cap_built * sizeof *c->built);
        c->gen = 1;
    }
}

size_t asyncio_chain_batch(const struct asyncio_chain *c)
{
    return c->batch;
}

uint8_t *asyncio_chain_head(struct asyncio_chain *c, size_t j)
{
    return c->heads + j * c->head_len;
}

size_t asyncio_chain_head_len(const struct asyncio_chain *c)
{
    return c->head_len;
}

static int32_t read_i32(const uint8_t *buf, size_t len, uint64_t off)
{
    uint64_t v = 0;
    layout_read_uint(buf, len, off, 4, &v);
    return (int32_t)(uint32_t)v;
}

/* Up to 3.10: the next instruction after f_lasti is YIELD_FROM, and the frame's stack is not in
 * use by a running frame; the delegate is the top item. Its slot's address, or 0. */
static uint64_t slot_frame_object(struct asyncio_chain *c, const struct level *lv)
{
    const struct layout_asyncio *A = &c->A;
    int32_t lasti = (int32_t)(uint32_t)lv->instr;
    uint64_t slot = 0;
    uint64_t bytes = 0;
    uint8_t op = 0;
    if (lasti < 0) {
        return 0;
    }
    if (A->stack == LAYOUT_STACK_POINTER) {
        uint64_t top = 0;
        layout_read_u64(lv->frame, lv->frame_len, A->stack_top, &top);
        if (top < 8) {
            return 0;
        }
        slot = top - 8;
    } else {
        int32_t depth = read_i32(lv->frame, lv->frame_len, A->stack_top);
        uint64_t base = 0;
        layout_read_u64(lv->frame, lv->frame_len, A->stack_base, &base);
        if (depth <= 0 || depth > LIMIT_FRAME_STACK || base == 0) {
            return 0;
        }
        slot = base + 8 * (uint64_t)(depth - 1);
    }
    uint64_t at = (uint64_t)lasti * A->lasti_scale + 2;
    size_t h = (size_t)(((lv->code >> 4) * 0x9E3779B97F4A7C15u + at) % OP_MEMO);
    struct op_memo *m = &c->memo[h];
    if (!m->used || m->code != lv->code || m->at != at) {
        bool ok = proc_read_bytes(c->proc, lv->code + A->code_code, &bytes, 8, NULL) == 0 &&
                  bytes != 0 &&
                  proc_read_bytes(c->proc, bytes + c->L->bytes.ob_sval + at, &op, 1, NULL) == 0;
        *m = (struct op_memo){true, lv->code, at, op, ok};
    }
    if (!m->ok || m->op != (uint8_t)A->op_yield_from) {
        return 0;
    }
    return slot;
}

/* 3.11+: gi_frame_state says so (3.13+), or the next instruction is a RESUME with oparg 2 or 3
 * (after `yield from`, after `await`); the delegate is the top item of the frame's stack. Its
 * slot's address, or 0. */
static uint64_t slot_embedded(struct asyncio_chain *c, size_t at_slot, uint64_t coro,
                              const struct level *lv)
{
    const struct layout_asyncio *A = &c->A;
    if (A->yield_from == LAYOUT_YF_FRAME_STATE) {
        int st = (int)(uint8_t)lv->state;
        if (st != c->L->gen.state_yield_from && st != c->L->gen.state_yield_from_locked) {
            return 0;
        }
    } else {
        const uint8_t *next = c->next[at_slot];
        bool resume = false;
        /* next_bytes() read them for the whole batch. */
        if ((int)(uint8_t)lv->state == A->state_created || !c->next_ok[at_slot]) {
            return 0;
        }
        for (size_t i = 0; i < LAYOUT_ASYNCIO_RESUME_OPS; i++) {
            resume = resume || (A->op_resume[i] >= 0 && next[0] == (uint8_t)A->op_resume[i]);
        }
        if (!resume || next[1] < 2) {
            return 0;
        }
    }
    if (A->stack == LAYOUT_STACK_FRAME_POINTER) {
        /* 3.14+: a tagged pointer past the top item; the delegate sits AWAIT_SLOT below. */
        uint64_t sp = 0;
        uint64_t below = 8 * (uint64_t)A->await_slot;
        layout_read_u64(lv->frame, lv->frame_len, A->stack_top, &sp);
        sp &= ~c->L->frame.executable_tag_mask;
        return sp < below ? 0 : sp - below;
    }
    int32_t top = read_i32(lv->frame, lv->frame_len, A->stack_top);
    if (top <= 0 || top > LIMIT_FRAME_STACK) {
        return 0;
    }
    return coro + A->gen_iframe + A->stack_base + 8 * (uint64_t)(top - 1);
}

/* Chain W's coroutine from its bytes HEAD (and its frame object's, FRAME): false when it has
 * no Python frame to show. */
static bool read_level(const struct asyncio_chain *c, const uint8_t *head, const uint8_t *frame,
                       struct level *lv)
{
    const struct py_layout *L = c->L;
    memset(lv, 0, sizeof *lv);
    if (c->frame_objects) {
        lv->frame = frame;
        lv->frame_len = c->frame_len;
    } else {
        layout_read_uint(head, c->head_len, c->A.gen_frame_state, 1, &lv->state);
        /* A cleared frame (the coroutine returned) is no frame at all. */
        if ((int)lv->state == L->gen.state_cleared) {
            return false;
        }
        lv->frame = head + c->A.gen_iframe;
        lv->frame_len = L->frame.size;
    }
    uint64_t owner = 0;
    /* Where frames say who owns them, a coroutine's is its generator's. */
    if (!c->frame_objects && layout_has(L->frame.owner) &&
        (!layout_read_uint(lv->frame, lv->frame_len, L->frame.owner, 1, &owner) ||
         (int)owner != L->frame.owner_generator)) {
        return false;
    }
    if (!layout_read_u64(lv->frame, lv->frame_len, L->frame.executable, &lv->code) ||
        !layout_read_uint(lv->frame, lv->frame_len, L->frame.instr_ptr, L->frame.instr_width,
                          &lv->instr)) {
        return false;
    }
    lv->code &= ~L->frame.executable_tag_mask;
    return true;
}

/* Marks chain W cut (TRUNC) or ended. */
static void stop(struct walk *w, bool trunc)
{
    w->trunc = w->trunc || trunc;
    w->active = false;
}

/* Reads the K regions in c->iov; a chain whose region cannot be read is cut. */
static void read_or_cut(struct asyncio_chain *c, size_t k)
{
    asyncio_common_read_each(c->proc, c->iov, k, c->ok);
    for (size_t i = 0; i < k; i++) {
        if (!c->ok[i]) {
            stop(&c->w[c->who[i]], true);
        }
    }
}

/* Level step one: the coroutines of this level, where not read yet, and (frame objects) the
 * frames they name. */
static void read_heads(struct asyncio_chain *c, size_t slot0, size_t m)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++) {
        struct walk *w = &c->w[slot0 + j];
        if (!w->active) {
            continue;
        }
        if (w->n == LIMIT_CORO_DEPTH || w->coro == w->saved || c->levels == LIMIT_CORO_LEVELS) {
            stop(w, true);
            continue;
        }
        if ((w->n & (w->n + 1)) == 0) {
            w->saved = w->coro;
        }
        if (!w->have_head) {
            c->iov[k] = (struct proc_iov){w->coro, asyncio_chain_head(c, slot0 + j), c->head_len};
            c->who[k++] = (uint32_t)(slot0 + j);
        }
        w->have_head = false;
    }
    read_or_cut(c, k);
    if (!c->frame_objects) {
        return;
    }
    k = 0;
    for (size_t j = 0; j < m; j++) {
        uint64_t f = 0;
        if (!c->w[slot0 + j].active) {
            continue;
        }
        layout_read_u64(asyncio_chain_head(c, slot0 + j), c->head_len, c->A.gen_frame, &f);
        /* A finished coroutine has no frame. */
        if (f == 0) {
            stop(&c->w[slot0 + j], false);
            continue;
        }
        c->iov[k] = (struct proc_iov){f, c->frames + (slot0 + j) * c->frame_len, c->frame_len};
        c->who[k++] = (uint32_t)(slot0 + j);
    }
    read_or_cut(c, k);
}

/* Room in *ITEMS (*CAP of SIZE bytes) for N: grown to twice what is asked. */
static bool room_for(void **items, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) {
        return true;
    }
    if (n > SIZE_MAX / size) {
        return false;
    }
    size_t ncap = n > SIZE_MAX / 2 / size ? n : 2 * n;
    void *fresh = realloc(*items, ncap * size);
    if (fresh == NULL) {
        return false;
    }
    *items = fresh;
    *cap = ncap;
    return true;
}

/* Room for one more frame in the pool; false when memory ran out. */
static bool pool_room(struct asyncio_chain *c)
{
    size_t want = c->n_pool < 512 ? 512 : c->n_pool + 1; /* 1 024 at first */
    return c->n_pool < c->cap_pool ||
           room_for((void **)&c->pool, &c->cap_pool, want, sizeof *c->pool);
}

/* Where the version tells a delegating coroutine by the instruction after its frame's (3.11,
 * 3.12): those two bytes of every active chain's frame, in one batch (one read each made a
 * thousand reads of a thousand tasks). */
static void next_bytes(struct asyncio_chain *c, size_t slot0, size_t m)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++) {
        size_t slot = slot0 + j;
        struct level lv;
        c->next_ok[slot] = false;
        if (!c->w[slot].active ||
            !read_level(c, asyncio_chain_head(c, slot), c->frames, &lv) ||
            (int)(uint8_t)lv.state == c->A.state_created || lv.instr + 2 < lv.instr) {
            continue;
        }
        c->iov[k] = (struct proc_iov){lv.instr + 2, c->next[slot], 2};
        c->who[k++] = (uint32_t)slot;
    }
    asyncio_common_read_each(c->proc, c->iov, k, c->ok);
    for (size_t i = 0; i < k; i++) {
        c->next_ok[c->who[i]] = c->ok[i];
    }
}

/* Level step two: each coroutine's frame into the pool, and the slot holding what it awaits
 * read into AWAITED. False when memory ran out. */
static bool read_frames(struct asyncio_chain *c, size_t slot0, size_t m)
{
    size_t k = 0;
    if (!c->frame_objects && c->A.yield_from == LAYOUT_YF_RESUME_OPARG) {
        next_bytes(c, slot0, m);
    }
    for (size_t j = 0; j < m; j++) {
        size_t slot = slot0 + j;
        struct walk *w = &c->w[slot];
        struct level lv;
        if (!w->active) {
            continue;
        }
        const uint8_t *head = asyncio_chain_head(c, slot);
        layout_read_u64(head, c->head_len, c->L->object.ob_type, &w->type);
        if (!read_level(c, head, c->frames + (c->frame_objects ? slot * c->frame_len : 0), &lv)) {
            stop(w, false);
            continue;
        }
        if (!pool_room(c)) {
            return false;
        }
        c->pool[c->n_pool++] = (struct pool_frame){lv.code, lv.instr, (uint32_t)slot};
        w->n++;
        c->levels++;
        uint64_t at =
            c->frame_objects ? slot_frame_object(c, &lv) : slot_embedded(c, slot, w->coro, &lv);
        if (at == 0) {
            stop(w, false);
            continue;
        }
        c->iov[k] = (struct proc_iov){at, &w->awaited, sizeof w->awaited};
        c->who[k++] = (uint32_t)slot;
    }
    asyncio_common_read_each(c->proc, c->iov, k, c->ok);
    for (size_t i = 0; i < k; i++) {
        c->w[c->who[i]].active = c->ok[i];
    }
    return true;
}

/* Level step three: the types of what they await; a chain goes on into an awaited object of
 * its coroutine's type. Returns whether any chain goes on. */
static bool read_awaited_types(struct asyncio_chain *c, size_t slot0, size_t m)
{
    size_t k = 0;
    for (size_t j = 0; j < m; j++) {
        struct walk *w = &c->w[slot0 + j];
        if (!w->active) {
            continue;
        }
        w->awaited &= ~c->L->frame.executable_tag_mask;
        if (w->awaited == 0 || w->awaited == w->coro) {
            stop(w, w->awaited != 0);
            continue;
        }
        c->iov[k] = (struct proc_iov){w->awaited + c->L->object.ob_type, &w->awaited_type,
                                      sizeof w->awaited_type};
        c->who[k++] = (uint32_t)(slot0 + j);
    }
    asyncio_common_read_each(c->proc, c->iov, k, c->ok);
    bool any = false;
    for (size_t i = 0; i < k; i++) {
        struct walk *w = &c->w[c->who[i]];
        w->active = c->ok[i] && w->awaited_type == w->type;
        w->coro = w->awaited;
        any = any || w->active;
    }
    return any;
}

static uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 29;
    return h;
}

static uint64_t str_hash(uint64_t h, struct snap_str s)
{
    return mix(h ^ (uintptr_t)s.ptr) + s.len;
}

/* What the frames F[0..N) say, hashed: their strings by address (a code object's strings are
 * put in the snapshot once), their numbers by value. */
static uint64_t stack_hash(const struct snap_frame *f, size_t n)
{
    uint64_t h = n;
    for (size_t i = 0; i < n; i++) {
        h = str_hash(str_hash(str_hash(h, f[i].function), f[i].name), f[i].file);
        h = mix(h ^ (uint64_t)(uint32_t)f[i].line ^ (uint64_t)(uint32_t)f[i].col << 32);
        h = mix(h ^ (uint64_t)(uint32_t)f[i].end_line ^ (uint64_t)(uint32_t)f[i].end_col << 32);
        h = mix(h ^ (uint64_t)(uint32_t)f[i].first_line ^ (uint64_t)f[i].kind << 32 ^
                (uint64_t)f[i].unreadable << 40);
    }
    return h;
}

static bool str_same(struct snap_str a, struct snap_str b)
{
    return a.len == b.len && (a.ptr == b.ptr || (a.len > 0 && memcmp(a.ptr, b.ptr, a.len) == 0));
}

static bool frames_same(const struct snap_frame *a, const struct snap_frame *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!str_same(a[i].function, b[i].function) || !str_same(a[i].name, b[i].name) ||
            !str_same(a[i].file, b[i].file) || a[i].line != b[i].line ||
            a[i].end_line != b[i].end_line || a[i].col != b[i].col ||
            a[i].end_col != b[i].end_col || a[i].first_line != b[i].first_line ||
            a[i].kind != b[i].kind || a[i].unreadable != b[i].unreadable) {
            return false;
        }
    }
    return true;
}

/* The slot of a stack equal to F[0..N) (hash H) built since asyncio_chain_begin(), or the free
 * slot where one goes; NULL when there is no table. */
static struct built_stack *built_slot(struct asyncio_chain *c, uint64_t h,
                                      const struct snap_frame *f, size_t n)
{
    if (c->cap_built == 0 || c->gen == 0) { /* gen 0: no asyncio_chain_begin() yet */
        return NULL;
    }
    size_t mask = c->cap_built - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct built_stack *b = &c->built[i];
        if (b->gen != c->gen ||
            (b->hash == h && b->n == n && frames_same(b->frames, f, n))) {
            return b;
        }
    }
}

/* Room for one more built stack, the table at most half full; false leaves it as it is (the
 * stack is then not shared). */
static bool built_room(struct asyncio_chain *c)
{
    if (c->gen == 0) {
        return false;
    }
    if ((c->n_built + 1) * 2 <= c->cap_built) {
        return true;
    }
    size_t ncap = c->cap_built ? 2 * c->cap_built : 64;
    if (ncap > BUILT_MAX) {
        return false;
    }
    struct built_stack *fresh = calloc(ncap, sizeof *fresh);
    if (fresh == NULL) {
        return false;
    }
    for (size_t i = 0; i < c->cap_built; i++) {
        const struct built_stack *b = &c->built[i];
        if (b->gen == c->gen) {
            size_t j = (size_t)b->hash & (ncap - 1);
            while (fresh[j].gen == c->gen) {
                j = (j + 1) & (ncap - 1);
            }
            fresh[j] = *b;
        }
    }
    free(c->built);
    c->built = fresh;
    c->cap_built = ncap;
    return true;
}

/* The stack of the N frames in TMP, in the snapshot: one built before if equal, else a copy
 * (remembered for the next chains). NULL when memory ran out. */
static const struct snap_frame *stack_in_snapshot(struct asyncio_chain *c, size_t n)
{
    uint64_t h = stack_hash(c->tmp, n);
    struct built_stack *b = built_slot(c, h, c->tmp, n);
    if (b != NULL && b->gen == c->gen) {
        return b->frames;
    }
    struct snap_frame *f = snapshot_alloc_array(c->s, n ? n : 1, sizeof *f);
    if (f == NULL) {
        return NULL;
    }
    memcpy(f, c->tmp, n * sizeof *f);
    if (built_room(c)) {
        b = built_slot(c, h, c->tmp, n);
        *b = (struct built_stack){h, f, n, c->gen};
        c->n_built++;
    }
    return f;
}

/* Hands each job of JOBS[0..M) (walk slots SLOT0..) to be built its frames, innermost first:
 * the pool gathered chain by chain, each frame named from its code object. Returns 0, or -1
 * when memory ran out. */
static int build_stacks(struct asyncio_chain *c, struct asyncio_chain_job *jobs, size_t slot0,
                        size_t m)
{
    size_t at = 0;
    size_t longest = 1;
    for (size_t j = 0; j < m; j++) {
        struct walk *w = &c->w[slot0 + j];
        w->at = at;
        at += w->n;
        longest = w->n > longest ? w->n : longest;
    }
    if (!room_for((void **)&c->seq, &c->cap_seq, at ? at : 1, sizeof *c->seq) ||
        !room_for((void **)&c->tmp, &c->cap_tmp, longest, sizeof *c->tmp)) {
        return -1;
    }
    for (size_t q = 0; q < c->n_pool; q++) {
        struct walk *w = &c->w[c->pool[q].chain];
        if (w->fill < w->n) {
            c->seq[w->at + w->n - 1 - w->fill++] = c->pool[q];
        }
    }
    for (size_t j = 0; j < m; j++) {
        const struct walk *w = &c->w[slot0 + j];
        jobs[j].frames = NULL;
        jobs[j].n_frames = w->n;
        jobs[j].truncated = w->trunc;
        if (!jobs[j].build) {
            continue;
        }
        for (size_t i = 0; i < w->n; i++) {
            const struct pool_frame *pf = &c->seq[w->at + i];
            asyncio_common_frame(c->common, pf->code, pf->instr, &c->tmp[i]);
        }
        if ((jobs[j].frames = stack_in_snapshot(c, w->n)) == NULL) {
            return -1;
        }
    }
    return 0;
}

/* Walks JOBS[0..M) in walk slots SLOT0.. and hands each job to be built its frames. */
static int walk(struct asyncio_chain *c, struct asyncio_chain_job *jobs, size_t slot0, size_t m)
{
    c->n_pool = 0;
    for (size_t i = 0; i < OP_MEMO; i++) {
        c->memo[i].used = false;
    }
    for (size_t j = 0; j < m; j++) {
        c->w[slot0 + j] = (struct walk){.coro = jobs[j].coro,
                                        .have_head = jobs[j].have_head,
                                        .active = jobs[j].build && jobs[j].coro != 0};
    }
    for (size_t level = 0; level <= LIMIT_CORO_DEPTH; level++) {
        read_heads(c, slot0, m);
        if (!read_frames(c, slot0, m)) {
            return -1;
        }
        if (!read_awaited_types(c, slot0, m)) {
            break;
        }
    }
    return build_stacks(c, jobs, slot0, m);
}

int asyncio_chain_walk(struct asyncio_chain *c, struct asyncio_chain_job *jobs, size_t m)
{
    return walk(c, jobs, 0, m < c->batch ? m : c->batch);
}

int asyncio_chain_walk_one(struct asyncio_chain *c, struct asyncio_chain_job *job)
{
    job->have_head = false;
    return walk(c, job, c->batch, 1);
}
