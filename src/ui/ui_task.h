/* ui_task: one asyncio task drawn as text: its name, state and thread, who awaits it, and its
 * coroutine stack; and a node of the awaited-by tree as its row shows it. */
#ifndef PYTOP_UI_UI_TASK_H
#define PYTOP_UI_UI_TASK_H

#include <stdbool.h>
#include <stddef.h>

#include <ncurses.h>

#include "core/model/snapshot.h"
#include "ui/view.h"

/* Draws task T of interpreter IN (of M's task graph) at row Y of W, in at most HEIGHT rows of
 * WIDTH columns: a title (name, id, state, the thread whose list holds it), one line per
 * awaiter (its name and id, and the function it awaits in), then the coroutine stack, most
 * recent call first, with source lines; when it does not fit, the last row says how much is
 * left. Returns the rows drawn. */
int ui_task_draw(WINDOW *w, int y, int height, int width, const struct snap_task *t,
                 const struct snap_interp *in, const struct ui_model *m);

struct tasktree_node;

/* How a node's row of the awaited-by tree looks. */
struct ui_task_look {
    bool selected;       /* the cursor row: the attributes set stay */
    bool hit;            /* the filter matched the node */
    bool folded;         /* a task whose rows below are not shown */
    bool can_fold;       /* a task with rows below */
    size_t folded_tasks; /* a folded task: how many tasks its fold hides */
    bool more;           /* FOLDED_TASKS is where counting stopped: there are more */
};

/* Draws node ND from W's cursor, within WIDTH columns: a task as its fold marker, "(T)", its
 * name (else its id), a state other than pending, and what its fold hides; a frame as pstree
 * draws it, "function file:line", with the file's base name. */
void ui_task_draw_node(WINDOW *w, int width, const struct tasktree_node *nd,
                       const struct ui_task_look *look, const struct ui_style *st);

#endif
