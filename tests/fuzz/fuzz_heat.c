/* fuzz_heat: the source heat view over hostile input: frames counted at arbitrary lines and
 * offsets (heat_frame()), instructions named from arbitrary bytecode (heat_stats(), as read from
 * a target), and arbitrary source text read through the target's root (heat_source_range(),
 * heat_write_text()).
 *
 * Input: 1 byte choosing the version's table (any generated one), 2 bytes the first line, 1 byte
 * K, K frames of 5 bytes (line, offset: 2 bytes each, host order; innermost), 2 bytes the
 * bytecode's length N and N bytes of it, then the source file. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout/opcodes.h"
#include "core/pyobj/code.h"
#include "core/sampler/sampler_heat.h"
#include "core/write/heat_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct input {
    const uint8_t *code;
    size_t code_len;
    const char *src;
    size_t src_len;
    char line[256];
};

static long read_code(void *ctx, const struct heat_code *c, uint8_t *buf, size_t cap)
{
    const struct input *in = ctx;
    (void)c;
    size_t n = in->code_len < cap ? in->code_len : cap;
    memcpy(buf, in->code, n);
    return (long)n;
}

/* Line N (1-based) of the source, as source_cache_line() gives one. */
static const char *source_line(void *ctx, const char *file, size_t file_len, int n, size_t *len)
{
    struct input *in = ctx;
    (void)file;
    (void)file_len;
    const char *p = in->src;
    const char *end = in->src + in->src_len;
    for (int k = 1; k < n && p < end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl != NULL ? nl + 1 : end;
    }
    if (n < 1 || p >= end) {
        return NULL;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t l = (size_t)((nl != NULL ? nl : end) - p);
    l = l < sizeof in->line ? l : sizeof in->line;
    memcpy(in->line, p, l);
    *len = l;
    return in->line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) {
        return 0;
    }
    const struct opcode_table *t = &opcode_tables[data[0] % opcode_tables_n];
    uint16_t first;
    memcpy(&first, data + 1, 2);
    size_t k = data[3] % 33;
    size_t at = 4;
    if (size < at + 5 * k + 2) {
        return 0;
    }
    struct sampler_heat_state *h = heat_new("f", 1, "/f.py", 5, first, NULL, 0);
    if (h == NULL) {
        return 0;
    }
    struct code_info ci = {.serial = 1, .addr = 0x1000, .firstlineno = first};
    int slot = heat_claim_code(h, &ci);
    for (size_t i = 0; i < k; i++, at += 5) {
        uint16_t line;
        uint16_t offset;
        memcpy(&line, data + at, 2);
        memcpy(&offset, data + at + 2, 2);
        heat_thread_sample(h, (int64_t)(i % 3));
        heat_frame(h, slot, line == 0xffff ? -1 : line, offset == 0xffff ? 0xffffffffu : offset,
                   data[at + 4] & 1);
    }
    uint16_t n;
    memcpy(&n, data + at, 2);
    at += 2;
    struct input in = {data + at, size - at < n ? size - at : n, NULL, 0, {0}};
    at += in.code_len;
    in.src = (const char *)data + at;
    in.src_len = size - at;
    struct sampler_heat *s = heat_stats(h, 2, 1.0, SAMPLER_MODE_WALL, t, read_code, &in);
    if (s != NULL) {
        uint64_t own = 0;
        for (size_t i = 0; i < s->n_lines; i++) {
            own += s->lines[i].own;
        }
        if (own != s->own) {
            abort(); /* the lines' own counts add up to the function's */
        }
        struct snapshot_source src = {source_line, &in};
        struct heat_range r = heat_source_range(s, &src);
        if (r.first < 0 || (r.first > 0 && r.last - r.first >= HEAT_SOURCE_LINES_MAX)) {
            abort();
        }
        FILE *out = fopen("/dev/null", "w");
        if (out != NULL) {
            heat_write_text(s, &src, NULL, out, NULL);
            fclose(out);
        }
        free(s);
    }
    heat_free(h);
    return 0;
}
