/* report: the incident dump: the target, how pytop took it, the window's statistics, the
 * snapshot. */
#include "config.h"

#include "core/write/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/util/error.h"
#include "core/sampler/sampler.h"
#include "core/write/sampler_write.h"
#include "core/model/snapshot.h"
#include "core/write/snapshot_write.h"
#include "core/util/strbuf.h"
#include "core/model/tasktree.h"

/* Writes SB out and empties it. Errors: PT_E_NOMEM, PT_E_IO. */
static int put(struct strbuf *sb, FILE *out, struct pt_error *err)
{
    int rc = 0;
    if (sb->failed) {
        rc = pt_error_set(err, PT_E_NOMEM, 0, "writing the report");
    } else if (sb->len > 0 && fwrite(sb->data, 1, sb->len, out) != sb->len) {
        rc = pt_error_set(err, PT_E_IO, errno, "writing the report: %s", strerror(errno));
    }
    strbuf_free(sb);
    return rc;
}

/* "10 s", "0.5 s", "since the last reset": the window the statistics may reach over. */
static void window_words(struct strbuf *sb, const struct sampler_stats *st)
{
    if (isinf(st->window_limit)) {
        strbuf_puts(sb, "since the last reset");
    } else if (st->window_limit > 0 && st->window_limit < 1e9) {
        /* At most three decimals, as a person would write them. */
        char text[32];
        snprintf(text, sizeof text, "%.3f", st->window_limit);
        char *end = text + strlen(text) - 1;
        while (*end == '0') {
            *end-- = '\0';
        }
        if (*end == '.' || *end == ',') {
            *end = '\0';
        }
        strbuf_printf(sb, "%s s", text);
    } else {
        strbuf_puts(sb, "?");
    }
}

/* "Dumped by:", the note, and the title of the statistics or why there are none. */
static int write_settings(const struct sampler_stats *st, FILE *out, const struct report_opts *o,
                          struct pt_error *err)
{
    struct strbuf sb = {0};
    strbuf_puts(&sb, "Dumped by: pytop " PACKAGE_VERSION);
    if (o->by != NULL && o->by[0] != '\0') {
        strbuf_puts(&sb, " ");
        strbuf_text(&sb, o->by, strlen(o->by));
    }
    strbuf_puts(&sb, "\n");
    if (o->note != NULL && o->note[0] != '\0') {
        strbuf_puts(&sb, "Note: ");
        strbuf_text(&sb, o->note, strlen(o->note));
        strbuf_puts(&sb, "\n");
    }
    if (st == NULL) {
        strbuf_puts(&sb, "\nStatistics: none");
        if (o->no_stats != NULL) {
            strbuf_puts(&sb, ": ");
            strbuf_text(&sb, o->no_stats, strlen(o->no_stats));
        }
        strbuf_puts(&sb, "\n");
    } else {
        strbuf_puts(&sb, "\nStatistics over the window (");
        if (o->window != NULL) {
            strbuf_text(&sb, o->window, strlen(o->window));
        } else {
            window_words(&sb, st);
        }
        strbuf_puts(&sb, "):\n");
    }
    return put(&sb, out, err);
}

/* The asyncio trees of TASKS, a snapshot read with the task graph apart from the stacks. */
static int write_tasks(const struct snapshot *tasks, FILE *out, struct pt_error *err)
{
    struct strbuf sb = {0};
    for (size_t i = 0; i < tasks->n_interps; i++) {
        const struct snap_interp *in = &tasks->interps[i];
        if (!in->tasks_present || in->n_tasks == 0) {
            continue;
        }
        strbuf_printf(&sb, "\nasyncio tasks of interpreter %lld (%zu%s):\n", (long long)in->id,
                      in->n_tasks, in->tasks_truncated ? ", list cut short" : "");
        if (tasktree_write(&sb, in->tasks, in->n_tasks, NULL, err) < 0) {
            strbuf_free(&sb);
            return -1;
        }
    }
    return put(&sb, out, err);
}

int report_write_text(const struct snapshot *snap, const struct snapshot *tasks,
                      const struct sampler_stats *st, FILE *out, const struct snapshot_source *src,
                      const struct report_opts *opts, struct pt_error *err)
{
    static const struct report_opts none = {0};
    const struct report_opts *o = opts != NULL ? opts : &none;
    if (snapshot_write_text_parts(snap, out, src, SNAPSHOT_TEXT_HEADER, err) < 0 ||
        write_settings(st, out, o, err) < 0 ||
        (st != NULL && sampler_write_stats_text(st, out, o->top_functions, err) < 0) ||
        snapshot_write_text_parts(snap, out, src, SNAPSHOT_TEXT_BODY, err) < 0 ||
        (tasks != NULL && write_tasks(tasks, out, err) < 0)) {
        return -1;
    }
    if (fflush(out) != 0 || ferror(out)) {
        int e = errno != 0 ? errno : EIO;
        return pt_error_set(err, PT_E_IO, e, "writing the report: %s", strerror(e));
    }
    return 0;
}
