/* liveview: the live view put together: the command started, the sampling thread on the
 * target, the statistics' window chosen, and the screen shown on them. */
#ifndef PYTOP_LIVEVIEW_H
#define PYTOP_LIVEVIEW_H

struct cli_options;

/* Runs the live view as OPTS ask (pytop -p PID, pytop -- CMD), until the user quits or the
 * target ends it. Returns the exit status. */
int liveview_run(const struct cli_options *opts);

#endif
