/* fuzz_elf: libFuzzer entry point feeding arbitrary bytes to the ELF parser. */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "core/elf.h"
#include "core/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const sections[] = {".PyRuntime", ".dynsym", ".shstrtab", ""};
    static const char *const symbols[] = {"_PyRuntime", "interp_head", "main", ""};
    static const uint64_t offsets[] = {0, 0x1000, 0x10000, 0x7e7000};
    struct pt_error err = {0};
    struct elf *e = elf_open_buf(data, size, &err);
    if (e == NULL) {
        return 0;
    }
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        struct elf_section sec;
        elf_find_section(e, sections[i], &sec, &err);
    }
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        struct elf_symbol sym;
        elf_find_symbol(e, symbols[i], &sym, &err);
    }
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        uint64_t bias;
        elf_load_bias(e, 0x7f0000000000 + offsets[i], offsets[i], &bias, &err);
    }
    (void)elf_is_dyn(e);
    elf_close(e);
    return 0;
}
