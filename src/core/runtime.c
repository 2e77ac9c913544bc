/* runtime: find the Python interpreter inside a target process and learn its layout. */
#include "config.h"

#include "core/runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/elf.h"
#include "core/error.h"
#include "core/layout/layout.h"
#include "core/limits.h"
#include "core/proc.h"

/* How many distinct mapped files are examined before giving up. */
enum { RUNTIME_MAX_CANDIDATES = 64 };

/* What one mapped ELF file says about the interpreter, if it holds one. */
struct candidate {
    const char *path;
    uint64_t bias;
    uint64_t runtime_addr;
    bool has_section;
    bool python_without_runtime;  /* a Python too old to have _PyRuntime */
};

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether a mapped file is worth opening: the executable, or named like python/libpython. */
static bool looks_like_python(const char *path, const char *exe)
{
    return strcmp(path, exe) == 0 || strstr(base_name(path), "python") != NULL;
}

static uint64_t symbol_addr(const struct elf *e, const char *name, uint64_t bias)
{
    struct elf_symbol sym;
    if (elf_find_symbol(e, name, &sym, NULL) != 0 || sym.value == 0) {
        return 0;
    }
    return sym.value + bias;
}

/* The lowest mapping of PATH is the one at file offset 0 the load bias is computed from. */
static const struct proc_map *first_mapping(const struct proc_map *maps, size_t n,
                                            const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(maps[i].path, path) == 0) {
            return &maps[i];
        }
    }
    return NULL;
}

/* Opens PATH's ELF image through the target's root and looks for the runtime in it. Returns 1
 * when found (RT filled except the layout), 0 when not, -1 on an error worth reporting. */
static int examine(struct proc *p, const struct proc_map *maps, size_t n, const char *path,
                   struct runtime *rt, struct candidate *cand, struct pt_error *err)
{
    const struct proc_map *m = first_mapping(maps, n, path);
    int fd = proc_open_file(p, path, err);
    if (fd < 0) {
        return -1;
    }
    struct elf *e = elf_open_fd(fd, err);
    close(fd);
    if (e == NULL) {
        return 0;
    }
    int found = 0;
    struct elf_section sec;
    struct elf_symbol sym;
    if (elf_load_bias(e, m->start, m->offset, &cand->bias, NULL) < 0) {
        goto out;
    }
    cand->has_section = elf_find_section(e, ".PyRuntime", &sec, NULL) == 0;
    if (cand->has_section) {
        cand->runtime_addr = sec.addr + cand->bias;
    } else if (elf_find_symbol(e, "_PyRuntime", &sym, NULL) == 0 && sym.value != 0) {
        cand->runtime_addr = sym.value + cand->bias;
    } else {
        /* Before 3.7 there is no _PyRuntime, but the C API still names the interpreter. */
        cand->python_without_runtime = symbol_addr(e, "Py_Initialize", cand->bias) != 0;
        goto out;
    }
    cand->path = path;
    rt->runtime_addr = cand->runtime_addr;
    rt->code_type_addr = symbol_addr(e, "PyCode_Type", cand->bias);
    rt->none_addr = symbol_addr(e, "_Py_NoneStruct", cand->bias);
    /* Py_REF_DEBUG, implied by Py_DEBUG, adds this function (Objects/object.c). */
    rt->debug_build = symbol_addr(e, "_Py_NegativeRefcount", cand->bias) != 0;
    snprintf(rt->binary, sizeof rt->binary, "%s", path);
    found = 1;
out:
    elf_close(e);
    return found;
}

/* Before 3.13 there is no cookie; say which version it is if the file name tells. */
static int refuse_old(const char *path, struct pt_error *err)
{
    const char *b = base_name(path);
    const char *v = strstr(b, "python");
    unsigned major;
    unsigned minor;
    if (v != NULL && sscanf(v, "python%u.%u", &major, &minor) == 2) {
        return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                            "Python %u.%u (%s) is not supported yet (pytop reads 3.13 to %s)",
                            major, minor, path, layout_newest_supported());
    }
    return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                        "the Python in %s predates 3.13 and is not supported yet (pytop reads "
                        "3.13 to %s)",
                        path, layout_newest_supported());
}

static int read_layout(struct proc *p, struct runtime *rt, const struct candidate *cand,
                       struct pt_error *err)
{
    uint8_t blob[LIMIT_DEBUG_OFFSETS];
    if (proc_read_bytes(p, rt->runtime_addr, blob, sizeof blob, err) < 0) {
        return pt_error_prefix(err, "reading _PyRuntime in %s", cand->path);
    }
    if (memcmp(blob, "xdebugpy", 8) != 0) {
        return refuse_old(cand->path, err);
    }
    if (layout_from_debug_offsets(blob, sizeof blob, &rt->layout, err) < 0) {
        return -1;
    }
    layout_version_string(rt->layout.hexversion, rt->version, sizeof rt->version);
    return 0;
}

int runtime_locate(struct proc *p, struct runtime *rt, struct pt_error *err)
{
    const struct proc_map *maps;
    size_t n;
    char exe[PATH_MAX];
    memset(rt, 0, sizeof *rt);
    if (proc_exe(p, exe, sizeof exe, err) < 0 || proc_maps(p, &maps, &n, err) < 0) {
        return -1;
    }
    /* The executable first, then the other candidates in mapping order, each once. */
    const char *seen[RUNTIME_MAX_CANDIDATES];
    size_t n_seen = 0;
    const char *old_python = NULL;
    struct pt_error first_err = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < n && n_seen < RUNTIME_MAX_CANDIDATES; i++) {
            const char *path = maps[i].path;
            bool is_exe = strcmp(path, exe) == 0;
            if (path[0] != '/' || (pass == 0) != is_exe || !looks_like_python(path, exe)) {
                continue;
            }
            bool dup = false;
            for (size_t j = 0; j < n_seen && !dup; j++) {
                dup = strcmp(seen[j], path) == 0;
            }
            if (dup) {
                continue;
            }
            seen[n_seen++] = path;
            struct candidate cand = {0};
            int found = examine(p, maps, n, path, rt, &cand, first_err.code ? NULL : &first_err);
            if (found > 0) {
                return read_layout(p, rt, &cand, err);
            }
            if (cand.python_without_runtime && old_python == NULL) {
                old_python = path;
            }
        }
    }
    if (old_python != NULL) {
        return refuse_old(old_python, err);
    }
    if (first_err.code == PT_E_PERM || first_err.code == PT_E_GONE) {
        *err = first_err;
        return -1;
    }
    return pt_error_set(err, PT_E_NOTPY, 0, "no Python interpreter found in process %d (%s)",
                        (int)proc_pid(p), exe);
}
