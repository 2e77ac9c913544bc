/* schedule: when the samples are taken. Time is cut into slots of one period of the rate, and
 * each slot's sample is due at a random point in it (stratified sampling): the rate is kept
 * exactly on average, and a target whose work repeats on a period near a multiple of pytop's
 * (a loop that sleeps 1 ms, a 10 ms timer) is no longer seen at the same phase sample after
 * sample. With a strict grid, a thread holding the GIL a quarter of the time in 1.3 ms turns
 * was counted in anything from 1 to 53 of a second's 100 samples. */
#ifndef PYTOP_CORE_SCHEDULE_H
#define PYTOP_CORE_SCHEDULE_H

#include <stdint.h>

struct schedule {
    double period; /* seconds; 0: back to back (--rate max) */
    double slot;   /* the start of the current slot */
    double due;    /* when the current slot's sample is due */
    uint64_t rng;  /* xorshift64* state, never 0 */
};

/* Slots of 1 / RATE_HZ seconds from NOW (back to back when RATE_HZ <= 0); the first sample is
 * due at once. SEED picks the random points (0 is allowed). */
void schedule_start(struct schedule *s, double rate_hz, double now, uint64_t seed);

/* When the current slot's sample is due. */
double schedule_due(const struct schedule *s);

/* The current slot's sample was taken and it is NOW: moves to the next slot, or to the one NOW
 * is in when pytop fell behind by a whole slot or more (missed samples are skipped, never made
 * up in a burst). Returns when that slot's sample is due (NOW when back to back); it may be
 * before NOW, when NOW is already inside the slot past its point. */
double schedule_next(struct schedule *s, double now);

/* A seed that differs from run to run: the clock's nanoseconds and the process id. */
uint64_t schedule_seed(void);

#endif
