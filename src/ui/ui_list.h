/* ui_list: a scrolling list's position (a cursor row, or a plain scroll) and its keys. */
#ifndef PYTOP_UI_UI_LIST_H
#define PYTOP_UI_UI_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <termkey.h>

struct ui_list {
    size_t cursor; /* the selected row; unused by a plain scroll */
    size_t top;    /* the first row shown */
    int height;    /* rows shown at the last draw (for paging) */
};

/* Keeps the cursor on one of N rows and in view among HEIGHT rows, and remembers HEIGHT. */
void ui_list_fit(struct ui_list *l, size_t n, int height);

/* Moves the cursor for a navigation key (arrows, j/k, PgUp/PgDn, Home/End) over N rows.
 * Returns true if KEY was one. */
bool ui_list_key(struct ui_list *l, const TermKeyKey *key, size_t n);

/* Keeps TOP within N rows shown HEIGHT at a time, and remembers HEIGHT. */
void ui_list_fit_scroll(struct ui_list *l, size_t n, int height);

/* Scrolls for a navigation key over N rows (no cursor). Returns true if KEY was one. */
bool ui_list_scroll_key(struct ui_list *l, const TermKeyKey *key, size_t n);

#endif
