/* ui_task: one asyncio task drawn as text: its name, state and thread, who awaits it, and its
 * coroutine stack; and a node of the awaited-by tree as its row shows it. */
#include "config.h"

#include "core/model/snapshot_words.h"
#include "ui/ui_task.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/model/tasktree.h"
#include "ui/ui_stack.h"
#include "ui/ui_text.h"

enum {
    MAX_AWAITER_LINES = 4, /* awaiters listed one a line; then "N more" */
};

/* What the head lines draw from. */
struct pane {
    const struct snap_task *task;
    const struct snap_interp *in;
    const struct snapshot *snap;
    size_t n_awaiters; /* lines of awaiters */
};

/* A task's name, or where it has none its coroutine as snapshot_task_coro_label() says. */
static void put_task_name(WINDOW *w, int room, const struct snap_task *t, const struct ui_style *st)
{
    struct snap_str coro;
    int end = getcurx(w) + room;
    if (snapshot_task_coro_label(t, &coro)) {
        ui_text_puts(w, SNAPSHOT_TASK_CORO_OPEN, end - getcurx(w), st);
        ui_text_put(w, coro, end - getcurx(w), st);
        ui_text_puts(w, SNAPSHOT_TASK_CORO_CLOSE, end - getcurx(w), st);
    } else {
        ui_text_put(w, t->name, room, st);
    }
}

static const struct snap_task *find_task(const struct snap_interp *in, uint64_t id)
{
    for (size_t i = 0; id != 0 && in->tasks != NULL && i < in->n_tasks; i++) {
        if (in->tasks[i].id == id) {
            return &in->tasks[i];
        }
    }
    return NULL;
}

static const struct snap_thread *find_thread(const struct snapshot *s, pid_t tid)
{
    for (size_t i = 0; s != NULL && tid != 0 && i < s->n_interps; i++) {
        for (size_t j = 0; s->interps[i].threads != NULL && j < s->interps[i].n_threads; j++) {
            if (s->interps[i].threads[j].tid == tid) {
                return &s->interps[i].threads[j];
            }
        }
    }
    return NULL;
}

static void pane_title(WINDOW *w, int width, const struct pane *p, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct snap_task *t = p->task;
    int end = width - 1; /* not the last column: the cursor would move to the next row */
    ui_stack_rule_begin(w, st);
    /* A name is quoted; the coroutine shown in place of none is not. */
    struct snap_str coro;
    const char *quote = snapshot_task_coro_label(t, &coro) ? "" : "\"";
    ui_text_printf(w, end - getcurx(w), st, " Task %s", quote);
    put_task_name(w, end - getcurx(w) - 1, t, st);
    const char *state = snapshot_task_state_name(t->state);
    ui_text_printf(w, end - getcurx(w), st, "%s 0x%" PRIx64 " (%s; ", quote, t->id,
                   state != NULL ? state : "state ?");
    if (t->thread == 0) {
        ui_text_puts(w, "the interpreter's list; ", end - getcurx(w), st);
    } else {
        ui_text_printf(w, end - getcurx(w), st, "thread %d ", (int)t->thread);
        const struct snap_thread *th = find_thread(p->snap, t->thread);
        if (th == NULL) {
            th = find_thread(m->snap, t->thread);
        }
        if (th != NULL && th->name.ptr != NULL) {
            ui_text_puts(w, "\"", end - getcurx(w), st);
            ui_text_put(w, th->name, end - getcurx(w) - 1, st);
            ui_text_puts(w, "\"", end - getcurx(w), st);
        }
        ui_text_puts(w, "; ", end - getcurx(w), st);
    }
    ui_text_puts(w, "most recent call first) ", end - getcurx(w), st);
    ui_stack_rule_end(w, width, st);
}

/* "awaited by Task-1 0x7f… in main file.py:12": the awaiter, and where its stack awaits. */
static void pane_awaiter(WINDOW *w, int width, const struct pane *p, size_t k,
                         const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct snap_task *t = p->task;
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, "  awaited by: ", width, st);
    wattrset(w, st->attr[UI_NORMAL]);
    if (p->n_awaiters == 0) {
        ui_text_puts(w, "no task", width - getcurx(w), st);
        return;
    }
    if (k == MAX_AWAITER_LINES) {
        ui_text_printf(w, width - getcurx(w), st, "%zu more", t->n_awaited_by - k);
        return;
    }
    const struct snap_task_awaiter *a = &t->awaited_by[k];
    const struct snap_task *by = find_task(p->in, a->task);
    if (a->task == 0) {
        ui_text_puts(w, "a coroutine or future that is not a task", width - getcurx(w), st);
    } else {
        if (by != NULL) {
            put_task_name(w, width - getcurx(w), by, st);
            ui_text_puts(w, " ", width - getcurx(w), st);
        }
        wattrset(w, st->attr[UI_DIM]);
        ui_text_printf(w, width - getcurx(w), st, "0x%" PRIx64, a->task);
    }
    if (a->frames != NULL && a->n_frames > 0 && getcurx(w) + 8 < width) {
        const struct snap_frame *f = &a->frames[0];
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, " in ", width - getcurx(w), st);
        wattrset(w, st->attr[UI_NORMAL]);
        ui_text_put(w, f->function, width - getcurx(w), st);
        wattrset(w, st->attr[UI_DIM]);
        if (f->line > 0 && getcurx(w) + 4 < width) {
            char num[24];
            snprintf(num, sizeof num, ":%d", f->line);
            ui_text_puts(w, " ", 1, st);
            ui_text_put_tail(w, f->file, width - getcurx(w) - (int)strlen(num), st);
            ui_text_puts(w, num, width - getcurx(w), st);
        }
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void pane_head(WINDOW *w, int width, size_t line, const void *ctx, const struct ui_model *m)
{
    const struct pane *p = ctx;
    if (line == 0) {
        pane_title(w, width, p, m);
    } else if (line <= p->n_awaiters || (p->n_awaiters == 0 && line == 1)) {
        pane_awaiter(w, width, p, line - 1, m);
    } else {
        wattrset(w, m->style->attr[UI_DIM]);
        ui_text_puts(w, "  ... (awaiters cut short: more were not read)", width, m->style);
        wattrset(w, m->style->attr[UI_NORMAL]);
    }
}

int ui_task_draw(WINDOW *w, int y, int height, int width, const struct snap_task *t,
                 const struct snap_interp *in, const struct ui_model *m)
{
    size_t n_awaiters = t->awaited_by != NULL ? t->n_awaited_by : 0;
    struct pane p = {
        .task = t,
        .in = in,
        .snap = m->tasks,
        .n_awaiters = n_awaiters > MAX_AWAITER_LINES ? MAX_AWAITER_LINES + 1 : n_awaiters,
    };
    struct ui_stack_text s = {
        .n_head = 1 + (p.n_awaiters > 0 ? p.n_awaiters : 1) + (t->awaited_by_truncated ? 1 : 0),
        .head = pane_head,
        .ctx = &p,
        .frames = t->frames,
        .n_frames = t->n_frames,
        .truncated = t->frames_truncated,
        .empty = "(no coroutine frames)",
        .more_hint = NULL,
    };
    return ui_stack_text_draw(w, y, height, width, &s, 0, true, m);
}

static void draw_task(WINDOW *w, int width, const struct tasktree_node *nd,
                      const struct ui_task_look *r, const struct ui_style *st)
{
    bool selected = r->selected;
    const char *marker = r->folded ? st->folded : r->can_fold ? st->unfolded : " ";
    attr_t base = getattrs(w);
    if (!selected) {
        wattrset(w, st->attr[r->folded ? UI_KEY : UI_DIM]);
    }
    ui_text_puts(w, marker, width - getcurx(w), st);
    wattrset(w, base);
    ui_text_puts(w, " (T) ", width - getcurx(w), st);
    if (r->hit && !selected) {
        wattrset(w, st->attr[UI_MATCH]);
    }
    if (nd->task != NULL) {
        put_task_name(w, width - getcurx(w), nd->task, st);
    } else {
        ui_text_printf(w, width - getcurx(w), st, "0x%" PRIx64, nd->id);
    }
    if (!selected) {
        wattrset(w, st->attr[UI_DIM]);
    }
    /* Listed tasks are mostly pending: only the others say so. */
    enum snap_task_state state = nd->task != NULL ? nd->task->state : SNAP_TASK_UNKNOWN;
    if (state == SNAP_TASK_CANCELLED || state == SNAP_TASK_FINISHED) {
        ui_text_printf(w, width - getcurx(w), st, "  %s", snapshot_task_state_name(state));
    }
    if (r->folded && r->folded_tasks > 0) {
        ui_text_printf(w, width - getcurx(w), st, "  (folded: %zu%s task%s)", r->folded_tasks,
                       r->more ? "+" : "", r->folded_tasks == 1 ? "" : "s");
    } else if (r->folded) {
        ui_text_puts(w, "  (folded)", width - getcurx(w), st);
    }
}

/* A frame as pstree draws it, "function file:line", but with the file's base name (the stack
 * below has the whole path), dimmed. */
static void draw_frame(WINDOW *w, int width, const struct tasktree_node *nd,
                       const struct ui_task_look *r, const struct ui_style *st)
{
    bool selected = r->selected;
    const struct snap_frame *f = nd->frame;
    ui_text_puts(w, "  ", width - getcurx(w), st);
    if (r->hit && !selected) {
        wattrset(w, st->attr[UI_MATCH]);
    }
    int used = ui_text_put(w, f->function, width - getcurx(w), st);
    bool no_file = f->file.ptr == NULL || f->file.len == 0;
    if ((f->line < 0 && no_file) || used == 0 || getcurx(w) + 4 >= width) {
        return;
    }
    if (!selected && !r->hit) {
        wattrset(w, st->attr[UI_DIM]);
    }
    ui_text_puts(w, " ", 1, st);
    char num[24] = "";
    if (f->line >= 0) {
        snprintf(num, sizeof num, ":%d", f->line);
    }
    int room = width - getcurx(w) - (int)strlen(num);
    if (room > 1) {
        ui_text_put_tail(w, ui_text_base_name(f->file), room, st);
        ui_text_puts(w, num, (int)strlen(num), st);
    }
}

void ui_task_draw_node(WINDOW *w, int width, const struct tasktree_node *nd,
                       const struct ui_task_look *look, const struct ui_style *st)
{
    if (nd->is_task) {
        draw_task(w, width, nd, look, st);
    } else {
        draw_frame(w, width, nd, look, st);
    }
}
