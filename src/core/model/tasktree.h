/* tasktree: one interpreter's asyncio awaited-by graph drawn as `python -m asyncio pstree`
 * draws it (Lib/asyncio/tools.py, 3.14 and 3.15). */
#ifndef PYTOP_CORE_TASKTREE_H
#define PYTOP_CORE_TASKTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model/snapshot.h"

struct strbuf;
struct pt_error;

/* Appends to SB the tree of TASKS[0..N) (in the order their lists were read): each task whose
 * awaiter is not itself a listed task is a root; below a task come the coroutine frames through
 * which it awaits each child task ("function file:line"), shared between children, then the
 * children; a task that awaits nothing shows its own coroutine stack. Frames are listed
 * outermost first. Awaiters that are not tasks are left out (pstree hides what they await).
 * A graph with cycles is not drawn: the cycles are listed instead, as pstree reports them.
 * At most LIMIT_TREE_LINES lines, then a line saying the tree was cut. DRAIN, when not NULL,
 * is called between two roots' trees with SB holding what was drawn so far, for a writer to
 * empty it (thousands of tasks draw hundreds of kilobytes). Errors: PT_E_NOMEM. */
struct tasktree_drain {
    void (*fn)(void *ctx, struct strbuf *sb);
    void *ctx;
};
int tasktree_write(struct strbuf *sb, const struct snap_task *tasks, size_t n,
                   const struct tasktree_drain *drain, struct pt_error *err);

/* The same tree as nodes, for a front end that draws it itself (folding, filtering). */
struct tasktree;

/* One node: a task, or a coroutine frame through which a task awaits the nodes below it. */
struct tasktree_node {
    bool is_task;
    bool root;                      /* drawn at the top level, in node order */
    uint64_t id;                    /* task: its id; coroutine: 0 */
    const struct snap_task *task;   /* task: the listed task; NULL for a task only named as
                                     * an awaiter (drawn nowhere), and for a coroutine */
    const struct snap_frame *frame; /* coroutine: the first frame it was made of */
    struct snap_str label;          /* coroutine: "function file:line" as drawn */
    const size_t *kids;             /* the nodes below it, in drawing order (indices) */
    size_t n_kids;
};

/* Builds the tree of TASKS[0..N), which must outlive it (nodes point into them). The caller
 * frees it with tasktree_free(). Errors: PT_E_NOMEM. */
struct tasktree *tasktree_new(const struct snap_task *tasks, size_t n, struct pt_error *err);
void tasktree_free(struct tasktree *t);

/* How many nodes T has; node I (I < that) into *OUT, valid as long as T. */
size_t tasktree_size(const struct tasktree *t);
void tasktree_node(const struct tasktree *t, size_t i, struct tasktree_node *out);

/* Appends T's cycles to SB as pstree reports them (nothing for a tree). Returns how many were
 * written (at most a few), or -1 with PT_E_NOMEM. A graph with cycles has no roots to draw. */
long tasktree_write_cycles(struct strbuf *sb, const struct tasktree *t, struct pt_error *err);

#endif
