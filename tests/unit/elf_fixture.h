/* elf_fixture: the ELF images test_elf and test_elf_hash build, field by field from the gABI's
 * record layouts, and what they check every built image for. */
#ifndef PYTOP_TESTS_UNIT_ELF_FIXTURE_H
#define PYTOP_TESTS_UNIT_ELF_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/target/elf.h"
#include "core/util/error.h"

struct tfield {
    uint8_t off32;
    uint8_t width32;
    uint8_t off64;
    uint8_t width64;
};

extern const struct tfield eh_type;
extern const struct tfield eh_phoff;
extern const struct tfield eh_shoff;
extern const struct tfield eh_phentsize;
extern const struct tfield eh_phnum;
extern const struct tfield eh_shentsize;
extern const struct tfield eh_shnum;
extern const struct tfield eh_shstrndx;
extern const struct tfield sh_name;
extern const struct tfield sh_type;
extern const struct tfield sh_addr;
extern const struct tfield sh_offset;
extern const struct tfield sh_size;
extern const struct tfield sh_link;
extern const struct tfield sh_info;
extern const struct tfield sh_entsize;
extern const struct tfield ph_type;
extern const struct tfield ph_offset;
extern const struct tfield ph_vaddr;
extern const struct tfield ph_filesz;
extern const struct tfield ph_align;
extern const struct tfield st_name;
extern const struct tfield st_value;
extern const struct tfield st_size;
extern const struct tfield st_info;
extern const struct tfield st_shndx;

enum {
    SEC_SHSTRTAB = 1,
    SEC_DYNSTR,
    SEC_DYNSYM,
    SEC_STRTAB,
    SEC_SYMTAB,
    SEC_PYRUNTIME,
    SEC_HASH, /* .dynsym's hash table, or an empty .comment in an image without one */
    SEC_COUNT
};
enum {
    SHT_PROGBITS = 1,
    SHT_SYMTAB = 2,
    SHT_STRTAB = 3,
    SHT_HASH = 5,
    SHT_DYNSYM = 11,
    SHT_GNU_HASH = 0x6ffffff6
};
/* The hash table an image is built with. */
enum thash { HASH_NONE, HASH_GNU, HASH_SYSV };
enum { PT_LOAD = 1, PT_DYNAMIC = 2, PHDR_SLOTS = 4, IMG_CAP = 2048 };

struct img {
    uint8_t *buf;
    size_t cap;
    size_t len;
    bool is64;
    bool big;
    size_t phoff;
    size_t shoff;
    size_t off[SEC_COUNT];
    size_t size[SEC_COUNT];
    enum thash hash;
    size_t bloom_off; /* GNU: where the parts of the hash table are, in the file */
    size_t buckets_off;
    size_t chain_off;
};

/* The shapes every altered image is tried in. */
struct tshape {
    bool is64;
    bool big;
};
extern const struct tshape shapes[4];
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

struct tsym {
    uint32_t name;
    uint64_t value;
    uint64_t size;
    uint8_t info;
    uint16_t shndx;
};

struct tload {
    uint32_t type;
    uint64_t offset;
    uint64_t vaddr;
    uint64_t filesz;
    uint64_t align;
};

enum { DYN_SYMS = 4, HASH_BUCKETS = 3, GNU_BLOOM_WORDS = 2, GNU_BLOOM_SHIFT = 6 };

void put(struct img *m, size_t off, unsigned width, uint64_t v);
void set_eh(struct img *m, struct tfield f, uint64_t v);
void set_sh(struct img *m, size_t index, struct tfield f, uint64_t v);
void set_sym(struct img *m, int table, size_t index, struct tfield f, uint64_t v);
/* Fills every program header slot from LOADS; slots past N are PT_NULL. */
void write_program_headers(struct img *m, const struct tload *loads, size_t n);
/* A small valid executable: .dynsym has _PyRuntime, an undefined symbol and "shared"; .symtab
 * has a nameless section symbol, a LOCAL interp_head and another "shared"; .PyRuntime is a
 * section; .dynsym has the hash table HASH. */
void build_hashed(struct img *m, bool is64, bool big, enum thash hash);
void build(struct img *m, bool is64, bool big);
/* Opens a heap copy of exactly LEN bytes of M, so that ASan sees any read past them. The caller
 * frees *COPY after closing the result. */
struct elf *open_copy(const struct img *m, size_t len, uint8_t **copy, struct pt_error *err);
/* Opens M and checks what it finds: .PyRuntime, _PyRuntime, the LOCAL interp_head and "shared"
 * (from .dynsym, not .symtab) when it has sections, a load bias in any case; and that lookups
 * of what is absent or undefined answer 1 and leave the error alone. */
void expect_usable(const struct img *m, bool with_sections);

#endif
