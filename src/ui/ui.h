/* ui: the live view's screen: the terminal, the key loop and the views, on ncursesw and
 * libtermkey. liveview.c starts what it shows. */
#ifndef PYTOP_UI_UI_H
#define PYTOP_UI_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ui/ui_keys.h"

struct cli_options;
struct live;
struct spawn;

/* What the screen shows, as liveview.c started it. */
struct ui_target {
    struct live *live;   /* the sampling thread: frames come from it, requests go to it */
    struct spawn *spawn; /* the command pytop started; NULL for -p PID */
    pid_t pid;
};

/* Takes the terminal for the live view as OPTS ask (colours, the filter, the refresh), with
 * the statistics over WINDOW seconds (INFINITY: since the reset). WAKE is a non-blocking pipe
 * whose write end the sampling thread and the signal handlers write a byte to, to wake the
 * loop; the caller closes it after ui_close(). Returns CLI_EXIT_OK, or the exit status after
 * saying why on stderr (or, for ui_close() to print, after the terminal is put back). Call
 * ui_close() either way. */
int ui_open(const struct cli_options *opts, double window, const int wake[2]);

/* Shows T until the user quits, the target turns into a program that cannot be read, or the
 * terminal goes away. T's parts stay the caller's, and must outlive ui_close(). */
void ui_show(const struct ui_target *t);

/* Puts the terminal back as pytop found it and frees the screen; then prints the error that
 * ended the view, if one did. Returns true when one did. */
bool ui_close(void);

/* The keys that mean the same in every view (ui_keys.h). */
extern const struct ui_binding ui_bindings[];
/* A replay's own keys (pytop --replay FILE), offered first. */
extern const struct ui_binding ui_replay_bindings[];

/* The help screen's lines, made from the key tables: the global one, each view's, the sort
 * keys; into OUT[0..CAP). Returns how many. */
size_t ui_help(struct ui_help_line *out, size_t cap);

#endif
