/* elf: find sections and symbols in an ELF file and the load bias of its mapping. */
#ifndef PYTOP_CORE_ELF_H
#define PYTOP_CORE_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_error;

struct elf_section {
    uint64_t addr;    /* sh_addr: the link-time virtual address */
    uint64_t offset;  /* sh_offset in the file */
    uint64_t size;
};

struct elf_symbol {
    uint64_t value;   /* st_value: link-time address */
    uint64_t size;
};

struct elf;

/* Parses the ELF image BUF[0..LEN), which must stay valid and unchanged until elf_close().
 * ELF32 and ELF64, either byte order. Errors: PT_E_FORMAT (malformed or truncated), PT_E_LIMIT
 * (more than LIMIT_ELF_SECTIONS sections or segments), PT_E_NOMEM. */
struct elf *elf_open_buf(const uint8_t *buf, size_t len, struct pt_error *err);

/* Maps the file open on FD (the fd may be closed afterwards) and parses it as elf_open_buf().
 * Files over LIMIT_ELF_FILE are refused (PT_E_LIMIT). Errors also: PT_E_IO. */
struct elf *elf_open_fd(int fd, struct pt_error *err);

void elf_close(struct elf *e);

/* Finds section NAME. Returns 0 and fills OUT, 1 when there is no such section (ERR untouched),
 * or -1 (PT_E_FORMAT) when the section table is malformed. */
int elf_find_section(const struct elf *e, const char *name, struct elf_section *out,
                     struct pt_error *err);

/* Finds a defined symbol NAME in .dynsym, then .symtab (LOCAL symbols included). .dynsym is
 * searched through its hash table (.gnu.hash, else .hash), as the dynamic linker does, and
 * scanned when it has none or a malformed one; .symtab has none, and is scanned. Returns 0 and fills OUT, 1 when absent, -1 on a
 * malformed symbol table (PT_E_FORMAT) or one with more than LIMIT_ELF_SYMBOLS entries
 * (PT_E_LIMIT). */
int elf_find_symbol(const struct elf *e, const char *name, struct elf_symbol *out,
                    struct pt_error *err);

/* One name for elf_find_symbols(), and what was found for it. */
struct elf_lookup {
    const char *name;
    bool exported; /* a name of an API the file exports, if it exports any */
    const char *file; /* NULL, or the source file a LOCAL symbol of .symtab must come from (the
                       * STT_FILE symbol before it): for names that several files define */
    int found;     /* set: 0 found (SYM filled), 1 absent */
    struct elf_symbol sym;
};

/* Finds each name of LOOKUPS[0..N) as elf_find_symbol() does, reading each symbol table once
 * for all of them: the names .dynsym does not hold are looked for in one scan of .symtab.
 * Except an exported name, once another exported name of LOOKUPS was found in .dynsym: a file
 * that exports part of an API exports all of it, so a release build's missing debug function
 * costs no scan of a large .symtab. .symtab is not read at all when no name is left for it.
 * Returns 0 with every found set, or -1 as elf_find_symbol(). */
int elf_find_symbols(const struct elf *e, struct elf_lookup *lookups, size_t n,
                     struct pt_error *err);

/* The load bias (runtime address minus link-time address) of the image, given one of its file
 * mappings: MAP_START mapped from file offset MAP_OFFSET. Returns 0 and fills *BIAS, or -1
 * (PT_E_FORMAT) when no PT_LOAD segment covers that offset. */
int elf_load_bias(const struct elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *bias,
                  struct pt_error *err);

/* The file bytes of section SEC (found by elf_find_section on E), valid until elf_close(), and
 * their count in *LEN; NULL when the section lies outside the file (SHT_NOBITS, truncated). */
const uint8_t *elf_section_bytes(const struct elf *e, const struct elf_section *sec, size_t *len);

/* True for ET_DYN images (shared objects and PIE executables). */
bool elf_is_dyn(const struct elf *e);

#endif
