/* corowalk: a coroutine's stack down its await chain, read from the coroutine objects of
 * Python 3.8+ (frame objects up to 3.10, embedded interpreter frames from 3.11). */
#include "config.h"

#include "core/corowalk.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"
#include "core/snapshot.h"
#include "core/snapshot_arena.h"
#include "core/taskcommon.h"

enum {
    WINDOW = PROC_IOV_MAX, /* coroutines whose first objects are read in one batch */
};

struct corowalk {
    struct proc *proc;
    const struct py_layout *L;
    const struct layout_asyncio *A;
    struct taskcommon *common;
    size_t head_len;  /* bytes of a coroutine object read: up to gi_frame, or its whole frame */
    size_t frame_len; /* bytes of a frame object read (frame objects only) */
    bool frame_objects;
    /* the prefetch window: coroutines [win_start, win_start + win_n) of COROS */
    const uint64_t *coros;
    size_t n_coros;
    size_t win_start;
    size_t win_n;
    uint8_t *win_heads;
    uint8_t *win_frames;
    bool *win_ok;             /* head (and frame, if any) read */
    uint8_t *head;            /* one coroutine object */
    uint8_t *frame;           /* one frame object */
    struct snap_frame *chain; /* LIMIT_CORO_DEPTH frames, outermost first */
    size_t levels;            /* coroutines followed since the last corowalk_prefetch() */
};

struct corowalk *corowalk_new(struct proc *p, const struct py_layout *L,
                              const struct layout_asyncio *A, struct taskcommon *common,
                              struct pt_error *err)
{
    struct corowalk *w = calloc(1, sizeof *w);
    if (w == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    w->proc = p;
    w->L = L;
    w->A = A;
    w->common = common;
    w->frame_objects = layout_has(A->gen_frame);
    if (w->frame_objects) {
        uint64_t a = L->object.ob_type > A->gen_frame ? L->object.ob_type : A->gen_frame;
        w->head_len = a + 8;
        w->frame_len = L->frame.size;
    } else {
        w->head_len = A->gen_iframe + L->frame.size;
        w->frame_len = 1;
    }
    if (w->head_len > LIMIT_OBJECT_READ || w->frame_len > LIMIT_OBJECT_READ) {
        pt_error_set(err, PT_E_BADLAYOUT, 0, "coroutine layout too large");
        free(w);
        return NULL;
    }
    w->win_heads = malloc(WINDOW * w->head_len);
    w->win_frames = malloc(w->frame_objects ? WINDOW * w->frame_len : 1);
    w->win_ok = malloc(WINDOW * sizeof *w->win_ok);
    w->head = malloc(w->head_len);
    w->frame = malloc(w->frame_len);
    w->chain = malloc(LIMIT_CORO_DEPTH * sizeof *w->chain);
    if (w->win_heads == NULL || w->win_frames == NULL || w->win_ok == NULL || w->head == NULL ||
        w->frame == NULL || w->chain == NULL) {
        corowalk_free(w);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    return w;
}

void corowalk_free(struct corowalk *w)
{
    if (w != NULL) {
        free(w->win_heads);
        free(w->win_frames);
        free(w->win_ok);
        free(w->head);
        free(w->frame);
        free(w->chain);
        free(w);
    }
}

void corowalk_prefetch(struct corowalk *w, const uint64_t *coros, size_t n)
{
    w->coros = coros;
    w->n_coros = n;
    w->win_start = 0;
    w->win_n = 0;
    w->levels = 0;
}

static uint64_t head_frame(const struct corowalk *w, const uint8_t *head)
{
    uint64_t f = 0;
    layout_read_u64(head, w->head_len, w->A->gen_frame, &f);
    return f;
}

/* Reads N regions: in one batch, or one by one when the batch fails; OK[i] says which. */
static void read_batch(struct corowalk *w, struct proc_iov *iov, const size_t *slot, size_t n,
                       bool *ok)
{
    bool all = n > 0 && proc_read_many(w->proc, iov, n, NULL) == 0;
    for (size_t j = 0; j < n; j++) {
        ok[slot[j]] =
            all || proc_read_bytes(w->proc, iov[j].addr, iov[j].dst, iov[j].len, NULL) == 0;
    }
}

/* Fills the window starting at coroutine I: the coroutine objects, then (frame objects) the
 * frames they name. */
static void fill_window(struct corowalk *w, size_t i)
{
    struct proc_iov iov[WINDOW];
    size_t slot[WINDOW] = {0};
    bool ok[WINDOW];
    size_t n = w->n_coros - i < WINDOW ? w->n_coros - i : WINDOW;
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        ok[j] = false;
        if (w->coros[i + j] != 0) {
            iov[m] =
                (struct proc_iov){w->coros[i + j], w->win_heads + j * w->head_len, w->head_len};
            slot[m++] = j;
        }
    }
    read_batch(w, iov, slot, m, ok);
    for (size_t j = 0; j < n; j++) {
        w->win_ok[j] = ok[j];
    }
    if (w->frame_objects) {
        m = 0;
        for (size_t j = 0; j < n; j++) {
            uint64_t f = ok[j] ? head_frame(w, w->win_heads + j * w->head_len) : 0;
            ok[j] = false;
            if (f != 0) {
                iov[m] = (struct proc_iov){f, w->win_frames + j * w->frame_len, w->frame_len};
                slot[m++] = j;
            }
        }
        read_batch(w, iov, slot, m, ok);
        for (size_t j = 0; j < n; j++) {
            /* A finished coroutine has no frame: its head alone is all there is. */
            uint64_t f = w->win_ok[j] ? head_frame(w, w->win_heads + j * w->head_len) : 0;
            w->win_ok[j] = w->win_ok[j] && (f == 0 || ok[j]);
        }
    }
    w->win_start = i;
    w->win_n = n;
}

/* One coroutine as the walk needs it. */
struct level {
    uint64_t type;
    uint64_t code;
    uint64_t instr;
    int8_t state; /* gi_frame_state (embedded frames) */
    bool has_frame;
    const uint8_t *frame; /* the frame object's bytes, or the embedded frame's */
    size_t frame_len;
};

/* Reads coroutine CORO (its bytes from the window when PRE is not NULL). */
static bool read_level(struct corowalk *w, uint64_t coro, const uint8_t *pre_head,
                       const uint8_t *pre_frame, struct level *lv)
{
    const struct py_layout *L = w->L;
    const struct layout_asyncio *A = w->A;
    const uint8_t *head = pre_head;
    memset(lv, 0, sizeof *lv);
    if (head == NULL) {
        if (proc_read_bytes(w->proc, coro, w->head, w->head_len, NULL) < 0) {
            return false;
        }
        head = w->head;
    }
    layout_read_u64(head, w->head_len, L->object.ob_type, &lv->type);
    if (w->frame_objects) {
        uint64_t f = head_frame(w, head);
        if (f == 0) {
            return true;
        }
        lv->frame = pre_frame;
        if (lv->frame == NULL) {
            if (proc_read_bytes(w->proc, f, w->frame, w->frame_len, NULL) < 0) {
                return false;
            }
            lv->frame = w->frame;
        }
        lv->frame_len = w->frame_len;
    } else {
        uint64_t state = 0;
        layout_read_uint(head, w->head_len, A->gen_frame_state, 1, &state);
        lv->state = (int8_t)(uint8_t)state;
        /* A cleared frame (the coroutine returned) is no frame at all. */
        if ((int)(uint8_t)state == L->gen.state_cleared) {
            return true;
        }
        lv->frame = head + A->gen_iframe;
        lv->frame_len = L->frame.size;
    }
    uint64_t instr = 0;
    if (!layout_read_u64(lv->frame, lv->frame_len, L->frame.executable, &lv->code) ||
        !layout_read_uint(lv->frame, lv->frame_len, L->frame.instr_ptr, L->frame.instr_width,
                          &instr)) {
        return false;
    }
    lv->code &= ~L->frame.executable_tag_mask;
    lv->instr = instr;
    lv->has_frame = true;
    return true;
}

static int32_t read_i32(const uint8_t *buf, size_t len, uint64_t off)
{
    uint64_t v = 0;
    layout_read_uint(buf, len, off, 4, &v);
    return (int32_t)(uint32_t)v;
}

/* Up to 3.10: the next instruction after f_lasti is YIELD_FROM, and the frame's stack is not in
 * use by a running frame; the delegate is the top item. */
static uint64_t delegate_frame_object(struct corowalk *w, const struct level *lv)
{
    const struct layout_asyncio *A = w->A;
    int32_t lasti = (int32_t)(uint32_t)lv->instr;
    uint64_t slot = 0;
    uint64_t bytes = 0;
    uint8_t op = 0;
    uint64_t out = 0;
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
    if (proc_read_bytes(w->proc, lv->code + A->code_code, &bytes, 8, NULL) < 0 || bytes == 0 ||
        proc_read_bytes(w->proc, bytes + w->L->bytes.ob_sval + at, &op, 1, NULL) < 0 ||
        op != (uint8_t)A->op_yield_from || proc_read_bytes(w->proc, slot, &out, 8, NULL) < 0) {
        return 0;
    }
    return out;
}

/* 3.11+: gi_frame_state says so (3.13+), or the next instruction is a RESUME with oparg 2 or 3
 * (after `yield from`, after `await`); the delegate is the top item of the frame's stack. */
static uint64_t delegate_embedded(struct corowalk *w, uint64_t coro, const struct level *lv)
{
    const struct layout_asyncio *A = w->A;
    uint64_t out = 0;
    if (A->yield_from == LAYOUT_YF_FRAME_STATE) {
        int st = (int)(uint8_t)lv->state;
        if (st != w->L->gen.state_yield_from && st != w->L->gen.state_yield_from_locked) {
            return 0;
        }
    } else {
        uint8_t next[2];
        bool resume = false;
        if ((int)(uint8_t)lv->state == A->state_created ||
            proc_read_bytes(w->proc, lv->instr + 2, next, 2, NULL) < 0) {
            return 0;
        }
        for (size_t i = 0; i < LAYOUT_ASYNCIO_RESUME_OPS; i++) {
            resume = resume || (A->op_resume[i] >= 0 && next[0] == (uint8_t)A->op_resume[i]);
        }
        if (!resume || next[1] < 2) {
            return 0;
        }
    }
    uint64_t slot = 0;
    if (A->stack == LAYOUT_STACK_FRAME_POINTER) {
        /* 3.14+: a tagged pointer past the top item; the delegate sits AWAIT_SLOT below. */
        uint64_t sp = 0;
        uint64_t below = 8 * (uint64_t)A->await_slot;
        layout_read_u64(lv->frame, lv->frame_len, A->stack_top, &sp);
        sp &= ~w->L->frame.executable_tag_mask;
        if (sp < below) {
            return 0;
        }
        slot = sp - below;
    } else {
        int32_t top = read_i32(lv->frame, lv->frame_len, A->stack_top);
        if (top <= 0 || top > LIMIT_FRAME_STACK) {
            return 0;
        }
        slot = coro + A->gen_iframe + A->stack_base + 8 * (uint64_t)(top - 1);
    }
    if (proc_read_bytes(w->proc, slot, &out, 8, NULL) < 0) {
        return 0;
    }
    return out & ~w->L->frame.executable_tag_mask;
}

int corowalk_stack(struct corowalk *w, struct snapshot *s, size_t i, uint64_t coro,
                   struct snap_task *st)
{
    const uint8_t *pre_head = NULL;
    const uint8_t *pre_frame = NULL;
    if (i < w->n_coros && w->coros[i] == coro && coro != 0) {
        if (i < w->win_start || i >= w->win_start + w->win_n) {
            fill_window(w, i);
        }
        size_t j = i - w->win_start;
        if (w->win_ok[j]) {
            pre_head = w->win_heads + j * w->head_len;
            pre_frame = w->win_frames + (w->frame_objects ? j * w->frame_len : 0);
        }
    }
    size_t n = 0;
    bool trunc = false;
    /* A coroutine met again further down is a loop no interpreter makes: Brent's check against
     * a saved coroutine, moved at each power of two. */
    uint64_t saved = 0;
    while (coro != 0) {
        struct level lv;
        if (n == LIMIT_CORO_DEPTH || w->levels == LIMIT_CORO_LEVELS || coro == saved) {
            trunc = true;
            break;
        }
        if ((n & (n + 1)) == 0) {
            saved = coro;
        }
        w->levels++;
        if (!read_level(w, coro, pre_head, pre_frame, &lv)) {
            trunc = true;
            break;
        }
        pre_head = NULL;
        pre_frame = NULL;
        if (!lv.has_frame) {
            break;
        }
        taskcommon_frame(w->common, lv.code, lv.instr, &w->chain[n++]);
        uint64_t next =
            w->frame_objects ? delegate_frame_object(w, &lv) : delegate_embedded(w, coro, &lv);
        uint64_t next_type = 0;
        if (next == 0 ||
            proc_read_bytes(w->proc, next + w->L->object.ob_type, &next_type, 8, NULL) < 0 ||
            next_type != lv.type) {
            break;
        }
        coro = next;
    }
    struct snap_frame *frames = snapshot_alloc_array(s, n ? n : 1, sizeof *frames);
    if (frames == NULL) {
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        frames[k] = w->chain[n - 1 - k];
    }
    st->frames = frames;
    st->n_frames = n;
    st->frames_truncated = trunc;
    return 0;
}
