/* dump: pytop --dump: one snapshot (after a window of samples, or the last before the target
 * ends, --at-exit), as the incident report or JSON. */
#ifndef PYTOP_DUMP_H
#define PYTOP_DUMP_H

struct cli_options;

/* Runs --dump as OPTS ask. Returns the exit status (enum cli_exit). */
int dump_run(const struct cli_options *opts);

#endif
