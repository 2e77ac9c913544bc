/* elf_hash: the hash tables of an ELF symbol table (.gnu.hash, .hash), for elf.c only: which
 * symbols may bear a name, read from the table's own bytes.
 *
 * A lookup through them reads a few words of the table and the symbols in one chain, where a
 * scan reads every symbol and its name: in a Python binary that exports its whole API, hundreds
 * of KiB of file pages that each count in pytop's resident memory. */
#include "config.h"

#include "core/target/elf_hash.h"

#include <inttypes.h>

#include "core/util/error.h"

enum {
    GNU_HEADER = 16, /* nbuckets, symoffset, bloom_size, bloom_shift */
    SYSV_HEADER = 8, /* nbucket, nchain */
    HASH_WORD = 4,   /* buckets and chains are 32-bit words in both classes */
};

static bool get_word(const struct elf_hash *h, uint64_t off, unsigned width, uint64_t *out)
{
    uint64_t end;
    if (__builtin_add_overflow(off, width, &end) || end > h->len) {
        return false;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        unsigned shift = h->big ? 8 * (width - 1 - i) : 8 * i;
        v |= (uint64_t)h->buf[off + i] << shift;
    }
    *out = v;
    return true;
}

/* Entry I, of WIDTH bytes, of the array at OFF. */
static bool get_entry(const struct elf_hash *h, uint64_t off, uint64_t i, unsigned width,
                      uint64_t *out)
{
    uint64_t rel;
    uint64_t at;
    return !__builtin_mul_overflow(i, width, &rel) && !__builtin_add_overflow(off, rel, &at) &&
           get_word(h, at, width, out);
}

/* Word I of the 32-bit array at OFF. */
static bool get_u32(const struct elf_hash *h, uint64_t off, uint64_t i, uint32_t *out)
{
    uint64_t v;
    if (!get_entry(h, off, i, HASH_WORD, &v)) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Sets *END to OFF plus COUNT entries of WIDTH bytes; false when that overflows or passes
 * the table's end. */
static bool array_end(const struct elf_hash *h, uint64_t off, uint64_t count, unsigned width,
                      uint64_t *end)
{
    uint64_t bytes;
    return !__builtin_mul_overflow(count, width, &bytes) &&
           !__builtin_add_overflow(off, bytes, end) && *end <= h->len;
}

static int parse_gnu(struct elf_hash *h, struct pt_error *err)
{
    uint32_t head[4];
    for (unsigned i = 0; i < 4; i++) {
        if (!get_u32(h, 0, i, &head[i])) {
            return pt_error_set(err, PT_E_FORMAT, 0, ".gnu.hash of %zu bytes has no header",
                                h->len);
        }
    }
    h->n_buckets = head[0];
    h->symoffset = head[1];
    h->bloom_size = head[2];
    h->bloom_shift = head[3];
    /* glibc's ld.so takes bloom_size - 1 as a mask, and shifts a 32-bit hash by bloom_shift. */
    if (h->n_buckets == 0 || h->bloom_size == 0 || (h->bloom_size & (h->bloom_size - 1)) != 0 ||
        h->bloom_shift >= 32) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            ".gnu.hash has %" PRIu32 " buckets and a bloom filter of %" PRIu32
                            " words shifted by %" PRIu32,
                            h->n_buckets, h->bloom_size, h->bloom_shift);
    }
    if (h->symoffset > h->n_symbols) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            ".gnu.hash starts at symbol %" PRIu32 ", past the %" PRIu64 " symbols",
                            h->symoffset, h->n_symbols);
    }
    h->bloom_off = GNU_HEADER;
    if (!array_end(h, h->bloom_off, h->bloom_size, h->word, &h->buckets_off) ||
        !array_end(h, h->buckets_off, h->n_buckets, HASH_WORD, &h->chain_off)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            ".gnu.hash of %zu bytes is too short for its %" PRIu32
                            " bloom words and %" PRIu32 " buckets",
                            h->len, h->bloom_size, h->n_buckets);
    }
    h->n_chain = (h->len - h->chain_off) / HASH_WORD;
    return 0;
}

static int parse_sysv(struct elf_hash *h, struct pt_error *err)
{
    uint64_t end;
    uint32_t n_chain;
    if (!get_u32(h, 0, 0, &h->n_buckets) || !get_u32(h, 0, 1, &n_chain)) {
        return pt_error_set(err, PT_E_FORMAT, 0, ".hash of %zu bytes has no header", h->len);
    }
    h->n_chain = n_chain;
    h->buckets_off = SYSV_HEADER;
    if (h->n_buckets == 0 ||
        !array_end(h, h->buckets_off, h->n_buckets, HASH_WORD, &h->chain_off) ||
        !array_end(h, h->chain_off, h->n_chain, HASH_WORD, &end)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            ".hash of %zu bytes does not hold its %" PRIu32 " buckets and %" PRIu64
                            " chain entries",
                            h->len, h->n_buckets, h->n_chain);
    }
    return 0;
}

int elf_hash_parse(const uint8_t *buf, size_t len, enum elf_hash_kind kind, bool is64, bool big,
                   uint64_t n_symbols, struct elf_hash *out, struct pt_error *err)
{
    *out = (struct elf_hash){
        .buf = buf,
        .len = buf == NULL ? 0 : len,
        .big = big,
        .kind = kind,
        .word = is64 ? 8 : 4,
        .n_symbols = n_symbols,
    };
    return kind == ELF_HASH_GNU ? parse_gnu(out, err) : parse_sysv(out, err);
}

/* The GNU hash (Drepper, "How To Write Shared Libraries": h * 33 + c). */
static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
        h = h * 33 + *p;
    }
    return h;
}

/* The gABI's hash ("Hash Table", elf_hash()). */
static uint32_t sysv_hash(const char *name)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0'; p++) {
        h = (h << 4) + *p;
        uint32_t g = h & 0xf0000000u;
        h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

/* Whether the bloom filter lets HASH through: both of its bits set in the word it selects. */
static bool bloom_passes(const struct elf_hash *h, uint32_t hash)
{
    unsigned bits = h->word * 8;
    uint64_t word;
    if (!get_entry(h, h->bloom_off, (hash / bits) & (h->bloom_size - 1), h->word, &word)) {
        return true; /* cannot happen: the filter was checked to fit; the chains decide */
    }
    uint64_t mask = (uint64_t)1 << (hash % bits);
    mask |= (uint64_t)1 << ((hash >> h->bloom_shift) % bits);
    return (word & mask) == mask;
}

void elf_hash_start(const struct elf_hash *h, const char *name, struct elf_hash_walk *w)
{
    *w = (struct elf_hash_walk){.done = true};
    uint32_t bucket;
    if (h->kind == ELF_HASH_GNU) {
        w->hash = gnu_hash(name);
        if (!bloom_passes(h, w->hash) ||
            !get_u32(h, h->buckets_off, w->hash % h->n_buckets, &bucket) || bucket == 0) {
            return;
        }
    } else {
        w->hash = sysv_hash(name);
        if (!get_u32(h, h->buckets_off, w->hash % h->n_buckets, &bucket) || bucket == 0) {
            return;
        }
    }
    w->next = bucket;
    w->done = false;
}

/* GNU: the chain of a bucket holds the hash of each symbol from the bucket's first on, the
 * low bit set on the last; a symbol whose hash differs cannot bear the name. */
static int next_gnu(const struct elf_hash *h, struct elf_hash_walk *w, uint64_t *index,
                    struct pt_error *err)
{
    while (!w->done) {
        uint64_t i = w->next;
        uint32_t chain;
        if (i < h->symoffset || i >= h->n_symbols) {
            return pt_error_set(err, PT_E_FORMAT, 0,
                                ".gnu.hash leads to symbol %" PRIu64 ", outside symbols %" PRIu32
                                "..%" PRIu64,
                                i, h->symoffset, h->n_symbols);
        }
        if (!get_u32(h, h->chain_off, i - h->symoffset, &chain)) {
            return pt_error_set(err, PT_E_FORMAT, 0,
                                ".gnu.hash chain of symbol %" PRIu64 " is past its end", i);
        }
        w->done = (chain & 1) != 0;
        w->next = i + 1;
        if ((chain | 1) == (w->hash | 1)) {
            *index = i;
            return 1;
        }
    }
    return 0;
}

/* SysV: chain[i] is the next symbol of symbol i's bucket, 0 (STN_UNDEF) after the last. A
 * chain that visits more symbols than there are loops. */
static int next_sysv(const struct elf_hash *h, struct elf_hash_walk *w, uint64_t *index,
                     struct pt_error *err)
{
    uint64_t i = w->next;
    uint32_t chain;
    if (w->done || i == 0) {
        w->done = true;
        return 0;
    }
    if (i >= h->n_chain || i >= h->n_symbols || !get_u32(h, h->chain_off, i, &chain)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            ".hash leads to symbol %" PRIu64 ", past its %" PRIu64
                            " chain entries or the %" PRIu64 " symbols",
                            i, h->n_chain, h->n_symbols);
    }
    if (++w->steps > h->n_symbols) {
        return pt_error_set(err, PT_E_FORMAT, 0, ".hash chain through symbol %" PRIu64 " loops", i);
    }
    w->next = chain;
    *index = i;
    return 1;
}

int elf_hash_next(const struct elf_hash *h, struct elf_hash_walk *w, uint64_t *index,
                  struct pt_error *err)
{
    return h->kind == ELF_HASH_GNU ? next_gnu(h, w, index, err) : next_sysv(h, w, index, err);
}
