/* ui_term: the terminal in full-screen mode: opened, laid out in windows, and put back. */
#include "config.h"

#include "ui/ui_term.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/util/error.h"
#include "ui/ui_screen.h"
#include "ui/ui_style.h"

/* The escape sequences that leave the full-screen mode, kept for a crash's signal handler. */
static void keep_restore_sequence(struct ui_term *t)
{
    static const char *const caps[] = {"sgr0", "cnorm", "rmkx", "rmcup"};
    t->restore_len = 0;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        const char *seq = tigetstr(caps[i]);
        if (seq == NULL || seq == (char *)-1) {
            continue;
        }
        size_t n = strlen(seq);
        if (t->restore_len + n < sizeof t->restore) {
            memcpy(t->restore + t->restore_len, seq, n);
            t->restore_len += n;
        }
    }
}

static void delete_windows(struct ui_term *t)
{
    WINDOW **wins[] = {&t->header, &t->body, &t->footer, &t->full};
    for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++) {
        if (*wins[i] != NULL) {
            delwin(*wins[i]);
            *wins[i] = NULL;
        }
    }
}

int ui_term_layout(struct ui_term *t, bool resized, struct pt_error *err)
{
    struct winsize ws;
    if (resized && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        resizeterm(ws.ws_row, ws.ws_col);
    }
    delete_windows(t);
    getmaxyx(stdscr, t->rows, t->cols);
    if (t->rows < UI_SCREEN_MIN_ROWS || t->cols < UI_SCREEN_MIN_COLS) {
        return 0;
    }
    int body = t->rows - UI_SCREEN_HEADER_ROWS - UI_SCREEN_FOOTER_ROWS;
    t->header = newwin(UI_SCREEN_HEADER_ROWS, t->cols, 0, 0);
    t->body = newwin(body, t->cols, UI_SCREEN_HEADER_ROWS, 0);
    t->footer = newwin(UI_SCREEN_FOOTER_ROWS, t->cols, t->rows - UI_SCREEN_FOOTER_ROWS, 0);
    t->full = newwin(t->rows, t->cols, 0, 0);
    if (t->header == NULL || t->body == NULL || t->footer == NULL || t->full == NULL) {
        delete_windows(t);
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "out of memory laying out the screen");
    }
    return 0;
}

int ui_term_open(struct ui_term *t, bool color, struct ui_style *style, struct pt_error *err)
{
    if (tcgetattr(STDIN_FILENO, &t->tio) == 0) {
        t->tio_saved = true;
    }
    const char *term = getenv("TERM") != NULL ? getenv("TERM") : "";
    t->screen = newterm(NULL, stdout, stdin);
    if (t->screen == NULL) {
        return pt_error_set(err, PT_E_IO, 0,
                            "cannot drive the terminal '%s' (TERM); try TERM=xterm", term);
    }
    set_term(t->screen);
    const char *cup = tigetstr("cup");
    if (cup == NULL || cup == (char *)-1) {
        /* A terminal that cannot place the cursor (TERM=dumb) would get a jumble. */
        endwin();
        delscreen(t->screen);
        t->screen = NULL;
        return pt_error_set(err, PT_E_IO, 0,
                            "the terminal '%s' (TERM) cannot move the cursor; use --dump or -b",
                            term);
    }
    keep_restore_sequence(t);
    noecho();
    nonl();
    curs_set(0);
    ui_style_init(style, color);
    t->up = true;
    t->tk = termkey_new(STDIN_FILENO, TERMKEY_FLAG_CTRLC);
    if (t->tk == NULL) {
        return pt_error_set(err, PT_E_IO, errno, "cannot read keys from the terminal: %s",
                            strerror(errno));
    }
    return ui_term_layout(t, false, err);
}

void ui_term_close(struct ui_term *t)
{
    if (t->tk != NULL) {
        termkey_destroy(t->tk);
        t->tk = NULL;
    }
    if (t->up) {
        delete_windows(t);
        curs_set(1);
        endwin();
        delscreen(t->screen);
        t->up = false;
    }
    if (t->tio_saved) {
        tcsetattr(STDIN_FILENO, TCSANOW, &t->tio);
    }
}
