/* fuzz_gc: GC states and 3.15 collection records from hostile bytes, through every generated
 * layout of every version. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/walk/gc.h"
#include "core/layout/gen.h"
#include "core/model/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct snapshot *s = snapshot_new(NULL);
    if (s == NULL) {
        return 0;
    }
    for (unsigned key = 0x0200; key < 0x0320; key++) {
        size_t n = 0;
        const struct layout_gc_gen *v = layout_gc_variants(key, &n);
        for (size_t i = 0; i < n; i++) {
            /* An address that makes generation0 agree, so that the rest is reached too. */
            uint64_t gen0 = 0;
            if (v[i].generation0 >= 0 && (uint64_t)v[i].generation0 + 8 <= size) {
                memcpy(&gen0, data + v[i].generation0, sizeof gen0);
            }
            uint64_t addr = gen0 - (uint64_t)v[i].generations;
            struct snap_gc out;
            memset(&out, 0, sizeof out);
            gc_parse_variant(&v[i], s, addr, data, size, data, size, &out);
            snapshot_gc_record_delta(&out, size % 32, &(struct snap_gc_record){0});
            for (size_t k = 0; k < out.n_recent; k++) {
                struct snap_gc_record d;
                snapshot_gc_record_delta(&out, k, &d);
            }
        }
    }
    snapshot_free(s);
    return 0;
}
