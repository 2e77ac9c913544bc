/* ui_task: one asyncio task drawn as text: its name, state and thread, who awaits it, and its
 * coroutine stack. */
#ifndef PYTOP_UI_UI_TASK_H
#define PYTOP_UI_UI_TASK_H

#include <ncurses.h>

#include "core/snapshot.h"
#include "ui/view.h"

/* Draws task T of interpreter IN (of M's task graph) at row Y of W, in at most HEIGHT rows of
 * WIDTH columns: a title (name, id, state, the thread whose list holds it), one line per
 * awaiter (its name and id, and the function it awaits in), then the coroutine stack, most
 * recent call first, with source lines; when it does not fit, the last row says how much is
 * left. Returns the rows drawn. */
int ui_task_draw(WINDOW *w, int y, int height, int width, const struct snap_task *t,
                 const struct snap_interp *in, const struct ui_model *m);

#endif
