/* taskcommon: what both asyncio task readers share: per-snapshot strings of code objects, a
 * frame from a code object and instruction, task names, and a growing array of tasks. */
#ifndef PYTOP_CORE_TASKCOMMON_H
#define PYTOP_CORE_TASKCOMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/snapshot.h"

struct proc;
struct runtime;
struct code_cache;
struct pt_error;

struct taskcommon;

/* P, RT and CODES must outlive it. INT_NAMES: the version's C tasks may keep an int as their
 * name (layout_asyncio's int_task_names). Errors: PT_E_NOMEM. */
struct taskcommon *taskcommon_new(struct proc *p, const struct runtime *rt,
                                  struct code_cache *codes, bool int_names, struct pt_error *err);
void taskcommon_free(struct taskcommon *c);

/* Starts a snapshot S: strings made from here on live in S. Returns false when memory ran
 * out. */
bool taskcommon_begin(struct taskcommon *c, struct snapshot *s);

/* F becomes the Python frame of code object CODE_ADDR at instruction INSTR (as code_location()
 * takes it); names and position stay unknown where they cannot be read. */
void taskcommon_frame(struct taskcommon *c, uint64_t code_addr, uint64_t instr,
                      struct snap_frame *f);

/* The type flags of the type at TYPE_ADDR; 0 when unreadable. */
uint64_t taskcommon_type_flags(struct taskcommon *c, uint64_t type_addr);

/* A task's name: the str at NAME_ADDR, or, when C_TASK and the version names C tasks lazily,
 * "Task-N" for the int N a C task keeps until its name is asked for (Modules/_asynciomodule.c,
 * 3.12+); a pure-Python task's name is always a str. TYPE_ADDR is the name's type, 0 when not
 * read yet. Unknown: a NULL string; an int where the version never keeps one is also warned
 * about in the snapshot (once per snapshot). */
struct snap_str taskcommon_name(struct taskcommon *c, uint64_t name_addr, uint64_t type_addr,
                                bool c_task);

/* The same, BUF[0..LEN) holding the name object's first bytes as read ahead (NULL: not read):
 * a short str is taken from them without reading again. */
struct snap_str taskcommon_name_prefetched(struct taskcommon *c, uint64_t name_addr,
                                           const uint8_t *buf, size_t len, bool c_task);

/* A growing array of tasks in malloc'd memory, copied into the snapshot at the end. */
struct taskcommon_vec {
    struct snap_task *v;
    size_t n;
    size_t cap;
};

/* A zeroed new last element in *OUT; false when memory ran out. */
bool taskcommon_vec_push(struct taskcommon_vec *tv, struct snap_task **out);

/* Moves TV's tasks into S as OUT's task list and frees TV's memory. Errors: PT_E_NOMEM. */
int taskcommon_vec_finish(struct taskcommon_vec *tv, struct snapshot *s, struct snap_interp *out,
                          struct pt_error *err);

#endif
