/* fuzz_snapcodec: the snapshot decoder on arbitrary bytes (a recording's chunk).
 *
 * Input: an encoded snapshot. What decodes is written by both writers (as --replay would show
 * it), encoded again and decoded again: the second encoding must equal the first. What does
 * not decode must say why, as a format error. Its seeds, tests/fuzz/snapcodec/, are the unit
 * test's snapshots: PYTOP_SNAPCODEC_SEEDS=DIR tests/unit/test_snapcodec writes them. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/snapshot.h"
#include "core/record/snapcodec.h"
#include "core/util/error.h"
#include "core/util/strbuf.h"
#include "core/write/snapshot_write.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct snapshot *decode(const void *p, size_t n)
{
    struct pt_error err = {0};
    struct snapshot *s = snapcodec_decode(p, n, &err);
    if (s == NULL && ((err.code != PT_E_FORMAT && err.code != PT_E_NOMEM) || err.msg[0] == '\0')) {
        abort();
    }
    return s;
}

static void encode(const struct snapshot *s, struct strbuf *out)
{
    struct pt_error err = {0};
    if (snapcodec_encode(s, out, &err) < 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    if (null == NULL && (null = fopen("/dev/null", "w")) == NULL) {
        abort();
    }
    /* An exact-size copy, so that reading one byte past the input is caught. */
    uint8_t *copy = malloc(size > 0 ? size : 1);
    if (copy == NULL) {
        return 0;
    }
    memcpy(copy, data, size);
    struct snapshot *s = decode(copy, size);
    free(copy);
    if (s == NULL) {
        return 0;
    }
    struct pt_error err = {0};
    snapshot_write_json(s, null, true, &err);
    snapshot_write_text(s, null, NULL, &err);
    struct strbuf first = {0};
    encode(s, &first);
    snapshot_free(s);
    struct snapshot *again = decode(first.data, first.len);
    if (again == NULL) {
        abort();
    }
    struct strbuf second = {0};
    encode(again, &second);
    snapshot_free(again);
    if (first.len != second.len || memcmp(first.data, second.data, first.len) != 0) {
        abort();
    }
    strbuf_free(&first);
    strbuf_free(&second);
    return 0;
}
