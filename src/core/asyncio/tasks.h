/* tasks: a target's asyncio tasks and their awaited-by graph, read by the asyncio pipeline
 * through the _asyncio module's debug offsets (the .AsyncioDebug section, 3.14+: C tasks) and
 * asyncio's task registries (every task of 3.6-3.13, the others of 3.14+). */
#ifndef PYTOP_CORE_TASKS_H
#define PYTOP_CORE_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc;
struct runtime;
struct code_cache;
struct snapshot;
struct snap_interp;
struct pt_error;

/* One target's asyncio reader: where its .AsyncioDebug section is, once found. */
struct tasks;

/* P, RT and CODES must outlive the reader. Errors: PT_E_NOMEM. */
struct tasks *tasks_new(struct proc *p, const struct runtime *rt, struct code_cache *codes,
                        struct pt_error *err);
void tasks_free(struct tasks *t);

/* The threads of one interpreter, as the walker found them. */
struct tasks_thread {
    uint64_t addr;      /* thread state */
    pid_t tid;          /* kernel thread id; 0 unknown */
    uint64_t thread_id; /* threading.get_ident(); 0 unknown */
};

/* Fills OUT's tasks for the interpreter at INTERP_ADDR (whose sys.modules dict is at MODULES;
 * 0 unknown): each thread's task list in the order given, then the interpreter's fallback
 * list, as _remote_debugging's get_all_awaited_by() walks them, then the tasks not of the C
 * type from asyncio's registries (asyncio_registry_read_more()). No _asyncio section mapped
 * (asyncio not imported) gives an empty list. A version without the debug offsets is read
 * through asyncio's registries (asyncio_registry_read()); one without either gives an empty
 * list when sys.modules has no asyncio, else OUT->tasks_present false and a warning.
 * Where a list cannot be read the tasks read so far are kept, marked truncated, with a warning
 * in S. Fails only on PT_E_NOMEM. */
int tasks_read_interp(struct tasks *t, struct snapshot *s, uint64_t interp_addr, uint64_t modules,
                      const struct tasks_thread *threads, size_t n_threads, struct snap_interp *out,
                      struct pt_error *err);

#endif
