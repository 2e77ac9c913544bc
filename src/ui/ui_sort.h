/* ui_sort: a table's sort order (which column, which way) and the keys that change it. */
#ifndef PYTOP_UI_UI_SORT_H
#define PYTOP_UI_UI_SORT_H

#include <stdbool.h>

#include "ui/ui_keys.h"
#include "ui/view.h"

struct ui_sort {
    int column;    /* the sort column, 0 .. N_COLUMNS - 1 */
    int n_columns; /* how many there are; s and S go round them */
    bool invert;
};

/* s, S and I: the next or the previous column, the other way. Their actions take the view's
 * struct ui_sort (view_ops.sort). */
extern const struct ui_binding ui_sort_bindings[];

/* The marker of COLUMN in its title: which way it sorts when it is the sort column, else "". */
const char *ui_sort_marker(const struct ui_sort *s, int column, const struct ui_style *st);

#endif
