/* replay: pytop --replay FILE (--dump, -b, --export) and pytop -p PID --export: what a
 * recording holds, written as pytop writes a live target, or as a profile other tools read. */
#ifndef PYTOP_REPLAY_H
#define PYTOP_REPLAY_H

struct cli_options;

/* Runs the mode OPTS ask for on OPTS->replay (or, for --export without --replay, on the
 * process). Returns the exit status. */
int replay_run(const struct cli_options *o);

#endif
