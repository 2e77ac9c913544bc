/* tasks: a target's asyncio tasks and their awaited-by graph, read through the _asyncio
 * module's debug offsets (the .AsyncioDebug section, 3.14+: C tasks) and asyncio's task
 * registries (asyncreg: every task of 3.8-3.13, the others of 3.14+). */
#include "config.h"

#include "core/snapshot_arena.h"
#include "core/tasks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/asyncdebug.h"
#include "core/asyncreg.h"
#include "core/code.h"
#include "core/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"
#include "core/pydict.h"
#include "core/pyobj.h"
#include "core/runtime.h"
#include "core/snapshot.h"
#include "core/taskcommon.h"

/* How often the mappings are searched again for a section not found yet (asyncio imported
 * later loads _asyncio then). */
static const double RESCAN_SECONDS = 1.0;

enum {
    TASK_PAGE = 4096,     /* a page of task objects read at once (read_object()) */
    SETENTRY_SIZE = 16,   /* setentry: key pointer, hash (Include/cpython/setobject.h) */
    SET_OBJECT_MAX = 512, /* bytes of a set object's struct read */
};

/* What one task's own read says. */
struct task_raw {
    uint64_t addr;
    uint64_t name;
    uint64_t awaited_by;
    uint64_t coro;
    uint64_t next; /* the next node's address in its list */
    bool is_task;
    bool awaited_by_is_set;
    enum snap_task_state state;
};

/* A memo of coroutine stacks already built in this snapshot, by task address. */
struct memo_entry {
    uint64_t addr;
    const struct snap_frame *frames;
    size_t n;
    bool truncated;
    bool built;  /* FRAMES and N hold the stack */
    bool listed; /* already met in a task list: meeting it again is a loop */
};

enum {
    PREFETCH_BYTES = 1 << 20, /* coroutine bytes read ahead for one batch of tasks */
    NAME_PREFETCH = 96,       /* bytes of each task name read ahead: a short str whole */
};

/* One task's await chain while a batch of them is followed level by level. */
struct chain_walk {
    uint64_t coro;  /* the coroutine at this level */
    uint64_t type;  /* its type: what it awaits must be of the same */
    uint64_t saved; /* Brent's saved coroutine: meeting it again is a loop */
    uint64_t awaited;
    uint64_t awaited_type;
    size_t n;      /* frames so far */
    bool have_gen; /* the coroutine's bytes are in the batch buffer already */
    bool active;
    bool trunc;
    bool build;                /* the task's stack is to be built */
    struct snap_frame *frames; /* the chain, innermost first, once built */
    size_t fill;
};

/* A frame of some task's chain, in the order the levels were walked. */
struct chain_frame {
    uint32_t task;
    struct snap_frame f;
};

/* The buffers of one batch of tasks, kept from snapshot to snapshot: BATCH tasks, and one
 * spare slot (index BATCH) for an awaiter whose stack is built while a batch is in hand. */
struct chain_scratch {
    size_t batch;
    size_t clen;              /* bytes of a coroutine read at once (coro_read_len()) */
    uint8_t *gens;            /* (batch + 1) * clen */
    uint8_t *names;           /* batch * NAME_PREFETCH */
    bool *name_ok;            /* batch */
    struct chain_walk *w;     /* batch + 1 */
    struct proc_iov *iov;     /* 2 * batch + 2 */
    uint32_t *who;            /* 2 * batch + 2 */
    bool *ok;                 /* 2 * batch + 2 */
    struct chain_frame *pool; /* the frames of the chains being built */
    size_t n_pool;
    size_t cap_pool;
};

struct tasks {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct code_cache *codes;
    bool found;
    struct asyncdebug_offsets off;
    double last_scan;
    /* why the last scan could not use the _asyncio debug offsets; "" when it could */
    char bad[sizeof((struct pt_error *)0)->msg];
    /* per snapshot */
    struct snapshot *s;
    struct memo_entry *memo; /* open addressing, memo_slots entries (a power of two) */
    size_t memo_slots;
    size_t memo_used;
    uint8_t *set_buf;         /* set_slots set entries (set_room()) */
    size_t set_slots;
    uint8_t *obj_buf;         /* a generator or task object */
    struct chain_scratch cs;  /* the buffers of a batch of tasks (per_snapshot_buffers()) */
    size_t levels;            /* coroutines followed this snapshot, all chains together */
    struct taskcommon *common;
    struct asyncreg *reg;     /* before 3.14: the registry reader; NULL when the version has none */
    uint8_t page[4096];       /* the page the last task read lies on (read_object()) */
    uint64_t page_addr;
    bool page_valid;
};

enum {
    MEMO_SLOTS = LIMIT_ASYNCIO_TASKS * 2, /* at most; it starts small and doubles when half full */
    MEMO_FIRST_SLOTS = 1024,
};

/* A field of WIDTH bytes at OFF inside SIZE bytes (false for LAYOUT_NONE). */
static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
    uint64_t end;
    return !__builtin_add_overflow(off, width, &end) && end <= size;
}

/* Whether the layout describes what the walk reads (3.14+ debug offsets), consistently. */
static bool layout_usable(const struct py_layout *L)
{
    return L->gen.state_cleared >= 0 && L->gen.state_yield_from >= 0 && L->gen.await_slot > 0 &&
           L->gen.await_slot <= 4 && layout_has(L->gen.size) && L->gen.size <= LIMIT_OBJECT_READ &&
           fits(L->gen.gi_iframe, L->frame.size, LIMIT_OBJECT_READ) &&
           fits(L->gen.gi_frame_state, 1, L->gen.size) &&
           fits(L->frame_stackpointer, 8, L->frame.size) && layout_has(L->set.size) &&
           L->set.size <= SET_OBJECT_MAX && fits(L->set.used, 8, L->set.size) &&
           fits(L->set.mask, 8, L->set.size) && fits(L->set.table, 8, L->set.size) &&
           fits(L->llist_next, 8, 16);
}

struct tasks *tasks_new(struct proc *p, const struct runtime *rt, struct code_cache *codes,
                        struct pt_error *err)
{
    struct tasks *t = calloc(1, sizeof *t);
    if (t == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    t->proc = p;
    t->rt = rt;
    t->L = &rt->layout;
    t->codes = codes;
    t->last_scan = -RESCAN_SECONDS;
    struct layout_asyncio A;
    struct pt_error e = {0};
    bool int_names = layout_asyncio_select(t->L, &A, &e) == 0 && A.int_task_names;
    t->common = taskcommon_new(p, rt, codes, int_names, err);
    if (t->common == NULL) {
        free(t);
        return NULL;
    }
    /* asyncio's registries are read where pytop has the version's table: for every task
     * without the debug section (before 3.14), for the tasks not of the C type with it. */
    t->reg = asyncreg_new(p, rt, t->common, &e);
    if (t->reg == NULL && e.code == PT_E_NOMEM) {
        tasks_free(t);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    return t;
}

static void scratch_free(struct chain_scratch *cs)
{
    free(cs->gens);
    free(cs->names);
    free(cs->name_ok);
    free(cs->iov);
    free(cs->who);
    free(cs->ok);
    free(cs->w);
    free(cs->pool);
    memset(cs, 0, sizeof *cs);
}

void tasks_free(struct tasks *t)
{
    if (t != NULL) {
        free(t->memo);
        free(t->set_buf);
        free(t->obj_buf);
        scratch_free(&t->cs);
        taskcommon_free(t->common);
        asyncreg_free(t->reg);
        free(t);
    }
}

static double monotonic_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Reads LEN bytes at ADDR through the page the object lies on: tasks made one after another sit
 * side by side, so walking their list reads a page, not a task, per system call. An object
 * that crosses a page is read as it is. The page is this snapshot's (tasks_read_interp()
 * forgets it). */
static int read_object(struct tasks *t, uint64_t addr, uint8_t *buf, size_t len,
                       struct pt_error *err)
{
    uint64_t page = addr & ~(uint64_t)(TASK_PAGE - 1);
    uint64_t end;
    if (__builtin_add_overflow(addr, len, &end) || end > page + TASK_PAGE) {
        return proc_read_bytes(t->proc, addr, buf, len, err);
    }
    if (!t->page_valid || t->page_addr != page) {
        t->page_valid = false;
        if (proc_read_bytes(t->proc, page, t->page, TASK_PAGE, err) < 0) {
            return -1;
        }
        t->page_addr = page;
        t->page_valid = true;
    }
    memcpy(buf, t->page + (addr - page), len);
    return 0;
}

static int read_task(struct tasks *t, uint64_t addr, struct task_raw *out, struct pt_error *err)
{
    const struct asyncdebug_offsets *o = &t->off;
    uint8_t *buf = t->obj_buf;
    uint64_t v = 0;
    uint64_t mask = ~t->L->frame.executable_tag_mask;
    if (read_object(t, addr, buf, o->task_size, err) < 0) {
        return pt_error_prefix(err, "task at 0x%" PRIx64, addr);
    }
    memset(out, 0, sizeof *out);
    out->addr = addr;
    layout_read_u64(buf, o->task_size, o->task_name, &out->name);
    layout_read_u64(buf, o->task_size, o->task_awaited_by, &out->awaited_by);
    layout_read_u64(buf, o->task_size, o->task_coro, &out->coro);
    layout_read_u64(buf, o->task_size, o->task_node + t->L->llist_next, &out->next);
    out->name &= mask;
    out->awaited_by &= mask;
    out->coro &= mask;
    layout_read_uint(buf, o->task_size, o->task_is_task, 1, &v);
    out->is_task = v != 0;
    v = 0;
    layout_read_uint(buf, o->task_size, o->task_awaited_by_is_set, 1, &v);
    out->awaited_by_is_set = v != 0;
    out->state = SNAP_TASK_UNKNOWN;
    if (layout_read_uint(buf, o->task_size, o->task_state, 4, &v) && v <= SNAP_TASK_FINISHED) {
        out->state = (enum snap_task_state)v;
    }
    return 0;
}

/* One coroutine's frame into F; false when the frame is not a generator's Python frame. */
static bool coro_frame(struct tasks *t, const uint8_t *frame, size_t len, struct snap_frame *f)
{
    const struct py_layout *L = t->L;
    uint64_t exec = 0;
    uint64_t instr = 0;
    uint64_t owner = 0;
    if (!layout_read_u64(frame, len, L->frame.executable, &exec) ||
        !layout_read_u64(frame, len, L->frame.instr_ptr, &instr) ||
        !layout_read_uint(frame, len, L->frame.owner, 1, &owner) ||
        (int)owner != L->frame.owner_generator) {
        return false;
    }
    taskcommon_frame(t->common, exec & ~L->frame.executable_tag_mask, instr, f);
    return true;
}

/* Bytes of a coroutine read at once: the object and its frame's fixed header. */
static size_t coro_read_len(const struct py_layout *L)
{
    size_t len = L->gen.gi_iframe + L->frame.size;
    return len < L->gen.size ? L->gen.size : len;
}

/* Reads IOV[0..K), as one batch or, when that fails, one by one; OK[j] says which were read. */
static void read_each(struct tasks *t, const struct proc_iov *iov, size_t k, bool *ok)
{
    bool all = k > 0 && proc_read_many(t->proc, iov, k, NULL) == 0;
    for (size_t j = 0; j < k; j++) {
        ok[j] = all || proc_read_bytes(t->proc, iov[j].addr, iov[j].dst, iov[j].len, NULL) == 0;
    }
}

/* Follows the await chains of the tasks W[0..M) (those with ACTIVE set) side by side, as
 * _remote_debugging's parse_coro_chain follows one (what a coroutine awaits, while it is a
 * coroutine of the same type): each level costs three batched reads for all of them (the
 * coroutines, what they await, its type). GENS holds each task's coroutine bytes (clen each;
 * HAVE_GEN when already read). A chain that loops (Brent's check), goes deeper than
 * LIMIT_CORO_DEPTH or past the snapshot's LIMIT_CORO_LEVELS is cut and marked. The frames go to
 * the scratch's pool, in the order the levels were walked. Returns false when memory ran out. */
static bool chains_walk(struct tasks *t, struct chain_walk *w, size_t m, uint8_t *gens)
{
    const struct py_layout *L = t->L;
    struct chain_scratch *cs = &t->cs;
    size_t clen = cs->clen;
    struct proc_iov *iov = cs->iov;
    uint32_t *who = cs->who;
    bool *ok = cs->ok;
    for (size_t level = 0; level <= LIMIT_CORO_DEPTH; level++) {
        size_t k = 0;
        /* The coroutines of this level, where not read yet. */
        for (size_t j = 0; j < m; j++) {
            struct chain_walk *c = &w[j];
            if (!c->active) {
                continue;
            }
            if (c->n == LIMIT_CORO_DEPTH || c->coro == c->saved ||
                t->levels == LIMIT_CORO_LEVELS) {
                c->trunc = true;
                c->active = false;
                continue;
            }
            if ((c->n & (c->n + 1)) == 0) {
                c->saved = c->coro;
            }
            if (!c->have_gen) {
                iov[k] = (struct proc_iov){c->coro, gens + j * clen, clen};
                who[k++] = (uint32_t)j;
            }
        }
        read_each(t, iov, k, ok);
        for (size_t i = 0; i < k; i++) {
            if (!ok[i]) {
                w[who[i]].trunc = true;
                w[who[i]].active = false;
            }
        }
        /* Their frames, and where what they await is. */
        k = 0;
        for (size_t j = 0; j < m; j++) {
            struct chain_walk *c = &w[j];
            uint64_t state = 0;
            uint64_t sp = 0;
            if (!c->active) {
                continue;
            }
            c->have_gen = false;
            const uint8_t *gen = gens + j * clen;
            layout_read_uint(gen, clen, L->gen.gi_frame_state, 1, &state);
            layout_read_u64(gen, clen, L->object.ob_type, &c->type);
            if (cs->n_pool == cs->cap_pool) {
                size_t ncap = cs->cap_pool ? cs->cap_pool * 2 : 1024;
                struct chain_frame *fresh = realloc(cs->pool, ncap * sizeof *fresh);
                if (fresh == NULL) {
                    return false;
                }
                cs->pool = fresh;
                cs->cap_pool = ncap;
            }
            const uint8_t *frame = gen + L->gen.gi_iframe;
            if ((int)state == L->gen.state_cleared ||
                !coro_frame(t, frame, L->frame.size, &cs->pool[cs->n_pool].f)) {
                c->active = false;
                continue;
            }
            cs->pool[cs->n_pool++].task = (uint32_t)j;
            c->n++;
            t->levels++;
            /* What a suspended `await` waits on sits a version-given number of slots below
             * the stack pointer. */
            uint64_t below = 8 * (uint64_t)L->gen.await_slot;
            if (((int)state != L->gen.state_yield_from &&
                 (int)state != L->gen.state_yield_from_locked) ||
                !layout_read_u64(frame, L->frame.size, L->frame_stackpointer, &sp) ||
                (sp &= ~L->frame.executable_tag_mask) < below) {
                c->active = false;
                continue;
            }
            iov[k] = (struct proc_iov){sp - below, &c->awaited, sizeof c->awaited};
            who[k++] = (uint32_t)j;
        }
        read_each(t, iov, k, ok);
        for (size_t i = 0; i < k; i++) {
            w[who[i]].active = ok[i];
        }
        /* The types of what they await. */
        k = 0;
        for (size_t j = 0; j < m; j++) {
            struct chain_walk *c = &w[j];
            if (!c->active) {
                continue;
            }
            c->awaited &= ~L->frame.executable_tag_mask;
            if (c->awaited == c->coro) {
                c->trunc = true;
                c->active = false;
                continue;
            }
            if (c->awaited == 0) {
                c->active = false;
                continue;
            }
            iov[k] = (struct proc_iov){c->awaited + L->object.ob_type, &c->awaited_type,
                                       sizeof c->awaited_type};
            who[k++] = (uint32_t)j;
        }
        read_each(t, iov, k, ok);
        bool any = false;
        for (size_t i = 0; i < k; i++) {
            struct chain_walk *c = &w[who[i]];
            c->active = ok[i] && c->awaited_type == c->type;
            c->coro = c->awaited;
            any = any || c->active;
        }
        if (!any) {
            return true;
        }
    }
    return true;
}

/* Walks the chains W[0..M) (GENS: their coroutine bytes) and gives each one to be built its
 * frames, innermost first, in the snapshot. Returns false when memory ran out. */
static bool chains_build(struct tasks *t, struct chain_walk *w, size_t m, uint8_t *gens)
{
    struct chain_scratch *cs = &t->cs;
    cs->n_pool = 0;
    if (!chains_walk(t, w, m, gens)) {
        return false;
    }
    for (size_t j = 0; j < m; j++) {
        w[j].frames = NULL;
        w[j].fill = 0;
        if (w[j].build &&
            (w[j].frames = snapshot_alloc_array(t->s, w[j].n ? w[j].n : 1, sizeof *w[j].frames)) ==
                NULL) {
            return false;
        }
    }
    for (size_t q = 0; q < cs->n_pool; q++) {
        struct chain_walk *c = &w[cs->pool[q].task];
        if (c->frames != NULL && c->fill < c->n) {
            c->frames[c->n - 1 - c->fill++] = cs->pool[q].f;
        }
    }
    return true;
}

static size_t memo_home(const struct tasks *t, uint64_t addr)
{
    return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ULL) & (t->memo_slots - 1);
}

/* Doubles the memo, keeping its entries; false when it is at its bound or memory ran out. */
static bool memo_grow(struct tasks *t)
{
    size_t n = t->memo_slots * 2;
    struct memo_entry *old = t->memo;
    struct memo_entry *fresh = n <= MEMO_SLOTS ? calloc(n, sizeof *fresh) : NULL;
    if (fresh == NULL) {
        return false;
    }
    size_t old_n = t->memo_slots;
    t->memo = fresh;
    t->memo_slots = n;
    for (size_t i = 0; i < old_n; i++) {
        if (old[i].addr != 0) {
            size_t h = memo_home(t, old[i].addr);
            while (fresh[h].addr != 0) {
                h = (h + 1) & (n - 1);
            }
            fresh[h] = old[i];
        }
    }
    free(old);
    return true;
}

/* The entry of the task at ADDR, made (empty) when new; NULL when the memo is full. The
 * pointer stays valid until the next call. */
static struct memo_entry *memo_slot(struct tasks *t, uint64_t addr)
{
    if (2 * (t->memo_used + 1) > t->memo_slots && !memo_grow(t) &&
        t->memo_used + 1 >= t->memo_slots) {
        return NULL;
    }
    size_t h = memo_home(t, addr);
    for (size_t i = 0; i < t->memo_slots; i++, h = (h + 1) & (t->memo_slots - 1)) {
        if (t->memo[h].addr == addr) {
            return &t->memo[h];
        }
        if (t->memo[h].addr == 0) {
            t->memo[h] = (struct memo_entry){.addr = addr};
            t->memo_used++;
            return &t->memo[h];
        }
    }
    return NULL;
}

/* The coroutine stack of the task whose read is R, innermost first, into *OUT; built once per
 * snapshot and remembered (when the memo has room). It uses the scratch's spare slot, so it
 * may run while a batch is in hand. Returns the memo entry, or OUT itself when it was not
 * kept; NULL when memory ran out. */
static struct memo_entry *task_stack(struct tasks *t, const struct task_raw *r,
                                     struct memo_entry *out)
{
    struct chain_scratch *cs = &t->cs;
    struct memo_entry *m = memo_slot(t, r->addr);
    if (m != NULL && m->built) {
        return m;
    }
    struct chain_walk *w = &cs->w[cs->batch];
    *w = (struct chain_walk){.coro = r->coro, .active = r->coro != 0, .build = true};
    if (!chains_build(t, w, 1, cs->gens + cs->batch * cs->clen)) {
        return NULL;
    }
    m = memo_slot(t, r->addr);
    if (m == NULL) {
        m = out;
        m->listed = false;
        m->addr = r->addr;
    }
    m->frames = w->frames;
    m->n = w->n;
    m->truncated = w->trunc;
    m->built = true;
    return m;
}

/* One awaiter AW_ADDR of a task into OUT: a task with its coroutine stack, or a future. */
static int read_awaiter(struct tasks *t, uint64_t aw_addr, struct snap_task_awaiter *out)
{
    struct task_raw r;
    struct pt_error e = {0};
    memset(out, 0, sizeof *out);
    if (read_task(t, aw_addr, &r, &e) < 0) {
        return -1;
    }
    if (!r.is_task) {
        return 0;
    }
    struct memo_entry unkept;
    const struct memo_entry *m = task_stack(t, &r, &unkept);
    if (m == NULL) {
        return -1;
    }
    out->task = aw_addr;
    out->frames = m->frames;
    out->n_frames = m->n;
    return 0;
}

/* Room in t->set_buf for SLOTS set entries (at most LIMIT_SET_SLOTS): it grows with the largest
 * set read, not to the limit up front. */
static bool set_room(struct tasks *t, uint64_t slots)
{
    if (slots <= t->set_slots) {
        return true;
    }
    if (slots > LIMIT_SET_SLOTS) {
        return false;
    }
    uint8_t *fresh = realloc(t->set_buf, (size_t)slots * SETENTRY_SIZE);
    if (fresh == NULL) {
        return false;
    }
    t->set_buf = fresh;
    t->set_slots = (size_t)slots;
    return true;
}

/* A task's awaiters: one object, or a set of them. */
static void read_awaited_by(struct tasks *t, const struct task_raw *r, struct snap_task *out)
{
    const struct py_layout *L = t->L;
    uint8_t set[SET_OBJECT_MAX];
    uint64_t used = 0;
    uint64_t mask = 0;
    uint64_t table = 0;
    struct pt_error e = {0};
    uint64_t one = r->awaited_by;
    if (one == 0) {
        return;
    }
    if (!r->awaited_by_is_set) {
        out->awaited_by = snapshot_alloc(t->s, sizeof *out->awaited_by);
        if (out->awaited_by != NULL && read_awaiter(t, one, &out->awaited_by[0]) == 0) {
            out->n_awaited_by = 1;
        } else {
            out->awaited_by_truncated = true;
        }
        return;
    }
    if (proc_read_bytes(t->proc, one, set, L->set.size, &e) < 0 ||
        !layout_read_u64(set, L->set.size, L->set.used, &used) ||
        !layout_read_u64(set, L->set.size, L->set.mask, &mask) ||
        !layout_read_u64(set, L->set.size, L->set.table, &table) || mask >= LIMIT_SET_SLOTS ||
        ((mask + 1) & mask) != 0 || used > mask + 1 || !set_room(t, mask + 1) ||
        proc_read_bytes(t->proc, table, t->set_buf, (mask + 1) * SETENTRY_SIZE, &e) < 0) {
        out->awaited_by_truncated = true;
        return;
    }
    out->awaited_by = snapshot_alloc_array(t->s, used ? used : 1, sizeof *out->awaited_by);
    if (out->awaited_by == NULL) {
        out->awaited_by_truncated = true;
        return;
    }
    for (uint64_t i = 0; i <= mask && out->n_awaited_by < used; i++) {
        uint64_t key = 0;
        uint64_t hash = 0;
        layout_read_u64(t->set_buf, (mask + 1) * SETENTRY_SIZE, i * SETENTRY_SIZE, &key);
        layout_read_u64(t->set_buf, (mask + 1) * SETENTRY_SIZE, i * SETENTRY_SIZE + 8, &hash);
        /* A removed entry keeps the dummy key with hash -1 (Objects/setobject.c). */
        if (key == 0 || hash == UINT64_MAX) {
            continue;
        }
        if (read_awaiter(t, key, &out->awaited_by[out->n_awaited_by]) < 0) {
            out->awaited_by_truncated = true;
            continue;
        }
        out->n_awaited_by++;
    }
}

/* Reads the list whose head node is at HEAD (a thread's or the interpreter's) into *RAWS, one
 * task after the other (each read names the next). A loop, a broken link or an unreadable
 * task ends the list with a warning. Returns 0, or -1 with ERR when memory ran out. */
static int read_list(struct tasks *t, uint64_t head, size_t n_before, struct task_raw **raws,
                     size_t *n, bool *truncated, struct pt_error *err)
{
    const struct asyncdebug_offsets *o = &t->off;
    uint64_t node = 0;
    size_t cap = 0;
    struct pt_error e = {0};
    if (proc_read_bytes(t->proc, head + t->L->llist_next, &node, sizeof node, &e) < 0) {
        snapshot_warn(t->s, "asyncio task list at 0x%" PRIx64 ": %s", head, e.msg);
        *truncated = true;
        return 0;
    }
    while (node != head) {
        if (node == 0 || node < o->task_node) {
            snapshot_warn(t->s, "asyncio task list at 0x%" PRIx64 " is broken", head);
            *truncated = true;
            return 0;
        }
        if (n_before + *n == LIMIT_ASYNCIO_TASKS) {
            snapshot_warn(t->s, "more than %d asyncio tasks, rest not shown", LIMIT_ASYNCIO_TASKS);
            *truncated = true;
            return 0;
        }
        uint64_t addr = node - o->task_node;
        struct memo_entry *m = memo_slot(t, addr);
        if (m != NULL && m->addr == addr && m->listed) {
            snapshot_warn(t->s, "asyncio task list at 0x%" PRIx64 " loops", head);
            *truncated = true;
            return 0;
        }
        if (*n == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            struct task_raw *nr = realloc(*raws, ncap * sizeof *nr);
            if (nr == NULL) {
                return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            }
            *raws = nr;
            cap = ncap;
        }
        if (read_task(t, addr, &(*raws)[*n], &e) < 0) {
            snapshot_warn(t->s, "asyncio task list cut short: %s", e.msg);
            *truncated = true;
            return 0;
        }
        if (m != NULL) {
            m->addr = addr;
            m->listed = true;
        }
        node = (*raws)[(*n)++].next;
    }
    return 0;
}

/* Turns the tasks RAWS[0..N) of one list into snapshot tasks. For each batch of tasks their
 * first coroutines and names are read in one call, and their await chains level by level
 * (chains_walk()); awaiters, one by one. */
static int build_tasks(struct tasks *t, const struct task_raw *raws, size_t n, pid_t tid,
                       struct taskcommon_vec *tv, struct pt_error *err)
{
    struct chain_scratch *cs = &t->cs;
    struct chain_walk *w = cs->w;
    size_t batch = cs->batch;
    size_t clen = cs->clen;
    for (size_t base = 0; base < n; base += batch) {
        size_t m = n - base < batch ? n - base : batch;
        size_t k = 0;
        for (size_t j = 0; j < m; j++) {
            const struct task_raw *r = &raws[base + j];
            const struct memo_entry *me = memo_slot(t, r->addr);
            bool build = me == NULL || !me->built;
            w[j] = (struct chain_walk){.coro = r->coro, .active = build && r->coro != 0,
                                       .build = build};
            cs->name_ok[j] = false;
            if (w[j].active) {
                cs->iov[k] = (struct proc_iov){r->coro, cs->gens + j * clen, clen};
                cs->who[k++] = (uint32_t)j;
            }
            if (r->name != 0) {
                cs->iov[k] =
                    (struct proc_iov){r->name, cs->names + j * NAME_PREFETCH, NAME_PREFETCH};
                cs->who[k++] = (uint32_t)(batch + j);
            }
        }
        /* One bad pointer fails the batch: then each is read on its own. */
        read_each(t, cs->iov, k, cs->ok);
        for (size_t i = 0; i < k; i++) {
            if (cs->who[i] >= batch) {
                cs->name_ok[cs->who[i] - batch] = cs->ok[i];
            } else {
                w[cs->who[i]].have_gen = cs->ok[i];
            }
        }
        if (!chains_build(t, w, m, cs->gens)) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        /* Each new chain into the memo (the task alone keeps it when the memo is full). */
        for (size_t j = 0; j < m; j++) {
            struct memo_entry *me = memo_slot(t, raws[base + j].addr);
            if (me != NULL && !me->built && w[j].build) {
                me->frames = w[j].frames;
                me->n = w[j].n;
                me->truncated = w[j].trunc;
                me->built = true;
            }
        }
        for (size_t j = 0; j < m; j++) {
            const struct task_raw *r = &raws[base + j];
            struct snap_task *st;
            if (!taskcommon_vec_push(tv, &st)) {
                return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            }
            st->id = r->addr;
            st->thread = tid;
            st->state = r->state;
            st->name = taskcommon_name_prefetched(
                t->common, r->name, cs->name_ok[j] ? cs->names + j * NAME_PREFETCH : NULL,
                NAME_PREFETCH, true);
            const struct memo_entry *me = memo_slot(t, r->addr);
            if (me != NULL && me->built) {
                st->frames = me->frames;
                st->n_frames = me->n;
                st->frames_truncated = me->truncated;
            } else {
                st->frames = w[j].frames;
                st->n_frames = w[j].n;
                st->frames_truncated = w[j].trunc;
            }
            read_awaited_by(t, r, st);
        }
    }
    return 0;
}

/* One task list, read and turned into snapshot tasks. */
static int walk_list(struct tasks *t, uint64_t head, pid_t tid, struct taskcommon_vec *tv,
                     bool *truncated, struct pt_error *err)
{
    struct task_raw *raws = NULL;
    size_t n = 0;
    int rc = read_list(t, head, tv->n, &raws, &n, truncated, err);
    if (rc == 0 && n > 0) {
        rc = build_tasks(t, raws, n, tid, tv, err);
    }
    free(raws);
    return rc;
}

/* The batch buffers, made once. */
static bool scratch_new(struct tasks *t)
{
    struct chain_scratch *cs = &t->cs;
    if (cs->w != NULL) {
        return true;
    }
    cs->clen = coro_read_len(t->L);
    /* Two reads a task, at most PROC_IOV_MAX a call. */
    cs->batch = PREFETCH_BYTES / cs->clen < PROC_IOV_MAX / 2 ? PREFETCH_BYTES / cs->clen
                                                             : PROC_IOV_MAX / 2;
    size_t b = cs->batch;
    cs->gens = malloc((b + 1) * cs->clen);
    cs->names = malloc(b * NAME_PREFETCH);
    cs->name_ok = malloc(b * sizeof *cs->name_ok);
    cs->iov = malloc((2 * b + 2) * sizeof *cs->iov);
    cs->who = malloc((2 * b + 2) * sizeof *cs->who);
    cs->ok = malloc((2 * b + 2) * sizeof *cs->ok);
    cs->w = malloc((b + 1) * sizeof *cs->w);
    if (b == 0 || cs->gens == NULL || cs->names == NULL || cs->name_ok == NULL ||
        cs->iov == NULL || cs->who == NULL || cs->ok == NULL || cs->w == NULL) {
        scratch_free(cs);
        return false;
    }
    return true;
}

static bool per_snapshot_buffers(struct tasks *t)
{
    if (t->memo == NULL) {
        t->memo_slots = MEMO_FIRST_SLOTS;
        t->memo = malloc(t->memo_slots * sizeof *t->memo);
        t->obj_buf = malloc(2 * LIMIT_OBJECT_READ);
    }
    if (t->memo == NULL || t->obj_buf == NULL || !scratch_new(t)) {
        return false;
    }
    t->levels = 0;
    memset(t->memo, 0, t->memo_slots * sizeof *t->memo);
    t->memo_used = 0;
    return true;
}

int tasks_read_interp(struct tasks *t, struct snapshot *s, uint64_t interp_addr, uint64_t modules,
                      const struct tasks_thread *threads, size_t n_threads, struct snap_interp *out,
                      struct pt_error *err)
{
    struct pt_error e = {0};
    out->tasks_present = false;
    if (!layout_usable(t->L) && t->reg != NULL) {
        if (!taskcommon_begin(t->common, s)) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        return asyncreg_read(t->reg, s, modules, threads, n_threads, out, err);
    }
    if (!layout_usable(t->L)) {
        /* No way to read tasks: an empty list is the truth only when the interpreter never
         * imported asyncio. */
        uint64_t mod = 0;
        int r = modules != 0 ? pydict_get_str(t->proc, t->L, modules, "asyncio", &mod, &e) : -1;
        out->tasks_present = r == 0;
        if (r == 1) {
            snapshot_warn(s,
                          "asyncio tasks not read: Python %s has neither _asyncio debug "
                          "offsets (3.14+) nor a pytop asyncio table (3.8-3.13)",
                          t->rt->version);
        } else if (r < 0) {
            snapshot_warn(s, "asyncio tasks not read: whether asyncio is imported is not known: %s",
                          modules != 0 ? e.msg : "sys.modules not found");
        }
        return 0;
    }
    if (!t->found) {
        /* Looked for again now and then (the module may be loaded later); each snapshot until
         * then says what the last look found, so that a null "tasks" always has its reason. */
        double now = monotonic_now();
        if (now - t->last_scan >= RESCAN_SECONDS) {
            t->last_scan = now;
            int r;
            if (t->rt->asyncio_debug_addr != 0) {
                r = asyncdebug_read_at(t->proc, t->rt->asyncio_debug_addr, &t->off, &e) < 0 ? -1
                                                                                            : 1;
            } else {
                r = asyncdebug_locate(t->proc, t->rt->binary, &t->off, &e);
            }
            snprintf(t->bad, sizeof t->bad, "%s", r < 0 ? e.msg : "");
            t->found = r == 1;
        }
        if (!t->found && t->bad[0] != '\0') {
            snapshot_warn(s, "asyncio tasks unavailable: %s", t->bad);
            return 0;
        }
        /* No section: _asyncio is not loaded, so there are no tasks. */
        if (!t->found) {
            out->tasks_present = true;
            return 0;
        }
    }
    if (!per_snapshot_buffers(t) || !taskcommon_begin(t->common, s)) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    t->s = s;
    t->page_valid = false;
    struct taskcommon_vec tv = {NULL, 0, 0};
    bool truncated = false;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_threads; i++) {
        rc = walk_list(t, threads[i].addr + t->off.thread_tasks_head, threads[i].tid, &tv,
                       &truncated, err);
    }
    if (rc == 0) {
        rc = walk_list(t, interp_addr + t->off.interp_tasks_head, 0, &tv, &truncated, err);
    }
    /* Tasks not of the C type are in asyncio's registries, after the C tasks. */
    if (rc == 0 && t->reg != NULL) {
        rc = asyncreg_read_more(t->reg, s, modules, threads, n_threads, &t->off, &tv, &truncated,
                                err);
    }
    if (rc == 0) {
        rc = taskcommon_vec_finish(&tv, s, out, err);
    }
    free(tv.v);
    t->s = NULL;
    out->tasks_present = rc == 0;
    out->tasks_truncated = truncated;
    return rc;
}
