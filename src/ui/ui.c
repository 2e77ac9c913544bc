/* ui: placeholder until the live view lands (issue 4); refuses rather than pretends. */
#include "config.h"

#include "ui/ui.h"

#include <stdio.h>

#include "cli.h"

int ui_run(const struct cli_options *opts)
{
    (void)opts;
    fprintf(stderr, "pytop: the live view is not built yet; use -p PID --dump [--json]\n");
    return CLI_EXIT_USAGE;
}
