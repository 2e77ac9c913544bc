/* fuzz_linetable: all three line-table decoders on arbitrary bytes.
 *
 * Input: 4 bytes first line (host order), 4 bytes address, then the table. The address is
 * folded into a range the table could cover, so that most inputs reach an entry. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/pyobj/linetable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum {
    HEADER = 8,
};

/* Success fills OUT; failure leaves it alone and says why, as a format or limit error. */
static void run(int (*find)(const uint8_t *, size_t, int, uint32_t, struct linetable_loc *,
                            struct pt_error *),
                const uint8_t *table, size_t len, int first, uint32_t addr)
{
    static const struct linetable_loc sentinel = {-7, -7, -7, -7};
    struct linetable_loc out = sentinel;
    struct pt_error err = {0};
    if (find(table, len, first, addr, &out, &err) == 0) {
        if (memcmp(&out, &sentinel, sizeof out) == 0) {
            abort();
        }
        return;
    }
    if ((err.code != PT_E_FORMAT && err.code != PT_E_LIMIT) || err.msg[0] == '\0' ||
        memcmp(&out, &sentinel, sizeof out) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int32_t first = 0;
    uint32_t raw = 0;
    if (size < HEADER) {
        return 0;
    }
    memcpy(&first, data, sizeof first);
    memcpy(&raw, data + sizeof first, sizeof raw);
    size_t len = size - HEADER;
    /* An exact-size copy, so that reading one byte past the table is caught. */
    uint8_t *table = malloc(len > 0 ? len : 1);
    if (table == NULL) {
        return 0;
    }
    memcpy(table, data + HEADER, len);
    /* a location entry covers at most 8 code units, a 3.10 or lnotab pair 255 bytes */
    uint32_t units = (uint32_t)(len * 8 + 2);
    uint32_t bytes = (uint32_t)(len * 128 + 2);
    uint32_t addr_units = raw & 0x80000000u ? raw : raw % units;
    uint32_t addr_bytes = raw & 0x80000000u ? raw : raw % bytes;
    run(linetable_locations_find, table, len, first, addr_units);
    run(linetable_v310_find, table, len, first, addr_bytes);
    run(linetable_lnotab_find, table, len, first, addr_bytes);
    run(linetable_lnotab_unsigned_find, table, len, first, addr_bytes);
    free(table);
    return 0;
}
