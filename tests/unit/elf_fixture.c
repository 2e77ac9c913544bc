/* elf_fixture: the ELF images test_elf and test_elf_hash build. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/target/elf.h"
#include "core/util/error.h"
#include "elf_fixture.h"

const struct tfield eh_type = {16, 2, 16, 2};
const struct tfield eh_phoff = {28, 4, 32, 8};
const struct tfield eh_shoff = {32, 4, 40, 8};
const struct tfield eh_phentsize = {42, 2, 54, 2};
const struct tfield eh_phnum = {44, 2, 56, 2};
const struct tfield eh_shentsize = {46, 2, 58, 2};
const struct tfield eh_shnum = {48, 2, 60, 2};
const struct tfield eh_shstrndx = {50, 2, 62, 2};
const struct tfield sh_name = {0, 4, 0, 4};
const struct tfield sh_type = {4, 4, 4, 4};
const struct tfield sh_addr = {12, 4, 16, 8};
const struct tfield sh_offset = {16, 4, 24, 8};
const struct tfield sh_size = {20, 4, 32, 8};
const struct tfield sh_link = {24, 4, 40, 4};
const struct tfield sh_info = {28, 4, 44, 4};
const struct tfield sh_entsize = {36, 4, 56, 8};
const struct tfield ph_type = {0, 4, 0, 4};
const struct tfield ph_offset = {4, 4, 8, 8};
const struct tfield ph_vaddr = {8, 4, 16, 8};
const struct tfield ph_filesz = {16, 4, 32, 8};
const struct tfield ph_align = {28, 4, 48, 8};
const struct tfield st_name = {0, 4, 0, 4};
const struct tfield st_value = {4, 4, 8, 8};
const struct tfield st_size = {8, 4, 16, 8};
const struct tfield st_info = {12, 1, 4, 1};
const struct tfield st_shndx = {14, 2, 6, 2};

const struct tshape shapes[4] = {{true, false}, {false, true}, {true, true}, {false, false}};

void put(struct img *m, size_t off, unsigned width, uint64_t v)
{
    assert_true(off + width <= m->cap);
    for (unsigned i = 0; i < width; i++) {
        unsigned shift = m->big ? 8 * (width - 1 - i) : 8 * i;
        m->buf[off + i] = (uint8_t)(v >> shift);
    }
}

static void set(struct img *m, size_t base, struct tfield f, uint64_t v)
{
    put(m, base + (m->is64 ? f.off64 : f.off32), m->is64 ? f.width64 : f.width32, v);
}

void set_eh(struct img *m, struct tfield f, uint64_t v)
{
    set(m, 0, f, v);
}

void set_sh(struct img *m, size_t index, struct tfield f, uint64_t v)
{
    set(m, m->shoff + index * (m->is64 ? 64 : 40), f, v);
}

void set_sym(struct img *m, int table, size_t index, struct tfield f, uint64_t v)
{
    set(m, m->off[table] + index * (m->is64 ? 24 : 16), f, v);
}

/* Appends section SEC's bytes at the next ALIGN boundary. */
static void add_data(struct img *m, int sec, const void *data, size_t size, size_t align)
{
    m->len = (m->len + align - 1) / align * align;
    assert_true(m->len + size <= m->cap);
    memcpy(m->buf + m->len, data, size);
    m->off[sec] = m->len;
    m->size[sec] = size;
    m->len += size;
}

/* Appends a string table holding NAMES; fills OFFS with where each one starts. */
static void add_strings(struct img *m, int sec, const char *const *names, size_t n, uint32_t *offs)
{
    char table[256] = "";
    size_t len = 1;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]) + 1;
        assert_true(len + l <= sizeof table);
        memcpy(table + len, names[i], l);
        offs[i] = (uint32_t)len;
        len += l;
    }
    add_data(m, sec, table, len, 1);
}

static void add_symbols(struct img *m, int sec, const struct tsym *syms, size_t n)
{
    uint8_t zero[4 * 24] = {0};
    size_t entsize = m->is64 ? 24 : 16;
    assert_true(n * entsize <= sizeof zero);
    add_data(m, sec, zero, n * entsize, 8);
    for (size_t i = 0; i < n; i++) {
        set_sym(m, sec, i, st_name, syms[i].name);
        set_sym(m, sec, i, st_value, syms[i].value);
        set_sym(m, sec, i, st_size, syms[i].size);
        set_sym(m, sec, i, st_info, syms[i].info);
        set_sym(m, sec, i, st_shndx, syms[i].shndx);
    }
}

static void write_section_headers(struct img *m, const uint32_t *names)
{
    static const uint32_t hash_types[] = {SHT_PROGBITS, SHT_GNU_HASH, SHT_HASH};
    const uint32_t types[SEC_COUNT] = {0,          SHT_STRTAB, SHT_STRTAB,   SHT_DYNSYM,
                                       SHT_STRTAB, SHT_SYMTAB, SHT_PROGBITS, hash_types[m->hash]};
    m->shoff = (m->len + 7) / 8 * 8;
    m->len = m->shoff + SEC_COUNT * (m->is64 ? 64 : 40);
    assert_true(m->len <= m->cap);
    for (size_t i = 1; i < SEC_COUNT; i++) {
        set_sh(m, i, sh_name, names[i - 1]);
        set_sh(m, i, sh_type, types[i]);
        set_sh(m, i, sh_offset, m->off[i]);
        set_sh(m, i, sh_size, m->size[i]);
    }
    set_sh(m, SEC_DYNSYM, sh_link, SEC_DYNSTR);
    set_sh(m, SEC_DYNSYM, sh_entsize, m->is64 ? 24 : 16);
    set_sh(m, SEC_SYMTAB, sh_link, SEC_STRTAB);
    set_sh(m, SEC_SYMTAB, sh_entsize, m->is64 ? 24 : 16);
    if (m->hash != HASH_NONE) {
        set_sh(m, SEC_HASH, sh_link, SEC_DYNSYM);
        set_sh(m, SEC_HASH, sh_entsize, m->hash == HASH_SYSV ? 4 : 0);
    }
    set_sh(m, SEC_PYRUNTIME, sh_addr, 0x403000);
    set_sh(m, SEC_PYRUNTIME, sh_offset, 0x3000);
    set_sh(m, SEC_PYRUNTIME, sh_size, 0x548);
}

void write_program_headers(struct img *m, const struct tload *loads, size_t n)
{
    set_eh(m, eh_phnum, PHDR_SLOTS);
    for (size_t i = 0; i < PHDR_SLOTS; i++) {
        struct tload l = i < n ? loads[i] : (struct tload){0};
        size_t base = m->phoff + i * (m->is64 ? 56 : 32);
        set(m, base, ph_type, l.type);
        set(m, base, ph_offset, l.offset);
        set(m, base, ph_vaddr, l.vaddr);
        set(m, base, ph_filesz, l.filesz);
        set(m, base, ph_align, l.align);
    }
}

/* The names of the built .dynsym, by symbol index (0 is the null symbol). */
static const char *const dynnames[] = {"_PyRuntime", "undefined_function", "shared"};

static uint32_t gnu_hash(const char *name)
{
    uint32_t h = 5381;
    for (const char *p = name; *p != '\0'; p++) {
        h = h * 33 + (unsigned char)*p;
    }
    return h;
}

static uint32_t sysv_hash(const char *name)
{
    uint32_t h = 0;
    for (const char *p = name; *p != '\0'; p++) {
        h = (h << 4) + (unsigned char)*p;
        h ^= (h & 0xf0000000u) >> 24;
        h &= 0x0fffffffu;
    }
    return h;
}

/* Appends .dynsym's hash table, written word by word as ld writes it: GNU (symbols 1..3 in
 * three buckets; the names were chosen so that index order is bucket order, as the format
 * wants) or SysV (every symbol chained into its bucket). */
static void add_hash(struct img *m)
{
    uint8_t zero[128] = {0};
    size_t word = m->is64 ? 8 : 4;
    if (m->hash == HASH_SYSV) {
        add_data(m, SEC_HASH, zero, 4 * (2 + HASH_BUCKETS + DYN_SYMS), 8);
        size_t base = m->off[SEC_HASH];
        uint32_t bucket[HASH_BUCKETS] = {0};
        put(m, base, 4, HASH_BUCKETS);
        put(m, base + 4, 4, DYN_SYMS);
        m->buckets_off = base + 8;
        m->chain_off = m->buckets_off + 4 * HASH_BUCKETS;
        for (uint32_t i = 1; i < DYN_SYMS; i++) {
            uint32_t b = sysv_hash(dynnames[i - 1]) % HASH_BUCKETS;
            put(m, m->chain_off + 4 * i, 4, bucket[b]);
            bucket[b] = i;
        }
        for (size_t b = 0; b < HASH_BUCKETS; b++) {
            put(m, m->buckets_off + 4 * b, 4, bucket[b]);
        }
        return;
    }
    add_data(m, SEC_HASH, zero, 16 + GNU_BLOOM_WORDS * word + 4 * (HASH_BUCKETS + DYN_SYMS - 1), 8);
    size_t base = m->off[SEC_HASH];
    uint64_t bloom[GNU_BLOOM_WORDS] = {0};
    put(m, base, 4, HASH_BUCKETS);
    put(m, base + 4, 4, 1); /* symoffset: the null symbol is left out */
    put(m, base + 8, 4, GNU_BLOOM_WORDS);
    put(m, base + 12, 4, GNU_BLOOM_SHIFT);
    m->bloom_off = base + 16;
    m->buckets_off = m->bloom_off + GNU_BLOOM_WORDS * word;
    m->chain_off = m->buckets_off + 4 * HASH_BUCKETS;
    uint32_t last_bucket = 0;
    for (uint32_t i = 1; i < DYN_SYMS; i++) {
        uint32_t h = gnu_hash(dynnames[i - 1]);
        uint32_t b = h % HASH_BUCKETS;
        bool last = i + 1 == DYN_SYMS || gnu_hash(dynnames[i]) % HASH_BUCKETS != b;
        assert_true(b >= last_bucket);
        if (i == 1 || b != last_bucket) {
            put(m, m->buckets_off + 4 * b, 4, i);
        }
        last_bucket = b;
        put(m, m->chain_off + 4 * (i - 1), 4, last ? h | 1 : h & ~1u);
        unsigned bits = (unsigned)word * 8;
        bloom[(h / bits) % GNU_BLOOM_WORDS] |= (uint64_t)1 << (h % bits);
        bloom[(h / bits) % GNU_BLOOM_WORDS] |= (uint64_t)1 << ((h >> GNU_BLOOM_SHIFT) % bits);
    }
    for (size_t i = 0; i < GNU_BLOOM_WORDS; i++) {
        put(m, m->bloom_off + i * word, (unsigned)word, bloom[i]);
    }
}

void build_hashed(struct img *m, bool is64, bool big, enum thash hash)
{
    static const char *const shnames[] = {".shstrtab", ".dynstr", ".dynsym",
                                          ".strtab",   ".symtab", ".PyRuntime",
                                          ".gnu.hash", ".hash",   ".comment"};
    static const char *const names[] = {"interp_head", "shared"};
    uint32_t sh[9];
    uint32_t dyn[3];
    uint32_t loc[2];
    *m = (struct img){
        .buf = calloc(1, IMG_CAP), .cap = IMG_CAP, .is64 = is64, .big = big, .hash = hash};
    assert_non_null(m->buf);
    memcpy(m->buf, "\177ELF", 4);
    m->buf[4] = is64 ? 2 : 1;
    m->buf[5] = big ? 2 : 1;
    m->buf[6] = 1;
    set_eh(m, eh_type, 2);
    m->phoff = is64 ? 64 : 52;
    m->len = m->phoff + PHDR_SLOTS * (is64 ? 56 : 32);
    set_eh(m, eh_phoff, m->phoff);
    set_eh(m, eh_phentsize, is64 ? 56 : 32);
    /* Debian's layout: a page below the first segment, mapped from file offset 0. */
    write_program_headers(m,
                          (const struct tload[]){{PT_LOAD, 0, 0x3ff000, 0x1000, 0x1000},
                                                 {PT_LOAD, 0x1000, 0x400000, 0x24ec0, 0x1000}},
                          2);
    add_strings(m, SEC_SHSTRTAB, shnames, 9, sh);
    add_strings(m, SEC_DYNSTR, dynnames, 3, dyn);
    add_symbols(m, SEC_DYNSYM,
                (const struct tsym[]){{0, 0, 0, 0, 0},
                                      {dyn[0], 0x403000, 0x548, 0x11, SEC_PYRUNTIME},
                                      {dyn[1], 0, 0, 0x12, 0},
                                      {dyn[2], 0x1111, 4, 0x11, SEC_PYRUNTIME}},
                4);
    add_strings(m, SEC_STRTAB, names, 2, loc);
    add_symbols(m, SEC_SYMTAB,
                (const struct tsym[]){{0, 0, 0, 0, 0},
                                      {0, 0x403000, 0, 0x03, SEC_PYRUNTIME}, /* STT_SECTION */
                                      {loc[0], 0x404000, 8, 0x01, SEC_PYRUNTIME},
                                      {loc[1], 0x2222, 4, 0x11, SEC_PYRUNTIME}},
                4);
    if (hash == HASH_NONE) {
        add_data(m, SEC_HASH, "", 0, 1);
    } else {
        add_hash(m);
    }
    /* The hash section is named for its kind: .gnu.hash, .hash or .comment. */
    sh[6] = sh[hash == HASH_GNU ? 6 : hash == HASH_SYSV ? 7 : 8];
    write_section_headers(m, sh);
    set_eh(m, eh_shoff, m->shoff);
    set_eh(m, eh_shentsize, is64 ? 64 : 40);
    set_eh(m, eh_shnum, SEC_COUNT);
    set_eh(m, eh_shstrndx, SEC_SHSTRTAB);
}

void build(struct img *m, bool is64, bool big)
{
    build_hashed(m, is64, big, HASH_NONE);
}

struct elf *open_copy(const struct img *m, size_t len, uint8_t **copy, struct pt_error *err)
{
    *copy = malloc(len > 0 ? len : 1);
    assert_non_null(*copy);
    memcpy(*copy, m->buf, len);
    return elf_open_buf(*copy, len, err);
}

void expect_usable(const struct img *m, bool with_sections)
{
    uint8_t *copy;
    struct pt_error err = {.code = PT_E_IO, .msg = "untouched"};
    struct elf *e = open_copy(m, m->len, &copy, &err);
    assert_non_null(e);
    struct elf_section sec;
    struct elf_symbol sym;
    assert_int_equal(elf_find_section(e, ".PyRuntime", &sec, &err), with_sections ? 0 : 1);
    assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, &err), with_sections ? 0 : 1);
    if (with_sections) {
        assert_int_equal(sec.addr, 0x403000);
        assert_int_equal(sec.offset, 0x3000);
        assert_int_equal(sec.size, 0x548);
        assert_int_equal(sym.value, 0x403000);
        assert_int_equal(sym.size, 0x548);
        assert_int_equal(elf_find_symbol(e, "interp_head", &sym, &err), 0);
        assert_int_equal(sym.value, 0x404000);
        assert_int_equal(sym.size, 8);
        assert_int_equal(elf_find_symbol(e, "shared", &sym, &err), 0);
        assert_int_equal(sym.value, 0x1111);
    }
    static const char *const absent[] = {".PyRuntim", ".PyRuntime.", "undefined_function", "",
                                         "missing"};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        assert_int_equal(elf_find_section(e, absent[i], &sec, &err), 1);
        assert_int_equal(elf_find_symbol(e, absent[i], &sym, &err), 1);
    }
    assert_int_equal(err.code, PT_E_IO);
    assert_string_equal(err.msg, "untouched");
    uint64_t bias = 1;
    assert_int_equal(elf_load_bias(e, 0x400000, 0x1000, &bias, &err), 0);
    assert_int_equal(bias, 0);
    assert_false(elf_is_dyn(e));
    elf_close(e);
    free(copy);
}
