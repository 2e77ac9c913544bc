/* asyncio_registry: stage 2 of the asyncio pipeline for the tasks in asyncio's own registries
 * (every task of 3.6-3.13, which have no _asyncio debug offsets; the tasks not of the C type from
 * 3.14): their objects classified and read as C or pure-Python tasks, each with its coroutine
 * stack (stage 3, asyncio_chain) and the edges stage 4 (asyncio_edges) derives. */
#include "config.h"

#include "core/asyncio/asyncio_registry.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/asyncio/asyncdebug.h"
#include "core/asyncio/asyncio_chain.h"
#include "core/asyncio/asyncio_edges.h"
#include "core/asyncio/asyncio_locate.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/pyobj/pydict.h"
#include "core/pyobj/pyint.h"
#include "core/pyobj/pyobj.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"
#include "core/asyncio/asyncio_common.h"

enum {
    TYPE_SLOTS = 1024,     /* distinct types classified per snapshot */
    LOOP_SLOTS = 256,      /* distinct event loops per snapshot */
    SET_CHUNK = 1 << 14,   /* set slots read per call */
    TYPE_NAME_BYTES = 24,  /* of a type's tp_name compared */
    STATE_NAME_BYTES = 16, /* of a pure-Python task's _state */
    NAME_PREFETCH = 96,    /* bytes of each task name read ahead: a short str whole */
};

/* How often the _asyncio module's binary is looked at again for the static holding 3.6's C
 * tasks while it has not been found (asyncio imported later maps it then). */
static const double STATIC_RESCAN_SECONDS = 1.0;

/* A value remembered by address for one snapshot: a type's kind, a loop's thread. */
struct addr_slot {
    uint64_t addr;
    int64_t value;
};

struct asyncio_registry {
    struct proc *proc;
    const struct py_layout *L;
    struct layout_asyncio A;
    struct asyncio_common *common;
    struct asyncio_chain *chain;
    /* per snapshot */
    struct snapshot *s;
    struct asyncio_sources src; /* the registries and the types that tell tasks apart */
    struct addr_slot types[TYPE_SLOTS];
    struct addr_slot loops[LOOP_SLOTS];
    const struct tasks_thread *threads;
    size_t n_threads;
    struct asyncio_task *tasks;
    size_t n_tasks;
    size_t n_listed; /* tasks[0..n_listed): C tasks the snapshot lists already (3.14+) */
    bool cut;        /* tasks left out at LIMIT_ASYNCIO_TASKS */
    bool py_c_future; /* pure-Python tasks keep their Future's fields in the C struct (3.6) */
    size_t *index;   /* open addressing: task index + 1 by address, index_slots of them */
    size_t index_slots;
    bool types_full;
    /* PROC_IOV_MAX: a batch of chains (asyncio_chain_batch()), each set before it is walked;
     * apart from the calloc'd struct, whose zeroing would touch its pages in every run. */
    struct asyncio_chain_job *jobs;
    /* PROC_IOV_MAX * NAME_PREFETCH bytes, apart from the calloc'd struct: a page of it costs
     * memory only once names are read into it. */
    uint8_t *name_buf;
    bool name_ok[PROC_IOV_MAX];
    /* 3.6: where the _asyncio module keeps its C tasks' WeakSet (A.registry_c_symbol), once
     * found; why it was not at the last look ("" found or not looked for), and when. */
    uint64_t c_static_addr;
    char c_static_bad[sizeof((struct pt_error *)0)->msg];
    double c_static_scan;
};

struct asyncio_registry *asyncio_registry_new(struct proc *p, const struct py_layout *L,
                                              const struct layout_asyncio *A,
                                              struct asyncio_common *common,
                                              struct asyncio_chain *chain, struct pt_error *err)
{
    struct asyncio_registry *a = calloc(1, sizeof *a);
    if (a == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    a->proc = p;
    a->L = L;
    a->A = *A;
    a->common = common;
    a->chain = chain;
    a->c_static_scan = -STATIC_RESCAN_SECONDS;
    a->name_buf = malloc((size_t)PROC_IOV_MAX * NAME_PREFETCH);
    a->jobs = malloc((size_t)PROC_IOV_MAX * sizeof *a->jobs);
    if (a->name_buf == NULL || a->jobs == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        free(a->name_buf);
        free(a->jobs);
        free(a);
        return NULL;
    }
    return a;
}

void asyncio_registry_free(struct asyncio_registry *a)
{
    if (a != NULL) {
        free(a->name_buf);
        free(a->jobs);
        free(a);
    }
}

/* Reads the 8-byte words at ADDRS[i] + OFF into OUT[i], in batches; an unreadable one is 0. */
static void read_words(struct asyncio_registry *a, const uint64_t *addrs, uint64_t off,
                       uint64_t *out, size_t n)
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
static bool type_named(struct asyncio_registry *a, uint64_t type_addr, const char *name)
{
    char buf[TYPE_NAME_BYTES];
    uint64_t at = 0;
    size_t len = strlen(name) + 1;
    if (len > sizeof buf ||
        asyncio_common_read_word(a->proc, type_addr + a->L->type.name, &at) < 0 || at == 0 ||
        proc_read_bytes(a->proc, at, buf, len, NULL) < 0) {
        return false;
    }
    return memcmp(buf, name, len) == 0;
}

/* The slot of ADDR in TAB[0..N) (open addressing, at most half full): *HIT when it holds ADDR,
 * else the empty slot to fill; NULL when the table holds as many as it may. */
static struct addr_slot *slot_probe(struct addr_slot *tab, size_t n, uint64_t addr, bool *hit)
{
    size_t h = (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ULL) % n;
    *hit = false;
    for (size_t i = 0; i < n / 2; i++, h = (h + 1) % n) {
        if (tab[h].addr == addr) {
            *hit = true;
            return &tab[h];
        }
        if (tab[h].addr == 0) {
            return &tab[h];
        }
    }
    return NULL;
}

/* What the type at TYPE_ADDR (or its bases) is, cached per snapshot. */
static enum asyncio_kind type_kind(struct asyncio_registry *a, uint64_t type_addr)
{
    bool hit;
    struct addr_slot *slot = slot_probe(a->types, TYPE_SLOTS, type_addr, &hit);
    if (hit) {
        return (enum asyncio_kind)slot->value;
    }
    /* More distinct types than the table holds (a hostile registry): the rest are not
     * looked at, so that classifying stays bounded. */
    if (type_addr == 0 || slot == NULL) {
        a->types_full = a->types_full || slot == NULL;
        return ASYNCIO_KIND_OTHER;
    }
    enum asyncio_kind kind = ASYNCIO_KIND_OTHER;
    uint64_t t = type_addr;
    for (int depth = 0; t != 0 && depth < LIMIT_TYPE_BASES && kind == ASYNCIO_KIND_OTHER; depth++) {
        if (t == a->src.ctask_type) {
            kind = ASYNCIO_KIND_CTASK;
        } else if (t == a->src.pytask_type) {
            kind = ASYNCIO_KIND_PYTASK;
        } else if (t == a->src.gather_type) {
            kind = ASYNCIO_KIND_GATHER;
        } else if (t == a->src.taskgroup_type) {
            kind = ASYNCIO_KIND_TASKGROUP;
        } else if (asyncio_common_read_word(a->proc, t + a->A.type_base, &t) < 0) {
            break;
        }
    }
    if (kind == ASYNCIO_KIND_OTHER && type_named(a, type_addr, "NoneType")) {
        kind = ASYNCIO_KIND_NONE;
    } else if (kind == ASYNCIO_KIND_OTHER && type_named(a, type_addr, "method")) {
        kind = ASYNCIO_KIND_METHOD;
    }
    *slot = (struct addr_slot){type_addr, kind};
    return kind;
}

/* Appends the live keys of the set at SET_ADDR to KEYS (at most LIMIT_ASYNCIO_TASKS in all).
 * Returns 0, -1 when the set cannot be read (a warning says why), -2 out of memory. */
static int set_keys(struct asyncio_registry *a, uint64_t set_addr, uint64_t **keys, size_t *n,
                    size_t *cap, bool *truncated)
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

/* Appends the objects in one pair of registries, named WHAT in warnings, to *OBJS: the
 * referents of the weak set's references, then the plain set's members. *CAP is the capacity
 * of *OBJS. Returns -1 only when memory ran out. */
static int registry_objects(struct asyncio_registry *a, const char *what, uint64_t weakset,
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

static size_t index_find(const struct asyncio_registry *a, uint64_t addr)
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

static void index_add(struct asyncio_registry *a, size_t i)
{
    size_t h = (size_t)((a->tasks[i].addr >> 4) * 0x9e3779b97f4a7c15ULL) & (a->index_slots - 1);
    while (a->index[h] != 0) {
        h = (h + 1) & (a->index_slots - 1);
    }
    a->index[h] = i + 1;
}

/* The fields of the C tasks among TASKS[0..N), their structs read in batches. */
static void read_c_tasks(struct asyncio_registry *a, struct asyncio_task *tasks, size_t n,
                         uint8_t *buf)
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
            if (tasks[i].kind == ASYNCIO_KIND_CTASK) {
                iov[m] = (struct proc_iov){tasks[i].addr, buf + m * sz, sz};
                which[m++] = i;
            }
        }
        bool batched = m > 0 && proc_read_many(a->proc, iov, m, NULL) == 0;
        for (size_t j = 0; j < m; j++) {
            struct asyncio_task *t = &tasks[which[j]];
            const uint8_t *b = buf + j * sz;
            uint64_t state = 0;
            if (!batched && proc_read_bytes(a->proc, t->addr, buf + j * sz, sz, NULL) < 0) {
                t->kind = ASYNCIO_KIND_OTHER;
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

/* Whether the pure-Python Task derives from the C Future: 3.6's does (Lib/asyncio/tasks.py
 * subclasses futures.Future, which futures.py rebinds to _asyncio.Future; 3.7 made it
 * futures._PyFuture), and its Future's fields are then the C struct's, where a C task has
 * them too (FutureObj_HEAD, Modules/_asynciomodule.c), not instance attributes. */
static bool pytask_c_future(struct asyncio_registry *a)
{
    uint64_t t = a->src.pytask_type;
    for (int depth = 0; t != 0 && a->src.cfuture_type != 0 && depth < LIMIT_TYPE_BASES; depth++) {
        if (t == a->src.cfuture_type) {
            return true;
        }
        if (asyncio_common_read_word(a->proc, t + a->A.type_base, &t) < 0) {
            break;
        }
    }
    return false;
}

/* The Future fields of a pure-Python task whose class derives from the C Future (3.6): its
 * loop, callbacks and state from the struct (read no further than the last of them). */
static void read_py_task_c_future(struct asyncio_registry *a, struct asyncio_task *t)
{
    const struct layout_asyncio *A = &a->A;
    uint8_t buf[LIMIT_OBJECT_READ / 64];
    uint64_t end = A->task.loop > A->task.callbacks ? A->task.loop : A->task.callbacks;
    uint64_t state = 0;
    end = (A->task.state > end ? A->task.state : end) + 8;
    t->state = SNAP_TASK_UNKNOWN;
    if (end > sizeof buf || end > A->task.size ||
        proc_read_bytes(a->proc, t->addr, buf, end, NULL) < 0) {
        return;
    }
    layout_read_u64(buf, end, A->task.loop, &t->loop);
    layout_read_u64(buf, end, A->task.callbacks, &t->callbacks);
    layout_read_uint(buf, end, A->task.state, 4, &state);
    t->state = (int)state == A->state_pending     ? SNAP_TASK_PENDING
               : (int)state == A->state_cancelled ? SNAP_TASK_CANCELLED
               : (int)state == A->state_finished  ? SNAP_TASK_FINISHED
                                                  : SNAP_TASK_UNKNOWN;
}

/* A pure-Python task keeps its state in its instance dict (Lib/asyncio/futures.py, tasks.py):
 * _state is the str 'PENDING', 'CANCELLED' or 'FINISHED'. An attribute the instance does not
 * have yet (_fut_waiter, _state) still has its class's initial value. 3.6's keeps its Future's
 * fields in the C struct (read_py_task_c_future()). */
static void read_py_task(struct asyncio_registry *a, struct asyncio_task *t)
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
    /* The first three are the task's own; the rest, its Future's. */
    size_t n_attrs = a->py_c_future ? 3 : sizeof attrs / sizeof attrs[0];
    for (size_t i = 0; i < n_attrs; i++) {
        if (pydict_instance_attr(a->proc, a->L, t->addr, attrs[i].name, attrs[i].out, NULL) != 1) {
            *attrs[i].out = 0;
        }
    }
    if (a->py_c_future) {
        read_py_task_c_future(a, t);
        return;
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
static pid_t loop_thread(struct asyncio_registry *a, uint64_t loop)
{
    bool hit;
    struct addr_slot *slot = slot_probe(a->loops, LOOP_SLOTS, loop, &hit);
    if (hit) {
        return (pid_t)slot->value;
    }
    uint64_t id_obj = 0;
    uint64_t type = 0;
    uint64_t ident = 0;
    pid_t tid = 0;
    /* More distinct loops than the table holds: the rest stay unknown, bounded. */
    if (loop != 0 && slot != NULL &&
        pydict_instance_attr(a->proc, a->L, loop, "_thread_id", &id_obj, NULL) == 1 &&
        asyncio_common_read_word(a->proc, id_obj + a->L->object.ob_type, &type) == 0 &&
        (asyncio_common_type_flags(a->common, type) & a->L->flag_long_subclass) != 0 &&
        pyint_read_uint(a->proc, a->L, id_obj, &ident, NULL) == 0) {
        for (size_t i = 0; i < a->n_threads; i++) {
            if (a->threads[i].thread_id == ident) {
                tid = a->threads[i].tid;
            }
        }
    }
    if (slot != NULL) {
        *slot = (struct addr_slot){loop, tid};
    }
    return tid;
}

/* The tasks among OBJS[0..N), classified and read, into a->tasks (each address once), after
 * the tasks LISTED[0..N_LISTED) the snapshot has already (C tasks, 3.14+: those of the
 * registries are left out, and the listed ones read only when C_FIELDS). Returns the number of
 * pure-Python tasks, or -1 when memory ran out. */
static long read_tasks(struct asyncio_registry *a, const uint64_t *objs, size_t n,
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
        a->tasks[a->n_tasks] =
            (struct asyncio_task){.addr = listed[i].id, .kind = ASYNCIO_KIND_CTASK};
        if (index_find(a, listed[i].id) == SIZE_MAX) {
            index_add(a, a->n_tasks);
        }
        a->n_tasks++;
    }
    a->n_listed = a->n_tasks;
    for (size_t i = 0; i < n; i++) {
        enum asyncio_kind kind = objs[i] != 0 ? type_kind(a, types[i]) : ASYNCIO_KIND_NONE;
        if (kind == ASYNCIO_KIND_CTASK && n_listed > 0) {
            continue;
        }
        if (kind == ASYNCIO_KIND_CTASK || kind == ASYNCIO_KIND_PYTASK) {
            a->tasks[a->n_tasks] = (struct asyncio_task){.addr = objs[i], .kind = kind};
            if (index_find(a, objs[i]) == SIZE_MAX) {
                index_add(a, a->n_tasks++);
            }
        } else if (kind != ASYNCIO_KIND_NONE) {
            others++;
        }
    }
    if (others > 0) {
        snapshot_warn(a->s, "%zu objects in asyncio's task registries are not tasks", others);
    }
    size_t n_py = 0;
    for (size_t i = a->n_listed; i < a->n_tasks; i++) {
        n_py += a->tasks[i].kind == ASYNCIO_KIND_PYTASK;
    }
    /* The listed C tasks matter only as ends of edges to pure-Python tasks. */
    if (n_listed == 0 || (n_py > 0 && c_fields)) {
        read_c_tasks(a, a->tasks, a->n_tasks, buf);
    }
    /* Each pure-Python task costs a few dict lookups: past a limit they are listed unread. */
    size_t py = 0;
    a->py_c_future = n_py > 0 && pytask_c_future(a);
    for (size_t i = 0; i < a->n_tasks; i++) {
        if (a->tasks[i].kind == ASYNCIO_KIND_PYTASK && py++ < LIMIT_PY_TASKS) {
            read_py_task(a, &a->tasks[i]);
        } else if (a->tasks[i].kind == ASYNCIO_KIND_PYTASK) {
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
static void prefetch_names(struct asyncio_registry *a, size_t i)
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

/* Walks the coroutine chains of tasks [BASE, BASE + M) as one batch of jobs. */
static int walk_chains(struct asyncio_registry *a, size_t base, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        a->jobs[j] = (struct asyncio_chain_job){.coro = a->tasks[base + j].coro, .build = true};
    }
    return asyncio_chain_walk(a->chain, a->jobs, m);
}

static size_t find_task(void *ctx, uint64_t addr)
{
    return index_find(ctx, addr);
}

static enum asyncio_kind kind_of(void *ctx, uint64_t type_addr)
{
    return type_kind(ctx, type_addr);
}

/* The snapshot tasks after the listed ones (TV holds those), their coroutine stacks (walked a
 * batch at a time), and the awaiters of all. */
static int build(struct asyncio_registry *a, struct asyncio_common_vec *tv, struct pt_error *err)
{
    int rc = 0;
    size_t batch = asyncio_chain_batch(a->chain);
    asyncio_chain_begin(a->chain, a->s);
    if (a->n_tasks > a->n_listed && tv->n < LIMIT_ASYNCIO_TASKS) {
        size_t more = a->n_tasks - a->n_listed;
        size_t room = LIMIT_ASYNCIO_TASKS - tv->n;
        asyncio_common_vec_reserve(tv, more < room ? more : room); /* else grown as it goes */
    }
    for (size_t base = a->n_listed; base < a->n_tasks && rc == 0; base += batch) {
        size_t n = a->n_tasks - base < batch ? a->n_tasks - base : batch;
        /* Only the tasks that will be shown are walked. */
        size_t room = LIMIT_ASYNCIO_TASKS - tv->n;
        size_t walked = n < room ? n : room;
        if (walk_chains(a, base, walked) < 0) {
            rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
            break;
        }
        for (size_t i = base; i < base + n; i++) {
            const struct asyncio_task *t = &a->tasks[i];
            const struct asyncio_chain_job *job = &a->jobs[i - base];
            struct snap_task *st;
            /* With the tasks listed already, the registries' may pass the limit: the rest are
             * forgotten, edges to them included. */
            if (tv->n == LIMIT_ASYNCIO_TASKS) {
                snapshot_warn(a->s, "more than %d asyncio tasks, rest not shown",
                              LIMIT_ASYNCIO_TASKS);
                a->cut = true;
                a->n_tasks = i;
                break;
            }
            if (!asyncio_common_vec_push(tv, &st)) {
                rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
                break;
            }
            size_t j = (i - a->n_listed) % PROC_IOV_MAX;
            if (j == 0) {
                prefetch_names(a, i);
            }
            st->id = t->addr;
            st->name = asyncio_common_name_prefetched(
                a->common, t->name, a->name_ok[j] ? a->name_buf + j * NAME_PREFETCH : NULL,
                NAME_PREFETCH, t->kind == ASYNCIO_KIND_CTASK);
            st->state = t->state;
            st->thread = loop_thread(a, t->loop);
            st->frames = job->frames;
            st->n_frames = job->n_frames;
            st->frames_truncated = job->truncated;
        }
    }
    struct asyncio_edges_in in = {
        .proc = a->proc,
        .L = a->L,
        .A = &a->A,
        .s = a->s,
        .tasks = a->tasks,
        .n_tasks = a->n_tasks,
        .n_listed = a->n_listed,
        .taskgroups = a->src.taskgroup_type != 0,
        .find = find_task,
        .kind = kind_of,
        .ctx = a,
    };
    if (rc == 0) {
        rc = asyncio_edges_attach(&in, tv->v, err);
    }
    if (a->types_full) {
        snapshot_warn(a->s, "more than %d object types met in asyncio's tasks, rest not read",
                      TYPE_SLOTS / 2);
    }
    return rc;
}

/* Forgets the previous snapshot's reading. */
static void begin(struct asyncio_registry *a, struct snapshot *s,
                  const struct tasks_thread *threads, size_t n_threads)
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
    a->py_c_future = false;
    a->types_full = false;
    memset(&a->src, 0, sizeof a->src);
}

static void end(struct asyncio_registry *a)
{
    free(a->tasks);
    free(a->index);
    a->tasks = NULL;
    a->index = NULL;
    a->n_tasks = 0;
    a->n_listed = 0;
}

/* 3.6: the WeakSet the _asyncio module's C tasks add themselves to, which no module attribute
 * names: the static A.registry_c_symbol of the module's binary holds it. 0 when the version has
 * no such static or _asyncio is not imported; else, when it cannot be found, 0 with a warning
 * in S and *TRUNCATED (the C tasks are missing). */
static uint64_t c_static_registry(struct asyncio_registry *a, bool *truncated)
{
    uint64_t set = 0;
    struct pt_error e = {0};
    if (a->A.registry_c_symbol == NULL || a->src.c_mod == 0) {
        return 0;
    }
    double now = clock_now();
    if (a->c_static_addr == 0 && now - a->c_static_scan >= STATIC_RESCAN_SECONDS) {
        a->c_static_scan = now;
        int r = asyncio_locate_static(a->proc, a->A.registry_c_symbol, &a->c_static_addr, &e);
        snprintf(a->c_static_bad, sizeof a->c_static_bad, "%s",
                 r < 0   ? e.msg
                 : r > 0 ? ""
                         : "no mapped _asyncio.* file names it (a stripped build?)");
        if (r <= 0) {
            a->c_static_addr = 0;
        }
    }
    if (a->c_static_addr == 0 || asyncio_common_read_word(a->proc, a->c_static_addr, &set) < 0 ||
        set == 0) {
        snapshot_warn(a->s, "asyncio C tasks not read: the _asyncio module's %s: %s",
                      a->A.registry_c_symbol,
                      a->c_static_addr == 0 ? a->c_static_bad : "unreadable or not set");
        *truncated = true;
        return 0;
    }
    return set;
}

int asyncio_registry_read(struct asyncio_registry *a, struct snapshot *s, uint64_t modules,
                          const struct tasks_thread *threads, size_t n_threads,
                          struct snap_interp *out, struct pt_error *err)
{
    uint64_t *objs = NULL;
    size_t n = 0;
    size_t cap = 0;
    bool truncated = false;
    struct asyncio_common_vec tv = {NULL, 0, 0};
    char what[64];
    int rc = 0;
    begin(a, s, threads, n_threads);
    out->tasks_present = true;
    if (modules == 0 || !asyncio_locate_registries(a->proc, a->L, &a->A, modules, &a->src)) {
        /* asyncio not imported: no tasks. */
        return 0;
    }
    if (a->src.weak == 0) {
        snapshot_warn(s, "asyncio.tasks has no %s", a->A.registry_weak);
        out->tasks_present = false;
        return 0;
    }
    snprintf(what, sizeof what, "asyncio's %s", a->A.registry_weak);
    uint64_t c_weak = c_static_registry(a, &truncated);
    char c_what[64];
    snprintf(c_what, sizeof c_what, "_asyncio's %s",
             a->A.registry_c_symbol != NULL ? a->A.registry_c_symbol : "");
    if (registry_objects(a, what, a->src.weak, a->src.strong, &objs, &n, &cap, &truncated) < 0 ||
        (c_weak != 0 && registry_objects(a, c_what, c_weak, 0, &objs, &n, &cap, &truncated) < 0) ||
        read_tasks(a, objs, n, NULL, 0, true) < 0) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    if (rc == 0) {
        rc = build(a, &tv, err);
    }
    if (rc == 0) {
        rc = asyncio_common_vec_finish(&tv, s, out, err);
    }
    free(tv.v);
    free(objs);
    end(a);
    out->tasks_present = rc == 0;
    out->tasks_truncated = truncated;
    return rc;
}

int asyncio_registry_read_more(struct asyncio_registry *a, struct snapshot *s, uint64_t modules,
                               const struct tasks_thread *threads, size_t n_threads,
                               const struct asyncdebug_offsets *off, struct asyncio_common_vec *tv,
                               bool *truncated, struct pt_error *err)
{
    uint64_t c_weak = 0;
    uint64_t c_strong = 0;
    uint64_t *objs = NULL;
    size_t n = 0;
    size_t cap = 0;
    char what[64];
    int rc = 0;
    begin(a, s, threads, n_threads);
    if (modules == 0 || !asyncio_locate_registries(a->proc, a->L, &a->A, modules, &a->src)) {
        return 0;
    }
    asyncio_locate_state_registries(a->proc, &a->A, s, a->src.c_mod, off->addr, &c_weak, &c_strong,
                                    truncated);
    snprintf(what, sizeof what, "asyncio's %s", a->A.registry_weak);
    if (a->src.weak != 0 || a->src.strong != 0) {
        rc = registry_objects(a, what, a->src.weak, a->src.strong, &objs, &n, &cap, truncated);
    }
    if (rc == 0 && (c_weak != 0 || c_strong != 0)) {
        rc = registry_objects(a, "_asyncio's non_asyncio_tasks", c_weak, c_strong, &objs, &n, &cap,
                              truncated);
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
