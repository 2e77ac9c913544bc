/* schedule: one sample at a random point of each period of the rate. */
#include "config.h"

#include "core/sampler/schedule.h"

#include <time.h>
#include <unistd.h>

/* xorshift64* (Vigna): fast, and plenty for spreading samples over their slots. */
static uint64_t next_random(struct schedule *s)
{
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A uniform point in [0, 1): the top 53 bits. */
static double unit_random(struct schedule *s)
{
    return (double)(next_random(s) >> 11) * (1.0 / 9007199254740992.0);
}

static void place(struct schedule *s)
{
    s->due = s->slot + unit_random(s) * s->period;
}

void schedule_start(struct schedule *s, double rate_hz, double now, uint64_t seed)
{
    s->period = rate_hz > 0 ? 1.0 / rate_hz : 0;
    s->slot = now;
    s->due = now;
    /* SplitMix64's finaliser spreads a small or zero seed over the state. */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    s->rng = z != 0 ? z : 1;
}

double schedule_due(const struct schedule *s)
{
    return s->due;
}

double schedule_next(struct schedule *s, double now)
{
    if (s->period <= 0) {
        s->slot = now;
        s->due = now;
        return now;
    }
    s->slot += s->period;
    if (s->slot + s->period <= now) {
        /* Behind by a whole slot or more: on from the slot NOW is in. The count of slots is
         * bounded by the double's range, and a negative or absurd one (a clock step) restarts. */
        double behind = (now - s->slot) / s->period;
        s->slot = behind < 1e12 ? s->slot + (double)(uint64_t)behind * s->period : now;
    }
    place(s);
    return s->due;
}

uint64_t schedule_seed(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) ^
           ((uint64_t)getpid() << 32);
}
