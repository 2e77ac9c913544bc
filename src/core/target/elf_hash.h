/* elf_hash: the hash tables of an ELF symbol table (.gnu.hash, .hash), for elf.c only: which
 * symbols may bear a name, read from the table's own bytes. */
#ifndef PYTOP_CORE_ELF_HASH_H
#define PYTOP_CORE_ELF_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_error;

enum elf_hash_kind {
    ELF_HASH_GNU,  /* SHT_GNU_HASH: bloom filter, buckets, and chains of hash values */
    ELF_HASH_SYSV, /* SHT_HASH (gABI, "Hash Table"): buckets and chains of symbol indices */
};

/* A parsed table: where its parts lie in BUF, all checked to fit. */
struct elf_hash {
    const uint8_t *buf;
    size_t len;
    bool big;
    enum elf_hash_kind kind;
    unsigned word;      /* bytes of a bloom filter word: 4 (ELF32) or 8 (ELF64) */
    uint64_t n_symbols; /* of the symbol table the table indexes */
    uint32_t n_buckets;
    uint64_t n_chain;    /* SysV: chain entries; GNU: chain words after the buckets */
    uint32_t symoffset;  /* GNU: the first symbol in the table */
    uint32_t bloom_size; /* GNU: words, a power of two */
    uint32_t bloom_shift;
    uint64_t bloom_off;
    uint64_t buckets_off;
    uint64_t chain_off;
};

/* One walk over the candidates for a name. */
struct elf_hash_walk {
    uint32_t hash;
    uint64_t next;  /* the symbol index to look at next; 0 ends a SysV chain */
    uint64_t steps; /* symbols looked at, bounded by the symbol count */
    bool done;
};

/* Parses the hash table BUF[0..LEN) of KIND, indexing a symbol table of N_SYMBOLS entries, in an
 * ELF file of the class IS64 and byte order BIG. BUF must stay valid while OUT is used. Returns
 * 0, or -1 (PT_E_FORMAT) when the table is truncated, its parts do not fit it or each other, or
 * its sizes are zero or not the powers of two a lookup takes them for. */
int elf_hash_parse(const uint8_t *buf, size_t len, enum elf_hash_kind kind, bool is64, bool big,
                   uint64_t n_symbols, struct elf_hash *out, struct pt_error *err);

/* Starts a walk over the symbols of H that may be named NAME (none when the bloom filter rules
 * the name out). */
void elf_hash_start(const struct elf_hash *h, const char *name, struct elf_hash_walk *w);

/* The next symbol index of walk W: returns 1 and sets *INDEX, 0 when the walk is over, or -1
 * (PT_E_FORMAT) when the table points past itself or the symbols, or a chain does not end
 * within the symbol count. Every symbol of the table that bears the name is among the indices
 * given (a GNU table leaves out the symbols before its symoffset: undefined ones). The caller
 * compares names. */
int elf_hash_next(const struct elf_hash *h, struct elf_hash_walk *w, uint64_t *index,
                  struct pt_error *err);

#endif
