/* asyncreg: asyncio tasks found through asyncio's own task registries in the target and read
 * as C or pure-Python tasks: every task of Python 3.8-3.13 (no _asyncio debug offsets), the
 * tasks not of the C type from 3.14. */
#ifndef PYTOP_CORE_ASYNCREG_H
#define PYTOP_CORE_ASYNCREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tasks.h"

struct proc;
struct runtime;
struct taskcommon;
struct taskcommon_vec;
struct asyncdebug_offsets;
struct snapshot;
struct snap_interp;
struct pt_error;

struct asyncreg;

/* A reader for the target of RT; P, RT and COMMON must outlive it. Errors: PT_E_UNSUPPORTED
 * (the version has no asyncio table), PT_E_BADLAYOUT, PT_E_NOMEM. */
struct asyncreg *asyncreg_new(struct proc *p, const struct runtime *rt, struct taskcommon *common,
                              struct pt_error *err);
void asyncreg_free(struct asyncreg *a);

/* Fills OUT's tasks from the registries of the interpreter whose sys.modules dict is at MODULES
 * (COMMON already begun on S): each task's id, name, state, the kernel tid of the thread running
 * its loop (0: the loop is not running), coroutine stack and awaiters (a task awaiting it, a
 * gather's awaiter, a TaskGroup's parent task). No asyncio imported gives an empty list. What
 * cannot be read is left out or marked, with a warning in S. Fails only on PT_E_NOMEM. */
int asyncreg_read(struct asyncreg *a, struct snapshot *s, uint64_t modules,
                  const struct tasks_thread *threads, size_t n_threads, struct snap_interp *out,
                  struct pt_error *err);

/* The tasks in the registries of a version whose C tasks are listed through the _asyncio
 * debug section (3.14+), appended to TV, which holds those C tasks (COMMON already begun on
 * S): the pure-Python tasks in asyncio.tasks' registries and in the _asyncio module state's
 * (believed only when the state points at the debug section OFF describes, at OFF->addr),
 * read as asyncreg_read() reads them; C tasks met there are left to the lists. Awaited-by
 * edges between a pure-Python task and a listed C task are added to either end's awaiters
 * (each once); a C task's own awaiters are kept as they are. What cannot be read is warned
 * about in S, *TRUNCATED set where tasks are missing. Fails only on PT_E_NOMEM. */
int asyncreg_read_more(struct asyncreg *a, struct snapshot *s, uint64_t modules,
                       const struct tasks_thread *threads, size_t n_threads,
                       const struct asyncdebug_offsets *off, struct taskcommon_vec *tv,
                       bool *truncated, struct pt_error *err);

#endif
