/* source: lines of the target's source files, read through its root and cached. */
#include "config.h"

#include "core/write/snapshot_write.h"
#include "core/target/source.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/limits.h"
#include "core/target/proc.h"

enum {
    SOURCE_MAX_FILES = 256,
    LIMIT_SOURCE_FILE = 8 << 20,
};

struct source_file {
    char *name;
    size_t name_len;
    char *text;           /* NULL: could not be read */
    size_t len;
    size_t *line_starts;  /* offsets of each line */
    size_t n_lines;
};

struct source_cache {
    struct proc *proc;
    struct source_file files[SOURCE_MAX_FILES];
    size_t n;
};

struct source_cache *source_cache_new(struct proc *p)
{
    struct source_cache *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->proc = p;
    }
    return c;
}

void source_cache_free(struct source_cache *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        free(c->files[i].name);
        free(c->files[i].text);
        free(c->files[i].line_starts);
    }
    free(c);
}

static char *read_all(int fd, size_t *len)
{
    size_t cap = 8192;
    size_t n = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n == cap) {
            if (cap >= LIMIT_SOURCE_FILE) {
                free(buf);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            break;
        }
        if (r == 0) {
            *len = n;
            return buf;
        }
        n += (size_t)r;
    }
    free(buf);
    return NULL;
}

static void load(struct source_cache *c, struct source_file *f)
{
    char path[4096];
    /* Pseudo-files such as "<string>" or "<frozen ...>" have no source to read. */
    if (f->name_len == 0 || f->name_len >= sizeof path ||
        memchr(f->name, '\0', f->name_len) != NULL || f->name[0] == '<') {
        return;
    }
    memcpy(path, f->name, f->name_len);
    path[f->name_len] = '\0';
    int fd = proc_open_file(c->proc, path, NULL);
    if (fd < 0) {
        return;
    }
    f->text = read_all(fd, &f->len);
    close(fd);
    if (f->text == NULL) {
        return;
    }
    size_t lines = 1;
    for (const char *q = f->text, *end = f->text + f->len;
         (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) {
        lines++;
    }
    f->line_starts = malloc(lines * sizeof *f->line_starts);
    if (f->line_starts == NULL) {
        free(f->text);
        f->text = NULL;
        return;
    }
    f->line_starts[f->n_lines++] = 0;
    for (const char *q = f->text, *end = f->text + f->len;
         (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) {
        f->line_starts[f->n_lines++] = (size_t)(q - f->text) + 1;
    }
}

static struct source_file *lookup(struct source_cache *c, const char *file, size_t file_len)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->files[i].name_len == file_len && memcmp(c->files[i].name, file, file_len) == 0) {
            return &c->files[i];
        }
    }
    if (c->n == SOURCE_MAX_FILES) {
        return NULL;
    }
    struct source_file *f = &c->files[c->n];
    memset(f, 0, sizeof *f);
    f->name = malloc(file_len + 1);
    if (f->name == NULL) {
        return NULL;
    }
    memcpy(f->name, file, file_len);
    f->name[file_len] = '\0';
    f->name_len = file_len;
    c->n++;
    load(c, f);
    return f;
}

const char *source_cache_line(struct source_cache *c, const char *file, size_t file_len,
                              int line, size_t *len)
{
    struct source_file *f = lookup(c, file, file_len);
    if (f == NULL || f->text == NULL || line < 1 || (size_t)line > f->n_lines) {
        return NULL;
    }
    size_t start = f->line_starts[line - 1];
    size_t end = (size_t)line < f->n_lines ? f->line_starts[line] - 1 : f->len;
    if (end > start && f->text[end - 1] == '\r') {
        end--;
    }
    if (start == f->len && (size_t)line == f->n_lines) {
        return NULL;
    }
    *len = end - start;
    return f->text + start;
}

static const char *line_of(void *ctx, const char *file, size_t file_len, int line, size_t *len)
{
    return source_cache_line(ctx, file, file_len, line, len);
}

struct snapshot_source source_cache_lines(struct source_cache *c)
{
    return (struct snapshot_source){c != NULL ? line_of : NULL, c};
}
