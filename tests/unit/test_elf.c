/* test_elf: elf.c against real Python binaries and against hostile images built in memory. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/target/elf.h"
#include "core/util/error.h"
#include "core/util/limits.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests/unit/data"
#endif

static const char expected_path[] = TEST_DATA_DIR "/elf/expected.txt";

/* Real binaries: expected.txt holds what readelf and /proc/PID/maps said (make-expected.sh).
 * describe() writes to OUT, in that format, what E says about the subject of LINE. */
static void describe(const struct elf *e, const char *line, char *out, size_t size)
{
    char kind[16];
    char path[512];
    char name[128];
    uint64_t v[3] = {0};
    struct pt_error err = {0};
    int rc = -2;
    assert_int_equal(sscanf(line, "%15s %511s %127s", kind, path, name), 3);
    if (strstr(kind, "section") != NULL) {
        struct elf_section sec = {0};
        rc = elf_find_section(e, name, &sec, &err);
        snprintf(out, size, "section %s %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 "\n", path, name,
                 sec.addr, sec.offset, sec.size);
    } else if (strstr(kind, "symbol") != NULL) {
        struct elf_symbol sym = {0};
        rc = elf_find_symbol(e, name, &sym, &err);
        snprintf(out, size, "symbol %s %s 0x%" PRIx64 " 0x%" PRIx64 "\n", path, name, sym.value,
                 sym.size);
    } else if (strcmp(kind, "bias") == 0 &&
               sscanf(line, "%*s %*s %" SCNx64 " %" SCNx64, &v[0], &v[1]) == 2) {
        rc = elf_load_bias(e, v[0], v[1], &v[2], &err);
        snprintf(out, size, "bias %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 "\n", path, v[0], v[1],
                 v[2]);
    }
    if (rc == 1) {
        snprintf(out, size, "no%s %s %s\n", kind + (kind[0] == 'n' ? 2 : 0), path, name);
    } else if (rc < 0) {
        snprintf(out, size, "error (%s)\n", rc == -2 ? "unknown line" : err.msg);
    }
}

/* Checks E against every line of expected.txt about PATH. Returns the number of lines checked,
 * or -1 when expected.txt describes a file of another size (another build) at PATH. */
static int check_against_expected(const struct elf *e, const char *path, long long size)
{
    FILE *f = fopen(expected_path, "r");
    assert_non_null(f);
    char line[1024];
    int checked = 0;
    while (checked >= 0 && fgets(line, sizeof line, f) != NULL) {
        char file[512];
        long long file_size;
        char got[1024];
        if (line[0] == '#' || sscanf(line, "%*s %511s", file) != 1 || strcmp(file, path) != 0) {
            continue;
        }
        if (sscanf(line, "file %*s %lld", &file_size) == 1) {
            checked = file_size == size ? 0 : -1;
            continue;
        }
        describe(e, line, got, sizeof got);
        if (strcmp(got, line) != 0) {
            print_error("expected: %s     got: %s", line, got);
            fail();
        }
        checked++;
    }
    fclose(f);
    return checked;
}

struct real_binary {
    const char *path;
    bool dyn;
};

static void check_real_binary(void **state)
{
    const struct real_binary *b = *state;
    int fd = open(b->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        print_message("skipped: %s is not installed\n", b->path);
        skip();
    }
    struct stat st;
    struct pt_error err = {0};
    assert_int_equal(fstat(fd, &st), 0);
    struct elf *e = elf_open_fd(fd, &err);
    close(fd);
    assert_string_equal(err.msg, ""); /* shows why the open failed */
    assert_non_null(e);
    assert_int_equal(elf_is_dyn(e), b->dyn);
    int checked = check_against_expected(e, b->path, (long long)st.st_size);
    elf_close(e);
    if (checked < 0) {
        print_message("skipped: %s is not the build expected.txt describes "
                      "(rerun tests/unit/data/elf/make-expected.sh)\n",
                      b->path);
        skip();
    }
    /* Six section and symbol lines per binary, then one bias line per mapping. */
    assert_true(checked >= 8);
}

static const struct CMUnitTest real_binary_tests[] = {
    {"test_elf_finds_pyruntime_section_and_symbol_in_debian_python315", check_real_binary, NULL,
     NULL, &(struct real_binary){"/var/cache/pytop-pythons/root/usr/bin/python3.15", false}},
    {"test_elf_finds_debug_symbols_through_the_hash_table_of_debian_python315d", check_real_binary,
     NULL, NULL, &(struct real_binary){"/var/cache/pytop-pythons/root/usr/bin/python3.15d", false}},
    {"test_elf_finds_pyruntime_section_and_symbol_in_pyenv_libpython312", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", true}},
    {"test_elf_finds_pyruntime_symbol_but_no_section_in_pyenv_libpython39", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0", true}},
    {"test_elf_finds_local_interp_head_in_symtab_of_pyenv_libpython36", check_real_binary, NULL,
     NULL, &(struct real_binary){"/root/.pyenv/versions/3.6.15/lib/libpython3.6m.so.1.0", true}},
};

/* Images built here, written field by field from the gABI's record layouts. */

struct tfield {
    uint8_t off32;
    uint8_t width32;
    uint8_t off64;
    uint8_t width64;
};

static const struct tfield eh_type = {16, 2, 16, 2};
static const struct tfield eh_phoff = {28, 4, 32, 8};
static const struct tfield eh_shoff = {32, 4, 40, 8};
static const struct tfield eh_phentsize = {42, 2, 54, 2};
static const struct tfield eh_phnum = {44, 2, 56, 2};
static const struct tfield eh_shentsize = {46, 2, 58, 2};
static const struct tfield eh_shnum = {48, 2, 60, 2};
static const struct tfield eh_shstrndx = {50, 2, 62, 2};
static const struct tfield sh_name = {0, 4, 0, 4};
static const struct tfield sh_type = {4, 4, 4, 4};
static const struct tfield sh_addr = {12, 4, 16, 8};
static const struct tfield sh_offset = {16, 4, 24, 8};
static const struct tfield sh_size = {20, 4, 32, 8};
static const struct tfield sh_link = {24, 4, 40, 4};
static const struct tfield sh_info = {28, 4, 44, 4};
static const struct tfield sh_entsize = {36, 4, 56, 8};
static const struct tfield ph_type = {0, 4, 0, 4};
static const struct tfield ph_offset = {4, 4, 8, 8};
static const struct tfield ph_vaddr = {8, 4, 16, 8};
static const struct tfield ph_filesz = {16, 4, 32, 8};
static const struct tfield ph_align = {28, 4, 48, 8};
static const struct tfield st_name = {0, 4, 0, 4};
static const struct tfield st_value = {4, 4, 8, 8};
static const struct tfield st_size = {8, 4, 16, 8};
static const struct tfield st_info = {12, 1, 4, 1};
static const struct tfield st_shndx = {14, 2, 6, 2};

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
static const struct {
    bool is64;
    bool big;
} shapes[] = {{true, false}, {false, true}, {true, true}, {false, false}};
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

static void put(struct img *m, size_t off, unsigned width, uint64_t v)
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

static void set_eh(struct img *m, struct tfield f, uint64_t v)
{
    set(m, 0, f, v);
}

static void set_sh(struct img *m, size_t index, struct tfield f, uint64_t v)
{
    set(m, m->shoff + index * (m->is64 ? 64 : 40), f, v);
}

static void set_sym(struct img *m, int table, size_t index, struct tfield f, uint64_t v)
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

struct tsym {
    uint32_t name;
    uint64_t value;
    uint64_t size;
    uint8_t info;
    uint16_t shndx;
};

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

struct tload {
    uint32_t type;
    uint64_t offset;
    uint64_t vaddr;
    uint64_t filesz;
    uint64_t align;
};

/* Fills every program header slot from LOADS; slots past N are PT_NULL. */
static void write_program_headers(struct img *m, const struct tload *loads, size_t n)
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
enum { DYN_SYMS = 4, HASH_BUCKETS = 3, GNU_BLOOM_WORDS = 2, GNU_BLOOM_SHIFT = 6 };

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

/* A small valid executable: .dynsym has _PyRuntime, an undefined symbol and "shared"; .symtab
 * has a nameless section symbol, a LOCAL interp_head and another "shared"; .PyRuntime is a
 * section; .dynsym has the hash table HASH. */
static void build_hashed(struct img *m, bool is64, bool big, enum thash hash)
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

static void build(struct img *m, bool is64, bool big)
{
    build_hashed(m, is64, big, HASH_NONE);
}

/* Opens a heap copy of exactly LEN bytes of M, so that ASan sees any read past them. The caller
 * frees *COPY after closing the result. */
static struct elf *open_copy(const struct img *m, size_t len, uint8_t **copy, struct pt_error *err)
{
    *copy = malloc(len > 0 ? len : 1);
    assert_non_null(*copy);
    memcpy(*copy, m->buf, len);
    return elf_open_buf(*copy, len, err);
}

/* Opens M and checks what it finds: .PyRuntime, _PyRuntime, the LOCAL interp_head and "shared"
 * (from .dynsym, not .symtab) when it has sections, a load bias in any case; and that lookups
 * of what is absent or undefined answer 1 and leave the error alone. */
static void expect_usable(const struct img *m, bool with_sections)
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

static void test_elf_open_rejects_every_truncation(void **state)
{
    (void)state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build(&m, shapes[s].is64, shapes[s].big);
        size_t full = m.len;
        for (m.len = 0; m.len < full; m.len++) {
            uint8_t *copy;
            struct pt_error err = {0};
            assert_null(open_copy(&m, m.len, &copy, &err));
            assert_int_equal(err.code, PT_E_FORMAT);
            free(copy);
        }
        free(m.buf);
    }
    struct pt_error err = {0};
    assert_null(elf_open_buf(NULL, 64, &err));
    assert_int_equal(err.code, PT_E_FORMAT);
}

/* Altered images: each case changes a built image (in every shape) and expects
 * STEP to fail with PT_E_FORMAT, or the image to stay usable. A change sets FIELD of record
 * INDEX (the ELF header, a section header, a .dynsym entry, or byte INDEX of e_ident) to BASE +
 * VALUE, where BASE is 0, the file's length, or the size of the section it names. */
enum record { NO_RECORD, IDENT, EHDR, SHDR, DYNSYM };
enum { ZERO = -1, FILE_LEN = -2 };
enum step { AT_OPEN, AT_SECTION, AT_SYMBOL, USABLE, USABLE_WITHOUT_SECTIONS };

struct change {
    enum record record;
    size_t index;
    const struct tfield *field;
    int base;
    uint64_t value;
};

struct altered {
    enum step step;
    struct change change[6];
};

static void apply_change(struct img *m, const struct change *c)
{
    uint64_t base = c->base == FILE_LEN ? m->len : c->base == ZERO ? 0 : m->size[c->base];
    uint64_t v = base + c->value; /* wraps on purpose: FILE_LEN with -8 is 8 bytes before the end */
    switch (c->record) {
    case NO_RECORD:
        break;
    case IDENT:
        m->buf[c->index] = (uint8_t)v;
        break;
    case EHDR:
        set_eh(m, *c->field, v);
        break;
    case SHDR:
        set_sh(m, c->index, *c->field, v);
        break;
    case DYNSYM:
        set_sym(m, SEC_DYNSYM, c->index, *c->field, v);
        break;
    }
}

static void check_altered(void **state)
{
    const struct altered *a = *state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build(&m, shapes[s].is64, shapes[s].big);
        for (size_t i = 0; i < sizeof a->change / sizeof a->change[0]; i++) {
            apply_change(&m, &a->change[i]);
        }
        if (a->step == USABLE || a->step == USABLE_WITHOUT_SECTIONS) {
            expect_usable(&m, a->step == USABLE);
            free(m.buf);
            continue;
        }
        uint8_t *copy;
        struct pt_error err = {0};
        struct elf *e = open_copy(&m, m.len, &copy, &err);
        struct elf_section sec;
        struct elf_symbol sym;
        if (a->step == AT_OPEN) {
            assert_null(e);
        } else {
            assert_non_null(e);
            assert_int_equal(a->step == AT_SECTION ? elf_find_section(e, ".PyRuntime", &sec, &err)
                                                   : elf_find_symbol(e, "interp_head", &sym, &err),
                             -1);
        }
        assert_int_equal(err.code, PT_E_FORMAT);
        assert_true(err.msg[0] != '\0');
        elf_close(e); /* NULL after a failed open: elf_close() accepts it */
        free(copy);
        free(m.buf);
    }
}

static const struct CMUnitTest altered_image_tests[] = {
    {"test_elf_answers_lookups_in_every_class_and_byte_order", check_altered, NULL, NULL,
     &(struct altered){USABLE, {{0}}}},
    {"test_elf_open_follows_extended_section_numbering", check_altered, NULL, NULL,
     &(struct altered){USABLE,
                       {{EHDR, 0, &eh_shnum, ZERO, 0},
                        {SHDR, 0, &sh_size, ZERO, SEC_COUNT},
                        {EHDR, 0, &eh_shstrndx, ZERO, 0xffff},
                        {SHDR, 0, &sh_link, ZERO, SEC_SHSTRTAB},
                        {EHDR, 0, &eh_phnum, ZERO, 0xffff},
                        {SHDR, 0, &sh_info, ZERO, 2}}}},
    {"test_elf_open_accepts_an_image_without_sections", check_altered, NULL, NULL,
     &(struct altered){USABLE_WITHOUT_SECTIONS,
                       {{EHDR, 0, &eh_shoff, ZERO, 0}, {EHDR, 0, &eh_shnum, ZERO, 0}}}},
    {"test_elf_open_rejects_bad_magic", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 1, NULL, ZERO, 'e'}}}},
    {"test_elf_open_rejects_unknown_class", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 4, NULL, ZERO, 3}}}},
    {"test_elf_open_rejects_unknown_byte_order", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 5, NULL, ZERO, 0}}}},
    {"test_elf_open_rejects_unknown_version", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{IDENT, 6, NULL, ZERO, 2}}}},
    {"test_elf_open_rejects_section_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_section_table_offset_that_overflows", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shoff, ZERO, UINT64_MAX - 8}}}},
    {"test_elf_open_rejects_section_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shnum, ZERO, 0xfeff}}}},
    {"test_elf_open_rejects_section_entries_of_zero_bytes", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shentsize, ZERO, 0}}}},
    {"test_elf_open_rejects_section_entries_smaller_than_a_header", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shentsize, ZERO, 39}}}},
    {"test_elf_open_rejects_section_name_index_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shstrndx, ZERO, SEC_COUNT}}}},
    {"test_elf_open_rejects_reserved_section_name_index", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_shstrndx, ZERO, 0xff00}}}},
    {"test_elf_open_rejects_xindex_section_name_index_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shstrndx, ZERO, 0xffff}, {SHDR, 0, &sh_link, ZERO, 999}}}},
    {"test_elf_open_rejects_extended_section_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shnum, ZERO, 0}, {SHDR, 0, &sh_size, ZERO, 0xffffffff}}}},
    {"test_elf_open_rejects_extended_numbering_with_section_zero_past_end_of_file", check_altered,
     NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_shnum, ZERO, 0}, {EHDR, 0, &eh_shoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_extended_segment_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){
         AT_OPEN, {{EHDR, 0, &eh_phnum, ZERO, 0xffff}, {SHDR, 0, &sh_info, ZERO, 0x7fffffff}}}},
    {"test_elf_open_rejects_extended_segment_count_without_sections", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN,
                       {{EHDR, 0, &eh_phnum, ZERO, 0xffff},
                        {EHDR, 0, &eh_shoff, ZERO, 0},
                        {EHDR, 0, &eh_shnum, ZERO, 0}}}},
    {"test_elf_open_rejects_program_header_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phoff, FILE_LEN, -8}}}},
    {"test_elf_open_rejects_program_header_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phnum, ZERO, 0xfffe}}}},
    {"test_elf_open_rejects_program_headers_smaller_than_a_header", check_altered, NULL, NULL,
     &(struct altered){AT_OPEN, {{EHDR, 0, &eh_phentsize, ZERO, 8}}}},
    {"test_elf_find_section_rejects_name_past_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_PYRUNTIME, &sh_name, SEC_SHSTRTAB, 0}}}},
    {"test_elf_find_section_rejects_string_table_without_nul", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, SEC_SHSTRTAB, -1}}}},
    {"test_elf_find_section_rejects_empty_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, ZERO, 0}}}},
    {"test_elf_find_section_rejects_string_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_offset, FILE_LEN, -4}}}},
    {"test_elf_find_section_rejects_string_table_size_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SECTION, {{SHDR, SEC_SHSTRTAB, &sh_size, ZERO, ~0u}}}},
    {"test_elf_find_symbol_rejects_size_not_a_multiple_of_entsize", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_size, SEC_DYNSYM, -1}}}},
    {"test_elf_find_symbol_rejects_entsize_zero", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_SYMTAB, &sh_entsize, ZERO, 0}}}},
    {"test_elf_find_symbol_rejects_entries_smaller_than_a_symbol", check_altered, NULL, NULL,
     &(struct altered){
         AT_SYMBOL,
         {{SHDR, SEC_SYMTAB, &sh_entsize, ZERO, 4}, {SHDR, SEC_SYMTAB, &sh_size, ZERO, 8}}}},
    {"test_elf_find_symbol_rejects_symbol_count_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_size, ZERO, 0xfffffff0}}}},
    {"test_elf_find_symbol_rejects_table_past_end_of_file", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_offset, FILE_LEN, -16}}}},
    {"test_elf_find_symbol_rejects_table_offset_that_overflows", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_offset, ZERO, UINT64_MAX - 8}}}},
    {"test_elf_find_symbol_rejects_string_table_link_past_the_sections", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSYM, &sh_link, ZERO, SEC_COUNT}}}},
    {"test_elf_find_symbol_rejects_string_table_without_nul", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{SHDR, SEC_DYNSTR, &sh_size, SEC_DYNSTR, -1}}}},
    {"test_elf_find_symbol_rejects_name_past_string_table", check_altered, NULL, NULL,
     &(struct altered){AT_SYMBOL, {{DYNSYM, 1, &st_name, SEC_DYNSTR, 0}}}},
};

/* Hash tables: each case builds the image with one, in every shape, changes parts of it, and
 * expects every lookup to answer as a scan of .dynsym would: a table that proves malformed on
 * the way is passed over for a scan. */
enum hpart {
    H_NONE,
    H_HEADER,       /* 32-bit word INDEX of the header */
    H_BLOOM,        /* GNU: bloom word INDEX (of the class's width) */
    H_BUCKET,       /* bucket INDEX */
    H_CHAIN,        /* chain word INDEX (GNU: of symbol INDEX + symoffset) */
    H_CHAIN_ENDLESS /* GNU: the end bit cleared in every chain word */
};

struct hchange {
    enum hpart part;
    size_t index;
    uint64_t value;
};

struct hash_case {
    enum thash hash;
    struct hchange change[3];
};

static uint32_t get32(const struct img *m, size_t off)
{
    uint32_t v = 0;
    for (unsigned i = 0; i < 4; i++) {
        unsigned shift = m->big ? 8 * (3 - i) : 8 * i;
        v |= (uint32_t)m->buf[off + i] << shift;
    }
    return v;
}

static void apply_hchange(struct img *m, const struct hchange *c)
{
    unsigned word = m->is64 ? 8 : 4;
    switch (c->part) {
    case H_NONE:
        break;
    case H_HEADER:
        put(m, m->off[SEC_HASH] + 4 * c->index, 4, c->value);
        break;
    case H_BLOOM:
        put(m, m->bloom_off + word * c->index, word, c->value);
        break;
    case H_BUCKET:
        put(m, m->buckets_off + 4 * c->index, 4, c->value);
        break;
    case H_CHAIN:
        put(m, m->chain_off + 4 * c->index, 4, c->value);
        break;
    case H_CHAIN_ENDLESS:
        for (size_t i = 0; i + 1 < DYN_SYMS; i++) {
            put(m, m->chain_off + 4 * i, 4, get32(m, m->chain_off + 4 * i) & ~1u);
        }
        break;
    }
}

static void check_hash_case(void **state)
{
    const struct hash_case *c = *state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build_hashed(&m, shapes[s].is64, shapes[s].big, c->hash);
        for (size_t i = 0; i < sizeof c->change / sizeof c->change[0]; i++) {
            apply_hchange(&m, &c->change[i]);
        }
        expect_usable(&m, true);
        free(m.buf);
    }
}

static const struct CMUnitTest hash_tests[] = {
    {"test_elf_finds_symbols_through_a_gnu_hash_table", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{0}}}},
    {"test_elf_finds_symbols_through_a_sysv_hash_table", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{0}}}},
    {"test_elf_gnu_hash_with_no_buckets_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 0, 0}}}},
    {"test_elf_gnu_hash_with_a_bloom_size_not_a_power_of_two_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 3}}}},
    {"test_elf_gnu_hash_with_an_empty_bloom_filter_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 0}}}},
    {"test_elf_gnu_hash_with_a_bloom_shift_past_the_hash_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 3, 32}}}},
    {"test_elf_gnu_hash_with_more_buckets_than_it_holds_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 0, 0xffffffff}}}},
    {"test_elf_gnu_hash_with_a_bloom_filter_larger_than_the_file_is_passed_over", check_hash_case,
     NULL, NULL, &(struct hash_case){HASH_GNU, {{H_HEADER, 2, 0x80000000}}}},
    {"test_elf_gnu_hash_starting_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_GNU, {{H_HEADER, 1, 1000}}}},
    {"test_elf_gnu_hash_bucket_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){
         HASH_GNU, {{H_BLOOM, 0, UINT64_MAX}, {H_BLOOM, 1, UINT64_MAX}, {H_BUCKET, 0, 1000}}}},
    {"test_elf_gnu_hash_chain_without_an_end_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){
         HASH_GNU, {{H_BLOOM, 0, UINT64_MAX}, {H_BLOOM, 1, UINT64_MAX}, {H_CHAIN_ENDLESS, 0, 0}}}},
    {"test_elf_sysv_hash_with_no_buckets_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_HEADER, 0, 0}}}},
    {"test_elf_sysv_hash_with_more_buckets_than_it_holds_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 0, 0xffffffff}}}},
    {"test_elf_sysv_hash_with_more_chain_entries_than_it_holds_is_passed_over", check_hash_case,
     NULL, NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 1, 0xffffffff}}}},
    {"test_elf_sysv_hash_chain_shorter_than_the_symbols_is_passed_over", check_hash_case, NULL,
     NULL, &(struct hash_case){HASH_SYSV, {{H_HEADER, 1, 2}}}},
    {"test_elf_sysv_hash_bucket_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_BUCKET, 2, 1000}}}},
    {"test_elf_sysv_hash_chain_past_the_symbols_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_CHAIN, 3, 1000}}}},
    {"test_elf_sysv_hash_chain_that_loops_is_passed_over", check_hash_case, NULL, NULL,
     &(struct hash_case){HASH_SYSV, {{H_CHAIN, 3, 3}}}},
};

static void test_elf_hash_tables_cut_short_anywhere_are_passed_over(void **state)
{
    (void)state;
    for (enum thash h = HASH_GNU; h <= HASH_SYSV; h++) {
        for (size_t s = 0; s < SHAPES; s++) {
            struct img m;
            build_hashed(&m, shapes[s].is64, shapes[s].big, h);
            for (size_t size = 0; size < m.size[SEC_HASH]; size++) {
                set_sh(&m, SEC_HASH, sh_size, size);
                expect_usable(&m, true);
            }
            /* Past the end of the file: not parsed at all. */
            set_sh(&m, SEC_HASH, sh_offset, m.len - 4);
            set_sh(&m, SEC_HASH, sh_size, m.size[SEC_HASH]);
            expect_usable(&m, true);
            free(m.buf);
        }
    }
}

/* Symbols before symoffset are not in the table: a bucket that leads there is malformed. (The
 * rest of this table is misread from then on, so only the name of that bucket is asked.) */
static void test_elf_gnu_hash_bucket_before_its_symoffset_is_passed_over(void **state)
{
    (void)state;
    for (size_t s = 0; s < SHAPES; s++) {
        struct img m;
        build_hashed(&m, shapes[s].is64, shapes[s].big, HASH_GNU);
        apply_hchange(&m, &(struct hchange){H_HEADER, 1, 2});
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_symbol sym;
        assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, NULL), 0);
        assert_int_equal(sym.value, 0x403000);
        elf_close(e);
        free(m.buf);
    }
}

/* A lookup through the table reads the symbols of one chain: a malformed symbol elsewhere,
 * which a scan of .dynsym trips over, does not stop it. */
static void test_elf_find_symbol_reads_only_the_chain_the_hash_table_gives(void **state)
{
    (void)state;
    for (enum thash h = HASH_NONE; h <= HASH_SYSV; h++) {
        for (size_t s = 0; s < SHAPES; s++) {
            struct img m;
            build_hashed(&m, shapes[s].is64, shapes[s].big, h);
            set_sym(&m, SEC_DYNSYM, 1, st_name, m.size[SEC_DYNSTR]);
            struct pt_error err = {0};
            struct elf *e = elf_open_buf(m.buf, m.len, &err);
            assert_non_null(e);
            struct elf_symbol sym = {0};
            assert_int_equal(elf_find_symbol(e, "shared", &sym, &err), h == HASH_NONE ? -1 : 0);
            assert_int_equal(sym.value, h == HASH_NONE ? 0 : 0x1111);
            elf_close(e);
            /* A symbol the chain does lead to is read, and checked, as a scan reads it. */
            set_sym(&m, SEC_DYNSYM, 3, st_name, m.size[SEC_DYNSTR]);
            e = elf_open_buf(m.buf, m.len, &err);
            assert_int_equal(elf_find_symbol(e, "shared", &sym, &err), -1);
            assert_int_equal(err.code, PT_E_FORMAT);
            elf_close(e);
            free(m.buf);
        }
    }
}

/* A well-formed table is the word on .dynsym, as it is for the dynamic linker: a name its bucket
 * does not lead to is not in .dynsym. */
static void test_elf_find_symbol_takes_an_empty_bucket_for_absence(void **state)
{
    (void)state;
    for (enum thash h = HASH_GNU; h <= HASH_SYSV; h++) {
        struct img m;
        build_hashed(&m, true, false, h);
        apply_hchange(&m, &(struct hchange){H_BUCKET, h == HASH_GNU ? 0 : 2, 0});
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_symbol sym;
        assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, NULL), 1);
        assert_int_equal(elf_find_symbol(e, "shared", &sym, NULL), 0);
        elf_close(e);
        free(m.buf);
    }
}

/* elf_find_symbols(): each table read once for all names; .symtab skipped for an exported name
 * once another was found in .dynsym, and not read at all when no name is left for it. */
static void test_elf_find_symbols_looks_in_symtab_only_for_what_dynsym_may_lack(void **state)
{
    (void)state;
    for (enum thash h = HASH_NONE; h <= HASH_SYSV; h++) {
        struct img m;
        build_hashed(&m, false, true, h);
        struct elf *e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct elf_lookup q[4] = {{.name = "_PyRuntime", .exported = true},
                                  {.name = "interp_head", .exported = true},
                                  {.name = "shared"},
                                  {.name = "missing"}};
        assert_int_equal(elf_find_symbols(e, q, 4, NULL), 0);
        assert_int_equal(q[0].found, 0);
        assert_int_equal(q[0].sym.value, 0x403000);
        assert_int_equal(q[1].found, 1); /* exported, and the exports are in .dynsym */
        assert_int_equal(q[2].found, 0);
        assert_int_equal(q[2].sym.value, 0x1111); /* .dynsym's, not .symtab's */
        assert_int_equal(q[3].found, 1);
        q[0].exported = false;
        assert_int_equal(elf_find_symbols(e, q, 2, NULL), 0);
        assert_int_equal(q[1].found, 0); /* no other exported name found */
        assert_int_equal(q[1].sym.value, 0x404000);
        assert_int_equal(elf_find_symbols(e, q, 0, NULL), 0);
        elf_close(e);
        /* A .symtab whose names cannot be read: no matter while .dynsym answers everything. */
        set_sh(&m, SEC_STRTAB, sh_size, m.size[SEC_STRTAB] - 1);
        e = elf_open_buf(m.buf, m.len, NULL);
        assert_non_null(e);
        struct pt_error err = {0};
        q[0].exported = true;
        assert_int_equal(elf_find_symbols(e, q, 2, &err), 0);
        assert_int_equal(q[0].found, 0);
        assert_int_equal(q[1].found, 1);
        assert_int_equal(err.code, PT_OK);
        assert_int_equal(elf_find_symbols(e, &q[1], 1, &err), -1);
        assert_int_equal(err.code, PT_E_FORMAT);
        elf_close(e);
        free(m.buf);
    }
}

static void test_elf_open_refuses_more_sections_than_the_limit(void **state)
{
    (void)state;
    struct img m;
    build(&m, true, false);
    /* A zeroed table after the image, whose section 0 gives the count: it fits in the file. */
    size_t count = LIMIT_ELF_SECTIONS + 1;
    m.cap = m.len = IMG_CAP + count * 64;
    m.buf = realloc(m.buf, m.cap);
    assert_non_null(m.buf);
    memset(m.buf + IMG_CAP, 0, m.cap - IMG_CAP);
    m.shoff = IMG_CAP;
    set_eh(&m, eh_shoff, IMG_CAP);
    set_eh(&m, eh_shnum, 0);
    set_eh(&m, eh_shstrndx, 0);
    set_sh(&m, 0, sh_size, count);
    struct pt_error err = {0};
    assert_null(elf_open_buf(m.buf, m.len, &err));
    assert_int_equal(err.code, PT_E_LIMIT);
    set_sh(&m, 0, sh_size, count - 1);
    struct elf *e = elf_open_buf(m.buf, m.len, &err);
    assert_non_null(e);
    elf_close(e);
    free(m.buf);
}

static void test_elf_find_symbol_refuses_more_symbols_than_the_limit(void **state)
{
    (void)state;
    struct img m;
    build(&m, false, true);
    /* The table starts at offset 0 and runs over the whole (mostly zero) file: it fits. */
    size_t bytes = ((size_t)LIMIT_ELF_SYMBOLS + 1) * 16;
    m.buf = realloc(m.buf, bytes);
    assert_non_null(m.buf);
    memset(m.buf + IMG_CAP, 0, bytes - IMG_CAP);
    m.cap = m.len = bytes;
    set_sh(&m, SEC_DYNSYM, sh_offset, 0);
    set_sh(&m, SEC_DYNSYM, sh_size, bytes);
    struct pt_error err = {0};
    struct elf *e = elf_open_buf(m.buf, m.len, &err);
    assert_non_null(e);
    struct elf_symbol sym;
    assert_int_equal(elf_find_symbol(e, "_PyRuntime", &sym, &err), -1);
    assert_int_equal(err.code, PT_E_LIMIT);
    elf_close(e);
    free(m.buf);
}

/* Load bias, on program headers written over the built image's (unused slots are PT_NULL). */

enum { NO_BIAS = 1 }; /* a real bias is page-aligned, so never 1 */

struct bias_case {
    struct tload loads[PHDR_SLOTS];
    struct {
        uint64_t start;
        uint64_t offset;
        uint64_t bias;
    } maps[4]; /* ends at start 0 */
};

static void check_bias_case(void **state)
{
    const struct bias_case *c = *state;
    struct img m;
    build(&m, true, false);
    set_eh(&m, eh_type, 3);
    write_program_headers(&m, c->loads, PHDR_SLOTS);
    struct elf *e = elf_open_buf(m.buf, m.len, NULL);
    assert_non_null(e);
    assert_true(elf_is_dyn(e));
    for (size_t i = 0; i < 4 && c->maps[i].start != 0; i++) {
        struct pt_error err = {0};
        uint64_t bias = NO_BIAS;
        int rc = elf_load_bias(e, c->maps[i].start, c->maps[i].offset, &bias, &err);
        assert_int_equal(bias, c->maps[i].bias);
        assert_int_equal(rc, bias == NO_BIAS ? -1 : 0);
        assert_int_equal(err.code, bias == NO_BIAS ? PT_E_FORMAT : PT_OK);
    }
    elf_close(e);
    free(m.buf);
}

static const struct CMUnitTest load_bias_tests[] = {
    {"test_elf_load_bias_is_zero_for_debian_exec_with_page_below_first_segment", check_bias_case,
     NULL, NULL,
     &(struct bias_case){{{PT_LOAD, 0, 0x3ff000, 0x1000, 0x1000},
                          {PT_LOAD, 0x1000, 0x400000, 0x24ec0, 0x1000},
                          {PT_LOAD, 0x7e6d90, 0xbe6d90, 0xae570, 0x1000}},
                         {{0x3ff000, 0, 0}, {0x400000, 0x1000, 0}, {0xbe6000, 0x7e6000, 0}}}},
    /* libpython3.12: the second segment's last page is also the third one's first. */
    {"test_elf_load_bias_prefers_the_segment_that_starts_on_a_shared_page", check_bias_case, NULL,
     NULL,
     &(struct bias_case){{{PT_LOAD, 0, 0, 0x105130, 0x1000},
                          {PT_LOAD, 0x379000, 0x379000, 0x1530c8, 0x1000},
                          {PT_LOAD, 0x4cc6d0, 0x4cd6d0, 0x1e6118, 0x1000}},
                         {{0x7f0000200000, 0, 0x7f0000200000},
                          {0x7f0000579000, 0x379000, 0x7f0000200000},
                          {0x7f00006cd000, 0x4cc000, 0x7f0000200000}}}},
    {"test_elf_load_bias_follows_a_mapping_split_by_relro", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0, 0, 0x105130, 0x1000}, {PT_LOAD, 0x4cc6d0, 0x4cd6d0, 0x1e6118, 0x1000}},
         {{0x7f0000744000, 0x543000, 0x7f0000200000},
          {0x7f0000205000, 0x5000, 0x7f0000200000},
          {0x7f00008b3000, 0x6b3000, NO_BIAS},
          {0x7f0000205800, 0x5800, NO_BIAS}}}},
    /* Loaded at 0xaaaa00000000 by a kernel with 64 KiB pages (aarch64), or with 4 KiB ones. */
    {"test_elf_load_bias_accepts_pages_of_p_align", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0, 0, 0x2345, 0x10000}, {PT_LOAD, 0x12345, 0x22345, 0x1000, 0x10000}},
         {{0xaaaa00020000, 0x10000, 0xaaaa00000000},
          {0xaaaa00022000, 0x12000, 0xaaaa00000000},
          {0xaaaa00030000, 0x20000, NO_BIAS}}}},
    /* Rounded to its 2 MiB p_align, the first segment would also start at offset 0. */
    {"test_elf_load_bias_prefers_4k_pages_to_p_align_pages", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_LOAD, 0x1f0e10, 0x3f0e10, 0x1000, 0x200000}, {PT_LOAD, 0, 0, 0x1f0000, 0x200000}},
         {{0x7f0000000000, 0, 0x7f0000000000}, {0x7f00003f0000, 0x1f0000, 0x7f0000000000}}}},
    {"test_elf_load_bias_ignores_segments_not_loaded_from_the_file", check_bias_case, NULL, NULL,
     &(struct bias_case){
         {{PT_DYNAMIC, 0x5000, 0x5000, 0x100, 0x1000},
          {PT_LOAD, 0x6000, 0x6000, 0, 0x1000},
          {PT_LOAD, 0, 0x1000, 0x1000, 0x1000}},
         {{0x10000, 0x5000, NO_BIAS}, {0x10000, 0x6000, NO_BIAS}, {0x10000, 0, 0xf000}}}},
    {"test_elf_load_bias_rejects_a_segment_that_wraps_around", check_bias_case, NULL, NULL,
     &(struct bias_case){{{PT_LOAD, UINT64_MAX - 0xfff, 0, 0x2000, 0x1000}},
                         {{0x10000, UINT64_MAX - 0xfff, NO_BIAS}}}},
};

static int temp_file(const void *data, size_t len)
{
    char path[] = "/tmp/test_elf.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    return fd;
}

/* Grows the file open on FD to SIZE (if not 0), checks that elf_open_fd() refuses it with CODE,
 * and closes FD. */
static void expect_fd_refused(int fd, off_t size, enum pt_errcode code)
{
    struct pt_error err = {0};
    assert_true(size == 0 || ftruncate(fd, size) == 0);
    assert_null(elf_open_fd(fd, &err));
    assert_int_equal(err.code, code);
    if (fd >= 0) {
        close(fd);
    }
}

static void test_elf_open_fd_maps_regular_elf_files_and_refuses_the_rest(void **state)
{
    (void)state;
    struct img m;
    build(&m, false, true);
    int fd = temp_file(m.buf, m.len);
    struct pt_error err = {0};
    struct elf *e = elf_open_fd(fd, &err);
    close(fd);
    assert_non_null(e);
    struct elf_symbol sym; /* the mapping outlives the fd */
    assert_int_equal(elf_find_symbol(e, "interp_head", &sym, &err), 0);
    assert_int_equal(sym.value, 0x404000);
    elf_close(e);
    expect_fd_refused(temp_file(m.buf, m.len), (off_t)LIMIT_ELF_FILE + 1, PT_E_LIMIT);
    expect_fd_refused(temp_file("#!/bin/sh\n", 10), 0, PT_E_FORMAT);
    expect_fd_refused(temp_file("", 0), 0, PT_E_FORMAT);
    expect_fd_refused(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0, PT_E_IO);
    expect_fd_refused(-1, 0, PT_E_IO);
    free(m.buf);
}

int main(void)
{
    static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elf_open_rejects_every_truncation),
        cmocka_unit_test(test_elf_open_refuses_more_sections_than_the_limit),
        cmocka_unit_test(test_elf_find_symbol_refuses_more_symbols_than_the_limit),
        cmocka_unit_test(test_elf_open_fd_maps_regular_elf_files_and_refuses_the_rest),
        cmocka_unit_test(test_elf_hash_tables_cut_short_anywhere_are_passed_over),
        cmocka_unit_test(test_elf_gnu_hash_bucket_before_its_symoffset_is_passed_over),
        cmocka_unit_test(test_elf_find_symbol_reads_only_the_chain_the_hash_table_gives),
        cmocka_unit_test(test_elf_find_symbol_takes_an_empty_bucket_for_absence),
        cmocka_unit_test(test_elf_find_symbols_looks_in_symtab_only_for_what_dynsym_may_lack),
    };
    int failed = cmocka_run_group_tests_name("real binaries", real_binary_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("built images", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("altered images", altered_image_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("load bias", load_bias_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("hash tables", hash_tests, NULL, NULL);
    return failed;
}
