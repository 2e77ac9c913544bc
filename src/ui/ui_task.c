/* ui_task: one asyncio task drawn as text: its name, state and thread, who awaits it, and its
 * coroutine stack. */
#include "config.h"

#include "core/snapshot_words.h"
#include "ui/ui_task.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
    ui_text_puts(w, " Task \"", end - getcurx(w), st);
    ui_text_put(w, t->name, end - getcurx(w) - 1, st);
    const char *state = snapshot_task_state_name(t->state);
    ui_text_printf(w, end - getcurx(w), st, "\" 0x%" PRIx64 " (%s; ", t->id,
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
            ui_text_put(w, by->name, width - getcurx(w), st);
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
