/* clock: the two clocks pytop reads, in seconds: one for intervals and deadlines, one for the
 * times written out. */
#ifndef PYTOP_CORE_CLOCK_H
#define PYTOP_CORE_CLOCK_H

/* CLOCK_MONOTONIC: what every interval, rate and deadline is measured on. */
double clock_now(void);

/* CLOCK_REALTIME, as written into snapshots and documents; -1 when the clock cannot be read. */
double clock_wall(void);

#endif
