/* view_tasks: the asyncio awaited-by tree of each interpreter, as `asyncio pstree` draws it. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/snapshot.h"
#include "core/strbuf.h"
#include "core/tasktree.h"
#include "ui/ui_list.h"
#include "ui/ui_text.h"
#include "ui/view.h"

/* One line of the drawn text: where it starts in TEXT and how long it is. */
struct line {
    size_t at;
    size_t len;
    bool heading;
};

struct tasks_view {
    struct ui_list scroll;
    struct strbuf text;
    struct line *lines;
    size_t n;
    size_t cap;
};

static void *create(void)
{
    return calloc(1, sizeof(struct tasks_view));
}

static void destroy(void *state)
{
    struct tasks_view *v = state;
    if (v != NULL) {
        strbuf_free(&v->text);
        free(v->lines);
        free(v);
    }
}

static const char *title(const void *state)
{
    return "Tasks";
}

static void add_line(struct tasks_view *v, size_t at, size_t len, bool heading)
{
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        struct line *nl = realloc(v->lines, ncap * sizeof *nl);
        if (nl == NULL) {
            return;
        }
        v->lines = nl;
        v->cap = ncap;
    }
    v->lines[v->n++] = (struct line){at, len, heading};
}

/* Appends one interpreter's tree to the text, then indexes its lines; with a filter, only the
 * lines that match it (task names, functions, files) are kept. */
static void add_interp(struct tasks_view *v, const struct snap_interp *in, const char *filter)
{
    size_t start = v->text.len;
    strbuf_printf(&v->text, "Interpreter %lld: %zu task%s%s", (long long)in->id, in->n_tasks,
                  in->n_tasks == 1 ? "" : "s", in->tasks_truncated ? " (list cut short)" : "");
    add_line(v, start, v->text.len - start, true);
    if (!in->tasks_present) {
        start = v->text.len;
        strbuf_puts(&v->text, "  task graph not available (see the warnings in a dump)");
        add_line(v, start, v->text.len - start, false);
        return;
    }
    start = v->text.len;
    if (in->n_tasks > 0 && tasktree_write(&v->text, in->tasks, in->n_tasks, NULL) < 0) {
        return;
    }
    size_t end = v->text.len;
    for (size_t at = start; at < end;) {
        const char *nl = memchr(v->text.data + at, '\n', end - at);
        size_t len = nl != NULL ? (size_t)(nl - (v->text.data + at)) : end - at;
        struct snap_str s = {v->text.data + at, len};
        if (len > 0 && ui_text_match(filter, s)) {
            add_line(v, at, len, false);
        }
        at += len + 1;
    }
}

static void build(struct tasks_view *v, const struct ui_model *m)
{
    v->text.len = 0;
    v->n = 0;
    for (size_t i = 0; i < m->tasks->n_interps; i++) {
        add_interp(v, &m->tasks->interps[i], m->filter);
    }
}

static void draw(void *state, const struct ui_model *m, WINDOW *w)
{
    struct tasks_view *v = state;
    const struct ui_style *st = m->style;
    int width = getmaxx(w);
    int height = getmaxy(w);
    if (m->snap == NULL || m->tasks == NULL) {
        wmove(w, 1, 2);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w,
                     m->snap == NULL ? (m->waiting ? m->waiting_why
                                                   : "waiting for the first sample")
                                     : "asyncio tasks: not read yet (the graph is read once a "
                                       "refresh)",
                     width - 2, st);
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    build(v, m);
    ui_list_fit_scroll(&v->scroll, v->n, height);
    for (int y = 0; y < height && v->scroll.top + (size_t)y < v->n; y++) {
        const struct line *l = &v->lines[v->scroll.top + (size_t)y];
        wattrset(w, st->attr[l->heading ? UI_DIM : UI_NORMAL]);
        wmove(w, y, 1);
        ui_text_put(w, (struct snap_str){v->text.data + l->at, l->len}, width - 1, st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static bool on_key(void *state, const struct ui_model *m, const TermKeyKey *key)
{
    struct tasks_view *v = state;
    return ui_list_scroll_key(&v->scroll, key, v->n);
}

const struct view_ops view_tasks_ops = {
    .create = create,
    .destroy = destroy,
    .title = title,
    .draw = draw,
    .on_key = on_key,
    .selected_tid = NULL,
};
