/* asyncio_common: what every stage of the asyncio pipeline shares: per-snapshot strings of code
 * objects, a frame from a code object and instruction, task names, batched reads that fall back
 * to one by one, and a growing array of tasks. */
#ifndef PYTOP_CORE_ASYNCIO_COMMON_H
#define PYTOP_CORE_ASYNCIO_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/snapshot.h"

struct proc;
struct proc_iov;
struct runtime;
struct code_cache;
struct pt_error;

struct asyncio_common;

/* P, RT and CODES must outlive it. INT_NAMES: the version's C tasks may keep an int as their
 * name (layout_asyncio's int_task_names). Errors: PT_E_NOMEM. */
struct asyncio_common *asyncio_common_new(struct proc *p, const struct runtime *rt,
                                          struct code_cache *codes, bool int_names,
                                          struct pt_error *err);
void asyncio_common_free(struct asyncio_common *c);

/* Starts a snapshot S: strings made from here on live in S. Returns false when memory ran
 * out. */
bool asyncio_common_begin(struct asyncio_common *c, struct snapshot *s);

/* F becomes the Python frame of code object CODE_ADDR at instruction INSTR (as code_location()
 * takes it); names and position stay unknown where they cannot be read. */
void asyncio_common_frame(struct asyncio_common *c, uint64_t code_addr, uint64_t instr,
                          struct snap_frame *f);

/* The type flags of the type at TYPE_ADDR; 0 when unreadable. */
uint64_t asyncio_common_type_flags(struct asyncio_common *c, uint64_t type_addr);

/* A task's name: the str at NAME_ADDR, or, when C_TASK and the version names C tasks lazily,
 * "Task-N" for the int N a C task keeps until its name is asked for (Modules/_asynciomodule.c,
 * 3.12+); a pure-Python task's name is always a str. TYPE_ADDR is the name's type, 0 when not
 * read yet. Unknown: a NULL string; an int where the version never keeps one is also warned
 * about in the snapshot (once per snapshot). */
struct snap_str asyncio_common_name(struct asyncio_common *c, uint64_t name_addr,
                                    uint64_t type_addr, bool c_task);

/* The same, BUF[0..LEN) holding the name object's first bytes as read ahead (NULL: not read):
 * a short str is taken from them without reading again. */
struct snap_str asyncio_common_name_prefetched(struct asyncio_common *c, uint64_t name_addr,
                                               const uint8_t *buf, size_t len, bool c_task);

/* The 8-byte word at ADDR into *OUT (0 when unreadable); 0 or -1. */
int asyncio_common_read_word(struct proc *p, uint64_t addr, uint64_t *out);

/* Reads IOV[0..K), PROC_IOV_MAX regions a batch or, when a batch fails (one bad pointer fails
 * it), its regions one by one; OK[j] says which were read. */
void asyncio_common_read_each(struct proc *p, const struct proc_iov *iov, size_t k, bool *ok);

/* A growing array of tasks in malloc'd memory, copied into the snapshot at the end. */
struct asyncio_common_vec {
    struct snap_task *v;
    size_t n;
    size_t cap;
};

/* Room for MORE elements beyond those TV has; false when memory ran out. */
bool asyncio_common_vec_reserve(struct asyncio_common_vec *tv, size_t more);

/* A zeroed new last element in *OUT; false when memory ran out. */
bool asyncio_common_vec_push(struct asyncio_common_vec *tv, struct snap_task **out);

/* Moves TV's tasks into S as OUT's task list and frees TV's memory. Errors: PT_E_NOMEM. */
int asyncio_common_vec_finish(struct asyncio_common_vec *tv, struct snapshot *s,
                              struct snap_interp *out, struct pt_error *err);

#endif
