/* main: pytop's entry point. */
#include "config.h"

#include "cli.h"

int main(int argc, char **argv)
{
    struct cli_options opts;
    if (cli_parse(argc, argv, &opts) < 0) {
        return CLI_EXIT_USAGE;
    }
    return cli_run(&opts);
}
