/* asyncreg: asyncio tasks found through asyncio's own task registries in the target and read
 * as C or pure-Python tasks: every task of Python 3.8-3.13 (no _asyncio debug offsets), the
 * tasks not of the C type from 3.14. */
#include "config.h"

#include "core/asyncreg.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/asyncdebug.h"
#include "core/corowalk.h"
#include "core/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"
#include "core/pydict.h"
#include "core/pyobj.h"
#include "core/runtime.h"
#include "core/snapshot.h"
#include "core/snapshot_arena.h"
#include "core/taskcommon.h"

enum {
    TYPE_SLOTS = 1024,     /* distinct types classified per snapshot */
    LOOP_SLOTS = 256,      /* distinct event loops per snapshot */
    SET_CHUNK = 1 << 14,   /* set slots read per call */
    TYPE_NAME_BYTES = 24,  /* of a type's tp_name compared */
    STATE_NAME_BYTES = 16, /* of a pure-Python task's _state */
    NAME_PREFETCH = 96,    /* bytes of each task name read ahead: a short str whole */
};

/* What an object's type makes it, for the walk. */
enum reg_kind {
    KIND_OTHER,
    KIND_NONE,      /* Py_None: a dead weak reference */
    KIND_CTASK,     /* _asyncio.Task or a subclass */
    KIND_PYTASK,    /* asyncio.tasks._PyTask or a subclass */
    KIND_GATHER,    /* asyncio.tasks._GatheringFuture */
    KIND_METHOD,    /* a bound method */
    KIND_TASKGROUP, /* asyncio.taskgroups.TaskGroup (3.11+) */
};

struct type_slot {
    uint64_t addr;
    enum reg_kind kind;
};

struct loop_slot {
    uint64_t addr;
    pid_t tid;
};

/* One task as its object says. */
struct reg_task {
    uint64_t addr;
    uint64_t coro;
    uint64_t fut_waiter;
    uint64_t name;
    uint64_t loop;
    uint64_t callback0; /* a C task's first done callback */
    uint64_t callbacks; /* a list of (callback, context) tuples */
    enum reg_kind kind;
    enum snap_task_state state;
};

/* An awaited-by edge: task CHILD (an index) is awaited by task AWAITER (an index). */
struct edge {
    size_t child;
    size_t awaiter;
};

struct edges {
    struct edge *v;
    size_t n;
    size_t cap;
    bool capped; /* LIMIT_TASK_EDGES reached: the rest were dropped */
};

struct asyncreg {
    struct proc *proc;
    const struct py_layout *L;
    struct layout_asyncio A;
    struct taskcommon *common;
    struct corowalk *walk;
    /* per snapshot */
    struct snapshot *s;
    uint64_t ctask_type;
    uint64_t pytask_type;
    uint64_t gather_type;
    uint64_t taskgroup_type;
    struct type_slot types[TYPE_SLOTS];
    struct loop_slot loops[LOOP_SLOTS];
    const struct tasks_thread *threads;
    size_t n_threads;
    struct reg_task *tasks;
    size_t n_tasks;
    size_t n_listed; /* tasks[0..n_listed): C tasks the snapshot lists already (3.14+) */
    bool cut;        /* tasks left out at LIMIT_ASYNCIO_TASKS */
    size_t *index; /* open addressing: task index + 1 by address, index_slots of them */
    size_t index_slots;
    bool types_full;
    size_t bad_waiters;  /* tasks whose awaited object cannot be read */
    size_t bad_children; /* gathers whose _children list cannot be read */
    /* PROC_IOV_MAX * NAME_PREFETCH bytes, apart from the calloc'd struct: a page of it costs
     * memory only once names are read into it. */
    uint8_t *name_buf;
    bool name_ok[PROC_IOV_MAX];
};

struct asyncreg *asyncreg_new(struct proc *p, const struct runtime *rt, struct taskcommon *common,
                              struct pt_error *err)
{
    struct layout_asyncio A;
    if (layout_asyncio_select(&rt->layout, &A, err) < 0) {
        return NULL;
    }
    struct asyncreg *a = calloc(1, sizeof *a);
    if (a == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    a->proc = p;
    a->L = &rt->layout;
    a->A = A;
    a->common = common;
    a->name_buf = malloc((size_t)PROC_IOV_MAX * NAME_PREFETCH);
    if (a->name_buf == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        free(a);
        return NULL;
    }
    a->walk = corowalk_new(p, &rt->layout, &a->A, common, err);
    if (a->walk == NULL) {
        free(a->name_buf);
        free(a);
        return NULL;
    }
    return a;
}

void asyncreg_free(struct asyncreg *a)
{
    if (a != NULL) {
        corowalk_free(a->walk);
        free(a->name_buf);
        free(a);
    }
}

static int read_u64(struct asyncreg *a, uint64_t addr, uint64_t *out)
{
    *out = 0;
    return proc_read_bytes(a->proc, addr, out, sizeof *out, NULL);
}

/* Reads the 8-byte words at ADDRS[i] + OFF into OUT[i], in batches; an unreadable one is 0. */
static void read_words(struct asyncreg *a, const uint64_t *addrs, uint64_t off, uint64_t *out,
                       size_t n)
{
    struct proc_iov iov[PROC_IOV_MAX];
    for (size_t base = 0; base < n; base += PROC_IOV_MAX) {
        size_t m = n - base < PROC_IOV_MAX ? n - base : PROC_IOV_MAX;
        /* OUT may be ADDRS itself: the addresses are taken before anything is read. */
        for (size_t j = 0; j < m; j++) {
            iov[j] = (struct proc_iov){addrs[base + j] + off, &out[base + j], 8};
        }
        if (proc_read_many(a->proc, iov, m, NULL) == 0) {
            continue;
        }
        /* One bad address fails the batch: then each word on its own. */
        for (size_t j = 0; j < m; j++) {
            uint64_t v = 0;
            proc_read_bytes(a->proc, iov[j].addr, &v, sizeof v, NULL);
            out[base + j] = v;
        }
    }
}

/* Whether the type at TYPE_ADDR is named NAME (its tp_name C string). */
static bool type_named(struct asyncreg *a, uint64_t type_addr, const char *name)
{
    char buf[TYPE_NAME_BYTES];
    uint64_t at = 0;
    size_t len = strlen(name) + 1;
    if (len > sizeof buf || read_u64(a, type_addr + a->L->type.name, &at) < 0 || at == 0 ||
        proc_read_bytes(a->proc, at, buf, len, NULL) < 0) {
        return false;
    }
    return memcmp(buf, name, len) == 0;
}

/* What the type at TYPE_ADDR (or its bases) is, cached per snapshot. */
static enum reg_kind type_kind(struct asyncreg *a, uint64_t type_addr)
{
    size_t h = (size_t)((type_addr >> 4) * 0x9e3779b97f4a7c15ULL) % TYPE_SLOTS;
    struct type_slot *slot = NULL;
    for (size_t i = 0; i < TYPE_SLOTS / 2; i++, h = (h + 1) % TYPE_SLOTS) {
        if (a->types[h].addr == type_addr) {
            return a->types[h].kind;
        }
        if (a->types[h].addr == 0) {
            slot = &a->types[h];
            break;
        }
    }
    /* More distinct types than the table holds (a hostile registry): the rest are not
     * looked at, so that classifying stays bounded. */
    if (type_addr == 0 || slot == NULL) {
        a->types_full = a->types_full || slot == NULL;
        return KIND_OTHER;
    }
    enum reg_kind kind = KIND_OTHER;
    uint64_t t = type_addr;
    for (int depth = 0; t != 0 && depth < LIMIT_TYPE_BASES && kind == KIND_OTHER; depth++) {
        if (t == a->ctask_type) {
            kind = KIND_CTASK;
        } else if (t == a->pytask_type) {
            kind = KIND_PYTASK;
        } else if (t == a->gather_type) {
            kind = KIND_GATHER;
        } else if (t == a->taskgroup_type) {
            kind = KIND_TASKGROUP;
        } else if (read_u64(a, t + a->A.type_base, &t) < 0) {
            break;
        }
    }
    if (kind == KIND_OTHER && type_named(a, type_addr, "NoneType")) {
        kind = KIND_NONE;
    } else if (kind == KIND_OTHER && type_named(a, type_addr, "method")) {
        kind = KIND_METHOD;
    }
    *slot = (struct type_slot){type_addr, kind};
    return kind;
}

static enum reg_kind object_kind(struct asyncreg *a, uint64_t obj)
{
    uint64_t type = 0;
    if (obj == 0 || read_u64(a, obj + a->L->object.ob_type, &type) < 0) {
        return KIND_OTHER;
    }
    return type_kind(a, type);
}

/* Appends the live keys of the set at SET_ADDR to KEYS (at most LIMIT_ASYNCIO_TASKS in all).
 * Returns 0, -1 when the set cannot be read (a warning says why), -2 out of memory. */
static int set_keys(struct asyncreg *a, uint64_t set_addr, uint64_t **keys, size_t *n, size_t *cap,
                    bool *truncated)
{
    const struct layout_asyncio *A = &a->A;
    uint8_t obj[LIMIT_OBJECT_READ / 64];
    uint64_t used = 0;
    uint64_t mask = 0;
    uint64_t table = 0;
    struct pt_error e = {0};
    if (A->set.size > sizeof obj || proc_read_bytes(a->proc, set_addr, obj, A->set.size, &e) < 0 ||
        !layout_read_u64(obj, A->set.size, A->set.used, &used) ||
        !layout_read_u64(obj, A->set.size, A->set.mask, &mask) ||
        !layout_read_u64(obj, A->set.size, A->set.table, &table)) {
        snapshot_warn(a->s, "asyncio task registry at 0x%" PRIx64 " unreadable", set_addr);
        return -1;
    }
    if (mask >= LIMIT_TASK_REGISTRY_SLOTS || ((mask + 1) & mask) != 0 || used > mask + 1) {
        snapshot_warn(a->s,
                      "asyncio task registry at 0x%" PRIx64 " has %" PRIu64 " slots, "
                      "%" PRIu64 " used: not read",
                      set_addr, mask + 1, used);
        *truncated = true;
        return -1;
    }
    size_t esz = A->set.entry_size;
    uint8_t *chunk = malloc((mask + 1 < SET_CHUNK ? mask + 1 : SET_CHUNK) * esz);
    if (chunk == NULL) {
        return -2;
    }
    int rc = 0;
    for (uint64_t base = 0; base <= mask && rc == 0; base += SET_CHUNK) {
        uint64_t m = mask + 1 - base < SET_CHUNK ? mask + 1 - base : SET_CHUNK;
        if (proc_read_bytes(a->proc, table + base * esz, chunk, m * esz, &e) < 0) {
            snapshot_warn(a->s, "asyncio task registry at 0x%" PRIx64 ": %s", set_addr, e.msg);
            *truncated = true;
            break;
        }
        for (uint64_t i = 0; i < m; i++) {
            uint64_t key = 0;
            uint64_t hash = 0;
            layout_read_u64(chunk, m * esz, i * esz + A->set.entry_key, &key);
            layout_read_u64(chunk, m * esz, i * esz + A->set.entry_hash, &hash);
            /* A removed entry keeps a dummy key with hash -1 (Objects/setobject.c). */
            if (key == 0 || hash == UINT64_MAX) {
                continue;
            }
            if (*n == LIMIT_ASYNCIO_TASKS) {
                snapshot_warn(a->s, "more than %d asyncio tasks, rest not shown",
                              LIMIT_ASYNCIO_TASKS);
                *truncated = true;
                rc = -1;
                break;
            }
            if (*n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 1024;
                uint64_t *nk = realloc(*keys, ncap * sizeof *nk);
                if (nk == NULL) {
                    rc = -2;
                    break;
                }
                *keys = nk;
                *cap = ncap;
            }
            (*keys)[(*n)++] = key;
        }
    }
    free(chunk);
    return rc == -2 ? -2 : 0;
}

/* The attributes NAMES[0..N) of the module object at MOD into VALUES (0 for those absent, all
 * 0 when MOD is 0). */
static void module_attrs(struct asyncreg *a, uint64_t mod, const char *const *names, size_t n,
                         uint64_t *values)
{
    uint64_t dict = 0;
    memset(values, 0, n * sizeof *values);
    if (mod != 0 && read_u64(a, mod + a->L->module_dict, &dict) == 0) {
        pydict_get_strs(a->proc, a->L, dict, names, n, values, NULL);
    }
}

/* Appends the objects in one pair of registries, named WHAT in warnings, to *OBJS: the
 * referents of the weak set's references, then the plain set's members. *CAP is the capacity
 * of *OBJS. Returns -1 only when memory ran out. */
static int registry_objects(struct asyncreg *a, const char *what, uint64_t weakset,
                            uint64_t strong, uint64_t **objs, size_t *n, size_t *cap,
                            bool *truncated)
{
    uint64_t data = 0;
    struct pt_error e = {0};
    int rc = 0;
    size_t first = *n;
    /* A WeakSet keeps its references in the instance attribute `data`, a set
     * (Lib/_weakrefset.py). */
    if (weakset != 0 && pydict_instance_attr(a->proc, a->L, weakset, "data", &data, &e) != 1) {
        snapshot_warn(a->s, "%s: no data set (%s)", what, e.msg);
        *truncated = true;
    } else if (weakset != 0) {
        rc = set_keys(a, data, objs, n, cap, truncated);
    }
    if (rc == -2) {
        return -1;
    }
    if (*n > first) {
        read_words(a, *objs + first, a->A.weakref_object, *objs + first, *n - first);
    }
    if (strong != 0 && set_keys(a, strong, objs, n, cap, truncated) == -2) {
        return -1;
    }
    return 0;
}

static size_t index_find(const struct asyncreg *a, uint64_t addr)
{
    size_t h = (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ULL) & (a->index_slots - 1);
    for (size_t i = 0; i < a->index_slots; i++, h = (h + 1) & (a->index_slots - 1)) {
        size_t v = a->index[h];
        if (v == 0) {
            return SIZE_MAX;
        }
        if (a->tasks[v - 1].addr == addr) {
            /* A task forgotten at the limit is no end of an edge. */
            return v - 1 < a->n_tasks ? v - 1 : SIZE_MAX;
        }
    }
    return SIZE_MAX;
}

static void index_add(struct asyncreg *a, size_t i)
{
    size_t h = (size_t)((a->tasks[i].addr >> 4) * 0x9e3779b97f4a7c15ULL) & (a->index_slots - 1);
    while (a->index[h] != 0) {
        h = (h + 1) & (a->index_slots - 1);
    }
    a->index[h] = i + 1;
}

/* The fields of the C tasks among TASKS[0..N), their structs read in batches. */
static void read_c_tasks(struct asyncreg *a, struct reg_task *tasks, size_t n, uint8_t *buf)
{
    const struct layout_asyncio *A = &a->A;
    size_t sz = A->task.size;
    size_t batch = (LIMIT_CHUNK_READ / sz) < PROC_IOV_MAX ? LIMIT_CHUNK_READ / sz : PROC_IOV_MAX;
    struct proc_iov iov[PROC_IOV_MAX];
    size_t which[PROC_IOV_MAX];
    size_t i = 0;
    while (i < n) {
        size_t m = 0;
        for (; i < n && m < batch; i++) {
            if (tasks[i].kind == KIND_CTASK) {
                iov[m] = (struct proc_iov){tasks[i].addr, buf + m * sz, sz};
                which[m++] = i;
            }
        }
        bool batched = m > 0 && proc_read_many(a->proc, iov, m, NULL) == 0;
        for (size_t j = 0; j < m; j++) {
            struct reg_task *t = &tasks[which[j]];
            const uint8_t *b = buf + j * sz;
            uint64_t state = 0;
            if (!batched && proc_read_bytes(a->proc, t->addr, buf + j * sz, sz, NULL) < 0) {
                t->kind = KIND_OTHER;
                continue;
            }
            layout_read_u64(b, sz, A->task.coro, &t->coro);
            layout_read_u64(b, sz, A->task.fut_waiter, &t->fut_waiter);
            layout_read_u64(b, sz, A->task.name, &t->name);
            layout_read_u64(b, sz, A->task.loop, &t->loop);
            layout_read_u64(b, sz, A->task.callback0, &t->callback0);
            layout_read_u64(b, sz, A->task.callbacks, &t->callbacks);
            layout_read_uint(b, sz, A->task.state, 4, &state);
            t->state = (int)state == A->state_pending     ? SNAP_TASK_PENDING
                       : (int)state == A->state_cancelled ? SNAP_TASK_CANCELLED
                       : (int)state == A->state_finished  ? SNAP_TASK_FINISHED
                                                          : SNAP_TASK_UNKNOWN;
        }
    }
}

/* A pure-Python task keeps its state in its instance dict (Lib/asyncio/futures.py, tasks.py):
 * _state is the str 'PENDING', 'CANCELLED' or 'FINISHED'. An attribute the instance does not
 * have yet (_fut_waiter, _state) still has its class's initial value. */
static void read_py_task(struct asyncreg *a, struct reg_task *t)
{
    static const char *const states[] = {"PENDING", "CANCELLED", "FINISHED"};
    struct {
        const char *name;
        uint64_t *out;
    } attrs[] = {{"_coro", &t->coro},
                 {"_fut_waiter", &t->fut_waiter},
                 {"_name", &t->name},
                 {"_loop", &t->loop},
                 {"_callbacks", &t->callbacks}};
    uint64_t state = 0;
    char buf[STATE_NAME_BYTES];
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        if (pydict_instance_attr(a->proc, a->L, t->addr, attrs[i].name, attrs[i].out, NULL) != 1) {
            *attrs[i].out = 0;
        }
    }
    t->state = SNAP_TASK_UNKNOWN;
    long len = 0;
    int found = pydict_instance_attr(a->proc, a->L, t->addr, "_state", &state, NULL);
    /* Until it changes, _state is Future's class attribute, _PENDING. */
    if (found == 0) {
        t->state = SNAP_TASK_PENDING;
    } else if (found == 1 &&
               (len = pyobj_read_str(a->proc, a->L, state, buf, sizeof buf, NULL)) > 0) {
        for (size_t i = 0; i < 3; i++) {
            if ((size_t)len == strlen(states[i]) && memcmp(buf, states[i], (size_t)len) == 0) {
                t->state = (enum snap_task_state)((int)SNAP_TASK_PENDING + (int)i);
            }
        }
    }
}

/* The kernel tid of the thread running the event loop at LOOP: its _thread_id attribute
 * (threading.get_ident() while it runs, else None; Lib/asyncio/base_events.py) names it. */
static pid_t loop_thread(struct asyncreg *a, uint64_t loop)
{
    size_t h = (size_t)((loop >> 4) * 0x9e3779b97f4a7c15ULL) % LOOP_SLOTS;
    struct loop_slot *slot = NULL;
    for (size_t i = 0; i < LOOP_SLOTS / 2; i++, h = (h + 1) % LOOP_SLOTS) {
        if (a->loops[h].addr == loop) {
            return a->loops[h].tid;
        }
        if (a->loops[h].addr == 0) {
            slot = &a->loops[h];
            break;
        }
    }
    uint64_t id_obj = 0;
    uint64_t type = 0;
    uint64_t ident = 0;
    pid_t tid = 0;
    /* More distinct loops than the table holds: the rest stay unknown, bounded. */
    if (loop != 0 && slot != NULL &&
        pydict_instance_attr(a->proc, a->L, loop, "_thread_id", &id_obj, NULL) == 1 &&
        read_u64(a, id_obj + a->L->object.ob_type, &type) == 0 &&
        (taskcommon_type_flags(a->common, type) & a->L->flag_long_subclass) != 0 &&
        pydict_read_uint(a->proc, a->L, id_obj, &ident, NULL) == 0) {
        for (size_t i = 0; i < a->n_threads; i++) {
            if (a->threads[i].thread_id == ident) {
                tid = a->threads[i].tid;
            }
        }
    }
    if (slot != NULL) {
        *slot = (struct loop_slot){loop, tid};
    }
    return tid;
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
static int list_items(struct asyncreg *a, uint64_t list, uint64_t max, uint64_t **items, size_t *n)
{
    uint64_t size = 0;
    uint64_t at = 0;
    *items = NULL;
    *n = 0;
    if (read_u64(a, list + a->A.list_size, &size) < 0 || size > LIMIT_ASYNCIO_TASKS ||
        read_u64(a, list + a->A.list_item, &at) < 0) {
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
static bool gather_edges(struct asyncreg *a, uint64_t gather, size_t awaiter, struct edges *ed)
{
    uint64_t children = 0;
    uint64_t *items = NULL;
    size_t n = 0;
    bool ok = true;
    if (pydict_instance_attr(a->proc, a->L, gather, "_children", &children, NULL) != 1) {
        return true;
    }
    if (list_items(a, children, LIMIT_ASYNCIO_TASKS, &items, &n) < 0) {
        a->bad_children++;
        return true;
    }
    for (size_t i = 0; i < n && ok; i++) {
        size_t child = index_find(a, items[i]);
        if (child != SIZE_MAX) {
            ok = edge_add(ed, child, awaiter);
        }
    }
    free(items);
    return ok;
}

/* The parent task of a TaskGroup whose _on_task_done the callback CB is, as an index. */
static size_t taskgroup_parent(struct asyncreg *a, uint64_t cb)
{
    uint64_t self = 0;
    uint64_t func = 0;
    uint64_t name = 0;
    uint64_t parent = 0;
    char buf[16];
    if (object_kind(a, cb) != KIND_METHOD || read_u64(a, cb + a->A.method_self, &self) < 0 ||
        object_kind(a, self) != KIND_TASKGROUP || read_u64(a, cb + a->A.method_func, &func) < 0 ||
        read_u64(a, func + a->A.function_name, &name) < 0 ||
        pyobj_read_str(a->proc, a->L, name, buf, sizeof buf, NULL) != 13 ||
        memcmp(buf, "_on_task_done", 13) != 0 ||
        pydict_instance_attr(a->proc, a->L, self, "_parent_task", &parent, NULL) != 1) {
        return SIZE_MAX;
    }
    return index_find(a, parent);
}

/* TaskGroup children: task CHILD's done callbacks name its group (Lib/asyncio/taskgroups.py
 * adds the group's _on_task_done to each task it creates). */
static bool callback_edges(struct asyncreg *a, size_t child, struct edges *ed)
{
    const struct reg_task *t = &a->tasks[child];
    uint64_t *items = NULL;
    size_t n = 0;
    bool ok = true;
    if (a->taskgroup_type == 0) {
        return true;
    }
    if (t->callback0 != 0) {
        size_t p = taskgroup_parent(a, t->callback0);
        if (p != SIZE_MAX) {
            ok = edge_add(ed, child, p);
        }
    }
    if (t->callbacks == 0 || list_items(a, t->callbacks, LIMIT_TASK_CALLBACKS, &items, &n) < 0) {
        return ok;
    }
    for (size_t i = 0; i < n && ok; i++) {
        uint64_t cb = 0;
        if (read_u64(a, items[i] + a->A.tuple_item, &cb) == 0) {
            size_t p = taskgroup_parent(a, cb);
            if (p != SIZE_MAX) {
                ok = edge_add(ed, child, p);
            }
        }
    }
    free(items);
    return ok;
}

/* Every awaited-by edge: a task awaiting a task, or a gather; TaskGroup children. */
static bool collect_edges(struct asyncreg *a, struct edges *ed)
{
    for (size_t i = 0; i < a->n_tasks; i++) {
        const struct reg_task *t = &a->tasks[i];
        size_t w = t->fut_waiter != 0 ? index_find(a, t->fut_waiter) : SIZE_MAX;
        uint64_t type = 0;
        if (w != SIZE_MAX && !edge_add(ed, w, i)) {
            return false;
        }
        if (w == SIZE_MAX && t->fut_waiter != 0 &&
            read_u64(a, t->fut_waiter + a->L->object.ob_type, &type) < 0) {
            a->bad_waiters++;
        } else if (w == SIZE_MAX && t->fut_waiter != 0 && type_kind(a, type) == KIND_GATHER &&
                   !gather_edges(a, t->fut_waiter, i, ed)) {
            return false;
        }
        if ((t->callback0 != 0 || t->callbacks != 0) && !callback_edges(a, i, ed)) {
            return false;
        }
    }
    return true;
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
static int attach_edges(struct asyncreg *a, struct edges *ed, struct snap_task *out)
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

/* The tasks among OBJS[0..N), classified and read, into a->tasks (each address once), after
 * the tasks LISTED[0..N_LISTED) the snapshot has already (C tasks, 3.14+: those of the
 * registries are left out, and the listed ones read only when C_FIELDS). Returns the number of
 * pure-Python tasks, or -1 when memory ran out. */
static long read_tasks(struct asyncreg *a, const uint64_t *objs, size_t n,
                       const struct snap_task *listed, size_t n_listed, bool c_fields)
{
    uint64_t *types = malloc((n ? n : 1) * sizeof *types);
    uint8_t *buf = malloc(LIMIT_CHUNK_READ);
    size_t others = 0;
    size_t total = n + n_listed;
    a->index_slots = 1024;
    while (a->index_slots < 2 * total) {
        a->index_slots *= 2;
    }
    a->tasks = malloc((total ? total : 1) * sizeof *a->tasks);
    a->index = calloc(a->index_slots, sizeof *a->index);
    if (types == NULL || buf == NULL || a->tasks == NULL || a->index == NULL) {
        free(types);
        free(buf);
        return -1;
    }
    read_words(a, objs, a->L->object.ob_type, types, n);
    a->n_tasks = 0;
    for (size_t i = 0; i < n_listed; i++) {
        a->tasks[a->n_tasks] = (struct reg_task){.addr = listed[i].id, .kind = KIND_CTASK};
        if (index_find(a, listed[i].id) == SIZE_MAX) {
            index_add(a, a->n_tasks);
        }
        a->n_tasks++;
    }
    a->n_listed = a->n_tasks;
    for (size_t i = 0; i < n; i++) {
        enum reg_kind kind = objs[i] != 0 ? type_kind(a, types[i]) : KIND_NONE;
        if (kind == KIND_CTASK && n_listed > 0) {
            continue;
        }
        if (kind == KIND_CTASK || kind == KIND_PYTASK) {
            a->tasks[a->n_tasks] = (struct reg_task){.addr = objs[i], .kind = kind};
            if (index_find(a, objs[i]) == SIZE_MAX) {
                index_add(a, a->n_tasks++);
            }
        } else if (kind != KIND_NONE) {
            others++;
        }
    }
    if (others > 0) {
        snapshot_warn(a->s, "%zu objects in asyncio's task registries are not tasks", others);
    }
    size_t n_py = 0;
    for (size_t i = a->n_listed; i < a->n_tasks; i++) {
        n_py += a->tasks[i].kind == KIND_PYTASK;
    }
    /* The listed C tasks matter only as ends of edges to pure-Python tasks. */
    if (n_listed == 0 || (n_py > 0 && c_fields)) {
        read_c_tasks(a, a->tasks, a->n_tasks, buf);
    }
    /* Each pure-Python task costs a few dict lookups: past a limit they are listed unread. */
    size_t py = 0;
    for (size_t i = 0; i < a->n_tasks; i++) {
        if (a->tasks[i].kind == KIND_PYTASK && py++ < LIMIT_PY_TASKS) {
            read_py_task(a, &a->tasks[i]);
        } else if (a->tasks[i].kind == KIND_PYTASK) {
            a->tasks[i].state = SNAP_TASK_UNKNOWN;
        }
    }
    if (py > LIMIT_PY_TASKS) {
        snapshot_warn(a->s, "more than %d pure-Python asyncio tasks, the rest not read",
                      LIMIT_PY_TASKS);
    }
    free(types);
    free(buf);
    return (long)n_py;
}

/* Reads the first bytes of the names of tasks [I, I + PROC_IOV_MAX) in one batch. */
static void prefetch_names(struct asyncreg *a, size_t i)
{
    struct proc_iov iov[PROC_IOV_MAX];
    size_t n = a->n_tasks - i < PROC_IOV_MAX ? a->n_tasks - i : PROC_IOV_MAX;
    size_t m = 0;
    for (size_t j = 0; j < n; j++) {
        a->name_ok[j] = false;
        if (a->tasks[i + j].name != 0) {
            iov[m++] = (struct proc_iov){a->tasks[i + j].name, a->name_buf + j * NAME_PREFETCH,
                                         NAME_PREFETCH};
        }
    }
    /* A name near the end of a mapping fails the batch: then each is read on its own. */
    if (m > 0 && proc_read_many(a->proc, iov, m, NULL) == 0) {
        for (size_t j = 0; j < n; j++) {
            a->name_ok[j] = a->tasks[i + j].name != 0;
        }
    }
}

/* The snapshot tasks after the listed ones (TV holds those), their coroutine stacks, and the
 * awaiters of all. */
static int build(struct asyncreg *a, struct taskcommon_vec *tv, struct pt_error *err)
{
    struct edges ed = {NULL, 0, 0, false};
    int rc = 0;
    uint64_t *coros = malloc((a->n_tasks ? a->n_tasks : 1) * sizeof *coros);
    if (coros == NULL) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    for (size_t i = 0; i < a->n_tasks; i++) {
        coros[i] = i < a->n_listed ? 0 : a->tasks[i].coro;
    }
    corowalk_prefetch(a->walk, coros, a->n_tasks);
    for (size_t i = a->n_listed; i < a->n_tasks && rc == 0; i++) {
        const struct reg_task *t = &a->tasks[i];
        struct snap_task *st;
        /* With the tasks listed already, the registries' may pass the limit: the rest are
         * forgotten, edges to them included. */
        if (tv->n == LIMIT_ASYNCIO_TASKS) {
            snapshot_warn(a->s, "more than %d asyncio tasks, rest not shown", LIMIT_ASYNCIO_TASKS);
            a->cut = true;
            a->n_tasks = i;
            break;
        }
        if (!taskcommon_vec_push(tv, &st)) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            break;
        }
        size_t j = (i - a->n_listed) % PROC_IOV_MAX;
        if (j == 0) {
            prefetch_names(a, i);
        }
        st->id = t->addr;
        st->name = taskcommon_name_prefetched(
            a->common, t->name, a->name_ok[j] ? a->name_buf + j * NAME_PREFETCH : NULL,
            NAME_PREFETCH, t->kind == KIND_CTASK);
        st->state = t->state;
        st->thread = loop_thread(a, t->loop);
        if (corowalk_stack(a->walk, a->s, i, t->coro, st) < 0) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
    }
    corowalk_prefetch(a->walk, NULL, 0);
    free(coros);
    if (rc == 0 && (!collect_edges(a, &ed) || attach_edges(a, &ed, tv->v) < 0)) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (ed.capped) {
        snapshot_warn(a->s, "more than %d awaited-by edges, rest not shown", LIMIT_TASK_EDGES);
    }
    if (a->bad_waiters > 0) {
        snapshot_warn(a->s, "%zu asyncio tasks await objects that cannot be read",
                      a->bad_waiters);
    }
    if (a->bad_children > 0) {
        snapshot_warn(a->s, "%zu asyncio gathers have a _children list that cannot be read",
                      a->bad_children);
    }
    if (a->types_full) {
        snapshot_warn(a->s, "more than %d object types met in asyncio's tasks, rest not read",
                      TYPE_SLOTS / 2);
    }
    free(ed.v);
    return rc;
}

/* The registries and the types that tell tasks, gathers and TaskGroups apart, by name in
 * asyncio's modules, found in the modules dict at MODULES (one pass over it, and one over each
 * module's names); *C_MOD is the _asyncio module, 0 when not imported. Returns false when
 * asyncio.tasks is not imported. */
static bool find_registries(struct asyncreg *a, uint64_t modules, uint64_t *weak, uint64_t *strong,
                            uint64_t *c_mod)
{
    const char *mods[] = {"asyncio.tasks", "asyncio.taskgroups", "_asyncio"};
    uint64_t mod[sizeof mods / sizeof mods[0]];
    if (pydict_get_strs(a->proc, a->L, modules, mods, 3, mod, NULL) <= 0 || mod[0] == 0) {
        return false;
    }
    *c_mod = mod[2];
    /* The strong registry only where the version has one. */
    const char *names[] = {"_CTask", "_PyTask", "_GatheringFuture", a->A.registry_weak,
                           a->A.registry_strong};
    uint64_t found[sizeof names / sizeof names[0]];
    module_attrs(a, mod[0], names, a->A.registry_strong ? 5 : 4, found);
    a->ctask_type = found[0];
    a->pytask_type = found[1];
    a->gather_type = found[2];
    *weak = found[3];
    *strong = a->A.registry_strong ? found[4] : 0;
    const char *group[] = {"TaskGroup"};
    module_attrs(a, mod[1], group, 1, &a->taskgroup_type);
    return true;
}

enum {
    MODSTATE_MAX = 1024, /* bytes of the _asyncio module state read */
};

/* The registries in the state of the _asyncio module at MOD (3.14+: tasks of other
 * implementations that registered through the C _register_task) into *WEAK and *STRONG, 0 where
 * there are none.
 * The state is believed only when its debug_offsets field points at the module's debug
 * section, found at SECTION_ADDR: else a warning, and *TRUNCATED. */
static void state_registries(struct asyncreg *a, uint64_t mod, uint64_t section_addr,
                             uint64_t *weak, uint64_t *strong, bool *truncated)
{
    const struct layout_asyncio *A = &a->A;
    uint8_t buf[MODSTATE_MAX];
    uint64_t state = 0;
    uint64_t dbg = 0;
    *weak = 0;
    *strong = 0;
    if (!layout_has(A->modstate.debug_offsets) || !layout_has(A->module_md_state) || mod == 0) {
        return;
    }
    if (A->modstate.size > sizeof buf || read_u64(a, mod + A->module_md_state, &state) < 0 ||
        state == 0 || proc_read_bytes(a->proc, state, buf, A->modstate.size, NULL) < 0 ||
        !layout_read_u64(buf, A->modstate.size, A->modstate.debug_offsets, &dbg) ||
        section_addr == 0 || dbg != section_addr) {
        snapshot_warn(a->s,
                      "_asyncio module state at 0x%" PRIx64 " is not the one its debug offsets "
                      "describe: its task registries not read",
                      state);
        *truncated = true;
        return;
    }
    layout_read_u64(buf, A->modstate.size, A->modstate.non_asyncio_tasks, weak);
    layout_read_u64(buf, A->modstate.size, A->modstate.non_asyncio_eager_tasks, strong);
}

/* Forgets the previous snapshot's reading. */
static void begin(struct asyncreg *a, struct snapshot *s, const struct tasks_thread *threads,
                  size_t n_threads)
{
    memset(a->types, 0, sizeof a->types);
    memset(a->loops, 0, sizeof a->loops);
    a->s = s;
    a->threads = threads;
    a->n_threads = n_threads;
    a->tasks = NULL;
    a->index = NULL;
    a->n_tasks = 0;
    a->n_listed = 0;
    a->cut = false;
    a->types_full = false;
    a->bad_waiters = 0;
    a->bad_children = 0;
    a->ctask_type = 0;
    a->pytask_type = 0;
    a->gather_type = 0;
    a->taskgroup_type = 0;
}

static void end(struct asyncreg *a)
{
    free(a->tasks);
    free(a->index);
    a->tasks = NULL;
    a->index = NULL;
    a->n_tasks = 0;
    a->n_listed = 0;
}

int asyncreg_read(struct asyncreg *a, struct snapshot *s, uint64_t modules,
                  const struct tasks_thread *threads, size_t n_threads, struct snap_interp *out,
                  struct pt_error *err)
{
    uint64_t weak = 0;
    uint64_t strong = 0;
    uint64_t c_mod = 0;
    uint64_t *objs = NULL;
    size_t n = 0;
    size_t cap = 0;
    bool truncated = false;
    struct taskcommon_vec tv = {NULL, 0, 0};
    char what[64];
    int rc = 0;
    begin(a, s, threads, n_threads);
    out->tasks_present = true;
    if (modules == 0 || !find_registries(a, modules, &weak, &strong, &c_mod)) {
        /* asyncio not imported: no tasks. */
        return 0;
    }
    if (weak == 0) {
        snapshot_warn(s, "asyncio.tasks has no %s", a->A.registry_weak);
        out->tasks_present = false;
        return 0;
    }
    snprintf(what, sizeof what, "asyncio's %s", a->A.registry_weak);
    if (registry_objects(a, what, weak, strong, &objs, &n, &cap, &truncated) < 0 ||
        read_tasks(a, objs, n, NULL, 0, true) < 0) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (rc == 0) {
        rc = build(a, &tv, err);
    }
    if (rc == 0) {
        rc = taskcommon_vec_finish(&tv, s, out, err);
    }
    free(tv.v);
    free(objs);
    end(a);
    out->tasks_present = rc == 0;
    out->tasks_truncated = truncated;
    return rc;
}

int asyncreg_read_more(struct asyncreg *a, struct snapshot *s, uint64_t modules,
                       const struct tasks_thread *threads, size_t n_threads,
                       const struct asyncdebug_offsets *off, struct taskcommon_vec *tv,
                       bool *truncated, struct pt_error *err)
{
    uint64_t weak = 0;
    uint64_t strong = 0;
    uint64_t c_weak = 0;
    uint64_t c_strong = 0;
    uint64_t c_mod = 0;
    uint64_t *objs = NULL;
    size_t n = 0;
    size_t cap = 0;
    char what[64];
    int rc = 0;
    begin(a, s, threads, n_threads);
    if (modules == 0 || !find_registries(a, modules, &weak, &strong, &c_mod)) {
        return 0;
    }
    state_registries(a, c_mod, off->addr, &c_weak, &c_strong, truncated);
    snprintf(what, sizeof what, "asyncio's %s", a->A.registry_weak);
    if (weak != 0 || strong != 0) {
        rc = registry_objects(a, what, weak, strong, &objs, &n, &cap, truncated);
    }
    if (rc == 0 && (c_weak != 0 || c_strong != 0)) {
        rc = registry_objects(a, "_asyncio's non_asyncio_tasks", c_weak, c_strong, &objs, &n,
                              &cap, truncated);
    }
    /* The listed C tasks' other fields are read through pytop's table of the version, which
     * must agree with what the debug offsets say of the same struct. */
    bool c_fields = off->task_size == a->A.task.size && off->task_coro == a->A.task.coro &&
                    off->task_name == a->A.task.name;
    long n_py = 0;
    if (rc == 0 && n > 0) {
        n_py = read_tasks(a, objs, n, tv->v, tv->n, c_fields);
        rc = n_py < 0 ? -1 : 0;
    }
    if (rc < 0) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    } else if (n_py > 0) {
        if (!c_fields) {
            snapshot_warn(s, "asyncio C task layout disagrees with its debug offsets: what C "
                             "tasks await among pure-Python tasks not read");
        }
        rc = build(a, tv, err);
        *truncated = *truncated || a->cut;
    }
    free(objs);
    end(a);
    return rc;
}
