/* batch: placeholder until batch mode lands (issue 4); refuses rather than pretends. */
#include "config.h"

#include "batch.h"

#include <stdio.h>

#include "cli.h"

int batch_run(const struct cli_options *opts)
{
    (void)opts;
    fprintf(stderr, "pytop: batch mode is not built yet; use -p PID --dump [--json]\n");
    return CLI_EXIT_USAGE;
}
