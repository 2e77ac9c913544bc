/* fuzz_elf: libFuzzer entry point feeding arbitrary bytes to the ELF parser: as a whole file
 * (seeds: tests/fuzz/elf/, made by tests/fuzz/make-elf-seeds), and as a symbol hash table on
 * its own, so that the hash parser is fuzzed without a file around it having to be found. */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/target/elf.h"
#include "core/target/elf_hash.h"
#include "core/util/error.h"
#include "core/util/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const symbols[] = {"_PyRuntime", "interp_head", "shared", "main", ""};
enum { SYMBOLS = sizeof symbols / sizeof symbols[0] };

static void fuzz_file(const uint8_t *data, size_t size)
{
    static const char *const sections[] = {".PyRuntime", ".dynsym", ".shstrtab", ""};
    static const uint64_t offsets[] = {0, 0x1000, 0x10000, 0x7e7000};
    struct pt_error err = {0};
    struct elf *e = elf_open_buf(data, size, &err);
    if (e == NULL) {
        return;
    }
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        struct elf_section sec;
        elf_find_section(e, sections[i], &sec, &err);
    }
    struct elf_lookup batch[SYMBOLS];
    for (size_t i = 0; i < SYMBOLS; i++) {
        struct elf_symbol sym;
        elf_find_symbol(e, symbols[i], &sym, &err);
        batch[i] = (struct elf_lookup){.name = symbols[i], .exported = i % 2 == 0};
    }
    elf_find_symbols(e, batch, SYMBOLS, &err);
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        uint64_t bias;
        elf_load_bias(e, 0x7f0000000000 + offsets[i], offsets[i], &bias, &err);
    }
    (void)elf_is_dyn(e);
    elf_close(e);
}

/* DATA[0] picks the table's kind (bit 0), class (bit 1) and byte order (bit 2), DATA[1] the
 * size of the symbol table it indexes (255: the largest pytop accepts); the rest is the table.
 * Every walk must end by itself: libFuzzer's timeout catches one that does not. */
static void fuzz_hash(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return;
    }
    enum elf_hash_kind kind = (data[0] & 1) != 0 ? ELF_HASH_SYSV : ELF_HASH_GNU;
    uint64_t n_symbols = data[1] == 255 ? LIMIT_ELF_SYMBOLS : data[1];
    struct elf_hash h;
    struct pt_error err = {0};
    if (elf_hash_parse(data + 2, size - 2, kind, (data[0] & 2) != 0, (data[0] & 4) != 0, n_symbols,
                       &h, &err) < 0) {
        return;
    }
    for (size_t i = 0; i < SYMBOLS; i++) {
        struct elf_hash_walk w;
        uint64_t index;
        elf_hash_start(&h, symbols[i], &w);
        while (elf_hash_next(&h, &w, &index, &err) > 0) {
            if (index >= n_symbols) {
                __builtin_trap(); /* a candidate outside the symbols */
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_file(data, size);
    fuzz_hash(data, size);
    return 0;
}
