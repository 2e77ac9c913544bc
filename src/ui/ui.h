/* ui: the live view (pytop -p PID, pytop -- CMD), on ncursesw and libtermkey. */
#ifndef PYTOP_UI_UI_H
#define PYTOP_UI_UI_H

struct cli_options;

/* Runs the live view as OPTS ask, until the user quits. Returns the exit status. */
int ui_run(const struct cli_options *opts);

#endif
