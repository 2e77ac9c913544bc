/* asyncio_list: stage 2 of the asyncio pipeline for the C tasks of 3.14+: the tasks on each
 * thread's and the interpreter's task lists, read through the _asyncio module's debug offsets, as
 * _remote_debugging's get_all_awaited_by() walks them, each with its coroutine stack (stage 3,
 * asyncio_chain) and the awaiters its awaited_by field names. */
#include "config.h"

#include "core/asyncio/asyncio_list.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/asyncio/asyncdebug.h"
#include "core/asyncio/asyncio_chain.h"
#include "core/asyncio/asyncio_common.h"
#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"

enum {
    TASK_PAGE = 4096,     /* a page of task objects read at once (read_object()), */
    TASK_WINDOW = 16384,  /* or the aligned window around it: a pool of them (3.13+ pools) */
    SETENTRY_SIZE = 16,   /* setentry: key pointer, hash (Include/cpython/setobject.h) */
    SET_OBJECT_MAX = 512, /* bytes of a set object's struct read */
    NAME_PREFETCH = 96,   /* bytes of each task name read ahead: a short str whole */
    MEMO_SLOTS = LIMIT_ASYNCIO_TASKS * 2, /* at most; it starts small and doubles when half full */
    MEMO_FIRST_SLOTS = 1024,
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

struct asyncio_list {
    struct proc *proc;
    const struct py_layout *L;
    struct asyncio_common *common;
    struct asyncio_chain *chain;
    const struct asyncdebug_offsets *off;
    /* per snapshot */
    struct snapshot *s;
    struct memo_entry *memo; /* open addressing, memo_slots entries (a power of two) */
    size_t memo_slots;
    size_t memo_used;
    uint8_t *set_buf; /* set_slots set entries (set_room()) */
    size_t set_slots;
    uint8_t *obj_buf; /* a task object */
    /* a batch of tasks: their names read ahead with their first coroutines */
    struct asyncio_chain_job *jobs; /* batch + 1 */
    uint8_t *names;                 /* batch * NAME_PREFETCH */
    bool *name_ok;                  /* batch */
    struct proc_iov *iov;           /* 2 * batch */
    uint32_t *who;                  /* 2 * batch */
    bool *ok;                       /* 2 * batch */
    uint8_t page[TASK_WINDOW];      /* the window or page the last task read lies in */
    uint64_t page_addr;
    size_t page_len;
    bool page_valid;
};

/* A field of WIDTH bytes at OFF inside SIZE bytes (false for LAYOUT_NONE). */
static bool fits(uint64_t off, uint64_t width, uint64_t size)
{
    uint64_t end;
    return !__builtin_add_overflow(off, width, &end) && end <= size;
}

bool asyncio_list_is_usable(const struct py_layout *L)
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

struct asyncio_list *asyncio_list_new(struct proc *p, const struct py_layout *L,
                                      struct asyncio_common *common, struct asyncio_chain *chain,
                                      struct pt_error *err)
{
    struct asyncio_list *l = calloc(1, sizeof *l);
    if (l == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    l->proc = p;
    l->L = L;
    l->common = common;
    l->chain = chain;
    size_t b = asyncio_chain_batch(chain);
    l->memo_slots = MEMO_FIRST_SLOTS;
    l->memo = malloc(l->memo_slots * sizeof *l->memo);
    l->obj_buf = malloc(2 * LIMIT_OBJECT_READ);
    l->jobs = malloc((b + 1) * sizeof *l->jobs);
    l->names = malloc(b * NAME_PREFETCH);
    l->name_ok = malloc(b * sizeof *l->name_ok);
    l->iov = malloc(2 * b * sizeof *l->iov);
    l->who = malloc(2 * b * sizeof *l->who);
    l->ok = malloc(2 * b * sizeof *l->ok);
    if (l->memo == NULL || l->obj_buf == NULL || l->jobs == NULL || l->names == NULL ||
        l->name_ok == NULL || l->iov == NULL || l->who == NULL || l->ok == NULL) {
        asyncio_list_free(l);
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    return l;
}

void asyncio_list_free(struct asyncio_list *l)
{
    if (l != NULL) {
        free(l->memo);
        free(l->set_buf);
        free(l->obj_buf);
        free(l->jobs);
        free(l->names);
        free(l->name_ok);
        free(l->iov);
        free(l->who);
        free(l->ok);
        free(l);
    }
}

/* Reads LEN bytes at ADDR through the page the object lies on: tasks made one after another sit
 * side by side, so walking their list reads a page, not a task, per system call. An object
 * that crosses a page is read as it is. The page is this snapshot's (asyncio_list_read()
 * forgets it). */
static int read_object(struct asyncio_list *t, uint64_t addr, uint8_t *buf, size_t len,
                       struct pt_error *err)
{
    uint64_t end;
    if (__builtin_add_overflow(addr, len, &end)) {
        return proc_read_bytes(t->proc, addr, buf, len, err);
    }
    if (!t->page_valid || addr < t->page_addr || end > t->page_addr + t->page_len) {
        /* The aligned window first (a thousand tasks made a hundred page reads); where part
         * of it is not mapped, the page alone; an object across its edge on its own. */
        uint64_t win = addr & ~(uint64_t)(TASK_WINDOW - 1);
        uint64_t page = addr & ~(uint64_t)(TASK_PAGE - 1);
        t->page_valid = false;
        if (end <= win + TASK_WINDOW &&
            proc_read_bytes(t->proc, win, t->page, TASK_WINDOW, NULL) == 0) {
            t->page_addr = win;
            t->page_len = TASK_WINDOW;
        } else if (end > page + TASK_PAGE) {
            return proc_read_bytes(t->proc, addr, buf, len, err);
        } else if (proc_read_bytes(t->proc, page, t->page, TASK_PAGE, err) == 0) {
            t->page_addr = page;
            t->page_len = TASK_PAGE;
        } else {
            return -1;
        }
        t->page_valid = true;
    }
    memcpy(buf, t->page + (addr - t->page_addr), len);
    return 0;
}

static int read_task(struct asyncio_list *t, uint64_t addr, struct task_raw *out,
                     struct pt_error *err)
{
    const struct asyncdebug_offsets *o = t->off;
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

static size_t memo_home(const struct asyncio_list *t, uint64_t addr)
{
    return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ULL) & (t->memo_slots - 1);
}

/* Doubles the memo, keeping its entries; false when it is at its bound or memory ran out. */
static bool memo_grow(struct asyncio_list *t)
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
static struct memo_entry *memo_slot(struct asyncio_list *t, uint64_t addr)
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
static struct memo_entry *task_stack(struct asyncio_list *t, const struct task_raw *r,
                                     struct memo_entry *out)
{
    struct memo_entry *m = memo_slot(t, r->addr);
    if (m != NULL && m->built) {
        return m;
    }
    struct asyncio_chain_job *job = &t->jobs[asyncio_chain_batch(t->chain)];
    *job = (struct asyncio_chain_job){.coro = r->coro, .build = true};
    if (asyncio_chain_walk_one(t->chain, job) < 0) {
        return NULL;
    }
    m = memo_slot(t, r->addr);
    if (m == NULL) {
        m = out;
        m->listed = false;
        m->addr = r->addr;
    }
    m->frames = job->frames;
    m->n = job->n_frames;
    m->truncated = job->truncated;
    m->built = true;
    return m;
}

/* One awaiter AW_ADDR of a task into OUT: a task with its coroutine stack, or a future. */
static int read_awaiter(struct asyncio_list *t, uint64_t aw_addr, struct snap_task_awaiter *out)
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
static bool set_room(struct asyncio_list *t, uint64_t slots)
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
static void read_awaited_by(struct asyncio_list *t, const struct task_raw *r, struct snap_task *out)
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
 * task after the other (each read names the next), starting at *FIRST when the head's link was
 * read already. A loop, a broken link or an unreadable task ends the list with a warning.
 * Returns 0, or -1 with ERR when memory ran out. */
static int read_list(struct asyncio_list *t, uint64_t head, const uint64_t *first,
                     size_t n_before, struct task_raw **raws, size_t *n, bool *truncated,
                     struct pt_error *err)
{
    const struct asyncdebug_offsets *o = t->off;
    uint64_t node = first != NULL ? *first : 0;
    size_t cap = 0;
    struct pt_error e = {0};
    if (first == NULL &&
        proc_read_bytes(t->proc, head + t->L->llist_next, &node, sizeof node, &e) < 0) {
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
 * (asyncio_chain_walk()); awaiters, one by one. */
static int build_tasks(struct asyncio_list *t, const struct task_raw *raws, size_t n, pid_t tid,
                       struct asyncio_common_vec *tv, struct pt_error *err)
{
    struct asyncio_chain_job *jobs = t->jobs;
    size_t batch = asyncio_chain_batch(t->chain);
    size_t clen = asyncio_chain_head_len(t->chain);
    if (!asyncio_common_vec_reserve(tv, n)) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    for (size_t base = 0; base < n; base += batch) {
        size_t m = n - base < batch ? n - base : batch;
        size_t k = 0;
        for (size_t j = 0; j < m; j++) {
            const struct task_raw *r = &raws[base + j];
            const struct memo_entry *me = memo_slot(t, r->addr);
            bool build = me == NULL || !me->built;
            jobs[j] = (struct asyncio_chain_job){.coro = r->coro, .build = build};
            t->name_ok[j] = false;
            if (build && r->coro != 0) {
                t->iov[k] = (struct proc_iov){r->coro, asyncio_chain_head(t->chain, j), clen};
                t->who[k++] = (uint32_t)j;
            }
            if (r->name != 0) {
                t->iov[k] = (struct proc_iov){r->name, t->names + j * NAME_PREFETCH, NAME_PREFETCH};
                t->who[k++] = (uint32_t)(batch + j);
            }
        }
        asyncio_common_read_each(t->proc, t->iov, k, t->ok);
        for (size_t i = 0; i < k; i++) {
            if (t->who[i] >= batch) {
                t->name_ok[t->who[i] - batch] = t->ok[i];
            } else {
                jobs[t->who[i]].have_head = t->ok[i];
            }
        }
        if (asyncio_chain_walk(t->chain, jobs, m) < 0) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        /* Each new chain into the memo (the task alone keeps it when the memo is full). */
        for (size_t j = 0; j < m; j++) {
            struct memo_entry *me = memo_slot(t, raws[base + j].addr);
            if (me != NULL && !me->built && jobs[j].build) {
                me->frames = jobs[j].frames;
                me->n = jobs[j].n_frames;
                me->truncated = jobs[j].truncated;
                me->built = true;
            }
        }
        for (size_t j = 0; j < m; j++) {
            const struct task_raw *r = &raws[base + j];
            struct snap_task *st;
            if (!asyncio_common_vec_push(tv, &st)) {
                return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            }
            st->id = r->addr;
            st->thread = tid;
            st->state = r->state;
            st->name = asyncio_common_name_prefetched(
                t->common, r->name, t->name_ok[j] ? t->names + j * NAME_PREFETCH : NULL,
                NAME_PREFETCH, true);
            const struct memo_entry *me = memo_slot(t, r->addr);
            if (me != NULL && me->built) {
                st->frames = me->frames;
                st->n_frames = me->n;
                st->frames_truncated = me->truncated;
            } else {
                st->frames = jobs[j].frames;
                st->n_frames = jobs[j].n_frames;
                st->frames_truncated = jobs[j].truncated;
            }
            read_awaited_by(t, r, st);
        }
    }
    return 0;
}

/* One task list, read and turned into snapshot tasks. */
static int walk_list(struct asyncio_list *t, uint64_t head, const uint64_t *first, pid_t tid,
                     struct asyncio_common_vec *tv, bool *truncated, struct pt_error *err)
{
    struct task_raw *raws = NULL;
    size_t n = 0;
    int rc = read_list(t, head, first, tv->n, &raws, &n, truncated, err);
    if (rc == 0 && n > 0) {
        rc = build_tasks(t, raws, n, tid, tv, err);
    }
    free(raws);
    return rc;
}

int asyncio_list_read(struct asyncio_list *t, struct snapshot *s,
                      const struct asyncdebug_offsets *off, uint64_t interp_addr,
                      const struct tasks_thread *threads, size_t n_threads,
                      struct asyncio_common_vec *tv, bool *truncated, struct pt_error *err)
{
    memset(t->memo, 0, t->memo_slots * sizeof *t->memo);
    t->memo_used = 0;
    t->s = s;
    t->off = off;
    t->page_valid = false;
    asyncio_chain_begin(t->chain, s);
    int rc = 0;
    /* The first link of every list in one batch: most threads have none. */
    uint64_t *first = calloc(n_threads + 1, sizeof *first);
    struct proc_iov *iov = malloc((n_threads + 1) * sizeof *iov);
    bool batch = false;
    if (first != NULL && iov != NULL) {
        for (size_t i = 0; i < n_threads; i++) {
            iov[i] = (struct proc_iov){threads[i].addr + off->thread_tasks_head + t->L->llist_next,
                                       &first[i], sizeof first[i]};
        }
        iov[n_threads] = (struct proc_iov){interp_addr + off->interp_tasks_head + t->L->llist_next,
                                           &first[n_threads], sizeof first[n_threads]};
        batch = true;
        for (size_t at = 0; batch && at < n_threads + 1; at += PROC_IOV_MAX) {
            size_t m = n_threads + 1 - at < PROC_IOV_MAX ? n_threads + 1 - at : PROC_IOV_MAX;
            batch = proc_read_many(t->proc, iov + at, m, NULL) == 0;
        }
    }
    for (size_t i = 0; rc == 0 && i < n_threads; i++) {
        rc = walk_list(t, threads[i].addr + off->thread_tasks_head, batch ? &first[i] : NULL,
                       threads[i].tid, tv, truncated, err);
    }
    if (rc == 0) {
        rc = walk_list(t, interp_addr + off->interp_tasks_head, batch ? &first[n_threads] : NULL,
                       0, tv, truncated, err);
    }
    free(first);
    free(iov);
    t->s = NULL;
    return rc;
}
