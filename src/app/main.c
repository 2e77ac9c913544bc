/* main: pytop's entry point. */
#include "config.h"

#include <sys/resource.h>

#include "app/cli.h"
#include "core/util/memory.h"

enum { FILES_WANTED = 16384 }; /* a cached stat and schedstat file per thread, and the rest */

/* A target's threads are watched through files kept open, two per thread: take as many of the
 * files the hard limit allows as that needs (the soft limit is often 1024). */
static void raise_file_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < FILES_WANTED) {
        rl.rlim_cur =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max > FILES_WANTED ? FILES_WANTED : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    struct cli_options opts;
    if (cli_parse(argc, argv, &opts) < 0) {
        return CLI_EXIT_USAGE;
    }
    raise_file_limit();
    memory_keep_freed();
    return cli_run(&opts);
}
