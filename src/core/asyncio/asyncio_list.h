/* asyncio_list: stage 2 of the asyncio pipeline for the C tasks of 3.14+: the tasks on each
 * thread's and the interpreter's task lists, read through the _asyncio module's debug offsets, as
 * _remote_debugging's get_all_awaited_by() walks them, each with its coroutine stack (stage 3,
 * asyncio_chain) and the awaiters its awaited_by field names. */
#ifndef PYTOP_CORE_ASYNCIO_LIST_H
#define PYTOP_CORE_ASYNCIO_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/asyncio/tasks.h"

struct proc;
struct py_layout;
struct asyncio_common;
struct asyncio_chain;
struct asyncio_common_vec;
struct asyncdebug_offsets;
struct snapshot;
struct pt_error;

struct asyncio_list;

/* Whether L describes, consistently, what the lists and their tasks' coroutines are read with
 * (the debug offsets of 3.14+). */
bool asyncio_list_is_usable(const struct py_layout *L);

/* P, L, COMMON and CHAIN must outlive it. Errors: PT_E_NOMEM. */
struct asyncio_list *asyncio_list_new(struct proc *p, const struct py_layout *L,
                                      struct asyncio_common *common, struct asyncio_chain *chain,
                                      struct pt_error *err);
void asyncio_list_free(struct asyncio_list *l);

/* Appends to TV (COMMON already begun on S) the tasks on the lists OFF describes: each thread's
 * of THREADS[0..N_THREADS) in the order given, then the interpreter's at INTERP_ADDR. Each task
 * has its id, name, state, the tid of the thread whose list holds it, coroutine stack and
 * awaiters (a task with its coroutine stack, or a future). A loop, a broken link or an
 * unreadable task ends its list with a warning in S and *TRUNCATED set; more than
 * LIMIT_ASYNCIO_TASKS in TV likewise. Fails only on PT_E_NOMEM. */
int asyncio_list_read(struct asyncio_list *l, struct snapshot *s,
                      const struct asyncdebug_offsets *off, uint64_t interp_addr,
                      const struct tasks_thread *threads, size_t n_threads,
                      struct asyncio_common_vec *tv, bool *truncated, struct pt_error *err);

#endif
