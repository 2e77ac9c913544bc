/* asyncio_edges: stage 4 of the asyncio pipeline: the awaited-by edges of the tasks found in
 * asyncio's registries, which keep no awaited_by of their own: a task awaiting a task, a gather's
 * awaiter awaiting each of its children, a TaskGroup's parent task awaiting the tasks it made. */
#include "config.h"

#include "core/asyncio/asyncio_edges.h"

#include <stdlib.h>
#include <string.h>

#include "core/asyncio/asyncio_common.h"
#include "core/util/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/pyobj/pydict.h"
#include "core/pyobj/pyobj.h"
#include "core/model/snapshot_arena.h"

/* An awaited-by edge: task CHILD (an index) is awaited by task AWAITER (an index). */
struct edge {
    size_t child;
    size_t awaiter;
};

/* A bound method as a done callback: its type, the object it is bound to, its function. */
struct method {
    bool read;
    uint64_t type;
    uint64_t self;
    uint64_t func;
};

/* What a method bound to SELF with function FUNC says of a TaskGroup parent (an index, or
 * SIZE_MAX): the tasks of one group share it, each with a bound method of its own. */
struct group_memo {
    uint64_t self;
    uint64_t func;
    size_t parent;
};

enum { GROUP_MEMO = 64 }; /* groups remembered; more are worked out again each time */

struct edges {
    struct edge *v;
    size_t n;
    size_t cap;
    bool capped;         /* LIMIT_TASK_EDGES reached: the rest were dropped */
    size_t bad_waiters;  /* tasks whose awaited object cannot be read */
    size_t bad_children; /* gathers whose _children list cannot be read */
    struct group_memo memo[GROUP_MEMO];
    size_t n_memo;
};

static size_t find(const struct asyncio_edges_in *a, uint64_t addr)
{
    return a->find(a->ctx, addr);
}

static enum asyncio_kind kind(const struct asyncio_edges_in *a, uint64_t type_addr)
{
    return a->kind(a->ctx, type_addr);
}

static enum asyncio_kind object_kind(const struct asyncio_edges_in *a, uint64_t obj)
{
    uint64_t type = 0;
    if (obj == 0 || asyncio_common_read_word(a->proc, obj + a->L->object.ob_type, &type) < 0) {
        return ASYNCIO_KIND_OTHER;
    }
    return kind(a, type);
}

/* False only when memory ran out. */
static bool edge_add(struct edges *ed, size_t child, size_t awaiter)
{
    if (ed->n == LIMIT_TASK_EDGES) {
        ed->capped = true;
        return true;
    }
    if (ed->n == ed->cap) {
        size_t ncap = ed->cap ? ed->cap * 2 : 64;
        struct edge *nv = realloc(ed->v, ncap * sizeof *nv);
        if (nv == NULL) {
            return false;
        }
        ed->v = nv;
        ed->cap = ncap;
    }
    ed->v[ed->n++] = (struct edge){child, awaiter};
    return true;
}

/* The items of the list at LIST (at most LIMIT_ASYNCIO_TASKS) into a malloc'd *ITEMS. */
static int list_items(const struct asyncio_edges_in *a, uint64_t list, uint64_t max,
                      uint64_t **items, size_t *n)
{
    uint64_t size = 0;
    uint64_t at = 0;
    *items = NULL;
    *n = 0;
    if (asyncio_common_read_word(a->proc, list + a->A->list_size, &size) < 0 ||
        size > LIMIT_ASYNCIO_TASKS ||
        asyncio_common_read_word(a->proc, list + a->A->list_item, &at) < 0) {
        return -1;
    }
    size = size < max ? size : max;
    if (size == 0) {
        return 0;
    }
    *items = malloc(size * sizeof **items);
    if (*items == NULL || proc_read_bytes(a->proc, at, *items, size * 8, NULL) < 0) {
        free(*items);
        *items = NULL;
        return -1;
    }
    *n = size;
    return 0;
}

/* A gather's awaiter awaits each of its children (_GatheringFuture._children). */
static bool gather_edges(const struct asyncio_edges_in *a, uint64_t gather, size_t awaiter,
                         struct edges *ed)
{
    uint64_t children = 0;
    uint64_t *items = NULL;
    size_t n = 0;
    bool ok = true;
    if (pydict_instance_attr(a->proc, a->L, gather, "_children", &children, NULL) != 1) {
        return true;
    }
    if (list_items(a, children, LIMIT_ASYNCIO_TASKS, &items, &n) < 0) {
        ed->bad_children++;
        return true;
    }
    for (size_t i = 0; i < n && ok; i++) {
        size_t child = find(a, items[i]);
        if (child != SIZE_MAX) {
            ok = edge_add(ed, child, awaiter);
        }
    }
    free(items);
    return ok;
}

/* The bytes of a method object that hold its type, function and object, from 0. */
static size_t method_span(const struct asyncio_edges_in *a)
{
    uint64_t top = a->L->object.ob_type;
    top = a->A->method_self > top ? a->A->method_self : top;
    top = a->A->method_func > top ? a->A->method_func : top;
    return top < 256 ? (size_t)top + 8 : 0;
}

static void method_parse(const struct asyncio_edges_in *a, const uint8_t *buf, size_t len,
                         struct method *m)
{
    m->read = layout_read_u64(buf, len, a->L->object.ob_type, &m->type) &&
              layout_read_u64(buf, len, a->A->method_self, &m->self) &&
              layout_read_u64(buf, len, a->A->method_func, &m->func);
}

static void method_read(const struct asyncio_edges_in *a, uint64_t cb, struct method *m)
{
    uint8_t buf[264];
    size_t len = method_span(a);
    m->read = false;
    if (cb != 0 && len > 0 && proc_read_bytes(a->proc, cb, buf, len, NULL) == 0) {
        method_parse(a, buf, len, m);
    }
}

/* The parent task of a TaskGroup whose _on_task_done the bound method M is, as an index. */
static size_t taskgroup_parent(const struct asyncio_edges_in *a, struct edges *ed,
                               const struct method *m)
{
    uint64_t name = 0;
    uint64_t parent = 0;
    char buf[16];
    if (!m->read || kind(a, m->type) != ASYNCIO_KIND_METHOD) {
        return SIZE_MAX;
    }
    for (size_t i = 0; i < ed->n_memo; i++) {
        if (ed->memo[i].self == m->self && ed->memo[i].func == m->func) {
            return ed->memo[i].parent;
        }
    }
    size_t found = SIZE_MAX;
    if (object_kind(a, m->self) == ASYNCIO_KIND_TASKGROUP &&
        asyncio_common_read_word(a->proc, m->func + a->A->function_name, &name) == 0 &&
        pyobj_read_str(a->proc, a->L, name, buf, sizeof buf, NULL) == 13 &&
        memcmp(buf, "_on_task_done", 13) == 0 &&
        pydict_instance_attr(a->proc, a->L, m->self, "_parent_task", &parent, NULL) == 1) {
        found = find(a, parent);
    }
    if (ed->n_memo < GROUP_MEMO) {
        ed->memo[ed->n_memo++] = (struct group_memo){m->self, m->func, found};
    }
    return found;
}

/* TaskGroup children: task CHILD's done callbacks name its group (Lib/asyncio/taskgroups.py
 * adds the group's _on_task_done to each task it creates). */
static bool callback_edges(const struct asyncio_edges_in *a, size_t child,
                           const struct method *m0, struct edges *ed)
{
    const struct asyncio_task *t = &a->tasks[child];
    uint64_t *items = NULL;
    size_t n = 0;
    bool ok = true;
    if (!a->taskgroups) {
        return true;
    }
    if (t->callback0 != 0) {
        size_t p = taskgroup_parent(a, ed, m0);
        if (p != SIZE_MAX) {
            ok = edge_add(ed, child, p);
        }
    }
    if (t->callbacks == 0 || list_items(a, t->callbacks, LIMIT_TASK_CALLBACKS, &items, &n) < 0) {
        return ok;
    }
    for (size_t i = 0; i < n && ok; i++) {
        uint64_t cb = 0;
        struct method m;
        if (asyncio_common_read_word(a->proc, items[i] + a->A->tuple_item, &cb) == 0) {
            method_read(a, cb, &m);
            size_t p = taskgroup_parent(a, ed, &m);
            if (p != SIZE_MAX) {
                ok = edge_add(ed, child, p);
            }
        }
    }
    free(items);
    return ok;
}

/* Task I's edges: to W, the task it awaits (SIZE_MAX: none), or through the gather it awaits
 * (TYPE, the awaited object's type, READ whether that could be read); its TaskGroup. */
static bool collect_task_edges(const struct asyncio_edges_in *a, size_t i, size_t w,
                               uint64_t type, bool read, const struct method *m0,
                               struct edges *ed)
{
    const struct asyncio_task *t = &a->tasks[i];
    if (w != SIZE_MAX && !edge_add(ed, w, i)) {
        return false;
    }
    if (w == SIZE_MAX && t->fut_waiter != 0 && !read) {
        ed->bad_waiters++;
    } else if (w == SIZE_MAX && t->fut_waiter != 0 && kind(a, type) == ASYNCIO_KIND_GATHER &&
               !gather_edges(a, t->fut_waiter, i, ed)) {
        return false;
    }
    return (t->callback0 == 0 && t->callbacks == 0) || callback_edges(a, i, m0, ed);
}

/* The type of each object a task awaits that is not a listed task (TYPES[i] for task i; 0
 * where none), read in batches: a thousand tasks parked on events made a thousand reads, one
 * each. READABLE[i]: whether it could be read. */
static void waiter_types(const struct asyncio_edges_in *a, const size_t *waits, uint64_t *types,
                         bool *readable)
{
    struct proc_iov iov[PROC_IOV_MAX];
    size_t who[PROC_IOV_MAX];
    bool ok[PROC_IOV_MAX];
    for (size_t first = 0; first < a->n_tasks; first += PROC_IOV_MAX) {
        size_t end = a->n_tasks - first < PROC_IOV_MAX ? a->n_tasks : first + PROC_IOV_MAX;
        size_t k = 0;
        for (size_t i = first; i < end; i++) {
            uint64_t fw = a->tasks[i].fut_waiter;
            types[i] = 0;
            readable[i] = waits[i] != SIZE_MAX || fw == 0 || fw + a->L->object.ob_type > fw;
            if (waits[i] == SIZE_MAX && fw != 0 && readable[i]) {
                iov[k] = (struct proc_iov){fw + a->L->object.ob_type, &types[i], sizeof types[i]};
                who[k++] = i;
            }
        }
        asyncio_common_read_each(a->proc, iov, k, ok);
        for (size_t j = 0; j < k; j++) {
            readable[who[j]] = ok[j];
        }
    }
}

/* The first done callback of each task as a bound method (M[i] for task i), in batches: a
 * thousand TaskGroup tasks made ten thousand reads, one by one. */
static void first_callbacks(const struct asyncio_edges_in *a, struct method *m)
{
    size_t span = method_span(a);
    uint8_t *buf = span > 0 && a->taskgroups ? malloc(PROC_IOV_MAX * span) : NULL;
    struct proc_iov iov[PROC_IOV_MAX];
    size_t who[PROC_IOV_MAX];
    bool ok[PROC_IOV_MAX];
    for (size_t i = 0; i < a->n_tasks; i++) {
        m[i].read = false;
    }
    for (size_t first = 0; buf != NULL && first < a->n_tasks; first += PROC_IOV_MAX) {
        size_t end = a->n_tasks - first < PROC_IOV_MAX ? a->n_tasks : first + PROC_IOV_MAX;
        size_t k = 0;
        for (size_t i = first; i < end; i++) {
            if (a->tasks[i].callback0 != 0) {
                iov[k] = (struct proc_iov){a->tasks[i].callback0, buf + k * span, span};
                who[k++] = i;
            }
        }
        asyncio_common_read_each(a->proc, iov, k, ok);
        for (size_t j = 0; j < k; j++) {
            if (ok[j]) {
                method_parse(a, buf + j * span, span, &m[who[j]]);
            }
        }
    }
    free(buf);
}

/* Every awaited-by edge: a task awaiting a task, or a gather; TaskGroup children. */
static bool collect_edges(const struct asyncio_edges_in *a, struct edges *ed)
{
    size_t *waits = malloc((a->n_tasks ? a->n_tasks : 1) * sizeof *waits);
    uint64_t *types = malloc((a->n_tasks ? a->n_tasks : 1) * sizeof *types);
    bool *readable = malloc(a->n_tasks ? a->n_tasks : 1);
    struct method *m0 = malloc((a->n_tasks ? a->n_tasks : 1) * sizeof *m0);
    bool ok = waits != NULL && types != NULL && readable != NULL && m0 != NULL;
    for (size_t i = 0; ok && i < a->n_tasks; i++) {
        uint64_t fw = a->tasks[i].fut_waiter;
        waits[i] = fw != 0 ? find(a, fw) : SIZE_MAX;
    }
    if (ok) {
        waiter_types(a, waits, types, readable);
        first_callbacks(a, m0);
    }
    for (size_t i = 0; ok && i < a->n_tasks; i++) {
        ok = collect_task_edges(a, i, waits[i], types[i], readable[i], &m0[i], ed);
    }
    free(m0);
    free(waits);
    free(types);
    free(readable);
    return ok;
}

static int edge_cmp(const void *x, const void *y)
{
    const struct edge *p = x;
    const struct edge *q = y;
    if (p->child != q->child) {
        return p->child < q->child ? -1 : 1;
    }
    return p->awaiter < q->awaiter ? -1 : p->awaiter > q->awaiter;
}

/* Whether task ST's awaiters name task ID already. */
static bool awaited_by_has(const struct snap_task *st, uint64_t id)
{
    for (size_t i = 0; i < st->n_awaited_by; i++) {
        if (st->awaited_by[i].task == id) {
            return true;
        }
    }
    return false;
}

/* Hangs the edges on the snapshot tasks OUT (one per a->tasks entry), each awaiter once. An
 * edge between two tasks listed already is theirs (3.14+: the C tasks' own awaited_by); one
 * from a registry task to a listed task adds to what the listed task has. */
static int attach_edges(const struct asyncio_edges_in *a, struct edges *ed, struct snap_task *out)
{
    /* No edges: ed->v is still NULL, which qsort() must not be given even for 0 items. */
    if (ed->n == 0) {
        return 0;
    }
    qsort(ed->v, ed->n, sizeof *ed->v, edge_cmp);
    for (size_t i = 0; i < ed->n;) {
        size_t j = i;
        while (j < ed->n && ed->v[j].child == ed->v[i].child) {
            j++;
        }
        struct snap_task *st = &out[ed->v[i].child];
        bool listed = ed->v[i].child < a->n_listed;
        const struct snap_task_awaiter *had = st->awaited_by;
        size_t n_had = st->n_awaited_by;
        size_t n_new = 0;
        for (size_t k = i; k < j; k++) {
            n_new += !listed || ed->v[k].awaiter >= a->n_listed;
        }
        if (n_new == 0) {
            i = j;
            continue;
        }
        struct snap_task_awaiter *v = snapshot_alloc_array(a->s, n_had + n_new, sizeof *v);
        if (v == NULL) {
            return -1;
        }
        if (n_had > 0) {
            memcpy(v, had, n_had * sizeof *v);
        }
        st->awaited_by = v;
        for (size_t k = i; k < j; k++) {
            const struct snap_task *aw = &out[ed->v[k].awaiter];
            if ((listed && ed->v[k].awaiter < a->n_listed) || awaited_by_has(st, aw->id)) {
                continue;
            }
            v[st->n_awaited_by++] = (struct snap_task_awaiter){aw->id, aw->frames, aw->n_frames};
        }
        i = j;
    }
    return 0;
}

int asyncio_edges_attach(const struct asyncio_edges_in *in, struct snap_task *out,
                         struct pt_error *err)
{
    struct edges ed = {.v = NULL};
    int rc = 0;
    if (!collect_edges(in, &ed) || attach_edges(in, &ed, out) < 0) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (ed.capped) {
        snapshot_warn(in->s, "more than %d awaited-by edges, rest not shown", LIMIT_TASK_EDGES);
    }
    if (ed.bad_waiters > 0) {
        snapshot_warn(in->s, "%zu asyncio tasks await objects that cannot be read", ed.bad_waiters);
    }
    if (ed.bad_children > 0) {
        snapshot_warn(in->s, "%zu asyncio gathers have a _children list that cannot be read",
                      ed.bad_children);
    }
    free(ed.v);
    return rc;
}
