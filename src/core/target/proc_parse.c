/* proc_parse: parsers of the kernel's /proc text formats (maps, stat, status); no system calls. */
#include "config.h" /* defines _GNU_SOURCE, which memrchr() needs */

#include "core/target/proc.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/error.h"
#include "core/util/limits.h"

/* A read position in text that is not NUL-terminated. */
struct cursor {
    const char *at;
    const char *end;
};

static bool take_char(struct cursor *c, char ch)
{
    bool ok = c->at < c->end && *c->at == ch;
    c->at += ok;
    return ok;
}

/* Takes one or more digits in BASE (10 or 16, lower-case) whose value fits in 64 bits. */
static bool take_number(struct cursor *c, unsigned base, uint64_t *out)
{
    static const char digits[] = "0123456789abcdef";
    uint64_t v = 0;
    const char *start = c->at;
    for (; c->at < c->end; c->at++) {
        const char *d = memchr(digits, *c->at, base);
        if (d == NULL) {
            break;
        }
        if (__builtin_mul_overflow(v, base, &v) ||
            __builtin_add_overflow(v, (uint64_t)(d - digits), &v)) {
            return false;
        }
    }
    *out = v;
    return c->at != start;
}

/* Takes "rwxp"-style permissions: each letter or '-', then 'p' (private) or 's' (shared). */
static bool take_perms(struct cursor *c, struct proc_map *m)
{
    const char *s = c->at;
    if (c->end - s < 4 || (s[0] != 'r' && s[0] != '-') || (s[1] != 'w' && s[1] != '-') ||
        (s[2] != 'x' && s[2] != '-') || (s[3] != 'p' && s[3] != 's')) {
        return false;
    }
    m->readable = s[0] == 'r';
    m->writable = s[1] == 'w';
    m->executable = s[2] == 'x';
    c->at += 4;
    return true;
}

/* Parses one maps line, "start-end perms offset major:minor inode [path]". The path is the rest
 * of the line after the padding, spaces and " (deleted)" included. Returns NULL or what is
 * wrong with the line. */
static const char *parse_map_line(struct cursor *c, struct proc_map *m, struct cursor *path)
{
    uint64_t major;
    uint64_t minor;
    if (!take_number(c, 16, &m->start) || !take_char(c, '-') || !take_number(c, 16, &m->end)) {
        return "bad address range";
    }
    if (m->start > m->end) {
        return "start address after end address";
    }
    if (!take_char(c, ' ') || !take_perms(c, m)) {
        return "bad permissions";
    }
    if (!take_char(c, ' ') || !take_number(c, 16, &m->offset)) {
        return "bad offset";
    }
    if (!take_char(c, ' ') || !take_number(c, 16, &major) || !take_char(c, ':') ||
        !take_number(c, 16, &minor)) {
        return "bad device";
    }
    if (!take_char(c, ' ') || !take_number(c, 10, &m->inode) ||
        (c->at < c->end && !take_char(c, ' '))) {
        return "bad inode";
    }
    while (c->at < c->end && *c->at == ' ') {
        c->at++;
    }
    *path = *c;
    if (memchr(path->at, '\0', (size_t)(path->end - path->at)) != NULL) {
        return "NUL byte in path";
    }
    return NULL;
}

/* Parses the line at C into a new entry of *MAPS, growing it. */
static int add_map_line(struct cursor *c, size_t line, struct proc_map **maps, size_t *n,
                        size_t *cap, struct pt_error *err)
{
    if (*n == LIMIT_MAPS) {
        return pt_error_set(err, PT_E_LIMIT, 0, "more than %d mappings", LIMIT_MAPS);
    }
    if (*n == *cap) {
        size_t bigger = *cap == 0 ? 64 : *cap * 2;
        struct proc_map *grown = realloc(*maps, bigger * sizeof *grown);
        if (grown == NULL) {
            return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for %zu mappings", bigger);
        }
        *maps = grown;
        *cap = bigger;
    }
    struct proc_map m = {0};
    struct cursor path;
    const char *problem = parse_map_line(c, &m, &path);
    if (problem != NULL) {
        return pt_error_set(err, PT_E_FORMAT, 0, "maps line %zu: %s", line, problem);
    }
    /* Not strndup(): the text need not be NUL-terminated, and the copy must not look past it. */
    size_t plen = (size_t)(path.end - path.at);
    m.path = malloc(plen + 1);
    if (m.path == NULL) {
        return pt_error_set(err, PT_E_NOMEM, ENOMEM, "no memory for a mapping path");
    }
    memcpy(m.path, path.at, plen);
    m.path[plen] = '\0';
    (*maps)[(*n)++] = m;
    return 0;
}

int proc_maps_parse(const char *text, size_t len, struct proc_map **out, size_t *n,
                    struct pt_error *err)
{
    struct proc_map *maps = NULL;
    size_t count = 0;
    size_t cap = 0;
    size_t line = 0;
    const char *at = text;
    const char *end = text + len;
    while (at < end) {
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        struct cursor c = {at, nl != NULL ? nl : end};
        line++;
        at = nl != NULL ? nl + 1 : end;
        if (add_map_line(&c, line, &maps, &count, &cap, err) < 0) {
            proc_maps_free(maps, count);
            return -1;
        }
    }
    *out = maps;
    *n = count;
    return 0;
}

void proc_maps_free(struct proc_map *maps, size_t n)
{
    if (maps == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        free(maps[i].path);
    }
    free(maps);
}

/* Takes all of FIELD as a decimal number. */
static bool take_stat_number(struct cursor field, uint64_t *out)
{
    return take_number(&field, 10, out) && field.at == field.end;
}

int proc_stat_parse(const char *text, size_t len, struct proc_task_stat *st, struct pt_error *err)
{
    /* "pid (comm) state ppid ...": comm may hold spaces and ')', so it ends at the last ')'. */
    const char *close = len > 0 ? memrchr(text, ')', len) : NULL;
    if (close == NULL || memchr(text, '(', (size_t)(close - text)) == NULL) {
        return pt_error_set(err, PT_E_FORMAT, 0, "stat: no command name in parentheses");
    }
    struct cursor c = {close + 1, text + len};
    struct cursor field[40]; /* numbered as in proc(5), from 3 (state) to 39 (processor) */
    for (int i = 3; i <= 39; i++) {
        if (!take_char(&c, ' ')) {
            return pt_error_set(err, PT_E_FORMAT, 0, "stat: ends before field %d", i);
        }
        field[i].at = c.at;
        while (c.at < c.end && *c.at != ' ' && *c.at != '\n') {
            c.at++;
        }
        field[i].end = c.at;
    }
    if (field[3].end - field[3].at != 1 || !isalpha((unsigned char)*field[3].at)) {
        return pt_error_set(err, PT_E_FORMAT, 0, "stat: bad state");
    }
    struct proc_task_stat out = {.state = *field[3].at};
    uint64_t processor;
    if (!take_stat_number(field[14], &out.utime) || !take_stat_number(field[15], &out.stime) ||
        !take_stat_number(field[22], &out.start_time) ||
        !take_stat_number(field[39], &processor) || processor > INT_MAX) {
        return pt_error_set(err, PT_E_FORMAT, 0, "stat: bad times or processor");
    }
    out.processor = (int)processor;
    *st = out;
    return 0;
}

/* "Uid:\t1000\t1000\t1000\t1000": four decimal ids after the tag, separated by blanks. */
static bool take_ids(struct cursor c, uint64_t ids[4])
{
    for (int i = 0; i < 4; i++) {
        if (c.at == c.end || (*c.at != '\t' && *c.at != ' ')) {
            return false;
        }
        while (c.at < c.end && (*c.at == '\t' || *c.at == ' ')) {
            c.at++;
        }
        if (!take_number(&c, 10, &ids[i]) || ids[i] > UINT32_MAX) {
            return false;
        }
    }
    return c.at == c.end;
}

int proc_status_parse(const char *text, size_t len, struct proc_status *st, struct pt_error *err)
{
    struct proc_status out = {0};
    bool uid = false;
    bool gid = false;
    struct cursor c = {text, text + len};
    while (c.at < c.end) {
        const char *nl = memchr(c.at, '\n', (size_t)(c.end - c.at));
        struct cursor line = {c.at, nl != NULL ? nl : c.end};
        c.at = nl != NULL ? nl + 1 : c.end;
        size_t n = (size_t)(line.end - line.at);
        if (n >= 4 && memcmp(line.at, "Uid:", 4) == 0) {
            line.at += 4;
            if (!take_ids(line, out.uid)) {
                return pt_error_set(err, PT_E_FORMAT, 0, "status: bad Uid line");
            }
            uid = true;
        } else if (n >= 4 && memcmp(line.at, "Gid:", 4) == 0) {
            line.at += 4;
            if (!take_ids(line, out.gid)) {
                return pt_error_set(err, PT_E_FORMAT, 0, "status: bad Gid line");
            }
            gid = true;
        } else if (n >= 7 && memcmp(line.at, "CapEff:", 7) == 0) {
            line.at += 7;
            while (line.at < line.end && (*line.at == '\t' || *line.at == ' ')) {
                line.at++;
            }
            if (line.end - line.at != 16 || !take_number(&line, 16, &out.cap_eff) ||
                line.at != line.end) {
                return pt_error_set(err, PT_E_FORMAT, 0, "status: bad CapEff line");
            }
            out.has_cap_eff = true;
        }
    }
    out.has_ids = uid && gid;
    *st = out;
    return 0;
}
