/* elf: find sections and symbols in an ELF file and the load bias of its mapping. */
#include "config.h"

#include "core/target/elf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "core/target/elf_hash.h"
#include "core/util/error.h"
#include "core/util/limits.h"

/* Values from the System V ABI, "Object Files" (gABI, 2013 draft). */
enum {
    ELF_IDENT_SIZE = 16,
    ELF_CLASS32 = 1,
    ELF_CLASS64 = 2,
    ELF_DATA_LSB = 1,
    ELF_DATA_MSB = 2,
    ELF_VERSION_CURRENT = 1,
    ELF_ET_DYN = 3,
    ELF_PT_LOAD = 1,
    ELF_PN_XNUM = 0xffff,
    ELF_SHT_SYMTAB = 2,
    ELF_SHT_HASH = 5,
    ELF_SHT_NOBITS = 8,
    ELF_SHT_DYNSYM = 11,
    ELF_SHT_GNU_HASH = 0x6ffffff6, /* a GNU extension, as glibc's elf.h defines it */
    ELF_SHN_UNDEF = 0,
    ELF_SHN_LORESERVE = 0xff00,
    ELF_SHN_XINDEX = 0xffff,
    ELF_PAGE = 4096, /* the smallest page the kernel maps a segment with */
};

/* Where one field sits in a record, and how many bytes wide it is. */
struct field {
    uint8_t off;
    uint8_t width;
};

enum {
    EH_TYPE,
    EH_PHOFF,
    EH_SHOFF,
    EH_PHENTSIZE,
    EH_PHNUM,
    EH_SHENTSIZE,
    EH_SHNUM,
    EH_SHSTRNDX,
    EH_COUNT
};
enum { SH_NAME, SH_TYPE, SH_ADDR, SH_OFFSET, SH_SIZE, SH_LINK, SH_INFO, SH_ENTSIZE, SH_COUNT };
enum { PH_TYPE, PH_OFFSET, PH_VADDR, PH_FILESZ, PH_ALIGN, PH_COUNT };
enum { ST_NAME, ST_VALUE, ST_SIZE, ST_SHNDX, ST_INFO, ST_COUNT };

/* st_info's type of a symbol naming the source file of the LOCAL symbols after it. */
enum { ELF_STT_FILE = 4 };

/* The records of one ELF class. The only place that tells ELF32 from ELF64. */
struct elf_class {
    uint8_t ehdr_size;
    uint8_t shdr_size;
    uint8_t phdr_size;
    uint8_t sym_size;
    struct field ehdr[EH_COUNT];
    struct field shdr[SH_COUNT];
    struct field phdr[PH_COUNT];
    struct field sym[ST_COUNT];
};

static const struct elf_class class32 = {
    .ehdr_size = 52,
    .shdr_size = 40,
    .phdr_size = 32,
    .sym_size = 16,
    .ehdr = {{16, 2}, {28, 4}, {32, 4}, {42, 2}, {44, 2}, {46, 2}, {48, 2}, {50, 2}},
    .shdr = {{0, 4}, {4, 4}, {12, 4}, {16, 4}, {20, 4}, {24, 4}, {28, 4}, {36, 4}},
    .phdr = {{0, 4}, {4, 4}, {8, 4}, {16, 4}, {28, 4}},
    .sym = {{0, 4}, {4, 4}, {8, 4}, {14, 2}, {12, 1}},
};

static const struct elf_class class64 = {
    .ehdr_size = 64,
    .shdr_size = 64,
    .phdr_size = 56,
    .sym_size = 24,
    .ehdr = {{16, 2}, {32, 8}, {40, 8}, {54, 2}, {56, 2}, {58, 2}, {60, 2}, {62, 2}},
    .shdr = {{0, 4}, {4, 4}, {16, 8}, {24, 8}, {32, 8}, {40, 4}, {44, 4}, {56, 8}},
    .phdr = {{0, 4}, {8, 8}, {16, 8}, {32, 8}, {48, 8}},
    .sym = {{0, 4}, {8, 8}, {16, 8}, {6, 2}, {4, 1}},
};

/* The image as bytes: every read names its offset and fails past the end. */
struct reader {
    const uint8_t *buf;
    size_t len;
    bool big;
};

/* An array of fixed-size entries in the file: section headers, program headers or symbols. */
struct table {
    uint64_t off;
    uint64_t entsize;
    uint64_t count;
};

/* A string table: a checked range of the file whose last byte is NUL. */
struct strtab {
    uint64_t index;
    uint64_t off;
    uint64_t size;
};

struct elf {
    struct reader r;
    const struct elf_class *cls;
    bool mapped; /* r.buf came from mmap() and is ours to unmap */
    uint64_t type;
    struct table phdrs;
    struct table shdrs;
    uint64_t shstrndx; /* ELF_SHN_UNDEF when there are no section names */
};

static bool get_bytes(const struct reader *r, uint64_t off, uint64_t n, const uint8_t **out)
{
    uint64_t end;
    if (__builtin_add_overflow(off, n, &end) || end > r->len) {
        return false;
    }
    *out = r->buf + off;
    return true;
}

static bool get_uint(const struct reader *r, uint64_t off, unsigned width, uint64_t *out)
{
    const uint8_t *p;
    if (width > 8 || !get_bytes(r, off, width, &p)) {
        return false;
    }
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) {
        unsigned shift = r->big ? 8 * (width - 1 - i) : 8 * i;
        v |= (uint64_t)p[i] << shift;
    }
    *out = v;
    return true;
}

static bool read_fields(const struct reader *r, uint64_t base, const struct field *fields, size_t n,
                        uint64_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t off;
        if (__builtin_add_overflow(base, fields[i].off, &off) ||
            !get_uint(r, off, fields[i].width, &out[i])) {
            return false;
        }
    }
    return true;
}

/* Checks that table T lies inside the file, with entries of at least MIN_ENTSIZE bytes. Its count
 * is checked against LIMIT only once it fits, so that garbage reads as malformed. */
static int table_check(const struct elf *e, const struct table *t, unsigned min_entsize,
                       uint64_t limit, const char *what, struct pt_error *err)
{
    if (t->count == 0) {
        return 0;
    }
    if (t->entsize < min_entsize) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%s entries of %" PRIu64 " bytes, under %u", what,
                            t->entsize, min_entsize);
    }
    uint64_t bytes;
    uint64_t end;
    if (__builtin_mul_overflow(t->count, t->entsize, &bytes) ||
        __builtin_add_overflow(t->off, bytes, &end) || end > e->r.len) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "%s (%" PRIu64 " entries of %" PRIu64 " bytes at 0x%" PRIx64
                            ") runs past the end of the file (0x%zx bytes)",
                            what, t->count, t->entsize, t->off, e->r.len);
    }
    if (t->count > limit) {
        return pt_error_set(err, PT_E_LIMIT, 0,
                            "%s has %" PRIu64 " entries, over the limit of %" PRIu64, what,
                            t->count, limit);
    }
    return 0;
}

static int read_entry(const struct elf *e, const struct table *t, uint64_t index,
                      const struct field *fields, size_t n, uint64_t *out, const char *what,
                      struct pt_error *err)
{
    uint64_t rel;
    uint64_t base;
    if (index >= t->count || __builtin_mul_overflow(index, t->entsize, &rel) ||
        __builtin_add_overflow(t->off, rel, &base) || !read_fields(&e->r, base, fields, n, out)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%s %" PRIu64 " lies outside the file", what,
                            index);
    }
    return 0;
}

static int read_shdr(const struct elf *e, uint64_t index, uint64_t *sh, struct pt_error *err)
{
    return read_entry(e, &e->shdrs, index, e->cls->shdr, SH_COUNT, sh, "section header", err);
}

static int read_phdr(const struct elf *e, uint64_t index, uint64_t *ph, struct pt_error *err)
{
    return read_entry(e, &e->phdrs, index, e->cls->phdr, PH_COUNT, ph, "program header", err);
}

static int parse_ident(struct elf *e, struct pt_error *err)
{
    static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
    const uint8_t *id;
    if (!get_bytes(&e->r, 0, ELF_IDENT_SIZE, &id)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "file of %zu bytes is too short for ELF",
                            e->r.len);
    }
    if (memcmp(id, magic, sizeof magic) != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0, "not an ELF file (bad magic)");
    }
    if (id[4] != ELF_CLASS32 && id[4] != ELF_CLASS64) {
        return pt_error_set(err, PT_E_FORMAT, 0, "unknown ELF class %u", id[4]);
    }
    if (id[5] != ELF_DATA_LSB && id[5] != ELF_DATA_MSB) {
        return pt_error_set(err, PT_E_FORMAT, 0, "unknown ELF byte order %u", id[5]);
    }
    if (id[6] != ELF_VERSION_CURRENT) {
        return pt_error_set(err, PT_E_FORMAT, 0, "unknown ELF version %u", id[6]);
    }
    e->cls = id[4] == ELF_CLASS64 ? &class64 : &class32;
    e->r.big = id[5] == ELF_DATA_MSB;
    return 0;
}

/* Counts that do not fit the ELF header live in section 0: e_shnum 0 means sh_size holds the
 * section count, e_shstrndx SHN_XINDEX means sh_link holds the index, e_phnum PN_XNUM means
 * sh_info holds the segment count (gABI, "Sections", and "Program Header"). */
static int read_extended_counts(struct elf *e, uint64_t *phnum, uint64_t *shstrndx,
                                struct pt_error *err)
{
    bool need = e->shdrs.count == 0 || *shstrndx == ELF_SHN_XINDEX || *phnum == ELF_PN_XNUM;
    if (e->shdrs.off == 0 || !need) {
        return 0;
    }
    struct table first = {e->shdrs.off, e->shdrs.entsize, 1};
    uint64_t sh[SH_COUNT];
    if (table_check(e, &first, e->cls->shdr_size, 1, "section header table", err) < 0 ||
        read_entry(e, &first, 0, e->cls->shdr, SH_COUNT, sh, "section header", err) < 0) {
        return pt_error_prefix(err, "extended section numbering");
    }
    if (e->shdrs.count == 0) {
        e->shdrs.count = sh[SH_SIZE];
    }
    if (*shstrndx == ELF_SHN_XINDEX) {
        *shstrndx = sh[SH_LINK];
    }
    if (*phnum == ELF_PN_XNUM) {
        *phnum = sh[SH_INFO];
    }
    return 0;
}

static int parse_header(struct elf *e, struct pt_error *err)
{
    uint64_t eh[EH_COUNT];
    if (!read_fields(&e->r, 0, e->cls->ehdr, EH_COUNT, eh)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "ELF header truncated at %zu bytes", e->r.len);
    }
    e->type = eh[EH_TYPE];
    e->shdrs = (struct table){eh[EH_SHOFF], eh[EH_SHENTSIZE], eh[EH_SHNUM]};
    uint64_t phnum = eh[EH_PHNUM];
    uint64_t shstrndx = eh[EH_SHSTRNDX];
    if (e->shdrs.off == 0 && (e->shdrs.count != 0 || phnum == ELF_PN_XNUM)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "section headers counted but not placed");
    }
    if (read_extended_counts(e, &phnum, &shstrndx, err) < 0) {
        return -1;
    }
    if (e->shdrs.off == 0) {
        shstrndx = ELF_SHN_UNDEF;
    } else if (eh[EH_SHSTRNDX] >= ELF_SHN_LORESERVE && eh[EH_SHSTRNDX] != ELF_SHN_XINDEX) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "section name table index 0x%" PRIx64 " is reserved", shstrndx);
    }
    e->phdrs = (struct table){eh[EH_PHOFF], eh[EH_PHENTSIZE], phnum};
    /* No limit of its own for segments: the section bound is already far above real files. */
    if (table_check(e, &e->shdrs, e->cls->shdr_size, LIMIT_ELF_SECTIONS, "section header table",
                    err) < 0 ||
        table_check(e, &e->phdrs, e->cls->phdr_size, LIMIT_ELF_SECTIONS, "program header table",
                    err) < 0) {
        return -1;
    }
    if (shstrndx != ELF_SHN_UNDEF && shstrndx >= e->shdrs.count) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "section name table index %" PRIu64 " is past the %" PRIu64 " sections",
                            shstrndx, e->shdrs.count);
    }
    e->shstrndx = shstrndx;
    return 0;
}

struct elf *elf_open_buf(const uint8_t *buf, size_t len, struct pt_error *err)
{
    struct elf *e = calloc(1, sizeof *e);
    if (e == NULL) {
        pt_error_set(err, PT_E_NOMEM, errno, "out of memory for an ELF handle");
        return NULL;
    }
    e->r = (struct reader){buf, buf == NULL ? 0 : len, false};
    if (parse_ident(e, err) < 0 || parse_header(e, err) < 0) {
        free(e);
        return NULL;
    }
    return e;
}

struct elf *elf_open_fd(int fd, struct pt_error *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        pt_error_set(err, PT_E_IO, errno, "cannot stat the ELF file: %s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        pt_error_set(err, PT_E_IO, 0, "not a regular file");
        return NULL;
    }
    if (st.st_size > LIMIT_ELF_FILE) {
        pt_error_set(err, PT_E_LIMIT, 0, "ELF file of %jd bytes is over the limit of %d",
                     (intmax_t)st.st_size, LIMIT_ELF_FILE);
        return NULL;
    }
    if (st.st_size == 0) {
        pt_error_set(err, PT_E_FORMAT, 0, "empty file");
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        pt_error_set(err, PT_E_IO, errno, "cannot map the ELF file: %s", strerror(errno));
        return NULL;
    }
    struct elf *e = elf_open_buf(map, len, err);
    if (e == NULL) {
        munmap(map, len);
        return NULL;
    }
    e->mapped = true;
    return e;
}

void elf_close(struct elf *e)
{
    if (e == NULL) {
        return;
    }
    if (e->mapped) {
        munmap((void *)e->r.buf, e->r.len);
    }
    free(e);
}

bool elf_is_dyn(const struct elf *e)
{
    return e->type == ELF_ET_DYN;
}

static int strtab_load(const struct elf *e, uint64_t index, struct strtab *st, struct pt_error *err)
{
    uint64_t sh[SH_COUNT];
    if (index >= e->shdrs.count) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "string table index %" PRIu64 " is past the %" PRIu64 " sections",
                            index, e->shdrs.count);
    }
    if (read_shdr(e, index, sh, err) < 0) {
        return -1;
    }
    const uint8_t *bytes;
    if (sh[SH_TYPE] == ELF_SHT_NOBITS || sh[SH_SIZE] == 0 ||
        !get_bytes(&e->r, sh[SH_OFFSET], sh[SH_SIZE], &bytes)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "string table (section %" PRIu64 ") lies outside the file", index);
    }
    if (bytes[sh[SH_SIZE] - 1] != '\0') {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "string table (section %" PRIu64 ") does not end with NUL", index);
    }
    *st = (struct strtab){index, sh[SH_OFFSET], sh[SH_SIZE]};
    return 0;
}

/* Sets *MATCH when the string at NAME_OFF in ST is NAME. NAME_OFF past the table is malformed;
 * the table's final NUL guarantees every string in it ends inside it. */
static int strtab_matches(const struct elf *e, const struct strtab *st, uint64_t name_off,
                          const char *name, size_t name_len, bool *match, struct pt_error *err)
{
    if (name_off >= st->size) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "name at 0x%" PRIx64 " is past the end of "
                            "string table (section %" PRIu64 ", 0x%" PRIx64 " bytes)",
                            name_off, st->index, st->size);
    }
    uint64_t off;
    const uint8_t *s;
    *match = (uint64_t)name_len < st->size - name_off &&
             !__builtin_add_overflow(st->off, name_off, &off) &&
             get_bytes(&e->r, off, name_len + 1, &s) && memcmp(s, name, name_len + 1) == 0;
    return 0;
}

int elf_find_section(const struct elf *e, const char *name, struct elf_section *out,
                     struct pt_error *err)
{
    if (e->shstrndx == ELF_SHN_UNDEF) {
        return 1;
    }
    struct strtab names;
    if (strtab_load(e, e->shstrndx, &names, err) < 0) {
        return pt_error_prefix(err, "section %s", name);
    }
    size_t name_len = strlen(name);
    /* Section 0 is reserved (SHN_UNDEF): a placeholder, not a section. */
    for (uint64_t i = 1; i < e->shdrs.count; i++) {
        uint64_t sh[SH_COUNT];
        bool match = false;
        if (read_shdr(e, i, sh, err) < 0 ||
            strtab_matches(e, &names, sh[SH_NAME], name, name_len, &match, err) < 0) {
            return pt_error_prefix(err, "section %s", name);
        }
        if (match) {
            *out = (struct elf_section){sh[SH_ADDR], sh[SH_OFFSET], sh[SH_SIZE]};
            return 0;
        }
    }
    return 1;
}

/* The first section of TYPE, and its index. The gABI allows one SHT_SYMTAB and one SHT_DYNSYM
 * per file, and searching only the first keeps a file full of symbol tables from costing more
 * than one. */
static int find_section_of_type(const struct elf *e, uint64_t type, uint64_t *sh, uint64_t *index,
                                struct pt_error *err)
{
    for (uint64_t i = 0; i < e->shdrs.count; i++) {
        if (read_shdr(e, i, sh, err) < 0) {
            return -1;
        }
        if (sh[SH_TYPE] == type) {
            *index = i;
            return 0;
        }
    }
    return 1;
}

/* A symbol table ready to read: its entries and their names. */
struct symtab {
    uint64_t index; /* of its section */
    struct table syms;
    struct strtab names;
};

static int symtab_open(const struct elf *e, uint64_t index, const uint64_t *sh, struct symtab *t,
                       struct pt_error *err)
{
    if (sh[SH_ENTSIZE] == 0 || sh[SH_SIZE] % sh[SH_ENTSIZE] != 0) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "symbol table of 0x%" PRIx64 " bytes is not a whole number of %" PRIu64
                            "-byte entries",
                            sh[SH_SIZE], sh[SH_ENTSIZE]);
    }
    t->index = index;
    t->syms = (struct table){sh[SH_OFFSET], sh[SH_ENTSIZE], sh[SH_SIZE] / sh[SH_ENTSIZE]};
    if (table_check(e, &t->syms, e->cls->sym_size, LIMIT_ELF_SYMBOLS, "symbol table", err) < 0 ||
        strtab_load(e, sh[SH_LINK], &t->names, err) < 0) {
        return -1;
    }
    return 0;
}

/* Reads symbol I of T into ST; sets *NAMED when it is defined and has a name. */
static int read_symbol(const struct elf *e, const struct symtab *t, uint64_t i, uint64_t *st,
                       bool *named, struct pt_error *err)
{
    if (read_entry(e, &t->syms, i, e->cls->sym, ST_COUNT, st, "symbol", err) < 0) {
        return -1;
    }
    *named = st[ST_SHNDX] != ELF_SHN_UNDEF && st[ST_NAME] != 0;
    return 0;
}

/* Whether lookup Q is still to be answered by a table: not found yet, and not an exported name
 * in .symtab once another was found in .dynsym (SKIP_EXPORTED). */
static bool wanted(const struct elf_lookup *q, bool skip_exported)
{
    return q->found != 0 && !(skip_exported && q->exported);
}

/* Answers every lookup of Q[0..N) still wanted in one pass over T, each with its first defined
 * symbol of that name. */
static int scan(const struct elf *e, const struct symtab *t, struct elf_lookup *q, size_t n,
                bool skip_exported, struct pt_error *err)
{
    size_t pending = 0;
    for (size_t k = 0; k < n; k++) {
        pending += wanted(&q[k], skip_exported);
    }
    uint64_t file = 0; /* the name of the last STT_FILE symbol: the file of LOCAL ones */
    for (uint64_t i = 0; i < t->syms.count && pending > 0; i++) {
        uint64_t st[ST_COUNT];
        bool named;
        if (read_symbol(e, t, i, st, &named, err) < 0) {
            return -1;
        }
        if ((st[ST_INFO] & 0xf) == ELF_STT_FILE) {
            file = st[ST_NAME];
            continue;
        }
        for (size_t k = 0; k < n && named; k++) {
            bool match = false;
            if (!wanted(&q[k], skip_exported)) {
                continue;
            }
            if (q[k].file != NULL) {
                bool in_file = false;
                if (file != 0 && strtab_matches(e, &t->names, file, q[k].file, strlen(q[k].file),
                                                &in_file, err) < 0) {
                    return pt_error_prefix(err, "symbol %" PRIu64, i);
                }
                if (!in_file) {
                    continue;
                }
            }
            if (strtab_matches(e, &t->names, st[ST_NAME], q[k].name, strlen(q[k].name), &match,
                               err) < 0) {
                return pt_error_prefix(err, "symbol %" PRIu64, i);
            }
            if (match) {
                q[k].found = 0;
                q[k].sym = (struct elf_symbol){st[ST_VALUE], st[ST_SIZE]};
                pending--;
            }
        }
    }
    return 0;
}

/* The hash table of .dynsym T: the first SHT_GNU_HASH section linked to it, else the first
 * SHT_HASH one. Returns 0 with H filled, or 1 when there is none that parses: a table is only
 * an index, and the scan it saves gives the same answers. */
static int find_hash(const struct elf *e, const struct symtab *t, struct elf_hash *h)
{
    static const struct {
        uint64_t type;
        enum elf_hash_kind kind;
    } kinds[] = {{ELF_SHT_GNU_HASH, ELF_HASH_GNU}, {ELF_SHT_HASH, ELF_HASH_SYSV}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (uint64_t i = 1; i < e->shdrs.count; i++) {
            uint64_t sh[SH_COUNT];
            const uint8_t *bytes;
            if (read_shdr(e, i, sh, NULL) < 0) {
                return 1;
            }
            if (sh[SH_TYPE] != kinds[k].type || sh[SH_LINK] != t->index) {
                continue;
            }
            if (get_bytes(&e->r, sh[SH_OFFSET], sh[SH_SIZE], &bytes) &&
                elf_hash_parse(bytes, (size_t)sh[SH_SIZE], kinds[k].kind, e->cls == &class64,
                               e->r.big, t->syms.count, h, NULL) == 0) {
                return 0;
            }
            break;
        }
    }
    return 1;
}

/* Looks Q up in T through its hash table H. Returns 0 found, 1 absent, 2 when H proves
 * malformed on the way (the caller scans instead), or -1 when a symbol it leads to is. */
static int lookup_hashed(const struct elf *e, const struct symtab *t, const struct elf_hash *h,
                         struct elf_lookup *q, struct pt_error *err)
{
    struct elf_hash_walk w;
    size_t name_len = strlen(q->name);
    elf_hash_start(h, q->name, &w);
    for (;;) {
        uint64_t i;
        uint64_t st[ST_COUNT];
        bool named;
        bool match = false;
        int rc = elf_hash_next(h, &w, &i, NULL);
        if (rc <= 0) {
            return rc == 0 ? 1 : 2;
        }
        if (read_symbol(e, t, i, st, &named, err) < 0 ||
            (named &&
             strtab_matches(e, &t->names, st[ST_NAME], q->name, name_len, &match, err) < 0)) {
            return pt_error_prefix(err, "symbol %" PRIu64, i);
        }
        if (match) {
            q->found = 0;
            q->sym = (struct elf_symbol){st[ST_VALUE], st[ST_SIZE]};
            return 0;
        }
    }
}

/* Answers the lookups of Q[0..N) that .dynsym T holds: through its hash table, or by a scan
 * when it has no usable one. */
static int search_dynsym(const struct elf *e, const struct symtab *t, struct elf_lookup *q,
                         size_t n, struct pt_error *err)
{
    struct elf_hash h;
    if (find_hash(e, t, &h) != 0) {
        return scan(e, t, q, n, false, err);
    }
    for (size_t k = 0; k < n; k++) {
        if (q[k].file != NULL) {
            continue; /* a LOCAL symbol of one file: .symtab alone names those */
        }
        int rc = lookup_hashed(e, t, &h, &q[k], err);
        if (rc < 0) {
            return -1;
        }
        if (rc == 2) {
            return scan(e, t, q, n, false, err);
        }
    }
    return 0;
}

/* Opens the first symbol table of TYPE and answers the lookups still wanted from it. */
static int search(const struct elf *e, uint64_t type, struct elf_lookup *q, size_t n,
                  bool exports_found, struct pt_error *err)
{
    uint64_t sh[SH_COUNT];
    uint64_t index;
    struct symtab t;
    int rc = find_section_of_type(e, type, sh, &index, err);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    if (symtab_open(e, index, sh, &t, err) < 0) {
        return -1;
    }
    return type == ELF_SHT_DYNSYM ? search_dynsym(e, &t, q, n, err)
                                  : scan(e, &t, q, n, exports_found, err);
}

int elf_find_symbols(const struct elf *e, struct elf_lookup *lookups, size_t n,
                     struct pt_error *err)
{
    for (size_t k = 0; k < n; k++) {
        lookups[k].found = 1;
    }
    if (n == 0) {
        return 0;
    }
    const char *more = n > 1 ? " (and others)" : "";
    if (search(e, ELF_SHT_DYNSYM, lookups, n, false, err) < 0) {
        return pt_error_prefix(err, "symbol %s%s in .dynsym", lookups[0].name, more);
    }
    bool exports_found = false;
    for (size_t k = 0; k < n; k++) {
        exports_found |= lookups[k].exported && lookups[k].found == 0;
    }
    size_t pending = 0;
    for (size_t k = 0; k < n; k++) {
        pending += wanted(&lookups[k], exports_found);
    }
    /* Not even opened when not needed: its string table's pages would count in RSS. */
    if (pending > 0 && search(e, ELF_SHT_SYMTAB, lookups, n, exports_found, err) < 0) {
        return pt_error_prefix(err, "symbol %s%s in .symtab", lookups[0].name, more);
    }
    return 0;
}

int elf_find_symbol(const struct elf *e, const char *name, struct elf_symbol *out,
                    struct pt_error *err)
{
    struct elf_lookup q = {.name = name};
    if (elf_find_symbols(e, &q, 1, err) < 0) {
        return -1;
    }
    if (q.found == 0) {
        *out = q.sym;
    }
    return q.found;
}

/* How a mapping's file offset may relate to a PT_LOAD segment, in the order they are tried. */
enum segment_match {
    MATCH_PAGE,   /* the kernel mapped the segment from its 4 KiB page */
    MATCH_ALIGN,  /* from its p_align page (a kernel with larger pages, e.g. 64 KiB on aarch64) */
    MATCH_INSIDE, /* a later page of it: mprotect() (RELRO) split the mapping */
    MATCH_COUNT,
};

/* Sets *BIAS and returns 0 when segment PH was mapped at MAP_START from MAP_OFFSET in the way
 * HOW describes, returns 1 when it was not. Exact starts are tried on every segment first,
 * because two segments can share a page and only its first mapping starts there. */
static int segment_bias(const uint64_t *ph, enum segment_match how, uint64_t map_start,
                        uint64_t map_offset, uint64_t *bias, struct pt_error *err)
{
    uint64_t page = ELF_PAGE;
    if (how == MATCH_ALIGN) {
        page = ph[PH_ALIGN];
        if (page <= ELF_PAGE || (page & (page - 1)) != 0) {
            return 1;
        }
    }
    uint64_t file_page = ph[PH_OFFSET] & ~(page - 1);
    uint64_t vaddr_page = ph[PH_VADDR] & ~(page - 1);
    uint64_t file_end;
    if (__builtin_add_overflow(ph[PH_OFFSET], ph[PH_FILESZ], &file_end)) {
        return pt_error_set(err, PT_E_FORMAT, 0,
                            "PT_LOAD segment at 0x%" PRIx64 " of 0x%" PRIx64 " bytes wraps around",
                            ph[PH_OFFSET], ph[PH_FILESZ]);
    }
    uint64_t skip = 0; /* bytes of the segment's file range before MAP_OFFSET */
    if (how != MATCH_INSIDE) {
        if (file_page != map_offset) {
            return 1;
        }
    } else if (map_offset > file_page && map_offset < file_end) {
        skip = map_offset - file_page;
        if (skip % ELF_PAGE != 0) {
            return 1;
        }
    } else {
        return 1;
    }
    /* Unsigned wrap-around is intended: a prelinked image may load below its link address. */
    *bias = map_start - (vaddr_page + skip);
    return 0;
}

int elf_load_bias(const struct elf *e, uint64_t map_start, uint64_t map_offset, uint64_t *bias,
                  struct pt_error *err)
{
    for (int how = 0; how < MATCH_COUNT; how++) {
        for (uint64_t i = 0; i < e->phdrs.count; i++) {
            uint64_t ph[PH_COUNT];
            if (read_phdr(e, i, ph, err) < 0) {
                return pt_error_prefix(err, "load bias");
            }
            if (ph[PH_TYPE] != ELF_PT_LOAD || ph[PH_FILESZ] == 0) {
                continue;
            }
            int rc = segment_bias(ph, (enum segment_match)how, map_start, map_offset, bias, err);
            if (rc < 0) {
                return pt_error_prefix(err, "load bias");
            }
            if (rc == 0) {
                return 0;
            }
        }
    }
    return pt_error_set(err, PT_E_FORMAT, 0, "no PT_LOAD segment maps file offset 0x%" PRIx64,
                        map_offset);
}

const uint8_t *elf_section_bytes(const struct elf *e, const struct elf_section *sec, size_t *len)
{
    const uint8_t *p;
    if (!get_bytes(&e->r, sec->offset, sec->size, &p)) {
        return NULL;
    }
    *len = (size_t)sec->size;
    return p;
}
