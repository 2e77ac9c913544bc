/* asyncio_edges: stage 4 of the asyncio pipeline: the awaited-by edges of the tasks found in
 * asyncio's registries, which keep no awaited_by of their own: a task awaiting a task, a gather's
 * awaiter awaiting each of its children, a TaskGroup's parent task awaiting the tasks it made. */
#ifndef PYTOP_CORE_ASYNCIO_EDGES_H
#define PYTOP_CORE_ASYNCIO_EDGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/snapshot.h"

struct proc;
struct py_layout;
struct layout_asyncio;
struct pt_error;

/* What an object's type makes it, for the registry reader and the edges. */
enum asyncio_kind {
    ASYNCIO_KIND_OTHER,
    ASYNCIO_KIND_NONE,      /* Py_None: a dead weak reference */
    ASYNCIO_KIND_CTASK,     /* _asyncio.Task or a subclass */
    ASYNCIO_KIND_PYTASK,    /* asyncio.tasks._PyTask or a subclass */
    ASYNCIO_KIND_GATHER,    /* asyncio.tasks._GatheringFuture */
    ASYNCIO_KIND_METHOD,    /* a bound method */
    ASYNCIO_KIND_TASKGROUP, /* asyncio.taskgroups.TaskGroup (3.11+) */
};

/* One task as its object says. */
struct asyncio_task {
    uint64_t addr;
    uint64_t coro;
    uint64_t fut_waiter;
    uint64_t name;
    uint64_t loop;
    uint64_t callback0; /* a C task's first done callback */
    uint64_t callbacks; /* a list of (callback, context) tuples */
    enum asyncio_kind kind;
    enum snap_task_state state;
};

/* The tasks whose edges are wanted, and what the edges ask of their reader. */
struct asyncio_edges_in {
    struct proc *proc;
    const struct py_layout *L;
    const struct layout_asyncio *A;
    struct snapshot *s;
    const struct asyncio_task *tasks;
    size_t n_tasks;
    size_t n_listed; /* tasks[0..n_listed): C tasks listed with their own awaiters (3.14+) */
    bool taskgroups; /* asyncio.taskgroups is imported */
    /* The index of the task at ADDR in TASKS, SIZE_MAX when none. */
    size_t (*find)(void *ctx, uint64_t addr);
    /* What the type at TYPE_ADDR makes an object. */
    enum asyncio_kind (*kind)(void *ctx, uint64_t type_addr);
    void *ctx;
};

/* Hangs the edges among IN's tasks on OUT[0..IN->n_tasks) (one snapshot task per task), each
 * awaiter once, at most LIMIT_TASK_EDGES of them: an edge between two listed tasks is theirs
 * already (left out); one from a registry task to a listed task adds to what the listed task
 * has. What cannot be read is left out, with a warning in IN->s. Fails only on PT_E_NOMEM. */
int asyncio_edges_attach(const struct asyncio_edges_in *in, struct snap_task *out,
                         struct pt_error *err);

#endif
