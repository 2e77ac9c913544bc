/* tasktree: one interpreter's asyncio awaited-by graph drawn as `python -m asyncio pstree`
 * draws it (Lib/asyncio/tools.py, 3.14 and 3.15). */
#ifndef PYTOP_CORE_TASKTREE_H
#define PYTOP_CORE_TASKTREE_H

#include <stddef.h>

struct snap_task;
struct strbuf;
struct pt_error;

/* Appends to SB the tree of TASKS[0..N) (in the order their lists were read): each task whose
 * awaiter is not itself a listed task is a root; below a task come the coroutine frames through
 * which it awaits each child task ("function file:line"), shared between children, then the
 * children; a task that awaits nothing shows its own coroutine stack. Frames are listed
 * outermost first. Awaiters that are not tasks are left out (pstree hides what they await).
 * A graph with cycles is not drawn: the cycles are listed instead, as pstree reports them.
 * At most LIMIT_TREE_LINES lines, then a line saying the tree was cut. Errors: PT_E_NOMEM. */
int tasktree_write(struct strbuf *sb, const struct snap_task *tasks, size_t n,
                   struct pt_error *err);

#endif
