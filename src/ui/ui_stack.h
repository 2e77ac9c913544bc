/* ui_stack: a stack drawn as text under a title (a thread's, a task's coroutine stack), and a
 * thread's state in short and where it is. */
#ifndef PYTOP_UI_UI_STACK_H
#define PYTOP_UI_UI_STACK_H

#include <stdbool.h>
#include <stddef.h>

#include <ncurses.h>

#include "core/model/snapshot.h"
#include "ui/view.h"

/* True when FILTER is empty or found in F's function or file name. */
bool ui_stack_frame_matches(const struct snap_frame *f, const char *filter);

/* The function T runs now: its innermost Python frame's; unknown (ptr NULL) when none. */
struct snap_str ui_stack_top_function(const struct snap_thread *t);

/* T's state in the brief words of snapshot_state_word() for a table column ("GIL CPU",
 * "wait GIL", "idle", "no GIL"), or "?" when none is known, into BUF. */
void ui_stack_state_short(const struct snap_thread *t, char *buf, size_t size);

/* The attribute that goes with T's state (dimmed only when known to be idle). */
enum ui_attr ui_stack_state_attr(const struct snap_thread *t);

/* Draws where T is ("function file:line" of its innermost Python frame) at W's cursor, in
 * WIDTH columns; SELECTED keeps the row's attribute throughout. */
void ui_stack_where(WINDOW *w, const struct snap_thread *t, int width, bool selected,
                    const struct ui_model *m);

/* A stack to draw: N_HEAD lines (the first a title) drawn by HEAD, then the frames, innermost
 * first, each with its source line where the file is readable, then a note for a missing or
 * cut stack. */
struct ui_stack_text {
    size_t n_head;
    /* Draws head line LINE at W's cursor (column 0) in WIDTH columns. */
    void (*head)(WINDOW *w, int width, size_t line, const void *ctx, const struct ui_model *m);
    const void *ctx;
    const struct snap_frame *frames;
    size_t n_frames;
    bool truncated;
    const char *empty;     /* the note when there are no frames */
    const char *more_hint; /* the key that shows the rest, said after "N more lines"; or NULL */
    size_t cursor;         /* 1 + the frame under a cursor (drawn selected); 0 none */
};

/* Whether thread T of S is in one of S's deadlock cycles. */
bool ui_stack_in_deadlock(const struct snapshot *s, const struct snap_thread *t);
/* How T's wait is drawn: in the alert colour when it is part of a deadlock. */
enum ui_attr ui_stack_wait_attr(const struct snapshot *s, const struct snap_thread *t);

/* The lines ui_stack_text_draw() takes for S with room to spare. */
size_t ui_stack_text_lines(const struct ui_stack_text *s, const struct ui_model *m);

/* Draws S's text from its line SKIP on, at row Y of W, in at most HEIGHT rows of WIDTH
 * columns. MORE: when it does not fit, the last row says how much is left. Returns the rows
 * drawn. */
int ui_stack_text_draw(WINDOW *w, int y, int height, int width, const struct ui_stack_text *s,
                       size_t skip, bool more, const struct ui_model *m);

/* A title line's rule: ui_stack_rule_begin() draws its start ("──") and sets the title's
 * attribute; ui_stack_rule_end() fills the row to WIDTH and restores the normal attribute. */
void ui_stack_rule_begin(WINDOW *w, const struct ui_style *st);
void ui_stack_rule_end(WINDOW *w, int width, const struct ui_style *st);

/* The lines ui_stack_draw() takes for T with room to spare: a title, each frame and its
 * source line where the file is readable, and a note for a missing or cut stack. */
size_t ui_stack_lines(const struct snap_thread *t, const struct ui_model *m);

/* Draws T's stack text from its line SKIP on, at row Y of W, in at most HEIGHT rows of WIDTH
 * columns. MORE: when it does not fit, the last row says how much is left. Returns the rows
 * drawn. */
int ui_stack_draw(WINDOW *w, int y, int height, int width, const struct snap_thread *t, size_t skip,
                  bool more, const struct ui_model *m);

/* Draws T's stack as ui_stack_draw() does from line 0 with MORE, but with a cursor on frame
 * FRAME (index into its frames), scrolled just enough for the frame to show. */
int ui_stack_draw_cursor(WINDOW *w, int y, int height, int width, const struct snap_thread *t,
                         size_t frame, const struct ui_model *m);

#endif
