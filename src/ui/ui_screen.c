/* ui_screen: the parts around the views: header, status and key-hint lines, help, too small. */
#include "config.h"

#include "ui/ui_screen.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_words.h"
#include "app/live.h"
#include "ui/ui_text.h"

static void right_marker(WINDOW *w, int y, int width, const char *text, const struct ui_style *st)
{
    int len = ui_text_width(ui_text_str(text), st);
    if (len + 2 > width) {
        return;
    }
    wattrset(w, st->attr[UI_ALERT]);
    wmove(w, y, width - len - 1);
    ui_text_puts(w, text, len, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

/* "DEADLOCK rl-a -> rl-b -> rl-a" for the first cycle of threads waiting for each other (its
 * names as the stack titles give them; "+N" more cycles), after the markers in BUF. */
static void deadlock_marker(char *buf, size_t size, const struct snapshot *snap)
{
    if (snap->n_deadlocks == 0) {
        return;
    }
    const struct snap_deadlock *d = &snap->deadlocks[0];
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%sDEADLOCK", n > 0 ? " " : "");
    for (size_t k = 0; k <= d->n && k < 8; k++) {
        const struct snap_thread *t = snapshot_find_thread(snap, d->threads[k % d->n]);
        char name[48];
        /* The name's bytes: the marker is drawn by ui_text_puts(), which escapes them. */
        if (t != NULL && t->name.ptr != NULL) {
            snprintf(name, sizeof name, "%.*s", (int)(t->name.len < 40 ? t->name.len : 40),
                     t->name.ptr);
        } else {
            snprintf(name, sizeof name, "%d", (int)d->threads[k % d->n]);
        }
        n = strlen(buf);
        snprintf(buf + n, size - n, "%s%s", k == 0 ? " " : " -> ", name);
    }
    if (snap->n_deadlocks > 1) {
        n = strlen(buf);
        snprintf(buf + n, size - n, " +%zu", snap->n_deadlocks - 1);
    }
}

/* "1:02.500", "0:00.000", "1:02:03.500": a replay's position, to the millisecond (a step
 * moves it by one sampling period). */
static void format_clock(char *buf, size_t size, double t)
{
    t = t > 0 && t < 1e9 ? t : 0;
    long ms = (long)(t * 1000 + 0.5);
    long whole = ms / 1000;
    if (whole >= 3600) {
        snprintf(buf, size, "%ld:%02ld:%02ld.%03ld", whole / 3600, whole / 60 % 60, whole % 60,
                 ms % 1000);
    } else {
        snprintf(buf, size, "%ld:%02ld.%03ld", whole / 60, whole % 60, ms % 1000);
    }
}

static void header_line1(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    char marker[256] = "";
    if (s->frame != NULL && s->frame->exec_note[0] != '\0') {
        snprintf(marker, sizeof marker, "%s", s->frame->exec_note);
    }
    if (s->exited) {
        size_t n = strlen(marker);
        snprintf(marker + n, sizeof marker - n, "%sEXITED%s%s%s", n > 0 ? " " : "",
                 s->exit_how != NULL ? " (" : "", s->exit_how != NULL ? s->exit_how : "",
                 s->exit_how != NULL ? ")" : "");
    }
    if (s->frozen) {
        size_t n = strlen(marker);
        snprintf(marker + n, sizeof marker - n, "%sFROZEN", n > 0 ? " " : "");
    }
    if (s->replay != NULL) {
        size_t n = strlen(marker);
        char at[32], len[32];
        format_clock(at, sizeof at, s->replay->position);
        format_clock(len, sizeof len, s->replay->length);
        snprintf(marker + n, sizeof marker - n, "%sREPLAY %s %s / %s %gx", n > 0 ? " " : "",
                 s->replay->playing ? ">" : "||", at, len, s->replay->speed);
    }
    if (s->recording) {
        size_t n = strlen(marker);
        long t = s->record_s > 0 && s->record_s < 1e9 ? (long)s->record_s : 0;
        double b = (double)s->record_bytes;
        snprintf(marker + n, sizeof marker - n, "%s\u25cf REC %.*f %s %ld:%02ld", n > 0 ? " " : "",
                 b >= 1e6 ? 1 : 0, b >= 1e6 ? b / 1e6 : b / 1e3, b >= 1e6 ? "MB" : "kB", t / 60,
                 t % 60);
    }
    if (s->frame != NULL && s->frame->snap != NULL) {
        deadlock_marker(marker, sizeof marker, s->frame->snap);
    }
    int room = width - (marker[0] != '\0' ? (int)strlen(marker) + 2 : 0);
    wmove(w, 0, 0);
    wattrset(w, st->attr[UI_HEADER]);
    ui_text_puts(w, "pytop", room, st);
    wattrset(w, st->attr[UI_NORMAL]);
    ui_text_printf(w, room - getcurx(w), st, "  PID %d  ", (int)s->pid);
    if (s->frame != NULL && s->frame->command[0] != '\0') {
        /* The command line is the target's: escaped like any other of its bytes. */
        ui_text_put(w, ui_text_str(s->frame->command), room - getcurx(w), st);
    }
    if (marker[0] != '\0') {
        right_marker(w, 0, width, marker, st);
    }
}

static void format_age(char *buf, size_t size, double age)
{
    long t = (long)age;
    if (age < 0) {
        snprintf(buf, size, "?");
    } else if (t >= 86400) {
        snprintf(buf, size, "%ldd %02ld:%02ld:%02ld", t / 86400, t / 3600 % 24, t / 60 % 60,
                 t % 60);
    } else {
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    }
}

static size_t thread_count(const struct snapshot *snap)
{
    size_t n = 0;
    for (size_t i = 0; i < snap->n_interps; i++) {
        n += snap->interps[i].n_threads;
    }
    return n;
}

/* The thread holding the GIL: NULL with *UNKNOWN set when some thread cannot say. */
static const struct snap_thread *gil_holder(const struct snapshot *snap, bool *unknown)
{
    *unknown = false;
    for (size_t i = 0; i < snap->n_interps; i++) {
        for (size_t j = 0; j < snap->interps[i].n_threads; j++) {
            const struct snap_thread *t = &snap->interps[i].threads[j];
            if (t->gil == SNAP_YES) {
                return t;
            }
            *unknown |= t->gil == SNAP_UNKNOWN;
        }
    }
    return NULL;
}

/* What header line 2 leaves out when the line is narrow, least needed first: the build, the
 * uptime, the GIL holder's tid, the word "Python"; then the holder's name is cut. The thread
 * count, the holder and the share in GC always stay. */
enum line2_cut { CUT_NONE, CUT_BUILD, CUT_UPTIME, CUT_GIL_TID, CUT_PYTHON, CUT_MAX };

struct line2 {
    const struct snapshot *snap;
    const struct snap_thread *gil; /* NULL: none, or unknown (GIL_UNKNOWN) */
    bool gil_unknown;
    char build[48]; /* " (release, GIL)" */
    char age[32];
    char tid[24]; /* " (4242)" */
    char gc[16];  /* "3%"; "" before the statistics */
    bool gc_alert;
};

static int line2_width(const struct line2 *l, enum line2_cut cut, const struct ui_style *st)
{
    const struct snap_python *py = &l->snap->python;
    char count[48];
    snprintf(count, sizeof count, "  threads %zu  GIL: ", thread_count(l->snap));
    int n = (cut < CUT_PYTHON ? 7 : 0) + ui_text_width(py->version, st) + (int)strlen(count);
    n += cut < CUT_BUILD ? (int)strlen(l->build) : 0;
    n += cut < CUT_UPTIME ? 5 + (int)strlen(l->age) : 0;
    if (l->gil != NULL) {
        n += ui_text_width(l->gil->name, st) + (cut < CUT_GIL_TID ? (int)strlen(l->tid) : 0);
    } else {
        n += l->gil_unknown ? 1 : 4;
    }
    n += l->gc[0] != '\0' ? 9 + (int)strlen(l->gc) : 0;
    return n;
}

static void draw_line2(WINDOW *w, const struct line2 *l, enum line2_cut cut, int width,
                       const struct ui_style *st)
{
    if (cut < CUT_PYTHON) {
        ui_text_puts(w, "Python ", width - getcurx(w), st);
    }
    ui_text_put(w, l->snap->python.version, width - getcurx(w), st);
    if (cut < CUT_BUILD) {
        ui_text_puts(w, l->build, width - getcurx(w), st);
    }
    if (cut < CUT_UPTIME) {
        ui_text_printf(w, width - getcurx(w), st, "  up %s", l->age);
    }
    ui_text_printf(w, width - getcurx(w), st, "  threads %zu  GIL: ", thread_count(l->snap));
    /* The share in GC keeps its place at the end: the holder's name is cut before it. */
    int gc_w = l->gc[0] != '\0' ? 9 + (int)strlen(l->gc) : 0;
    wattrset(w, st->attr[l->gil != NULL ? UI_GIL : UI_NORMAL]);
    if (l->gil == NULL) {
        ui_text_puts(w, l->gil_unknown ? "?" : "none", width - getcurx(w) - gc_w, st);
    } else {
        int tid_w = cut < CUT_GIL_TID ? (int)strlen(l->tid) : 0;
        int name_room = width - getcurx(w) - gc_w - tid_w;
        ui_text_put(w, l->gil->name, name_room > 4 ? name_room : 4, st);
        if (cut < CUT_GIL_TID) {
            ui_text_puts(w, l->tid, width - getcurx(w) - gc_w, st);
        }
    }
    wattrset(w, st->attr[UI_NORMAL]);
    if (gc_w > 0) {
        ui_text_puts(w, "  in GC: ", width - getcurx(w), st);
        wattrset(w, st->attr[l->gc_alert ? UI_GC : UI_NORMAL]);
        ui_text_puts(w, l->gc, width - getcurx(w), st);
        wattrset(w, st->attr[UI_NORMAL]);
    }
}

static void header_line2(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    const struct live_frame *f = s->frame;
    wmove(w, 1, 0);
    if (f == NULL || f->snap == NULL) {
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, f != NULL && f->status[0] != '\0' ? f->status : "waiting for the target",
                     width, st);
        wattrset(w, st->attr[UI_NORMAL]);
        return;
    }
    struct line2 l = {.snap = f->snap};
    const struct snap_python *py = &f->snap->python;
    const char *build = py->debug_build == SNAP_YES  ? "debug build, "
                        : py->debug_build == SNAP_NO ? "release, "
                                                     : "";
    snprintf(l.build, sizeof l.build, " (%s%s)", build,
             py->free_threaded ? "free-threaded" : "GIL");
    format_age(l.age, sizeof l.age, f->age_s);
    l.gil = gil_holder(f->snap, &l.gil_unknown);
    if (l.gil != NULL) {
        snprintf(l.tid, sizeof l.tid, " (%d)", (int)l.gil->tid);
    }
    /* How much of the window some thread spent collecting garbage. */
    const struct sampler_stats *stats = f->stats;
    if (stats != NULL && stats->samples > 0) {
        double pct = 100.0 * (double)stats->gc_samples / (double)stats->samples;
        snprintf(l.gc, sizeof l.gc, "%.0f%%", pct);
        l.gc_alert = pct >= 10.0;
    }
    enum line2_cut cut = CUT_NONE;
    while (cut + 1 < CUT_MAX && line2_width(&l, cut, st) > width - 1) {
        cut++;
    }
    draw_line2(w, &l, cut, width, st);
}

/* "rate 99/100 Hz  failed 0.1%  refresh 1s" (the refresh only when REFRESH), and how late the
 * newest sample is. */
static void sampling_text(char *buf, size_t size, const struct ui_screen *s, bool refresh,
                          bool *alert)
{
    const struct sampler_stats *stats = s->frame != NULL ? s->frame->stats : NULL;
    char want[32];
    char got[32] = "-";
    char failed[64] = "";
    if (s->rate_hz > 0) {
        snprintf(want, sizeof want, "%g Hz", s->rate_hz);
    } else {
        snprintf(want, sizeof want, "max");
    }
    *alert = s->late_s > 0;
    if (stats != NULL) {
        uint64_t all = stats->samples + stats->errors;
        /* Over a window of a sample or two the rate means nothing yet. */
        if (stats->samples >= 2 && stats->window_s >= 0.2) {
            snprintf(got, sizeof got, "%.0f", stats->achieved_hz);
        }
        snprintf(failed, sizeof failed, "  failed %.1f%%",
                 all > 0 ? 100.0 * (double)stats->errors / (double)all : 0.0);
        *alert |= stats->errors > 0;
        if (stats->backoff_s > 0) {
            size_t n = strlen(failed);
            snprintf(failed + n, sizeof failed - n, ", retry every %gs", stats->backoff_s);
        }
    }
    char window[48];
    if (isinf(s->window_s)) {
        /* Since the reset: how far back that is, so far. */
        snprintf(window, sizeof window, "all %.0fs", stats != NULL ? stats->window_s : 0.0);
    } else {
        snprintf(window, sizeof window, "%gs", s->window_s);
    }
    int n = snprintf(buf, size, "rate %s/%s  mode %s%s%s", got, want, sampler_mode_name(s->mode),
                     s->active_only ? " (GIL holder only)" : "", failed);
    if (refresh && n > 0 && (size_t)n < size) {
        n += snprintf(buf + n, size - (size_t)n, "  refresh %gs  window %s", s->delay, window);
    }
    if (s->late_s > 0 && n > 0 && (size_t)n < size) {
        snprintf(buf + n, size - (size_t)n, "  no sample for %.0fs", s->late_s);
    }
}

/* The tabs' width: each " N Title ", or with SHORT the other views' " N " alone. */
static int tabs_width(const struct ui_screen *s, bool short_tabs)
{
    int n = 0;
    for (int i = 0; i < s->n_views; i++) {
        n += 3 + (short_tabs && i != s->view ? 0 : (int)strlen(s->titles[i]) + 1);
    }
    return n;
}

/* The tabs, then the sampling facts at the right; when both do not fit, the refresh goes
 * first, then the other views' titles (their numbers stay). */
static void header_line3(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    char right[160];
    bool alert;
    sampling_text(right, sizeof right, s, true, &alert);
    if (tabs_width(s, false) + (int)strlen(right) + 1 > width) {
        sampling_text(right, sizeof right, s, false, &alert);
    }
    bool short_tabs = tabs_width(s, false) + (int)strlen(right) + 1 > width;
    wmove(w, 2, 0);
    for (int i = 0; i < s->n_views && getcurx(w) < width - 1; i++) {
        wattrset(w, st->attr[i == s->view ? UI_SELECTED : UI_DIM]);
        if (short_tabs && i != s->view) {
            ui_text_printf(w, width - getcurx(w), st, " %d ", i + 1);
        } else {
            ui_text_printf(w, width - getcurx(w), st, " %d %s ", i + 1, s->titles[i]);
        }
    }
    wattrset(w, st->attr[UI_NORMAL]);
    int len = (int)strlen(right);
    int x = getcurx(w) + len + 1 < width ? width - len - 1 : getcurx(w);
    wmove(w, 2, x);
    wattrset(w, st->attr[alert ? UI_ALERT : UI_DIM]);
    ui_text_puts(w, right, width - x, st);
    wattrset(w, st->attr[UI_NORMAL]);
}

void ui_screen_header(WINDOW *w, const struct ui_screen *s, const struct ui_style *st)
{
    int width = getmaxx(w);
    werase(w);
    header_line1(w, s, width, st);
    header_line2(w, s, width, st);
    header_line3(w, s, width, st);
}

/* The filter being typed, with what it does so far; leaves the cursor after the text. */
static void editing_line(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    wattrset(w, st->attr[UI_HEADER]);
    ui_text_puts(w, "Filter: ", width, st);
    wattrset(w, st->attr[UI_NORMAL]);
    ui_text_put(w, ui_text_str(s->filter), width - getcurx(w) - 30, st);
    int x = getcurx(w);
    wattrset(w, st->attr[UI_DIM]);
    if (s->filter[0] != '\0' && s->filter_note != NULL && s->filter_note[0] != '\0') {
        ui_text_printf(w, width - getcurx(w) - 29, st, "   %s", s->filter_note);
    }
    ui_text_puts(w, "   (Enter keeps, Esc cancels)", width - getcurx(w), st);
    wattrset(w, st->attr[UI_NORMAL]);
    wmove(w, 0, x);
}

/* The filter in force, in at most WIDTH columns: "Filter: TEXT  hides 4 of 7 threads  (c
 * clears it)", the text itself cut first to a third of the room, the hint left out first. */
static void filter_part(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    const char *note = s->filter_note != NULL ? s->filter_note : "";
    int note_w = note[0] != '\0' ? (int)strlen(note) + 2 : 0;
    int x0 = getcurx(w);
    wattrset(w, st->attr[UI_MATCH]);
    ui_text_puts(w, "Filter: ", width, st);
    int text_room = width - (getcurx(w) - x0) - note_w;
    int text_w = ui_text_width(ui_text_str(s->filter), st);
    if (text_room < width / 3) {
        text_room = width / 3;
    }
    ui_text_put(w, ui_text_str(s->filter), text_w < text_room ? text_w : text_room, st);
    wattrset(w, st->attr[UI_DIM]);
    if (note[0] != '\0') {
        ui_text_printf(w, width - (getcurx(w) - x0), st, "  %s", note);
    }
    if (width - (getcurx(w) - x0) >= 15) {
        ui_text_puts(w, "  (c clears it)", width - (getcurx(w) - x0), st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

/* The status line: the filter being typed, else the filter in force and where a command's
 * output goes (side by side, the path cut at its start when both do not fit), then the newest
 * sample's trouble where there is room. */
/* A replay's timeline: where its errors (E), exec()s (X) and collections (g) happened, with
 * the position marked. */
static void timeline(WINDOW *w, const struct live_replay_info *r, int width,
                     const struct ui_style *st)
{
    int cells = (int)strlen(r->timeline);
    if (cells == 0 || width < 12) {
        return;
    }
    int room = width - 2 < cells ? width - 2 : cells;
    int cursor = r->length > 0 ? (int)(r->position / r->length * (double)room) : 0;
    cursor = cursor >= room ? room - 1 : cursor < 0 ? 0 : cursor;
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, "[", width - getcurx(w), st);
    for (int i = 0; i < room; i++) {
        char c = r->timeline[(size_t)i * (size_t)cells / (size_t)room];
        wattrset(w, st->attr[i == cursor ? UI_HEADER : c == 'E' ? UI_ALERT : UI_DIM]);
        char cell[2] = {i == cursor ? '|' : c, '\0'};
        ui_text_puts(w, cell, width - getcurx(w), st);
    }
    wattrset(w, st->attr[UI_DIM]);
    ui_text_puts(w, "]", width - getcurx(w), st);
    wattrset(w, st->attr[UI_NORMAL]);
}

static void status_line(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    wmove(w, 0, 0);
    if (s->goto_text != NULL) {
        wattrset(w, st->attr[UI_NORMAL]);
        ui_text_puts(w, "go to (seconds, or M:SS): ", width, st);
        ui_text_puts(w, s->goto_text, width - getcurx(w), st);
        return;
    }
    if (s->editing) {
        editing_line(w, s, width, st);
        return;
    }
    if (s->replay != NULL && s->filter[0] == '\0') {
        timeline(w, s->replay, width, st);
        return;
    }
    static const char LOG_LABEL[] = "command output: ";
    int log_w = s->log_path != NULL
                    ? (int)sizeof LOG_LABEL - 1 + ui_text_width(ui_text_str(s->log_path), st)
                    : 0;
    if (s->filter[0] != '\0') {
        int room = width;
        if (log_w > 0) {
            /* The path gets what the filter leaves, but at least two fifths of the line. */
            int path_room = log_w < width * 2 / 5 ? log_w : width * 2 / 5;
            room = width - path_room - 2;
            int filter_w = 8 + ui_text_width(ui_text_str(s->filter), st) + 2 +
                           (s->filter_note != NULL ? (int)strlen(s->filter_note) : 0) + 15;
            room = filter_w < room ? filter_w : room;
        }
        filter_part(w, s, room, st);
    }
    if (log_w > 0) {
        if (getcurx(w) > 0) {
            ui_text_puts(w, "  ", width - getcurx(w), st);
        }
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, LOG_LABEL, width - getcurx(w), st);
        ui_text_put_tail(w, ui_text_str(s->log_path), width - getcurx(w), st);
    }
    if (s->frame != NULL && s->frame->stats != NULL && s->frame->stats->errors > 0 &&
        s->frame->status[0] != '\0' && width - getcurx(w) > 30) {
        wattrset(w, st->attr[UI_DIM]);
        if (getcurx(w) > 0) {
            ui_text_puts(w, "  ", width - getcurx(w), st);
        }
        ui_text_puts(w, "last failed sample: ", width - getcurx(w), st);
        ui_text_put(w, ui_text_str(s->frame->status), width - getcurx(w), st);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

static void key_hints(WINDOW *w, const struct ui_screen *s, int width, const struct ui_style *st)
{
    bool replay = s->replay != NULL;
    const char *const hint[][2] = {
        {"q", "quit"},
        {"Space", replay ? (s->replay->playing ? "pause" : "play") : NULL},
        {",.", replay ? "step" : NULL},
        {"<>", replay ? "1 s" : NULL},
        {"[]", replay ? "speed" : NULL},
        {"g", replay ? "go to" : NULL},
        {"p", "freeze"},
        {"/", "filter"},
        {"d", "dump"},
        {"Tab", "view"},
        {"s", s->sorts ? "sort" : NULL},
        {"Enter", s->enter_does},
        {"+-", "refresh"},
        {"h", "help"},
    };
    for (size_t i = 0; i < sizeof hint / sizeof hint[0]; i++) {
        if (hint[i][1] == NULL) {
            continue;
        }
        int need = (int)(strlen(hint[i][0]) + strlen(hint[i][1]) + 2);
        if (getcurx(w) + need >= width) {
            break;
        }
        wattrset(w, st->attr[UI_KEY]);
        ui_text_puts(w, hint[i][0], width, st);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_printf(w, width - getcurx(w), st, " %s ", hint[i][1]);
    }
    wattrset(w, st->attr[UI_NORMAL]);
}

/* "reader: 2.0 reads 14.2 KiB a sample  code cache 99.9% hits, 57 held  failed reads 0  stacks
 * kept 91%": what reading the target has cost since the statistics' reset (snapshots included). */
static void reader_text(char *buf, size_t size, const struct sampler_stats *stats)
{
    if (stats == NULL || !stats->has_reader || stats->reader_samples == 0) {
        snprintf(buf, size, "reader: no sample yet");
        return;
    }
    const struct unwind_counters *r = &stats->reader;
    double n = (double)stats->reader_samples;
    uint64_t lookups = r->code_hits + r->code_misses;
    char hits[32] = "-";
    if (lookups > 0) {
        snprintf(hits, sizeof hits, "%.1f%%", 100.0 * (double)r->code_hits / (double)lookups);
    }
    snprintf(buf, size,
             "reader: %.1f reads %.1f KiB a sample  code cache %s hits, %" PRIu64
             " held  failed reads %" PRIu64 "  stacks kept %" PRIu64 "  (%" PRIu64 " samples)",
             (double)r->reads / n, (double)r->bytes / n / 1024.0, hits, r->code_entries,
             r->failed_reads, r->kept_stacks, stats->reader_samples);
}

void ui_screen_footer(WINDOW *w, const struct ui_screen *s, const struct ui_style *st)
{
    int width = getmaxx(w);
    werase(w);
    wmove(w, 1, 0);
    if (s->message != NULL && s->message[0] != '\0') {
        wattrset(w, st->attr[s->message_is_error ? UI_ALERT : UI_HEADER]);
        ui_text_puts(w, s->message, width, st);
        wattrset(w, st->attr[UI_NORMAL]);
    } else if (s->reader_line) {
        char text[256];
        reader_text(text, sizeof text, s->frame != NULL ? s->frame->stats : NULL);
        wattrset(w, st->attr[UI_DIM]);
        ui_text_puts(w, text, width, st);
        wattrset(w, st->attr[UI_NORMAL]);
    } else {
        key_hints(w, s, width, st);
    }
    status_line(w, s, width, st);
}

void ui_screen_help(WINDOW *w, const struct ui_help_line *lines, size_t n,
                    const struct ui_style *st)
{
    int width = getmaxx(w);
    int height = getmaxy(w);
    werase(w);
    wmove(w, 0, 1);
    wattrset(w, st->attr[UI_HEADER]);
    ui_text_puts(w, "pytop keys", width - 1, st);
    wattrset(w, st->attr[UI_NORMAL]);
    int y = 1;
    for (size_t i = 0; i < n && y < height; i++, y++) {
        if (lines[i].title) {
            wmove(w, y, 1);
            wattrset(w, st->attr[UI_TITLE]);
            ui_text_puts(w, lines[i].text, width - 1, st);
            wattrset(w, st->attr[UI_NORMAL]);
            continue;
        }
        wmove(w, y, 3);
        wattrset(w, st->attr[UI_KEY]);
        ui_text_puts(w, lines[i].keys, 14, st);
        wattrset(w, st->attr[UI_NORMAL]);
        wmove(w, y, 18);
        ui_text_puts(w, lines[i].text, width - 18, st);
    }
}

void ui_screen_too_small(int rows, int cols, const struct ui_style *st)
{
    char text[128];
    snprintf(text, sizeof text, "Terminal too small (%dx%d): pytop needs %dx%d. q quits.", cols,
             rows, UI_SCREEN_MIN_COLS, UI_SCREEN_MIN_ROWS);
    erase();
    int len = (int)strlen(text);
    move(rows / 2, len < cols ? (cols - len) / 2 : 0);
    attrset(st->attr[UI_ALERT]);
    waddnstr(stdscr, text, cols > 0 ? cols - 1 : 0);
    attrset(st->attr[UI_NORMAL]);
}
