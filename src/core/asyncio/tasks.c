/* tasks: a target's asyncio tasks and their awaited-by graph, read by the asyncio pipeline:
 * (1) asyncio_locate finds where the target keeps them, (2) asyncio_list reads the C tasks of
 * 3.14+ from the lists its debug offsets describe and asyncio_registry the tasks in asyncio's
 * registries (every task of 3.6-3.13, the others of 3.14+), (3) asyncio_chain walks each task's
 * coroutine chain, (4) asyncio_edges derives the awaited-by edges the registries do not keep,
 * and (5) tasktree draws the graph as a tree. */
#include "config.h"

#include "core/model/snapshot_arena.h"
#include "core/asyncio/tasks.h"

#include <stdlib.h>

#include "core/asyncio/asyncio_chain.h"
#include "core/asyncio/asyncio_common.h"
#include "core/asyncio/asyncio_list.h"
#include "core/asyncio/asyncio_locate.h"
#include "core/asyncio/asyncio_registry.h"
#include "core/util/error.h"
#include "core/layout/asyncio.h"
#include "core/layout/layout.h"
#include "core/pyobj/pydict.h"
#include "core/target/runtime.h"
#include "core/model/snapshot.h"

struct tasks {
    struct proc *proc;
    const struct runtime *rt;
    const struct py_layout *L;
    struct asyncio_common *common;
    struct asyncio_locate *locate;
    struct asyncio_chain *chain;  /* NULL: no way to walk coroutines */
    struct asyncio_list *list;    /* 3.14+: the C tasks' lists; NULL without debug offsets */
    struct asyncio_registry *reg; /* NULL when the version has no asyncio table */
};

static struct tasks *out_of_memory(struct tasks *t, struct pt_error *err)
{
    tasks_free(t);
    pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    return NULL;
}

struct tasks *tasks_new(struct proc *p, const struct runtime *rt, struct code_cache *codes,
                        struct pt_error *err)
{
    struct tasks *t = calloc(1, sizeof *t);
    if (t == NULL) {
        pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    t->proc = p;
    t->rt = rt;
    t->L = &rt->layout;
    struct layout_asyncio A;
    struct pt_error e = {0};
    bool have_table = layout_asyncio_select(t->L, &A, &e) == 0;
    t->common = asyncio_common_new(p, rt, codes, have_table && A.int_task_names, err);
    t->locate = asyncio_locate_new(p, rt, err);
    if (t->common == NULL || t->locate == NULL) {
        tasks_free(t);
        return NULL;
    }
    /* One walker for every chain: described by the version's table where pytop has one, else
     * by the debug offsets alone. */
    bool usable = asyncio_list_is_usable(t->L);
    if (have_table || usable) {
        t->chain = asyncio_chain_new(p, t->L, have_table ? &A : NULL, t->common, &e);
        if (t->chain == NULL && e.code == PT_E_NOMEM) {
            return out_of_memory(t, err);
        }
    }
    if (t->chain != NULL && usable) {
        t->list = asyncio_list_new(p, t->L, t->common, t->chain, err);
        if (t->list == NULL) {
            tasks_free(t);
            return NULL;
        }
    }
    /* asyncio's registries are read where pytop has the version's table: for every task
     * without the debug section (before 3.14), for the tasks not of the C type with it. */
    if (t->chain != NULL && have_table) {
        t->reg = asyncio_registry_new(p, t->L, &A, t->common, t->chain, err);
        if (t->reg == NULL) {
            tasks_free(t);
            return NULL;
        }
    }
    return t;
}

void tasks_free(struct tasks *t)
{
    if (t != NULL) {
        asyncio_registry_free(t->reg);
        asyncio_list_free(t->list);
        asyncio_chain_free(t->chain);
        asyncio_locate_free(t->locate);
        asyncio_common_free(t->common);
        free(t);
    }
}

/* No way to read tasks: an empty list is the truth only when the interpreter never imported
 * asyncio. */
static int unreadable(struct tasks *t, struct snapshot *s, uint64_t modules,
                      struct snap_interp *out)
{
    struct pt_error e = {0};
    uint64_t mod = 0;
    int r = modules != 0 ? pydict_get_str(t->proc, t->L, modules, "asyncio", &mod, &e) : -1;
    out->tasks_present = r == 0;
    if (r == 1) {
        snapshot_warn(s,
                      "asyncio tasks not read: Python %s has neither _asyncio debug "
                      "offsets (3.14+) nor a pytop asyncio table (3.6-3.13)",
                      t->rt->version);
    } else if (r < 0) {
        snapshot_warn(s, "asyncio tasks not read: whether asyncio is imported is not known: %s",
                      modules != 0 ? e.msg : "sys.modules not found");
    }
    return 0;
}

int tasks_read_interp(struct tasks *t, struct snapshot *s, uint64_t interp_addr, uint64_t modules,
                      const struct tasks_thread *threads, size_t n_threads, struct snap_interp *out,
                      struct pt_error *err)
{
    out->tasks_present = false;
    if (t->list == NULL && t->reg != NULL) {
        if (!asyncio_common_begin(t->common, s)) {
            return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
        }
        return asyncio_registry_read(t->reg, s, modules, threads, n_threads, out, err);
    }
    if (t->list == NULL) {
        return unreadable(t, s, modules, out);
    }
    const struct asyncdebug_offsets *off = NULL;
    int found = asyncio_locate_section(t->locate, s, &off);
    if (found <= 0) {
        /* No section: _asyncio is not loaded, so there are no tasks. */
        out->tasks_present = found == 0;
        return 0;
    }
    if (!asyncio_common_begin(t->common, s)) {
        return pt_error_set(err, PT_E_NOMEM, 0, "out of memory");
    }
    struct asyncio_common_vec tv = {NULL, 0, 0};
    bool truncated = false;
    int rc =
        asyncio_list_read(t->list, s, off, interp_addr, threads, n_threads, &tv, &truncated, err);
    /* Tasks not of the C type are in asyncio's registries, after the C tasks. */
    if (rc == 0 && t->reg != NULL) {
        rc = asyncio_registry_read_more(t->reg, s, modules, threads, n_threads, off, &tv,
                                        &truncated, err);
    }
    if (rc == 0) {
        rc = asyncio_common_vec_finish(&tv, s, out, err);
    }
    free(tv.v);
    out->tasks_present = rc == 0;
    out->tasks_truncated = truncated;
    return rc;
}
