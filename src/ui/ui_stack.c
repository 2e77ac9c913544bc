/* ui_stack: a thread drawn as text: its state in short, where it is, and its whole stack. */
#include "config.h"

#include "core/layout/opcodes.h"
#include "core/model/snapshot_words.h"
#include "core/write/snapshot_write.h"
#include "ui/ui_stack.h"

#include <stdio.h>
#include <string.h>

#include "ui/ui_text.h"

enum line_kind { LINE_HEAD, LINE_FRAME, LINE_SOURCE, LINE_NOTE };

bool ui_stack_frame_matches(const struct snap_frame *f, const char *filter)
{
    return ui_text_match(filter, f->function) || ui_text_match(filter, f->file);
}

static const struct snap_frame *top_frame(const struct snap_thread *t)
{
    for (size_t i = 0; t->frames != NULL && i < t->n_frames; i++) {
        if (t->frames[i].kind == SNAP_FRAME_PYTHON) {
            return &t->frames[i];
        }
    }
    return NULL;
}

struct snap_str ui_stack_top_function(const struct snap_thread *t)
{
    const struct snap_frame *f = top_frame(t);
    return f != NULL ? f->function : (struct snap_str){NULL, 0};
}

void ui_stack_state_short(const struct snap_thread *t, char *buf, size_t size)
{
    snapshot_thread_state_text(t, true, buf, size);
    if (size > 1 && buf[0] == '\0') {
        snprintf(buf, size, "?");
    }
}

enum ui_attr ui_stack_state_attr(const struct snap_thread *t)
{
    if (t->in_gc == SNAP_YES) {
        return UI_GC;
    }
    if (t->gil == SNAP_YES) {
        return UI_GIL;
    }
    if (t->gil_requested == SNAP_YES) {
        return UI_WAIT;
    }
    if (t->on_cpu == SNAP_YES) {
        return UI_CPU;
    }
    /* Dimmed only when known to be idle: "no GIL" may be a thread waiting for the GIL. */
    enum snap_state states[SNAP_STATE_COUNT];
    size_t n = snapshot_thread_states(t, states);
    for (size_t i = 0; i < n; i++) {
        if (states[i] == SNAP_STATE_IDLE) {
            return UI_DIM;
        }
    }
    return UI_NORMAL;
}

/* Draws FILE:LINE in WIDTH columns, keeping the end of a long path. */
static void draw_file_line(WINDOW *w, struct snap_str file, int line, int width,
                           const struct ui_style *st)
{
    char num[24];
    if (line > 0) {
        snprintf(num, sizeof num, ":%d", line);
    } else {
        snprintf(num, sizeof num, ":?");
    }
    int room = width - (int)strlen(num);
    if (room <= 1) {
        return;
    }
    ui_text_put_tail(w, file, room, st);
    ui_text_puts(w, num, (int)strlen(num), st);
}

void ui_stack_where(WINDOW *w, const struct snap_thread *t, int width, bool selected,
                    const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    const struct snap_frame *f = top_frame(t);
    if (f == NULL) {
        ui_text_puts(w, t->n_frames == 0 ? "(no Python frames)" : "?", width, st);
        return;
    }
    int used = ui_text_put(w, f->function, width, st);
    if (used + 3 >= width) {
        return;
    }
    ui_text_puts(w, " ", 1, st);
    if (!selected) {
        wattrset(w, st->attr[UI_DIM]);
    }
    draw_file_line(w, ui_text_base_name(f->file), f->line, width - used - 1, st);
}

/* The frame's source line without surrounding blanks, or NULL. */
static const char *source_text(const struct snap_frame *f, const struct ui_model *m, size_t *len)
{
    const struct snapshot_source *src = m->source;
    if (src == NULL || src->line == NULL || f->kind != SNAP_FRAME_PYTHON || f->file.ptr == NULL ||
        f->line <= 0) {
        return NULL;
    }
    const char *text = src->line(src->ctx, f->file.ptr, f->file.len, f->line, len);
    while (text != NULL && *len > 0 && strchr(" \t\f\v", text[0]) != NULL) {
        text++;
        (*len)--;
    }
    while (text != NULL && *len > 0 && strchr(" \t\f\v\r\n", text[*len - 1]) != NULL) {
        (*len)--;
    }
    return text != NULL && *len > 0 ? text : NULL;
}

static bool has_note(const struct ui_stack_text *s)
{
    return s->truncated || s->n_frames == 0 || s->frames == NULL;
}

size_t ui_stack_text_lines(const struct ui_stack_text *s, const struct ui_model *m)
{
    size_t n = s->n_head + (has_note(s) ? 1 : 0);
    for (size_t i = 0; s->frames != NULL && i < s->n_frames; i++) {
        size_t len;
        n += 1 + (source_text(&s->frames[i], m, &len) != NULL ? 1 : 0);
    }
    return n;
}

void ui_stack_rule_begin(WINDOW *w, const struct ui_style *st)
{
    wattrset(w, st->attr[UI_HEADER]);
    for (int i = 0; i < 2; i++) {
        waddstr(w, st->hline);
    }
}

void ui_stack_rule_end(WINDOW *w, int width, const struct ui_style *st)
{
    while (getcurx(w) < width - 1) {
        waddstr(w, st->hline);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

bool ui_stack_in_deadlock(const struct snapshot *s, const struct snap_thread *t)
{
    for (size_t i = 0; s != NULL && i < s->n_deadlocks; i++) {
        for (size_t k = 0; k < s->deadlocks[i].n; k++) {
            if (s->deadlocks[i].threads[k] == t->tid) {
                return true;
            }
        }
    }
    return false;
}

enum ui_attr ui_stack_wait_attr(const struct snapshot *s, const struct snap_thread *t)
{
    if (ui_stack_in_deadlock(s, t)) {
        return UI_ALERT;
    }
    switch (t->wait.kind) {
    case SNAP_WAIT_GIL:
        return UI_WAIT;
    case SNAP_WAIT_RUNNING:
        return UI_CPU;
    default:
        return UI_NORMAL;
    }
}

/* The second head line: what the thread waits for, in full. */
static void thread_wait(WINDOW *w, int width, const struct snap_thread *t,
                        const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    char text[600];
    snapshot_wait_text(m->snap, t, false, text, sizeof text);
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, "  Waiting for: ", width, st);
    wattrset(w, st->attr[ui_stack_wait_attr(m->snap, t)]);
    ui_text_puts(w, text, width - getcurx(w), st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void thread_title(WINDOW *w, int width, size_t line, const void *ctx,
                         const struct ui_model *m)
{
    const struct snap_thread *t = ctx;
    const struct ui_style *st = m->style;
    if (line == 1) {
        thread_wait(w, width, t, m);
        return;
    }
    char words[160];
    snapshot_thread_state_words(t, words, sizeof words);
    /* The text stops short of the last column: ending on it would put the cursor on the next
     * row, where the rule would go on. */
    int end = width - 1;
    ui_stack_rule_begin(w, st);
    if (t->tid > 0) {
        ui_text_printf(w, end - getcurx(w), st, " Thread %d ", (int)t->tid);
    } else {
        ui_text_puts(w, " Thread ? ", end - getcurx(w), st);
    }
    if (t->name.ptr != NULL) {
        ui_text_puts(w, "\"", end - getcurx(w), st);
        ui_text_put(w, t->name, end - getcurx(w) - 1, st);
        ui_text_puts(w, "\" ", end - getcurx(w), st);
    }
    ui_text_printf(w, end - getcurx(w), st, "(%s%smost recent call first) ", words,
                   words[0] != '\0' ? "; " : "");
    ui_stack_rule_end(w, width, st);
}

static struct ui_stack_text thread_text(const struct snap_thread *t)
{
    struct ui_stack_text s = {
        .n_head = t->wait.kind != SNAP_WAIT_NONE ? 2 : 1,
        .head = thread_title,
        .ctx = t,
        .frames = t->frames,
        .n_frames = t->n_frames,
        .truncated = t->frames_truncated,
        .empty = "(no Python frames)",
        .more_hint = "Enter: all stacks",
    };
    return s;
}

size_t ui_stack_lines(const struct snap_thread *t, const struct ui_model *m)
{
    struct ui_stack_text s = thread_text(t);
    return ui_stack_text_lines(&s, m);
}

/* A frame's text after its two leading columns. SELECTED: all in the cursor's attribute. */
static void draw_frame_body(WINDOW *w, int width, const struct snap_frame *f, bool selected,
                            const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    bool hit = !selected && m->filter[0] != '\0' && ui_stack_frame_matches(f, m->filter);
    enum ui_attr normal = selected ? UI_SELECTED : hit ? UI_MATCH : UI_NORMAL;
    enum ui_attr dim = selected ? UI_SELECTED : hit ? UI_MATCH : UI_DIM;
    if (f->kind != SNAP_FRAME_PYTHON) {
        ui_text_puts(w, snapshot_frame_title(f), width - 2, st);
        if (snapshot_frame_named(f) && getcurx(w) + 5 < width) {
            ui_text_puts(w, " in ", 4, st);
            ui_text_put(w, f->function, width - getcurx(w), st);
        }
        return;
    }
    if (f->function.ptr == NULL && f->file.ptr == NULL) {
        wattrset(w, st->attr[dim]);
        ui_text_puts(w, "? (this frame could not be read)", width - 2, st);
        return;
    }
    int used = 2 + ui_text_put(w, f->function, width - 2, st);
    /* --opcodes (o): the instruction, as dis names it, then the specialised form. */
    char instr[96] = "";
    if (f->op1 != 0 && m->snap != NULL && m->snap->opcodes != NULL) {
        struct opcode_name n = opcode_describe(m->snap->opcodes, f->op1 - 1);
        if (n.base_name != NULL) {
            if (n.specialised != NULL) {
                snprintf(instr, sizeof instr, " [%s %s]", n.base_name, n.specialised);
            } else {
                snprintf(instr, sizeof instr, " [%s]", n.base_name);
            }
        }
    }
    if (instr[0] != '\0' && used + (int)strlen(instr) + 4 < width) {
        wattrset(w, st->attr[selected ? UI_SELECTED : UI_KEY]);
        used += ui_text_puts(w, instr, width - used, st);
        wattrset(w, st->attr[normal]);
    }
    if (used + 4 < width) {
        ui_text_puts(w, "  ", 2, st);
        wattrset(w, st->attr[dim]);
        draw_file_line(w, f->file, f->line, width - used - 2, st);
    }
}

static void draw_frame(WINDOW *w, int width, const struct snap_frame *f, bool selected,
                       const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    bool hit = m->filter[0] != '\0' && ui_stack_frame_matches(f, m->filter);
    wattrset(w, st->attr[selected ? UI_SELECTED : hit ? UI_MATCH : UI_NORMAL]);
    if (selected) {
        /* The whole row in the cursor's attribute, a marker first (seen without colours). */
        int y = getcury(w);
        mvwhline(w, y, 0, ' ', width);
        wmove(w, y, 0);
    }
    waddstr(w, selected ? "> " : "  ");
    draw_frame_body(w, width, f, selected, m);
}

/* Draws line K of S's text (see ui_stack_text_lines()) on row Y. */
static void draw_line(WINDOW *w, int y, int width, const struct ui_stack_text *s,
                      enum line_kind kind, size_t k, const struct ui_model *m)
{
    const struct ui_style *st = m->style;
    wmove(w, y, 0);
    switch (kind) {
    case LINE_HEAD:
        s->head(w, width, k, s->ctx, m);
        break;
    case LINE_FRAME:
        draw_frame(w, width, &s->frames[k], s->cursor == k + 1, m);
        wattrset(w, st->attr[UI_NORMAL]);
        break;
    case LINE_SOURCE: {
        size_t len = 0;
        const char *text = source_text(&s->frames[k], m, &len);
        wattrset(w, st->attr[UI_DIM]);
        waddstr(w, "      ");
        ui_text_put(w, (struct snap_str){text, len}, width - 6, st);
        wattrset(w, st->attr[UI_NORMAL]);
        break;
    }
    case LINE_NOTE:
        wattrset(w, st->attr[UI_DIM]);
        waddstr(w, "  ");
        ui_text_puts(w, s->truncated ? "... (stack cut short: deeper frames not read)" : s->empty,
                     width - 2, st);
        wattrset(w, st->attr[UI_NORMAL]);
        break;
    }
}

int ui_stack_text_draw(WINDOW *w, int y, int height, int width, const struct ui_stack_text *s,
                       size_t skip, bool more, const struct ui_model *m)
{
    size_t total = ui_stack_text_lines(s, m);
    size_t line = 0;
    int rows = 0;
    size_t n = s->frames != NULL ? s->n_frames : 0;
    /* Lines in order: the head, then each frame and its source, then the note. */
    for (size_t i = 0; i < s->n_head + n + 1 && rows < height; i++) {
        enum line_kind kinds[2];
        size_t k = i;
        int nk = 0;
        if (i < s->n_head) {
            kinds[nk++] = LINE_HEAD;
        } else if (i < s->n_head + n) {
            size_t len;
            k = i - s->n_head;
            kinds[nk++] = LINE_FRAME;
            if (source_text(&s->frames[k], m, &len) != NULL) {
                kinds[nk++] = LINE_SOURCE;
            }
        } else if (has_note(s)) {
            kinds[nk++] = LINE_NOTE;
        }
        for (int j = 0; j < nk && rows < height; j++, line++) {
            if (line < skip) {
                continue;
            }
            if (more && rows == height - 1 && total - line > 1) {
                wmove(w, y + rows, 0);
                wattrset(w, m->style->attr[UI_DIM]);
                ui_text_printf(w, width, m->style, "  %s %zu more lines%s%s%s", m->style->ellipsis,
                               total - line, s->more_hint ? " (" : "",
                               s->more_hint ? s->more_hint : "", s->more_hint ? ")" : "");
                wattrset(w, m->style->attr[UI_NORMAL]);
                return rows + 1;
            }
            draw_line(w, y + rows, width, s, kinds[j], k, m);
            rows++;
        }
    }
    return rows;
}

int ui_stack_draw(WINDOW *w, int y, int height, int width, const struct snap_thread *t, size_t skip,
                  bool more, const struct ui_model *m)
{
    struct ui_stack_text s = thread_text(t);
    return ui_stack_text_draw(w, y, height, width, &s, skip, more, m);
}

int ui_stack_draw_cursor(WINDOW *w, int y, int height, int width, const struct snap_thread *t,
                         size_t frame, const struct ui_model *m)
{
    struct ui_stack_text s = thread_text(t);
    s.cursor = frame + 1;
    /* The frame's line, and the rows it needs below it (its source line, and room for the
     * "more" note). */
    size_t line = s.n_head;
    size_t len;
    for (size_t i = 0; i < frame && i < t->n_frames; i++) {
        line += 1 + (source_text(&t->frames[i], m, &len) != NULL ? 1 : 0);
    }
    size_t skip = 0;
    if (height > 3 && line + 3 > (size_t)height) {
        skip = line + 3 - (size_t)height;
    }
    return ui_stack_text_draw(w, y, height, width, &s, skip, true, m);
}
