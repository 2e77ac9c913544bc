/* view_tasks: the asyncio awaited-by tree; says so plainly while the core cannot read it. */
#include "config.h"

#include <stdlib.h>

#include "core/snapshot.h"
#include "ui/ui_text.h"
#include "ui/view.h"

struct tasks_view {
    int unused;
};

static void *create(void)
{
    return calloc(1, sizeof(struct tasks_view));
}

static void destroy(void *state)
{
    free(state);
}

static const char *title(const void *state)
{
    return "Tasks";
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    const struct ui_style *st = m->style;
    int width = getmaxx(w);
    wmove(w, 1, 2);
    if (m->snap == NULL) {
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, m->waiting ? m->waiting_why : "waiting for the first sample", width - 2,
                     st);
    } else {
        ui_text_puts(w, "asyncio tasks: not available for this target yet", width - 2, st);
        wmove(w, 2, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w,
                     "(pytop cannot read the task graph yet; the Threads view shows the "
                     "event loop's thread)",
                     width - 2, st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static bool on_key(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    return false;
}

const struct view_ops view_tasks_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .on_key = on_key,
    .selected_tid = NULL,
};
