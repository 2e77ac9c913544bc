/* asyncio_locate: stage 1 of the asyncio pipeline: where a target keeps its asyncio tasks: the
 * _asyncio module's debug offsets (its .AsyncioDebug section, 3.14+: the C tasks' lists), the
 * registries in asyncio.tasks (every task of 3.6-3.13, the others from 3.14), in the _asyncio
 * module state (3.14+) and in a static of the _asyncio module (3.6's C tasks), and the types
 * that tell tasks, gathers and TaskGroups apart. */
#include "config.h"

#include "core/asyncio/asyncio_locate.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/asyncio/asyncio_common.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/target/elf.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/target/proc.h"
#include "core/pyobj/pydict.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"

/* How often the mappings are searched again for a section not found yet (asyncio imported
 * later loads _asyncio then). */
static const double RESCAN_SECONDS = 1.0;

enum {
    MODSTATE_MAX = 1024, /* bytes of the _asyncio module state read */
};

struct asyncio_locate {
    struct proc *proc;
    const struct runtime *rt;
    bool found;
    struct asyncdebug_offsets off;
    double last_scan;
    /* why the last scan could not use the _asyncio debug offsets; "" when it could */
    char bad[sizeof((struct pt_error *)0)->msg];
};

struct asyncio_locate *asyncio_locate_new(struct proc *p, const struct runtime *rt,
                                          struct pt_error *err)
{
    struct asyncio_locate *l = calloc(1, sizeof *l);
    if (l == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    l->proc = p;
    l->rt = rt;
    l->last_scan = -RESCAN_SECONDS;
    return l;
}

void asyncio_locate_free(struct asyncio_locate *l)
{
    free(l);
}

int asyncio_locate_section(struct asyncio_locate *l, struct snapshot *s,
                           const struct asyncdebug_offsets **off)
{
    struct pt_error e = {0};
    *off = &l->off;
    if (l->found) {
        return 1;
    }
    double now = clock_now();
    if (now - l->last_scan >= RESCAN_SECONDS) {
        l->last_scan = now;
        int r;
        const struct runtime *rt = l->rt;
        if (rt->asyncio_debug_addr != 0) {
            r = asyncdebug_read_section(l->proc, rt->asyncio_debug_addr, rt->asyncio_debug_size,
                                        rt->binary, &l->off, &e);
        } else {
            /* The runtime's binary was looked at already when it has no such section. */
            r = asyncdebug_locate(l->proc, rt->binary_asyncio_known ? NULL : rt->binary, &l->off,
                                  &e);
        }
        snprintf(l->bad, sizeof l->bad, "%s", r < 0 ? e.msg : "");
        l->found = r == 1;
    }
    if (!l->found && l->bad[0] != '\0') {
        snapshot_warn(s, "asyncio tasks unavailable: %s", l->bad);
        return -1;
    }
    return l->found ? 1 : 0;
}

/* The attributes NAMES[0..N) of the module object at MOD into VALUES (0 for those absent, all
 * 0 when MOD is 0). */
static void module_attrs(struct proc *p, const struct py_layout *L, uint64_t mod,
                         const char *const *names, size_t n, uint64_t *values)
{
    uint64_t dict = 0;
    memset(values, 0, n * sizeof *values);
    if (mod != 0 && asyncio_common_read_word(p, mod + L->module_dict, &dict) == 0) {
        pydict_get_strs(p, L, dict, names, n, values, NULL);
    }
}

bool asyncio_locate_registries(struct proc *p, const struct py_layout *L,
                               const struct layout_asyncio *A, uint64_t modules,
                               struct asyncio_sources *out)
{
    const char *mods[] = {"asyncio.tasks", "asyncio.taskgroups", "_asyncio", "asyncio.futures"};
    uint64_t mod[sizeof mods / sizeof mods[0]];
    memset(out, 0, sizeof *out);
    if (pydict_get_strs(p, L, modules, mods, 4, mod, NULL) <= 0 || mod[0] == 0) {
        return false;
    }
    out->c_mod = mod[2];
    const char *cfuture[] = {"_CFuture"};
    module_attrs(p, L, mod[3], cfuture, 1, &out->cfuture_type);
    /* The strong registry only where the version has one. */
    const char *names[] = {"_CTask", "_PyTask", "_GatheringFuture", A->registry_weak,
                           A->registry_strong};
    uint64_t found[sizeof names / sizeof names[0]];
    module_attrs(p, L, mod[0], names, A->registry_strong ? 5 : 4, found);
    out->ctask_type = found[0];
    out->pytask_type = found[1];
    out->gather_type = found[2];
    out->weak = found[3];
    out->strong = A->registry_strong ? found[4] : 0;
    /* 3.6: the WeakSet is a class attribute (_PyTask._all_tasks), in the class's own dict,
     * which the type of types places at its tp_dictoffset as for any instance. */
    if (A->registry_owner != NULL) {
        uint64_t owner = 0;
        const char *owner_name[] = {A->registry_owner};
        module_attrs(p, L, mod[0], owner_name, 1, &owner);
        if (owner == 0 ||
            pydict_instance_attr(p, L, owner, A->registry_weak, &out->weak, NULL) != 1) {
            out->weak = 0;
        }
    }
    const char *group[] = {"TaskGroup"};
    module_attrs(p, L, mod[1], group, 1, &out->taskgroup_type);
    return true;
}

/* Looks in one mapped file PATH, whose first mapping is FIRST, for the static NAME: 1 found
 * (*ADDR), 0 not, -1 the file cannot be read (ERR). */
static int static_in(struct proc *p, const struct proc_map *first, const char *path,
                     const char *name, uint64_t *addr, struct pt_error *err)
{
    struct elf *e = runtime_open_elf(p, path, err);
    if (e == NULL) {
        return -1;
    }
    struct elf_symbol sym;
    uint64_t bias = 0;
    int found = 0;
    int r = elf_find_symbol(e, name, &sym, err);
    /* A pointer's worth of data: a function or a larger object of that name is not it. */
    if (r == 0 && sym.size == 8 && sym.value != 0 &&
        elf_load_bias(e, first->start, first->offset, &bias, err) == 0 &&
        !__builtin_add_overflow(sym.value, bias, addr)) {
        found = 1;
    } else if (r < 0) {
        found = -1;
    }
    elf_close(e);
    return found;
}

int asyncio_locate_static(struct proc *p, const char *name, uint64_t *addr, struct pt_error *err)
{
    const struct proc_map *maps;
    size_t n;
    if (proc_maps(p, &maps, &n, err) < 0) {
        return -1;
    }
    /* The lowest mapping of a file comes first in the maps, the one its bias is taken from. */
    for (size_t i = 0; i < n; i++) {
        const char *slash = strrchr(maps[i].path, '/');
        const char *base = slash != NULL ? slash + 1 : maps[i].path;
        if (strncmp(base, "_asyncio.", 9) == 0) {
            int r = static_in(p, &maps[i], maps[i].path, name, addr, err);
            if (r < 0) {
                pt_error_prefix(err, "%s", maps[i].path);
            }
            return r;
        }
    }
    return 0;
}

void asyncio_locate_state_registries(struct proc *p, const struct layout_asyncio *A,
                                     struct snapshot *s, uint64_t mod, uint64_t section_addr,
                                     uint64_t *weak, uint64_t *strong, bool *truncated)
{
    uint8_t buf[MODSTATE_MAX];
    uint64_t state = 0;
    uint64_t dbg = 0;
    *weak = 0;
    *strong = 0;
    if (!layout_has(A->modstate.debug_offsets) || !layout_has(A->module_md_state) || mod == 0) {
        return;
    }
    if (A->modstate.size > sizeof buf ||
        asyncio_common_read_word(p, mod + A->module_md_state, &state) < 0 || state == 0 ||
        proc_read_bytes(p, state, buf, A->modstate.size, NULL) < 0 ||
        !layout_read_u64(buf, A->modstate.size, A->modstate.debug_offsets, &dbg) ||
        section_addr == 0 || dbg != section_addr) {
        snapshot_warn(s,
                      "_asyncio module state at 0x%" PRIx64 " is not the one its debug offsets "
                      "describe: its task registries not read",
                      state);
        *truncated = true;
        return;
    }
    layout_read_u64(buf, A->modstate.size, A->modstate.non_asyncio_tasks, weak);
    layout_read_u64(buf, A->modstate.size, A->modstate.non_asyncio_eager_tasks, strong);
}
