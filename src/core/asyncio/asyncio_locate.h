/* asyncio_locate: stage 1 of the asyncio pipeline: where a target keeps its asyncio tasks: the
 * _asyncio module's debug offsets (its .AsyncioDebug section, 3.14+: the C tasks' lists), the
 * registries in asyncio.tasks (every task of 3.6-3.13, the others from 3.14), in the _asyncio
 * module state (3.14+) and in a static of the _asyncio module (3.6's C tasks), and the types
 * that tell tasks, gathers and TaskGroups apart. */
#ifndef PYTOP_CORE_ASYNCIO_LOCATE_H
#define PYTOP_CORE_ASYNCIO_LOCATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/asyncio/asyncdebug.h"

struct proc;
struct runtime;
struct py_layout;
struct layout_asyncio;
struct snapshot;
struct pt_error;

/* Where the debug section is, once found. */
struct asyncio_locate;

/* P and RT must outlive it. Errors: PT_E_NOMEM. */
struct asyncio_locate *asyncio_locate_new(struct proc *p, const struct runtime *rt,
                                          struct pt_error *err);
void asyncio_locate_free(struct asyncio_locate *l);

/* The target's debug offsets into *OFF (valid as long as L): 1 when found; 0 when no mapped
 * file has the section (asyncio not imported: no tasks); -1 when they cannot be used, with a
 * warning in S saying why. Not found, the mappings are searched again at most once a second
 * (asyncio imported later loads _asyncio then); each snapshot until then says what the last
 * search found. */
int asyncio_locate_section(struct asyncio_locate *l, struct snapshot *s,
                           const struct asyncdebug_offsets **off);

/* asyncio's task registries and types, found in the sys.modules dict of one interpreter. */
struct asyncio_sources {
    uint64_t weak;   /* asyncio.tasks' registry WeakSet (A's registry_weak, of the class
                      * registry_owner where it names one); 0 absent */
    uint64_t strong; /* its plain set (A's registry_strong); 0 absent or none */
    uint64_t c_mod;  /* the _asyncio module; 0 when not imported */
    uint64_t ctask_type;
    uint64_t pytask_type;
    uint64_t gather_type;
    uint64_t taskgroup_type; /* 0: asyncio.taskgroups not imported */
    uint64_t cfuture_type;   /* asyncio.futures._CFuture, the C Future; 0 absent */
};

/* Fills OUT from the modules dict at MODULES (one pass over it, and one over each module's
 * names). Returns false when asyncio.tasks is not imported. */
bool asyncio_locate_registries(struct proc *p, const struct py_layout *L,
                               const struct layout_asyncio *A, uint64_t modules,
                               struct asyncio_sources *out);

/* The address of the static variable NAME (a pointer) of the _asyncio module's binary, a mapped
 * file named _asyncio.*: 3.6's C tasks go to a WeakSet only such a static holds. 1 found
 * (*ADDR), 0 when no such file is mapped or it does not name NAME (a stripped build), -1 when
 * it cannot be read (ERR says why). */
int asyncio_locate_static(struct proc *p, const char *name, uint64_t *addr, struct pt_error *err);

/* The registries in the state of the _asyncio module at MOD (3.14+: tasks of other
 * implementations that registered through the C _register_task) into *WEAK and *STRONG, 0 where
 * there are none. The state is believed only when its debug_offsets field points at the
 * module's debug section, found at SECTION_ADDR: else a warning in S, and *TRUNCATED. */
void asyncio_locate_state_registries(struct proc *p, const struct layout_asyncio *A,
                                     struct snapshot *s, uint64_t mod, uint64_t section_addr,
                                     uint64_t *weak, uint64_t *strong, bool *truncated);

#endif
