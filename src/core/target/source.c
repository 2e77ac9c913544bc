/* source: lines of the target's source files, read through its root and cached.
 *
 * A file is not kept in memory: the first look at it reads it through once, a chunk at a
 * time into one buffer, and notes where every SOURCE_STRIDE-th line starts; a line is then
 * read from the nearest such point. The lines asked for are kept in a small table, as most
 * stacks show the same few lines again and again. A dump of a thousand asyncio tasks shows
 * lines of files of tens of kilobytes each (asyncio's own): kept whole they were a fifth of
 * the pages such a one-shot touched, and on a virtual machine a fresh page costs more than the
 * reads of a line. */
#include "config.h"

#include "core/write/snapshot_write.h"
#include "core/target/source.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/limits.h"
#include "core/target/proc.h"

enum {
    SOURCE_MAX_FILES = 256,
    LIMIT_SOURCE_FILE = 8 << 20,
    SOURCE_STRIDE = 64,         /* lines between two noted line starts */
    SOURCE_CHUNK = 16 * 1024,   /* bytes read at a time */
    SOURCE_OPEN_MAX = 16,       /* files kept open; more are opened again when read */
    SOURCE_LINE_MAX = 64 * 1024, /* a longer line is shown cut to this */
    SOURCE_SLOTS = 256,         /* lines kept (a power of two) */
};

struct source_file {
    char *name;
    size_t name_len;
    bool indexed;         /* read through once: LEN, N_LINES and STARTS hold */
    bool readable;
    int fd;               /* -1 when not open */
    size_t len;           /* bytes when indexed */
    size_t n_lines;       /* as Python counts them: a last line without newline counts */
    uint32_t *starts;     /* offset of line 1 + K * SOURCE_STRIDE, K = 0.. */
    size_t n_starts;
};

/* A line kept: line LINE of file FILE (index + 1; 0: free), its text or none (NULL, LEN 0,
 * when the file has no such line). */
struct source_slot {
    size_t file;
    int line;
    char *text;
    size_t len;
};

struct source_cache {
    struct proc *proc;
    struct source_file *files;
    size_t n;
    size_t cap;
    size_t n_open;
    char *chunk; /* SOURCE_CHUNK bytes, shared by every read */
    struct source_slot slots[SOURCE_SLOTS];
};

struct source_cache *source_cache_new(struct proc *p)
{
    struct source_cache *c = calloc(1, sizeof *c);
    if (c != NULL) {
        c->proc = p;
    }
    return c;
}

static void close_file(struct source_cache *c, struct source_file *f)
{
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
        c->n_open--;
    }
}

void source_cache_free(struct source_cache *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->n; i++) {
        close_file(c, &c->files[i]);
        free(c->files[i].name);
        free(c->files[i].starts);
    }
    for (size_t i = 0; i < SOURCE_SLOTS; i++) {
        free(c->slots[i].text);
    }
    free(c->files);
    free(c->chunk);
    free(c);
}

/* F's descriptor, opened when it is not (closing another first when too many are). */
static int file_fd(struct source_cache *c, struct source_file *f)
{
    if (f->fd >= 0) {
        return f->fd;
    }
    char path[4096];
    /* Pseudo-files such as "<string>" or "<frozen ...>" have no source to read. */
    if (f->name_len == 0 || f->name_len >= sizeof path ||
        memchr(f->name, '\0', f->name_len) != NULL || f->name[0] == '<') {
        return -1;
    }
    for (size_t i = 0; c->n_open >= SOURCE_OPEN_MAX && i < c->n; i++) {
        close_file(c, &c->files[i]);
    }
    memcpy(path, f->name, f->name_len);
    path[f->name_len] = '\0';
    f->fd = proc_open_file(c->proc, path, NULL);
    c->n_open += f->fd >= 0;
    return f->fd;
}

/* Up to SOURCE_CHUNK bytes of F from OFF into c->chunk: how many (0 at the end), -1 when it
 * cannot be read. */
static ssize_t read_chunk(struct source_cache *c, struct source_file *f, size_t off)
{
    int fd = file_fd(c, f);
    if (fd < 0) {
        return -1;
    }
    for (;;) {
        ssize_t r = pread(fd, c->chunk, SOURCE_CHUNK, (off_t)off);
        if (r >= 0 || errno != EINTR) {
            return r;
        }
    }
}

static bool note_start(struct source_file *f, size_t *cap, size_t off)
{
    if (f->n_starts == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        uint32_t *ns = realloc(f->starts, ncap * sizeof *ns);
        if (ns == NULL) {
            return false;
        }
        f->starts = ns;
        *cap = ncap;
    }
    f->starts[f->n_starts++] = (uint32_t)off;
    return true;
}

/* Reads F through once: its length, its lines, and where every SOURCE_STRIDE-th starts. */
static void index_file(struct source_cache *c, struct source_file *f)
{
    f->indexed = true;
    size_t cap = 0;
    size_t off = 0;
    size_t newlines = 0;
    bool ends_nl = false;
    if (!note_start(f, &cap, 0)) {
        return;
    }
    for (;;) {
        ssize_t r = read_chunk(c, f, off);
        if (r < 0) {
            return;
        }
        if (r == 0) {
            break;
        }
        if ((size_t)r > LIMIT_SOURCE_FILE - off) {
            return; /* too large to be shown */
        }
        const char *p = c->chunk;
        const char *end = c->chunk + r;
        while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            p++;
            newlines++;
            if (newlines % SOURCE_STRIDE == 0 &&
                !note_start(f, &cap, off + (size_t)(p - c->chunk))) {
                return;
            }
        }
        ends_nl = end[-1] == '\n';
        off += (size_t)r;
    }
    f->len = off;
    /* A last line without a newline is a line too; an empty file has none. */
    f->n_lines = newlines + (off > 0 && !ends_nl);
    f->readable = true;
}

static struct source_file *lookup(struct source_cache *c, const char *file, size_t file_len,
                                  size_t *index)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->files[i].name_len == file_len && memcmp(c->files[i].name, file, file_len) == 0) {
            *index = i;
            return &c->files[i];
        }
    }
    if (c->n == SOURCE_MAX_FILES) {
        return NULL;
    }
    if (c->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 16;
        struct source_file *nf = realloc(c->files, ncap * sizeof *nf);
        if (nf == NULL) {
            return NULL;
        }
        c->files = nf;
        c->cap = ncap;
    }
    struct source_file *f = &c->files[c->n];
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->name = malloc(file_len + 1);
    if (f->name == NULL) {
        return NULL;
    }
    memcpy(f->name, file, file_len);
    f->name[file_len] = '\0';
    f->name_len = file_len;
    *index = c->n++;
    return f;
}

/* Line LINE of F into SLOT: read from the noted start before it up to its newline. A file
 * that changed since it was indexed may give another line, or none; never more than
 * SOURCE_LINE_MAX bytes. */
static void fetch(struct source_cache *c, struct source_file *f, int line,
                  struct source_slot *slot)
{
    size_t k = (size_t)(line - 1) / SOURCE_STRIDE;
    size_t skip = (size_t)(line - 1) % SOURCE_STRIDE; /* newlines to pass first */
    size_t off = f->starts[k];
    size_t have = 0;
    char *text = slot->text;
    slot->text = NULL;
    slot->len = 0;
    for (size_t round = 0; round <= LIMIT_SOURCE_FILE / SOURCE_CHUNK; round++) {
        ssize_t r = read_chunk(c, f, off);
        if (r <= 0) {
            break; /* the end, or unreadable now: what was found so far */
        }
        const char *p = c->chunk;
        const char *end = c->chunk + r;
        while (skip > 0 && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            p++;
            skip--;
        }
        if (skip > 0 || p == NULL) {
            off += (size_t)r;
            continue;
        }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl != NULL ? nl : end) - p);
        n = n > SOURCE_LINE_MAX - have ? SOURCE_LINE_MAX - have : n;
        char *grown = realloc(text, have + n + 1);
        if (grown == NULL) {
            break;
        }
        text = grown;
        memcpy(text + have, p, n);
        have += n;
        if (nl != NULL || have == SOURCE_LINE_MAX) {
            break;
        }
        off += (size_t)r;
    }
    if (text == NULL || (have == 0 && skip > 0)) {
        free(text);
        return;
    }
    if (have > 0 && text[have - 1] == '\r') {
        have--;
    }
    text[have] = '\0';
    slot->text = text;
    slot->len = have;
}

const char *source_cache_line(struct source_cache *c, const char *file, size_t file_len,
                              int line, size_t *len)
{
    size_t fi;
    struct source_file *f = line >= 1 ? lookup(c, file, file_len, &fi) : NULL;
    if (f == NULL) {
        return NULL;
    }
    uint64_t h = ((uint64_t)(fi + 1) * 0x9E3779B97F4A7C15u) ^ (uint64_t)line * 0xC2B2AE3D27D4EB4Fu;
    struct source_slot *slot = &c->slots[(h >> 32) & (SOURCE_SLOTS - 1)];
    if (slot->file == fi + 1 && slot->line == line) {
        *len = slot->len;
        return slot->text;
    }
    if (!f->indexed) {
        if (c->chunk == NULL && (c->chunk = malloc(SOURCE_CHUNK)) == NULL) {
            return NULL;
        }
        index_file(c, f);
    }
    if (!f->readable || (size_t)line > f->n_lines) {
        return NULL;
    }
    slot->file = fi + 1;
    slot->line = line;
    fetch(c, f, line, slot);
    *len = slot->len;
    return slot->text;
}

static const char *line_of(void *ctx, const char *file, size_t file_len, int line, size_t *len)
{
    return source_cache_line(ctx, file, file_len, line, len);
}

struct snapshot_source source_cache_lines(struct source_cache *c)
{
    return (struct snapshot_source){c != NULL ? line_of : NULL, c};
}
