/* batch: pytop -b, a stream of snapshots with the sampler's statistics (text or JSON lines). */
#ifndef PYTOP_BATCH_H
#define PYTOP_BATCH_H

struct cli_options;

/* Runs batch mode as OPTS ask. Returns the exit status (enum cli_exit). */
int batch_run(const struct cli_options *opts);

#endif
