/* ui_term: the terminal in full-screen mode: opened, laid out in windows, and put back. */
#ifndef PYTOP_UI_UI_TERM_H
#define PYTOP_UI_UI_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#include <ncurses.h>
#include <termkey.h>

struct pt_error;
struct ui_style;

enum { UI_TERM_RESTORE_BYTES = 256 };

struct ui_term {
    bool up; /* curses runs */
    SCREEN *screen;
    TermKey *tk;
    /* The windows, NULL while the terminal is too small for them. */
    WINDOW *header;
    WINDOW *body;
    WINDOW *footer;
    WINDOW *full; /* the help screen */
    int rows;
    int cols;
    struct termios tio; /* the terminal as pytop found it, for a crash */
    bool tio_saved;
    char restore[UI_TERM_RESTORE_BYTES]; /* what leaves the full-screen mode, for a crash */
    size_t restore_len;
};

/* Takes the terminal on stdin and stdout into full-screen mode, keys read by termkey, and lays
 * the windows out; STYLE is set up, in colour when COLOR. Returns 0, or -1 with ERR set (its
 * message says what to do); T->up says whether curses had started, and ui_term_close() puts
 * the terminal back either way. */
int ui_term_open(struct ui_term *t, bool color, struct ui_style *style, struct pt_error *err);

/* Puts the terminal back as ui_term_open() found it. */
void ui_term_close(struct ui_term *t);

/* Lays the windows out for the terminal's size (none when it is too small); with RESIZED,
 * takes the new size from the kernel first. Returns 0, or -1 with ERR set when out of memory
 * (no windows then). */
int ui_term_layout(struct ui_term *t, bool resized, struct pt_error *err);

#endif
