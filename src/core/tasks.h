/* tasks: a target's asyncio tasks and their awaited-by graph, read through the _asyncio
 * module's debug offsets (the .AsyncioDebug section, 3.14+). */
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

/* The _asyncio module's debug offsets (struct _Py_AsyncioModuleDebugOffsets in
 * Modules/_asynciomodule.c, the same in 3.14 and 3.15), as pytop keeps them. */
struct tasks_offsets {
    uint64_t task_size;
    uint64_t task_name;
    uint64_t task_awaited_by;
    uint64_t task_is_task;           /* char */
    uint64_t task_awaited_by_is_set; /* char */
    uint64_t task_coro;
    uint64_t task_node;              /* the struct llist_node linking the task into its list */
    uint64_t task_state;             /* fut_state (int), derived: see tasks_parse_offsets() */
    uint64_t interp_size;
    uint64_t interp_tasks_head;
    uint64_t thread_size;
    uint64_t thread_running_loop;
    uint64_t thread_running_task;
    uint64_t thread_tasks_head;
};

/* Bytes of the section's struct pytop reads. */
enum { TASKS_DEBUG_SECTION_SIZE = 13 * 8 };

/* Parses the section's bytes BUF[0..LEN) (little-endian, as the target wrote them) and checks
 * each offset against its struct's size: the task's fields against TASK_SIZE (at most
 * LIMIT_OBJECT_READ), the head fields against the interpreter and thread sizes. Errors:
 * PT_E_FORMAT (too short), PT_E_BADLAYOUT (inconsistent). */
int tasks_parse_offsets(const uint8_t *buf, size_t len, struct tasks_offsets *out,
                        struct pt_error *err);

/* One target's asyncio reader: where its .AsyncioDebug section is, once found. */
struct tasks;

/* P, RT and CODES must outlive the reader. Errors: PT_E_NOMEM. */
struct tasks *tasks_new(struct proc *p, const struct runtime *rt, struct code_cache *codes,
                        struct pt_error *err);
void tasks_free(struct tasks *t);

/* The threads of one interpreter, as the walker found them. */
struct tasks_thread {
    uint64_t addr;   /* thread state */
    pid_t tid;       /* kernel thread id; 0 unknown */
};

/* Fills OUT's tasks for the interpreter at INTERP_ADDR (whose sys.modules dict is at MODULES;
 * 0 unknown): each thread's task list in the order given, then the interpreter's fallback
 * list, as _remote_debugging's get_all_awaited_by() walks them. No _asyncio section mapped
 * (asyncio not imported) gives an empty list. A version without the debug offsets gives an
 * empty list when sys.modules has no asyncio, else OUT->tasks_present false and a warning.
 * Where a list cannot be read the tasks read so far are kept, marked truncated, with a warning
 * in S. Fails only on PT_E_NOMEM. */
int tasks_read_interp(struct tasks *t, struct snapshot *s, uint64_t interp_addr,
                      uint64_t modules, const struct tasks_thread *threads, size_t n_threads,
                      struct snap_interp *out, struct pt_error *err);

#endif
