/* stopsig: SIGINT and SIGTERM ask a batch or dump run to stop, and cut its sleeps short. */
#include "config.h"

#include "app/stopsig.h"

#include <string.h>
#include <time.h>

/* A signal flag: the one kind of mutable global STYLE.md allows outside ui.c. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

void stopsig_catch(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

bool stopsig_requested(void)
{
    return stop_requested != 0;
}

volatile sig_atomic_t *stopsig_flag(void)
{
    return &stop_requested;
}

void stopsig_sleep_until(double t)
{
    if (!(t > 0)) {
        return;
    }
    time_t whole = (time_t)t;
    struct timespec ts = {whole, (long)((t - (double)whole) * 1e9)};
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_nsec = 999999999L;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}
