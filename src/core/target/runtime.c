/* runtime: find the Python interpreter inside a target process and learn its layout. */
#include "config.h"

#include "core/target/runtime.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/target/elf.h"
#include "core/util/error.h"
#include "core/layout/gen.h"
#include "core/layout/gen_wait.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime_int.h"

/* How many distinct mapped files are examined before giving up. */
enum { RUNTIME_MAX_CANDIDATES = 64 };

/* What one mapped ELF file says about the interpreter, if it holds one. */
struct candidate {
    const char *path;
    uint64_t bias;
    uint64_t runtime_addr;
    bool has_section;
    bool python_without_runtime;  /* a Python too old to have _PyRuntime, whose binary does
                                   * not name interp_head either (stripped) */
    bool globals_only;            /* before 3.7: RUNTIME_ADDR is interp_head */
    uint64_t py_version_addr;     /* Py_Version (3.11+), 0 when absent */
    uint64_t rodata_hexversion;   /* from the PY_VERSION string in .rodata; 0 when not found */
    uint64_t version_buf_addr;    /* Py_GetVersion()'s buffer, when the symbol table names it */
    uint64_t runtime_size;        /* st_size of _PyRuntime; 0 when unknown */
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

/* Names of Python's C API that a Python executable or libpython exports (a release build
 * lacks _Py_NegativeRefcount). They are looked up together: each symbol table is read once,
 * .dynsym through its hash table, and .symtab not at all when the API is exported: a scan of
 * an unstripped libpython's .symtab makes most of a megabyte of file pages resident. */
enum {
    API_RUNTIME,
    API_INITIALIZE,
    API_VERSION,
    API_CODE_TYPE,
    API_NONE,
    API_NEGREF,
    API_COUNT
};
static const char *const api_names[API_COUNT] = {
    "_PyRuntime",  "Py_Initialize",  "Py_Version",
    "PyCode_Type", "_Py_NoneStruct", "_Py_NegativeRefcount",
};

/* The runtime address of what lookup Q found, 0 when it found nothing or a symbol at 0. */
static uint64_t lookup_addr(const struct elf_lookup *q, uint64_t bias)
{
    return q->found == 0 && q->sym.value != 0 ? q->sym.value + bias : 0;
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

/* Reads "3.MINOR.MICRO" at P (up to END) into a PY_VERSION_HEX of a final release. */
static uint64_t parse_version(const uint8_t *p, const uint8_t *end)
{
    unsigned v[3] = {0, 0, 0};
    int part = 0;
    bool digit = false;
    for (; p < end && *p != '\0'; p++) {
        if (*p >= '0' && *p <= '9' && v[part] < 1000) {
            v[part] = v[part] * 10 + (unsigned)(*p - '0');
            digit = true;
        } else if (*p == '.' && digit && part < 2) {
            part++;
            digit = false;
        } else {
            break;
        }
    }
    if (part != 2 || !digit || (v[0] != 3 && v[0] != 2) || v[1] > 255 || v[2] > 255) {
        return 0;
    }
    return ((uint64_t)v[0] << 24) | ((uint64_t)v[1] << 16) | ((uint64_t)v[2] << 8) | 0xf0;
}

static unsigned key_from_name(const char *path);

/* Before 3.11 the binary exports no version number, but PY_VERSION ("3.9.18") is a string of
 * its own in .rodata, which Py_GetVersion() formats into sys.version. Other version strings
 * may come first (a bundled library's): where the file's name says major.minor (PATH), the
 * first of that version is taken; else the first 3.x. */
static uint64_t rodata_version(const struct elf *e, const char *path)
{
    unsigned want = key_from_name(path);
    struct elf_section sec;
    size_t len;
    const uint8_t *data;
    if (elf_find_section(e, ".rodata", &sec, NULL) != 0 ||
        (data = elf_section_bytes(e, &sec, &len)) == NULL) {
        return 0;
    }
    for (size_t i = 1; i + 6 < len; i++) {
        if (data[i - 1] == '\0' && (data[i] == '3' || data[i] == '2') && data[i + 1] == '.') {
            const uint8_t *end = memchr(data + i, '\0', len - i < 16 ? len - i : 16);
            uint64_t v = end != NULL ? parse_version(data + i, end) : 0;
            if (v != 0 && (want != 0 ? LAYOUT_VERSION_KEY(v) == want : (v >> 24) == 3)) {
                return v;
            }
        }
    }
    return 0;
}

struct elf *runtime_open_elf(struct proc *p, const char *path, struct pt_error *err)
{
    int fd = proc_open_file(p, path, err);
    if (fd < 0) {
        return NULL;
    }
    struct elf *e = elf_open_fd(fd, err);
    close(fd);
    return e;
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
    struct elf_lookup api[API_COUNT];
    /* Local symbols, which only .symtab names: one scan of it finds them all. */
    enum { LOCAL_HEAD, LOCAL_VERSION0, LOCAL_VERSION, LOCAL_COUNT };
    struct elf_lookup local[LOCAL_COUNT] = {
        [LOCAL_HEAD] = {.name = "interp_head"},
        [LOCAL_VERSION0] = {.name = "version.0"},
        [LOCAL_VERSION] = {.name = "version"},
    };
    bool locals_read = false;
    if (elf_load_bias(e, m->start, m->offset, &cand->bias, NULL) < 0) {
        goto out;
    }
    for (size_t i = 0; i < API_COUNT; i++) {
        api[i] = (struct elf_lookup){.name = api_names[i], .exported = true};
    }
    /* A malformed table leaves its names not found, as they were before it failed. */
    (void)elf_find_symbols(e, api, API_COUNT, NULL);
    if (api[API_RUNTIME].found == 0) {
        cand->runtime_size = api[API_RUNTIME].sym.size;
    }
    cand->has_section = elf_find_section(e, ".PyRuntime", &sec, NULL) == 0;
    if (cand->has_section) {
        cand->runtime_addr = sec.addr + cand->bias;
    } else if (lookup_addr(&api[API_RUNTIME], cand->bias) != 0) {
        cand->runtime_addr = lookup_addr(&api[API_RUNTIME], cand->bias);
    } else if (lookup_addr(&api[API_INITIALIZE], cand->bias) != 0) {
        /* Before 3.7 there is no _PyRuntime: the list of interpreters is a static of
         * Python/pystate.c, which only an unstripped binary's .symtab names. The version's
         * buffer (below) is looked up in the same scan of it. */
        (void)elf_find_symbols(e, local, LOCAL_COUNT, NULL);
        locals_read = true;
        cand->runtime_addr = lookup_addr(&local[LOCAL_HEAD], cand->bias);
        cand->globals_only = cand->runtime_addr != 0;
        cand->python_without_runtime = !cand->globals_only;
        if (!cand->globals_only) {
            goto out;
        }
    } else {
        goto out;
    }
    cand->path = path;
    cand->py_version_addr = lookup_addr(&api[API_VERSION], cand->bias);
    if (cand->py_version_addr == 0) {
        cand->rodata_hexversion = rodata_version(e, path);
        /* Py_GetVersion() formats sys.version into a static buffer (Python/getversion.c);
         * unstripped libraries name it in .symtab, as version.0 or version. */
        if (!locals_read) {
            (void)elf_find_symbols(e, local + LOCAL_VERSION0, LOCAL_COUNT - LOCAL_VERSION0, NULL);
        }
        cand->version_buf_addr = lookup_addr(&local[LOCAL_VERSION0], cand->bias);
        if (cand->version_buf_addr == 0) {
            cand->version_buf_addr = lookup_addr(&local[LOCAL_VERSION], cand->bias);
        }
    }
    rt->runtime_addr = cand->runtime_addr;
    rt->code_type_addr = lookup_addr(&api[API_CODE_TYPE], cand->bias);
    rt->none_addr = lookup_addr(&api[API_NONE], cand->bias);
    /* Py_REF_DEBUG, implied by Py_DEBUG, adds this function (Objects/object.c). */
    rt->debug_build = lookup_addr(&api[API_NEGREF], cand->bias) != 0;
    snprintf(rt->binary, sizeof rt->binary, "%s", path);
    /* A build with _asyncio built in holds the tasks' offsets here too: noted while the binary
     * is open, so reading tasks does not map it again. */
    struct elf_section async;
    uint64_t async_addr;
    rt->asyncio_debug_addr = 0;
    rt->asyncio_debug_size = 0;
    rt->binary_asyncio_known = true;
    if (elf_find_section(e, ".AsyncioDebug", &async, NULL) == 0 && async.size > 0 &&
        !__builtin_add_overflow(async.addr, cand->bias, &async_addr)) {
        rt->asyncio_debug_addr = async_addr;
        rt->asyncio_debug_size = async.size;
    }
    found = 1;
out:
    elf_close(e);
    return found;
}

/* A Python whose version pytop cannot tell, or has no layout for: say which if the name tells. */
static int refuse_old(const char *path, struct pt_error *err)
{
    const char *b = base_name(path);
    const char *v = strstr(b, "python");
    unsigned major;
    unsigned minor;
    if (v != NULL && sscanf(v, "python%u.%u", &major, &minor) == 2) {
        if (layout_has_table((major << 8) | minor)) {
            return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                                "Python %u.%u (%s): its binary does not name interp_head, the "
                                "list of interpreters (a stripped build keeps no .symtab); "
                                "pytop cannot find the interpreter without it",
                                major, minor, path);
        }
        return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                            "Python %u.%u (%s) is not supported (pytop reads %s)", major, minor,
                            path, layout_supported());
    }
    return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                        "the Python in %s is too old or unknown to pytop (it reads %s)", path,
                        layout_supported());
}

/* LAYOUT_VERSION_KEY() of the version in a file name like libpython3.9.so.1.0 or python2.7,
 * or 0. */
static unsigned key_from_name(const char *path)
{
    const char *v = strstr(base_name(path), "python");
    unsigned major;
    unsigned minor;
    if (v != NULL && sscanf(v, "python%u.%u", &major, &minor) == 2 && (major == 2 || major == 3) &&
        minor < 256) {
        return (major << 8) | minor;
    }
    return 0;
}

/* The version of a runtime without debug offsets: Py_Version (3.11+), else the PY_VERSION
 * string, else the file name's major.minor (*MICRO_KNOWN false). 0 when nothing tells. */
static uint64_t old_version(struct proc *p, const struct candidate *cand, bool *micro_known)
{
    uint32_t v = 0;
    *micro_known = true;
    if (cand->py_version_addr != 0 &&
        proc_read_bytes(p, cand->py_version_addr, &v, sizeof v, NULL) == 0 && (v >> 24) == 3) {
        return v;
    }
    if (cand->rodata_hexversion != 0) {
        return cand->rodata_hexversion;
    }
    uint8_t buf[16];
    uint64_t hex;
    if (cand->version_buf_addr != 0 &&
        proc_read_bytes(p, cand->version_buf_addr, buf, sizeof buf, NULL) == 0) {
        /* "3.9.18 (main, ...": the version ends at the first space. */
        uint8_t *space = memchr(buf, ' ', sizeof buf);
        if (space != NULL && (hex = parse_version(buf, space)) != 0 &&
            key_from_name(cand->path) == LAYOUT_VERSION_KEY(hex)) {
            return hex;
        }
    }
    unsigned key = key_from_name(cand->path);
    *micro_known = false;
    return key != 0 ? ((uint64_t)key << 16) | 0xf0 : 0;
}

/* Where the binary of CAND keeps the global code marker: a local symbol, which only an
 * unstripped binary's .symtab names. Looked up only for a version that has one (a scan of
 * .symtab makes its pages resident); 0 when absent. */
static uint64_t global_marker(struct proc *p, const struct candidate *cand)
{
    struct elf_symbol sym;
    uint64_t addr = 0;
    struct elf *e = runtime_open_elf(p, cand->path, NULL);
    if (e != NULL && elf_find_symbol(e, LAYOUT_NEXT_VERSION_SYMBOL, &sym, NULL) == 0 &&
        sym.value != 0) {
        addr = sym.value + cand->bias;
    }
    elf_close(e);
    return addr;
}

/* What the layout takes from the binary rather than the version: its kind of build, and
 * whether it names the global a code marker lives in. */
static void fit_build(struct proc *p, struct runtime *rt, const struct candidate *cand)
{
    struct py_layout *L = &rt->layout;
    layout_pick_build(L, rt->debug_build);
    if (L->code_marker == CODE_MARKER_GLOBAL_NEXT_VERSION) {
        rt->next_version_addr = global_marker(p, cand);
    }
    if (L->code_marker == CODE_MARKER_GLOBAL_NEXT_VERSION && rt->next_version_addr == 0) {
        L->code_marker = CODE_MARKER_NONE;
    }
}

/* Looks up the globals G[0..N) and the symbols MORE[0..N_MORE) (the collector's globals, the
 * GIL's) in CAND's binary into RT->symbols. */
static int find_globals(struct proc *p, struct runtime *rt, const struct candidate *cand,
                        const struct layout_global *g, size_t n, const char *const *more,
                        size_t n_more, struct pt_error *err)
{
    struct elf_lookup q[RUNTIME_SYMBOLS_MAX];
    size_t n_kept = 0;
    n = n < RUNTIME_SYMBOLS_MAX ? n : RUNTIME_SYMBOLS_MAX;
    for (size_t i = 0; i < n; i++) {
        q[i] = (struct elf_lookup){.name = g[i].symbol, .file = g[i].file};
    }
    for (size_t i = 0; i < n_more && n + n_kept < RUNTIME_SYMBOLS_MAX; i++) {
        q[n + n_kept++] = (struct elf_lookup){.name = more[i]};
    }
    struct elf *e = runtime_open_elf(p, cand->path, err);
    if (e == NULL) {
        return -1;
    }
    int rc = elf_find_symbols(e, q, n + n_kept, err);
    elf_close(e);
    if (rc < 0) {
        return -1;
    }
    rt->n_symbols = 0;
    for (size_t i = 0; i < n + n_kept && rt->n_symbols < RUNTIME_SYMBOLS_MAX; i++) {
        struct runtime_symbol *sym = &rt->symbols[rt->n_symbols++];
        snprintf(sym->name, sizeof sym->name, "%s", q[i].name);
        sym->addr = lookup_addr(&q[i], cand->bias);
    }
    return 0;
}

uint64_t runtime_symbol_addr(const struct runtime *rt, const char *name)
{
    for (size_t i = 0; i < rt->n_symbols && i < RUNTIME_SYMBOLS_MAX; i++) {
        if (strncmp(rt->symbols[i].name, name, sizeof rt->symbols[i].name) == 0) {
            return rt->symbols[i].addr;
        }
    }
    return 0;
}

/* The runtime fields L's version keeps in globals (layout_globals()): found by symbol in
 * CAND's binary, and the runtime widened to cover them: RT->runtime_addr becomes the lowest
 * of them and the runtime's struct, every runtime offset is counted from there. A required
 * global the binary does not name refuses the target (PT_E_UNSUPPORTED); an optional one
 * stays unknown. */
static int gather_globals(struct proc *p, struct runtime *rt, const struct candidate *cand,
                          struct pt_error *err)
{
    struct py_layout *L = &rt->layout;
    size_t n = 0;
    const struct layout_global *g = layout_globals(L, &n);
    size_t n_gc = 0;
    const struct layout_gc_global *gc =
        layout_gc_globals(LAYOUT_VERSION_KEY(L->hexversion), &n_gc);
    rt->n_gc_pieces = 0;
    if (n == 0) {
        return 0;
    }
    n = n > LAYOUT_GLOBALS_MAX ? LAYOUT_GLOBALS_MAX : n;
    n_gc = n_gc > RUNTIME_GC_PIECES_MAX ? RUNTIME_GC_PIECES_MAX : n_gc;
    /* The GIL's globals where it is no struct (waits.c tells its waiters by them). */
    const struct layout_wait_gen *wg = layout_wait_gen(LAYOUT_VERSION_KEY(L->hexversion));
    size_t n_gil = wg != NULL ? wg->n_gil_globals : 0;
    const char *more[RUNTIME_GC_PIECES_MAX + RUNTIME_GIL_GLOBALS_MAX];
    size_t n_more = 0;
    for (size_t i = 0; i < n_gc; i++) {
        more[n_more++] = gc[i].symbol;
    }
    for (size_t i = 0; i < n_gil && i < RUNTIME_GIL_GLOBALS_MAX; i++) {
        more[n_more++] = wg->gil_globals[i].symbol;
    }
    /* Given (runtime_adopt()), or looked up now in the binary. */
    if (rt->n_symbols == 0 && find_globals(p, rt, cand, g, n, more, n_more, err) < 0) {
        return -1;
    }
    uint64_t lo = rt->runtime_addr;
    uint64_t hi;
    uint64_t at[LAYOUT_GLOBALS_MAX];
    if (__builtin_add_overflow(rt->runtime_addr, L->runtime.size, &hi)) {
        return runtime_misfit(rt, "its runtime lies past the end of memory", err);
    }
    for (size_t i = 0; i < n; i++) {
        at[i] = runtime_symbol_addr(rt, g[i].symbol);
        if (at[i] > UINT64_MAX - 8) {
            return runtime_misfit(rt, "a runtime global lies past the end of memory", err);
        }
        if (at[i] == 0 && g[i].required) {
            return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                                "Python %s (%s): its binary does not name %s (a stripped "
                                "build keeps no .symtab); pytop cannot find the interpreter "
                                "without it",
                                rt->version, cand->path, g[i].symbol);
        }
        if (at[i] != 0) {
            lo = at[i] < lo ? at[i] : lo;
            hi = at[i] + 8 > hi ? at[i] + 8 : hi;
        }
    }
    /* Globals of one binary lie within its data; anything farther apart is not believed. */
    if (hi - lo > LIMIT_RUNTIME_SPAN) {
        return runtime_misfit(rt, "its runtime globals lie too far apart", err);
    }
    uint64_t shift = rt->runtime_addr - lo;
    uint64_t *fields[] = {&L->runtime.finalizing, &L->runtime.interpreters_head,
                          &L->runtime.main_thread, &L->runtime.gil_locked,
                          &L->runtime.gil_holder, &L->runtime.gil_switch, &L->runtime.gc,
                          &L->runtime.gc_collecting};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (layout_has(*fields[i])) {
            *fields[i] += shift;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (at[i] != 0) {
            uint64_t off = at[i] - lo;
            memcpy((unsigned char *)L + g[i].to, &off, sizeof off);
        }
    }
    rt->runtime_addr = lo;
    L->runtime.size = hi - lo;
    /* The collector's globals, all or none: without one of them its state cannot be told. */
    for (size_t i = 0; i < n_gc; i++) {
        uint64_t addr = runtime_symbol_addr(rt, gc[i].symbol);
        if (addr == 0 || gc[i].size > LIMIT_OBJECT_READ) {
            rt->n_gc_pieces = 0;
            break;
        }
        rt->gc_pieces[rt->n_gc_pieces++] =
            (struct runtime_gc_piece){.addr = addr, .size = gc[i].size, .at = gc[i].at};
    }
    return 0;
}

static int read_layout(struct proc *p, struct runtime *rt, const struct candidate *cand,
                       uint64_t forced, struct pt_error *err)
{
    uint8_t blob[LIMIT_DEBUG_OFFSETS];
    rt->anchor_addr = rt->runtime_addr;
    if (proc_read_bytes(p, rt->runtime_addr, blob, sizeof blob, err) < 0) {
        return pt_error_prefix(err, "reading _PyRuntime in %s", cand->path);
    }
    if (forced == 0 && memcmp(blob, "xdebugpy", 8) == 0) {
        if (layout_from_debug_offsets(blob, sizeof blob, &rt->layout, err) < 0) {
            return -1;
        }
    } else {
        bool micro_known = true;
        uint64_t hex = forced != 0 ? forced : old_version(p, cand, &micro_known);
        unsigned key = LAYOUT_VERSION_KEY(hex);
        if (hex == 0) {
            return refuse_old(cand->path, err);
        }
        layout_version_string(hex, rt->version, sizeof rt->version);
        if (!micro_known) {
            snprintf(rt->version, sizeof rt->version, "%u.%u", key >> 8, key & 0xff);
        }
        if (!layout_has_table(key)) {
            return pt_error_set(err, PT_E_UNSUPPORTED, 0,
                                "Python %s (%s) is not supported (pytop reads %s)", rt->version,
                                cand->path, layout_supported());
        }
        if (layout_from_table(hex, &rt->layout, err) < 0) {
            return pt_error_prefix(err, "Python %s", rt->version);
        }
        /* The binary's own idea of sizeof(_PyRuntimeState) differs between every two minor
         * versions, so it tells a wrong table at once. */
        if (rt->layout.runtime.globals_only != cand->globals_only) {
            return runtime_misfit(rt,
                                 cand->globals_only
                                     ? "it has no _PyRuntime, which this version has"
                                     : "it has a _PyRuntime, which this version has not",
                                 err);
        }
        if (cand->runtime_size != 0 && cand->runtime_size != rt->layout.runtime.size) {
            return runtime_misfit(rt, "_PyRuntime's size is not this version's", err);
        }
        if (gather_globals(p, rt, cand, err) < 0) {
            return -1;
        }
        fit_build(p, rt, cand);
        return runtime_check_layout(p, rt, 0, err);
    }
    layout_version_string(rt->layout.hexversion, rt->version, sizeof rt->version);
    fit_build(p, rt, cand);
    return runtime_check_layout(p, rt, cand->runtime_size, err);
}

int runtime_adopt(struct proc *p, struct runtime *rt, uint64_t hexversion, uint64_t runtime_size,
                  struct pt_error *err)
{
    struct candidate cand = {.path = rt->binary,
                             .runtime_addr = rt->runtime_addr,
                             .rodata_hexversion = hexversion,
                             .runtime_size = runtime_size};
    /* Before 3.7 the runtime starts at interp_head. */
    cand.globals_only =
        rt->runtime_addr != 0 && runtime_symbol_addr(rt, "interp_head") == rt->runtime_addr;
    memset(&rt->layout, 0, sizeof rt->layout);
    rt->version[0] = '\0';
    return read_layout(p, rt, &cand, 0, err);
}

/* PYTOP_TEST_FORCE_VERSION=3.11 makes pytop take that version's layout whatever the target
 * is: only for testing that a wrong layout is refused. Returns a PY_VERSION_HEX or 0. */
static uint64_t forced_version(void)
{
    const char *v = getenv("PYTOP_TEST_FORCE_VERSION");
    unsigned major;
    unsigned minor;
    if (v == NULL || sscanf(v, "%u.%u", &major, &minor) != 2 || (major != 3 && major != 2) ||
        minor > 255) {
        return 0;
    }
    return ((uint64_t)major << 24) | (minor << 16) | 0xf0;
}

int runtime_locate(struct proc *p, struct runtime *rt, struct pt_error *err)
{
    return runtime_locate_as(p, forced_version(), rt, err);
}

int runtime_locate_as(struct proc *p, uint64_t forced_version, struct runtime *rt,
                      struct pt_error *err)
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
                return read_layout(p, rt, &cand, forced_version, err);
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
    /* A process that died while its files were read is gone, not "not Python" (the fault
     * trials kill targets at any moment). */
    struct pt_error gone = {0};
    if (proc_exec_check(p, &gone) < 0 && gone.code == PT_E_GONE) {
        *err = gone;
        return -1;
    }
    return pt_error_set(err, PT_E_NOTPY, 0, "no Python interpreter found in process %d (%s)",
                        (int)proc_pid(p), exe);
}
