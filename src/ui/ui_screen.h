/* ui_screen: the parts around the views: header, status and key-hint lines, help, too small. */
#ifndef PYTOP_UI_UI_SCREEN_H
#define PYTOP_UI_UI_SCREEN_H

#include <stdbool.h>
#include <sys/types.h>

#include <ncurses.h>

#include "ui/view.h"

struct live_frame;

enum {
    UI_SCREEN_HEADER_ROWS = 3,
    UI_SCREEN_FOOTER_ROWS = 2,
    UI_SCREEN_MIN_COLS = 50,
    UI_SCREEN_MIN_ROWS = 10,
};

/* What the header and footer say, gathered by ui.c. */
struct ui_screen {
    pid_t pid;
    const struct live_frame *frame; /* on screen (the frozen one when frozen); may be NULL */
    bool frozen;
    bool exited;
    const char *exit_how; /* "exit status 3"; NULL when unknown */
    double rate_hz;       /* requested; 0 = max */
    double delay;
    double window_s;           /* the statistics' window asked for; INFINITY: since the reset */
    double late_s;             /* seconds since the newest sample, when overdue; else 0 */
    const char *const *titles; /* the views' tab labels */
    int n_views;
    int view;
    const char *enter_does; /* the view's word for Enter in the key hints; NULL: none */
    const char *filter;
    bool editing;        /* the filter is being typed */
    const char *message; /* the newest message (dump written, refresh changed) */
    bool message_is_error;
    const char *log_path; /* where the command's output goes (pytop -- CMD) */
};

void ui_screen_header(WINDOW *w, const struct ui_screen *s, const struct ui_style *st);
void ui_screen_footer(WINDOW *w, const struct ui_screen *s, const struct ui_style *st);
/* The help screen: every key, in W. */
void ui_screen_help(WINDOW *w, const struct ui_style *st);
/* Says the terminal is too small (ROWS x COLS), on stdscr. */
void ui_screen_too_small(int rows, int cols, const struct ui_style *st);

#endif
