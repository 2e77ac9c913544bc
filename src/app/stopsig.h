/* stopsig: SIGINT and SIGTERM ask a batch or dump run to stop, and cut its sleeps short. */
#ifndef PYTOP_STOPSIG_H
#define PYTOP_STOPSIG_H

#include <signal.h>
#include <stdbool.h>

/* Catches SIGINT and SIGTERM without SA_RESTART, so that a sleep between samples ends. */
void stopsig_catch(void);

/* Whether a signal asked to stop. */
bool stopsig_requested(void);

/* The flag the handler sets, for code that waits on it (target_open()). */
volatile sig_atomic_t *stopsig_flag(void);

/* Sleeps until T on clock_now()'s clock (CLOCK_MONOTONIC), or until a signal. */
void stopsig_sleep_until(double t);

#endif
