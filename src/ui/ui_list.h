/* ui_list: a scrolling list's position (a cursor row, or a plain scroll), its keys, and room for
 * its rows. */
#ifndef PYTOP_UI_UI_LIST_H
#define PYTOP_UI_UI_LIST_H

#include <stdbool.h>
#include <stddef.h>

#include <termkey.h>

#include "ui/ui_keys.h"

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

/* A view's answer to the move keys, with its state. */
struct ui_list_mover {
    enum ui_redraw (*move)(void *state, const struct ui_model *m, const TermKeyKey *key);
    void *state;
};

/* The move keys: arrows, j/k, PgUp/PgDn, Home/End. Their action takes a struct ui_list_mover
 * and hands the key on to it. */
extern const struct ui_binding ui_list_bindings[];

/* Grows the array *ROWS (room for *CAP elements of SIZE bytes) to hold at least N, doubling.
 * Returns false, leaving it as it was, when out of memory. */
bool ui_list_reserve(void **rows, size_t *cap, size_t n, size_t size);

#endif
