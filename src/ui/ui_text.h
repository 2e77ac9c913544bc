/* ui_text: text on the screen: target bytes escaped and clipped to columns; filter matching. */
#ifndef PYTOP_UI_UI_TEXT_H
#define PYTOP_UI_UI_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <ncurses.h>

#include "core/model/snapshot.h"

struct ui_style;

/* Draws the target string S at W's cursor, escaped as strbuf_text() does (and, outside a UTF-8
 * locale, every byte that is not ASCII as \xNN), in at most WIDTH columns: a longer text is cut
 * and ends with the ellipsis. An unknown string (ptr NULL) is drawn as "?". Returns the
 * columns drawn. */
int ui_text_put(WINDOW *w, struct snap_str s, int width, const struct ui_style *st);

/* The same for pytop's own NUL-terminated text. */
int ui_text_puts(WINDOW *w, const char *s, int width, const struct ui_style *st);

/* Like ui_text_put(), but a longer text keeps its end: "…/asyncio/base_events.py". */
int ui_text_put_tail(WINDOW *w, struct snap_str s, int width, const struct ui_style *st);

/* The columns S takes once escaped (as ui_text_put() would draw it with room to spare). */
int ui_text_width(struct snap_str s, const struct ui_style *st);

/* Draws SIZE-limited printf-style text of pytop's own (not from the target) in WIDTH columns. */
int ui_text_printf(WINDOW *w, int width, const struct ui_style *st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* True when FILTER is empty or occurs in S (ASCII letters match either case). */
bool ui_text_match(const char *filter, struct snap_str s);

/* The last part of the path FILE ("demo.py" of "/srv/app/demo.py"), within FILE's bytes. */
struct snap_str ui_text_base_name(struct snap_str file);

/* A snap_str of pytop's own NUL-terminated text. */
static inline struct snap_str ui_text_str(const char *s)
{
    struct snap_str out = {s, s != NULL ? __builtin_strlen(s) : 0};
    return out;
}

/* What a filter left out, into BUF of SIZE bytes: "hides 4 of 7 threads" (NOUN the singular). */
void ui_text_hides(char *buf, size_t size, size_t hidden, size_t total, const char *noun);

#endif
