/* asyncio_registry: stage 2 of the asyncio pipeline for the tasks in asyncio's own registries
 * (every task of 3.6-3.13, which have no _asyncio debug offsets; the tasks not of the C type from
 * 3.14): their objects classified and read as C or pure-Python tasks, each with its coroutine
 * stack (stage 3, asyncio_chain) and the edges stage 4 (asyncio_edges) derives. */
#ifndef PYTOP_CORE_ASYNCIO_REGISTRY_H
#define PYTOP_CORE_ASYNCIO_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/asyncio/tasks.h"

struct proc;
struct py_layout;
struct layout_asyncio;
struct asyncio_chain;
struct asyncio_common;
struct asyncio_common_vec;
struct asyncdebug_offsets;
struct snapshot;
struct snap_interp;
struct pt_error;

struct asyncio_registry;

/* A reader for the target of L, whose asyncio table is A (copied); P, L, COMMON and CHAIN
 * must outlive it. Errors: PT_E_NOMEM. */
struct asyncio_registry *asyncio_registry_new(struct proc *p, const struct py_layout *L,
                                              const struct layout_asyncio *A,
                                              struct asyncio_common *common,
                                              struct asyncio_chain *chain, struct pt_error *err);
void asyncio_registry_free(struct asyncio_registry *a);

/* Fills OUT's tasks from the registries of the interpreter whose sys.modules dict is at MODULES
 * (COMMON already begun on S): each task's id, name, state, the kernel tid of the thread running
 * its loop (0: the loop is not running), coroutine stack and awaiters (a task awaiting it, a
 * gather's awaiter, a TaskGroup's parent task). No asyncio imported gives an empty list. What
 * cannot be read is left out or marked, with a warning in S. Fails only on PT_E_NOMEM. */
int asyncio_registry_read(struct asyncio_registry *a, struct snapshot *s, uint64_t modules,
                          const struct tasks_thread *threads, size_t n_threads,
                          struct snap_interp *out, struct pt_error *err);

/* The tasks in the registries of a version whose C tasks are listed through the _asyncio
 * debug section (3.14+), appended to TV, which holds those C tasks (COMMON already begun on
 * S): the pure-Python tasks in asyncio.tasks' registries and in the _asyncio module state's
 * (believed only when the state points at the debug section OFF describes, at OFF->addr),
 * read as asyncio_registry_read() reads them; C tasks met there are left to the lists. Awaited-by
 * edges between a pure-Python task and a listed C task are added to either end's awaiters
 * (each once); a C task's own awaiters are kept as they are. What cannot be read is warned
 * about in S, *TRUNCATED set where tasks are missing. Fails only on PT_E_NOMEM. */
int asyncio_registry_read_more(struct asyncio_registry *a, struct snapshot *s, uint64_t modules,
                               const struct tasks_thread *threads, size_t n_threads,
                               const struct asyncdebug_offsets *off, struct asyncio_common_vec *tv,
                               bool *truncated, struct pt_error *err);

#endif
