/* asyncdebug: find and read the _asyncio module's debug offsets (its .AsyncioDebug section,
 * 3.14+) in a target. */
#include "config.h"

#include "core/asyncio/asyncdebug.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "core/target/elf.h"
#include "core/util/error.h"
#include "core/layout/layout.h"
#include "core/util/limits.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"

int asyncdebug_parse_offsets(const uint8_t *buf, size_t len, struct asyncdebug_offsets *out,
                             struct pt_error *err)
{
    uint64_t v[ASYNCDEBUG_SECTION_SIZE / 8];
    if (len < ASYNCDEBUG_SECTION_SIZE) {
        return pt_error_set(err, PT_E_FORMAT, 0, "asyncio debug offsets truncated (%zu bytes)",
                            len);
    }
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        layout_read_u64(buf, len, i * 8, &v[i]);
    }
    struct asyncdebug_offsets o = {
        .task_size = v[0],
        .task_name = v[1],
        .task_awaited_by = v[2],
        .task_is_task = v[3],
        .task_awaited_by_is_set = v[4],
        .task_coro = v[5],
        .task_node = v[6],
        .interp_size = v[7],
        .interp_tasks_head = v[8],
        .thread_size = v[9],
        .thread_running_loop = v[10],
        .thread_running_task = v[11],
        .thread_tasks_head = v[12],
    };
    /* FutureObj_HEAD (Modules/_asynciomodule.c, 3.14 and 3.15) puts the int fut_state right
     * before the char is_task; the section does not name it, so the state is checked to be
     * one of the three values before it is believed. */
    o.task_state = o.task_is_task >= 4 ? o.task_is_task - 4 : LAYOUT_NONE;
    uint64_t end;
    const uint64_t ptrs[] = {o.task_name, o.task_awaited_by, o.task_coro, o.task_node};
    if (o.task_size == 0 || o.task_size > LIMIT_OBJECT_READ) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "asyncio task size %" PRIu64 " is implausible",
                            o.task_size);
    }
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) {
        if (__builtin_add_overflow(ptrs[i], 8, &end) || end > o.task_size) {
            return pt_error_set(err, PT_E_BADLAYOUT, 0,
                                "asyncio task field at %" PRIu64 " outside its %" PRIu64 " bytes",
                                ptrs[i], o.task_size);
        }
    }
    if (o.task_is_task >= o.task_size || o.task_awaited_by_is_set >= o.task_size ||
        o.interp_tasks_head > o.interp_size || o.interp_size - o.interp_tasks_head < 16 ||
        o.thread_tasks_head > o.thread_size || o.thread_size - o.thread_tasks_head < 16) {
        return pt_error_set(err, PT_E_BADLAYOUT, 0, "asyncio debug offsets are inconsistent");
    }
    *out = o;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int asyncdebug_read_at(struct proc *p, uint64_t addr, struct asyncdebug_offsets *out,
                       struct pt_error *err)
{
    uint8_t buf[ASYNCDEBUG_SECTION_SIZE];
    if (proc_read_bytes(p, addr, buf, sizeof buf, err) < 0 ||
        asyncdebug_parse_offsets(buf, sizeof buf, out, err) < 0) {
        return -1;
    }
    out->addr = addr;
    return 0;
}

int asyncdebug_read_section(struct proc *p, uint64_t addr, uint64_t size, const char *path,
                            struct asyncdebug_offsets *out, struct pt_error *err)
{
    /* The section is data the module fills at build time; read the target's copy. */
    if (size != 0 && size < ASYNCDEBUG_SECTION_SIZE) {
        return pt_error_set(err, PT_E_FORMAT, 0, "%s: .AsyncioDebug is too short", path);
    }
    return asyncdebug_read_at(p, addr, out, err) < 0 ? -1 : 1;
}

/* Looks in one mapped file for the section; 1 found (OUT filled), 0 not, -1 bad. */
static int examine(struct proc *p, const struct proc_map *maps, size_t n, const char *path,
                   struct asyncdebug_offsets *out, struct pt_error *err)
{
    const struct proc_map *first = NULL;
    for (size_t i = 0; i < n && first == NULL; i++) {
        if (strcmp(maps[i].path, path) == 0) {
            first = &maps[i];
        }
    }
    /* A file that cannot be opened, or is no ELF image, holds no section: not an error. */
    struct elf *e = first != NULL ? runtime_open_elf(p, path, NULL) : NULL;
    if (e == NULL) {
        return 0;
    }
    int found = 0;
    struct elf_section sec;
    uint64_t bias;
    uint64_t addr;
    if (elf_find_section(e, ".AsyncioDebug", &sec, NULL) == 0 &&
        elf_load_bias(e, first->start, first->offset, &bias, NULL) == 0 &&
        !__builtin_add_overflow(sec.addr, bias, &addr)) {
        found = asyncdebug_read_section(p, addr, sec.size, path, out, err);
    }
    elf_close(e);
    return found;
}

int asyncdebug_locate(struct proc *p, const char *runtime_binary, struct asyncdebug_offsets *out,
                      struct pt_error *err)
{
    const struct proc_map *maps;
    size_t n;
    if (proc_maps(p, &maps, &n, err) < 0) {
        return -1;
    }
    const char *seen = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *path = maps[i].path;
        bool candidate = (runtime_binary != NULL && strcmp(path, runtime_binary) == 0) ||
                         strncmp(base_name(path), "_asyncio.", 9) == 0;
        if (!candidate || (seen != NULL && strcmp(seen, path) == 0)) {
            continue;
        }
        seen = path;
        int r = examine(p, maps, n, path, out, err);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}
