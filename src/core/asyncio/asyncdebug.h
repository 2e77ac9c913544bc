/* asyncdebug: find and read the _asyncio module's debug offsets (its .AsyncioDebug section,
 * 3.14+) in a target. */
#ifndef PYTOP_CORE_ASYNCDEBUG_H
#define PYTOP_CORE_ASYNCDEBUG_H

#include <stddef.h>
#include <stdint.h>

struct proc;
struct pt_error;

/* The _asyncio module's debug offsets (struct _Py_AsyncioModuleDebugOffsets in
 * Modules/_asynciomodule.c, the same in 3.14 and 3.15), as pytop keeps them. */
struct asyncdebug_offsets {
    uint64_t task_size;
    uint64_t task_name;
    uint64_t task_awaited_by;
    uint64_t task_is_task;           /* char */
    uint64_t task_awaited_by_is_set; /* char */
    uint64_t task_coro;
    uint64_t task_node;  /* the struct llist_node linking the task into its list */
    uint64_t task_state; /* fut_state (int), derived: see asyncdebug_parse_offsets() */
    uint64_t interp_size;
    uint64_t interp_tasks_head;
    uint64_t thread_size;
    uint64_t thread_running_loop;
    uint64_t thread_running_task;
    uint64_t thread_tasks_head;
    uint64_t addr; /* where the target keeps the section: what the module state's
                    * debug_offsets points to; 0 when not located (parsed only) */
};

/* Bytes of the section's struct pytop reads. */
enum { ASYNCDEBUG_SECTION_SIZE = 13 * 8 };

/* Parses the section's bytes BUF[0..LEN) (little-endian, as the target wrote them) and checks
 * each offset against its struct's size: the task's fields against TASK_SIZE (at most
 * LIMIT_OBJECT_READ), the head fields against the interpreter and thread sizes. Errors:
 * PT_E_FORMAT (too short), PT_E_BADLAYOUT (inconsistent). */
int asyncdebug_parse_offsets(const uint8_t *buf, size_t len, struct asyncdebug_offsets *out,
                             struct pt_error *err);

/* Reads and parses the target's copy of the section at ADDR into OUT (OUT->addr = ADDR). Errors:
 * PT_E_READ, PT_E_FORMAT, PT_E_BADLAYOUT. */
int asyncdebug_read_at(struct proc *p, uint64_t addr, struct asyncdebug_offsets *out,
                       struct pt_error *err);

/* Reads the section of SIZE bytes (0: unknown) found in the file PATH at ADDR in the target into
 * OUT: 1, or -1 when it is too short or its offsets do not hold (asyncdebug_read_at()). */
int asyncdebug_read_section(struct proc *p, uint64_t addr, uint64_t size, const char *path,
                            struct asyncdebug_offsets *out, struct pt_error *err);

/* Finds the section in the file RUNTIME_BINARY (the ELF holding the runtime: _asyncio built
 * in; NULL: that file is known to lack it) or in a mapped _asyncio module, and reads the
 * target's copy into OUT. Returns 1 when found, 0 when no mapped file has it (asyncio not imported), -1 on a read error or inconsistent
 * offsets (PT_E_READ, PT_E_FORMAT, PT_E_BADLAYOUT, errors of proc_maps()). */
int asyncdebug_locate(struct proc *p, const char *runtime_binary, struct asyncdebug_offsets *out,
                      struct pt_error *err);

#endif
