/* Tests of gc: picking a version's build family by its invariants, and refusing GC states that
 * fit none, with the layouts generated from real builds' headers. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/walk/gc.h"
#include "core/layout/gen.h"
#include "core/model/snapshot.h"

enum { ADDR = 0x7f0000001000ull };

static void put64(uint8_t *buf, int64_t off, uint64_t v)
{
    memcpy(buf + off, &v, sizeof v);
}

static void put32(uint8_t *buf, int64_t off, uint32_t v)
{
    memcpy(buf + off, &v, sizeof v);
}

/* A GC state as variant V lays it out: thresholds 700/10/10, counts 5/1/0, stats
 * (collections, collected, uncollectable) = (10 + i, 100 + i, i), list heads linked to
 * themselves, generation0 at the first head. */
static void fill_state(const struct layout_gc_gen *v, uint8_t *buf, size_t len)
{
    static const uint32_t thresholds[] = {700, 10, 10};
    static const uint32_t counts[] = {5, 1, 0};
    memset(buf, 0, len);
    put32(buf, v->enabled, 1);
    for (int64_t i = 0; i < v->num_generations; i++) {
        int64_t at = v->generations + i * v->gen_size;
        put64(buf, at, ADDR + (uint64_t)at);
        put64(buf, at + 8, ADDR + (uint64_t)at);
        put32(buf, at + v->gen_threshold, thresholds[i]);
        put32(buf, at + v->gen_count, counts[i]);
        if (v->stats_is_pointer != 1) {
            int64_t st = v->stats + i * v->stat_size;
            put64(buf, st + v->stat_collections, 10 + (uint64_t)i);
            put64(buf, st + v->stat_collected, 100 + (uint64_t)i);
            put64(buf, st + v->stat_uncollectable, (uint64_t)i);
        }
    }
    put64(buf, v->generation0, ADDR + (uint64_t)v->generations);
}

/* 3.13's two families: Debian's 3.13.18 (4-byte aligned PyGC_Head) and pyenv's 3.13.0. */
static void test_gc_each_3_13_family_accepts_its_own_state_and_refuses_the_other(void **state)
{
    (void)state;
    size_t n = 0;
    const struct layout_gc_gen *v = layout_gc_variants(0x030d, &n);
    assert_int_equal(n, 2);
    assert_int_not_equal(v[0].generations, v[1].generations);
    struct snapshot *s = snapshot_new(NULL);
    assert_non_null(s);
    for (size_t own = 0; own < n; own++) {
        uint8_t buf[GC_STATE_MAX];
        fill_state(&v[own], buf, sizeof buf);
        for (size_t try = 0; try < n; try++) {
            struct snap_gc out = {0};
            int r = gc_parse_variant(&v[try], s, ADDR, buf, (size_t)v[try].size, NULL, 0, &out);
            assert_int_equal(r, own == try ? 1 : 0);
            if (own != try) {
                assert_false(out.present);
                continue;
            }
            assert_true(out.present);
            assert_int_equal(out.enabled, SNAP_YES);
            assert_int_equal(out.collecting, SNAP_NO);
            assert_int_equal(out.n_generations, 3);
            assert_int_equal(out.generations[0].threshold, 700);
            assert_int_equal(out.generations[0].count, 5);
            assert_int_equal(out.generations[1].count, 1);
            assert_int_equal(out.generations[2].collections, 12);
            assert_int_equal(out.generations[2].collected, 102);
            assert_int_equal(out.generations[2].uncollectable, 2);
            assert_int_equal(out.generations[2].candidates, -1);
            assert_false(out.recent_present);
        }
    }
    snapshot_free(s);
}

static void test_gc_refuses_unlinked_heads_negative_totals_and_odd_flags(void **state)
{
    (void)state;
    size_t n = 0;
    const struct layout_gc_gen *v = &layout_gc_variants(0x030c, &n)[0];
    struct snapshot *s = snapshot_new(NULL);
    uint8_t buf[GC_STATE_MAX];
    struct snap_gc out;
    assert_true(n >= 1);

    fill_state(v, buf, sizeof buf);
    put64(buf, v->generations + v->gen_size, 0); /* generation 1's list head links nowhere */
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, NULL, 0, &out), 0);

    fill_state(v, buf, sizeof buf);
    put64(buf, v->stats + v->stat_collected, (uint64_t)-5);
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, NULL, 0, &out), 0);

    fill_state(v, buf, sizeof buf);
    put32(buf, v->collecting, 7);
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, NULL, 0, &out), 0);

    fill_state(v, buf, sizeof buf);
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, (size_t)v->size - 1, NULL, 0, &out), 0);
    put32(buf, v->collecting, 1);
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, NULL, 0, &out), 1);
    assert_int_equal(out.collecting, SNAP_YES);
    snapshot_free(s);
}

/* 3.15: the totals come from the newest record of each ring; the records oldest first. */
static void test_gc_3_15_rings_give_totals_and_records_oldest_first(void **state)
{
    (void)state;
    size_t n = 0;
    const struct layout_gc_gen *v = &layout_gc_variants(0x030f, &n)[0];
    assert_int_equal(v->stats_is_pointer, 1);
    struct snapshot *s = snapshot_new(NULL);
    uint8_t buf[GC_STATE_MAX];
    uint8_t stats[GC_STATS_MAX];
    fill_state(v, buf, sizeof buf);
    memset(stats, 0, sizeof stats);
    /* Young ring: three collections in slots 1, 2 and 0 (wrapped), newest at index 0. */
    const int slots[] = {1, 2, 0};
    for (int k = 0; k < 3; k++) {
        uint8_t *rec = stats + v->young_items + slots[k] * v->stat_size;
        put64(rec, v->stat_ts_start, 1000 * (uint64_t)(k + 1));
        put64(rec, v->stat_ts_stop, 1000 * (uint64_t)(k + 1) + 500);
        put64(rec, v->stat_collections, (uint64_t)k + 1);
        put64(rec, v->stat_collected, 10 * (uint64_t)(k + 1));
        put64(rec, v->stat_candidates, 100 * (uint64_t)(k + 1));
        put64(rec, v->stat_heap_size, 77);
        double d = 0.5e-6 * (k + 1);
        memcpy(rec + v->stat_duration, &d, sizeof d);
    }
    stats[v->young_index] = 0;
    assert_true(v->young_n > 3);
    struct snap_gc out = {0};
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, stats, (size_t)v->stats_size, &out), 1);
    assert_true(out.recent_present);
    assert_int_equal(out.generations[0].collections, 3);
    assert_int_equal(out.generations[0].collected, 30);
    assert_int_equal(out.generations[0].candidates, 300);
    assert_int_equal(out.generations[1].collections, 0);
    assert_int_equal(out.n_recent, 3);
    for (size_t k = 0; k < 3; k++) {
        struct snap_gc_record d;
        assert_int_equal(out.recent[k].collections, (int64_t)k + 1);
        assert_true(snapshot_gc_record_delta(&out, k, &d));
        assert_int_equal(d.collected, 10);
        assert_int_equal(d.candidates, 100);
    }

    /* An index outside its ring leaves the totals and records unknown, not wrong. */
    stats[v->young_index] = (uint8_t)v->young_n;
    memset(&out, 0, sizeof out);
    assert_int_equal(gc_parse_variant(v, s, ADDR, buf, sizeof buf, stats, (size_t)v->stats_size, &out), 1);
    assert_false(out.recent_present);
    assert_int_equal(out.generations[0].collections, -1);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gc_each_3_13_family_accepts_its_own_state_and_refuses_the_other),
        cmocka_unit_test(test_gc_refuses_unlinked_heads_negative_totals_and_odd_flags),
        cmocka_unit_test(test_gc_3_15_rings_give_totals_and_records_oldest_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
