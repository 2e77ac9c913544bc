/* image: the memory images the walker fuzzer reads (fuzz_walk.c, made by capture.c). */
#include "config.h"

#include "image.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The last byte is the format's version: 3; 2 without symbols, 1 without asyncio_debug_addr. */
static const char MAGIC[8] = {'p', 'y', 't', 'o', 'p', 'i', 'm', '3'};

/* Zero runs at least this long are not written out. */
enum { ZERO_RUN = 64, HEADER_SIZE = 8 + 5 * 8 + 4 * 4 };

struct cursor {
    const uint8_t *p;
    size_t left;
};

static bool get(struct cursor *c, void *out, size_t n)
{
    if (c->left < n) {
        return false;
    }
    memcpy(out, c->p, n);
    c->p += n;
    c->left -= n;
    return true;
}

static uint32_t get_u32(struct cursor *c)
{
    uint8_t b[4] = {0};
    get(c, b, 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t get_u64(struct cursor *c)
{
    uint64_t lo = get_u32(c);
    return lo | (uint64_t)get_u32(c) << 32;
}

static int cmp_region(const void *a, const void *b)
{
    const struct image_region *x = a;
    const struct image_region *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int image_parse(const uint8_t *buf, size_t len, struct image *out)
{
    struct cursor c = {buf, len};
    char magic[8];
    memset(out, 0, sizeof *out);
    if (len < HEADER_SIZE || !get(&c, magic, sizeof magic) || memcmp(magic, MAGIC, 7) != 0 ||
        magic[7] < '1' || magic[7] > '3') {
        return -1;
    }
    out->h.hexversion = get_u64(&c);
    out->h.runtime_addr = get_u64(&c);
    out->h.code_type_addr = get_u64(&c);
    out->h.none_addr = get_u64(&c);
    out->h.runtime_size = get_u64(&c);
    out->h.asyncio_debug_addr = magic[7] >= '2' ? get_u64(&c) : 0;
    out->h.flags = get_u32(&c);
    out->h.pid = get_u32(&c);
    size_t n_threads = get_u32(&c);
    size_t n_regions = get_u32(&c);
    if (magic[7] >= '3') {
        uint32_t n = get_u32(&c);
        for (uint32_t i = 0; i < n && c.left >= 8 + RUNTIME_SYMBOL_NAME; i++) {
            struct runtime_symbol sym;
            sym.addr = get_u64(&c);
            get(&c, sym.name, sizeof sym.name);
            sym.name[sizeof sym.name - 1] = '\0';
            if (out->h.n_symbols < IMAGE_MAX_SYMBOLS) {
                out->h.symbols[out->h.n_symbols++] = sym;
            }
        }
    }
    n_threads = n_threads < IMAGE_MAX_THREADS ? n_threads : IMAGE_MAX_THREADS;
    n_threads = n_threads < c.left / 8 ? n_threads : c.left / 8;
    n_regions = n_regions < IMAGE_MAX_REGIONS ? n_regions : IMAGE_MAX_REGIONS;
    n_regions = n_regions < c.left / 12 ? n_regions : c.left / 12;
    out->threads = calloc(n_threads ? n_threads : 1, sizeof *out->threads);
    out->regions = calloc(n_regions ? n_regions : 1, sizeof *out->regions);
    if (out->threads == NULL || out->regions == NULL) {
        image_release(out);
        return -1;
    }
    for (size_t i = 0; i < n_threads; i++) {
        out->threads[i].tid = get_u32(&c);
        out->threads[i].state = (char)get_u32(&c);
    }
    out->n_threads = n_threads;
    bool sorted = true;
    size_t n = 0;
    while (n < n_regions && c.left >= 12) {
        struct image_region *r = &out->regions[n];
        r->addr = get_u64(&c);
        uint32_t word = get_u32(&c);
        r->len = word & ~IMAGE_ZEROS;
        if (!(word & IMAGE_ZEROS)) {
            r->len = r->len < c.left ? r->len : c.left;
            r->data = c.p;
            c.p += r->len;
            c.left -= r->len;
        }
        sorted = sorted && (n == 0 || out->regions[n - 1].addr <= r->addr);
        n++;
    }
    out->n_regions = n;
    if (!sorted) {
        qsort(out->regions, n, sizeof *out->regions, cmp_region);
    }
    return 0;
}

void image_release(struct image *im)
{
    free(im->threads);
    free(im->regions);
    memset(im, 0, sizeof *im);
}

static bool put_u32(FILE *f, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return fwrite(b, 1, 4, f) == 4;
}

static bool put_u64(FILE *f, uint64_t v)
{
    return put_u32(f, (uint32_t)v) && put_u32(f, (uint32_t)(v >> 32));
}

/* Where the next run of at least ZERO_RUN zeros in [FROM, LEN) of P starts; LEN if none. */
static size_t zero_run(const uint8_t *p, size_t from, size_t len, size_t *run)
{
    for (size_t i = from; i < len; i++) {
        size_t j = i;
        while (j < len && p[j] == 0) {
            j++;
        }
        if (j - i >= ZERO_RUN) {
            *run = j - i;
            return i;
        }
        i = j;
    }
    *run = 0;
    return len;
}

static size_t count_pieces(const struct image_region *r, bool write, FILE *f, bool *ok)
{
    size_t pieces = 0;
    size_t at = 0;
    while (at < r->len) {
        size_t run;
        size_t z = r->data ? zero_run(r->data, at, r->len, &run) : at;
        if (r->data == NULL) {
            run = r->len;
        }
        if (z > at) {
            pieces++;
            if (write) {
                *ok = *ok && put_u64(f, r->addr + at) && put_u32(f, (uint32_t)(z - at)) &&
                      fwrite(r->data + at, 1, z - at, f) == z - at;
            }
        }
        if (run > 0) {
            pieces++;
            if (write) {
                *ok = *ok && put_u64(f, r->addr + z) && put_u32(f, (uint32_t)run | IMAGE_ZEROS);
            }
        }
        at = z + run;
    }
    return pieces;
}

int image_write(FILE *f, const struct image *im)
{
    bool ok = fwrite(MAGIC, 1, sizeof MAGIC, f) == sizeof MAGIC;
    size_t pieces = 0;
    for (size_t i = 0; i < im->n_regions; i++) {
        pieces += count_pieces(&im->regions[i], false, NULL, &ok);
    }
    ok = ok && put_u64(f, im->h.hexversion) && put_u64(f, im->h.runtime_addr) &&
         put_u64(f, im->h.code_type_addr) && put_u64(f, im->h.none_addr) &&
         put_u64(f, im->h.runtime_size) && put_u64(f, im->h.asyncio_debug_addr) &&
         put_u32(f, im->h.flags) && put_u32(f, im->h.pid) && put_u32(f, (uint32_t)im->n_threads) &&
         put_u32(f, (uint32_t)pieces) && put_u32(f, im->h.n_symbols);
    for (size_t i = 0; i < im->h.n_symbols && i < IMAGE_MAX_SYMBOLS; i++) {
        ok = ok && put_u64(f, im->h.symbols[i].addr) &&
             fwrite(im->h.symbols[i].name, 1, RUNTIME_SYMBOL_NAME, f) == RUNTIME_SYMBOL_NAME;
    }
    for (size_t i = 0; i < im->n_threads; i++) {
        ok = ok && put_u32(f, im->threads[i].tid) && put_u32(f, (uint8_t)im->threads[i].state);
    }
    for (size_t i = 0; i < im->n_regions; i++) {
        count_pieces(&im->regions[i], true, f, &ok);
    }
    return ok ? 0 : -1;
}
