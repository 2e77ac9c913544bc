/* clock: the two clocks pytop reads, in seconds. */
#include "config.h"

#include "core/util/clock.h"

#include <time.h>

static double seconds(const struct timespec *ts)
{
    return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return seconds(&ts);
}

double clock_wall(void)
{
    struct timespec ts;
    return clock_gettime(CLOCK_REALTIME, &ts) == 0 ? seconds(&ts) : -1;
}
