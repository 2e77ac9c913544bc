/* ui_screen: the parts around the views: header, status and key-hint lines, help, too small. */
#ifndef PYTOP_UI_UI_SCREEN_H
#define PYTOP_UI_UI_SCREEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <ncurses.h>

#include "core/sampler/sampler.h"
#include "ui/ui_keys.h"
#include "ui/view.h"

struct live_frame;

enum {
    UI_SCREEN_HEADER_ROWS = 3,
    UI_SCREEN_FOOTER_ROWS = 2,
    UI_SCREEN_MIN_COLS = 50,
    UI_SCREEN_MIN_ROWS = 10,
};

/* What the header and footer say, gathered by ui.c. */
struct live_replay_info;

struct ui_screen {
    pid_t pid;
    const struct live_frame *frame; /* on screen (the frozen one when frozen); may be NULL */
    bool frozen;
    bool exited;
    const char *exit_how; /* "exit status 3"; NULL when unknown */
    double rate_hz;       /* requested; 0 = max */
    enum sampler_mode mode; /* which thread-samples the statistics count */
    bool active_only;     /* samples read only the GIL holder */
    bool reader_line;     /* the bottom line shows what reading costs, not the key hints (i) */
    double delay;
    double window_s;           /* the statistics' window asked for; INFINITY: since the reset */
    double late_s;             /* seconds since the newest sample, when overdue; else 0 */
    const char *const *titles; /* the views' tab labels */
    int n_views;
    int view;
    const char *enter_does; /* the view's word for Enter in the key hints; NULL: none */
    bool sorts;             /* the view sorts: s, S and I are hinted */
    const char *filter;
    const char *filter_note; /* what the filter does to the view ("hides 4 of 7 threads") */
    bool editing;            /* the filter is being typed */
    const char *message;     /* the newest message while it lasts (dump written, refresh changed) */
    bool message_is_error;
    const char *log_path; /* where the command's output goes (pytop -- CMD) */
    const struct live_replay_info *replay; /* --replay: where it is; NULL live */
    const char *goto_text; /* the g prompt being typed; NULL none */
    bool recording;       /* R: "● REC 12.3 MB 0:41" in the header */
    uint64_t record_bytes;
    double record_s;
};

void ui_screen_header(WINDOW *w, const struct ui_screen *s, const struct ui_style *st);
/* The two bottom lines: the status line (the filter in force, or being typed, with what it
 * does; where a command's output goes; the newest sample's trouble), then the key hints, or
 * the newest message in their place while it lasts: a message never hides the filter or the
 * output's path. */
void ui_screen_footer(WINDOW *w, const struct ui_screen *s, const struct ui_style *st);
/* The help screen in W: its title, then LINES[0..N) (ui_help()), as many as fit. */
void ui_screen_help(WINDOW *w, const struct ui_help_line *lines, size_t n,
                    const struct ui_style *st);
/* Says the terminal is too small (ROWS x COLS), on stdscr. */
void ui_screen_too_small(int rows, int cols, const struct ui_style *st);

#endif
