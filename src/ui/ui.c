/* ui: the live view's screen: the terminal, the key loop and the views, on ncursesw and
 * libtermkey. */
#include "config.h"

#include "ui/ui.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <ncurses.h>
#include <termkey.h>

#include "app/cli.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/sampler/sampler.h"
#include "core/model/snapshot.h"
#include "app/live.h"
#include "app/spawn.h"
#include "ui/ui_dump.h"
#include "ui/ui_edit.h"
#include "ui/ui_focus.h"
#include "ui/ui_keys.h"
#include "ui/ui_list.h"
#include "ui/ui_screen.h"
#include "ui/ui_sort.h"
#include "ui/ui_style.h"
#include "ui/ui_term.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum {
    VIEWS = 4,
    FILTER_BYTES = 256,
    HELP_LINES = 64, /* the help screen's lines, at most */
    TICK_MS = 1000,  /* the screen is looked at this often even when nothing happens */
};

static const double MESSAGE_S = 5.0; /* how long a message stays */
static const double DELAYS[] = {0.1, 0.2, 0.5, 1, 2, 3, 5, 10, 30, 60};
/* What `w` cycles through; the last is since the reset (INFINITY). */
static const double WINDOWS[] = {1, 10, 60};

static const struct view_ops *const VIEW_OPS[VIEWS] = {
    &view_threads_ops,
    &view_functions_ops,
    &view_gc_ops,
    &view_tasks_ops,
};

/* What is drawn on the screen as a whole. */
enum ui_layout { UI_LAYOUT_NONE, UI_LAYOUT_VIEWS, UI_LAYOUT_HELP, UI_LAYOUT_SMALL };

/* The live view's one mutable global: the terminal and everything the loop keeps. */
struct ui {
    const struct cli_options *opts;
    struct ui_term term;
    enum ui_layout drawn;
    struct ui_style style;
    int wake[2]; /* self-pipe: signals and the sampling thread wake the loop */
    /* The target, as liveview.c started it. */
    struct live *live;
    struct spawn *spawn;
    pid_t pid;
    char exit_how[96];
    /* What is shown. */
    struct live_frame *shown;  /* on screen: the frozen frame while frozen */
    struct live_frame *newest; /* arrived while frozen */
    unsigned long frame_no;    /* counts the frames shown */
    bool frozen;
    void *views[VIEWS];
    int view;
    /* The source heat view, shown over the views while HEAT; HEAT_NO: the request the frames
     * answer (live_set_heat()). */
    bool heat;
    void *heat_view;
    unsigned heat_no;
    bool help;
    char filter[FILTER_BYTES];
    char filter_before[FILTER_BYTES];
    bool editing;
    struct ui_focus focus; /* which threads the Functions view counts */
    double delay;
    double window; /* how far back the statistics reach; INFINITY: since the reset */
    enum sampler_mode mode; /* which thread-samples the statistics count (m) */
    bool reader_line;       /* the bottom line shows the reader's costs (i) */
    bool opcodes;           /* frames carry their instruction (--opcodes, o) */
    char message[PATH_MAX + 128];
    bool message_is_error;
    /* R: whether a recording goes on (as the newest frame says, or as just asked), its size
     * and length, and the sampling thread's last word on it. */
    bool recording;
    uint64_t record_bytes;
    double record_s;
    char record_note[sizeof((struct live_frame *)0)->record_note];
    /* --replay: where the newest frame says the replay is, and the g prompt being typed. */
    bool replay;
    struct live_replay_info at;
    bool going;
    char goto_text[32];
    double message_until;
    char why[512];
    enum ui_redraw redraw; /* what changed since the last draw */
    bool quit;
    char fatal[512];
};

static struct ui ui = {.wake = {-1, -1}};

static volatile sig_atomic_t got_quit;
static volatile sig_atomic_t got_winch;

static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGWINCH) {
        got_winch = 1;
    } else if (sig != SIGCHLD) {
        got_quit = 1;
    }
    if (ui.wake[1] >= 0) {
        ssize_t w = write(ui.wake[1], "s", 1);
        (void)w;
    }
    errno = saved;
}

/* A crash: put the terminal back as far as a signal handler can, then die of the signal. */
static void on_fault(int sig)
{
    if (ui.term.tio_saved) {
        ssize_t w = write(STDOUT_FILENO, ui.term.restore, ui.term.restore_len);
        (void)w;
        tcsetattr(STDIN_FILENO, TCSANOW, &ui.term.tio);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Installed before curses starts, so that it keeps its own handlers out of the way. */
static void install_signals(void)
{
    static const int quits[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof quits / sizeof quits[0]; i++) {
        sigaction(quits[i], &sa, NULL);
    }
    sigaction(SIGWINCH, &sa, NULL);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_fault;
    sa.sa_flags = SA_RESETHAND;
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        sigaction(faults[i], &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
}

/* Something changed on screen: R (or more) is drawn again before the loop next sleeps. */
static void need(enum ui_redraw r)
{
    ui.redraw = r > ui.redraw ? r : ui.redraw;
}

static void set_message(bool error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_message(bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ui.message, sizeof ui.message, fmt, ap);
    va_end(ap);
    ui.message_is_error = error;
    ui.message_until = clock_now() + MESSAGE_S;
    need(UI_REDRAW_LINES);
}

/* --- the terminal ------------------------------------------------------------------------ */

static void resize(void)
{
    struct pt_error err = {0};
    if (ui_term_layout(&ui.term, true, &err) < 0) {
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: %s", err.msg);
        ui.quit = true;
    }
    ui.drawn = UI_LAYOUT_NONE;
    need(UI_REDRAW_SCREEN);
}

/* --- drawing ----------------------------------------------------------------------------- */

/* The view shown: the source heat view while open, else the current one. */
static const struct view_ops *cur_ops(void)
{
    return ui.heat ? &view_source_ops : VIEW_OPS[ui.view];
}

static void *cur_state(void)
{
    return ui.heat ? ui.heat_view : ui.views[ui.view];
}

static struct ui_model model(void)
{
    const struct live_frame *f = ui.shown;
    bool waiting = f == NULL || f->snap == NULL;
    if (waiting) {
        const char *why = f != NULL && f->status[0] != '\0' ? f->status : "starting";
        snprintf(ui.why, sizeof ui.why, "%s process %d: %s",
                 f != NULL && f->state == LIVE_GONE ? "no sample was taken of"
                                                    : "waiting for the Python interpreter of",
                 (int)ui.pid, why);
    }
    struct ui_model m = {
        .snap = f != NULL ? f->snap : NULL,
        .tasks = f != NULL ? (f->tasks != NULL ? f->tasks : f->snap) : NULL,
        .frame_no = ui.frame_no,
        .stats = f != NULL ? f->stats : NULL,
        .focus = f != NULL && ui_focus_answered(&ui.focus, f) ? f->focus : NULL,
        .focus_tid = ui.focus.tid,
        .n_named = ui.focus.n_named,
        .n_named_counted = ui.focus.tid == 0 ? ui.focus.n_asked : 0,
        .filter = ui.filter,
        .frozen = ui.frozen,
        .source = ui.live != NULL ? live_source(ui.live) : NULL,
        .heat = ui.heat && f != NULL && f->heat_no == ui.heat_no ? f->heat : NULL,
        .style = &ui.style,
        .waiting = waiting,
        .waiting_why = ui.why,
    };
    return m;
}

static struct ui_screen screen_info(const char *const *titles)
{
    const struct live_frame *f = ui.shown;
    bool exited = (ui.spawn != NULL && ui.spawn->exited) || (f != NULL && f->state == LIVE_GONE) ||
                  (ui.newest != NULL && ui.newest->state == LIVE_GONE);
    double late = 0;
    if (!exited && f != NULL && f->state == LIVE_SAMPLING && !ui.frozen) {
        double since = clock_now() - f->last_sample;
        late = f->last_sample > 0 && since > 2 * ui.delay + 1 ? since : 0;
    }
    struct ui_screen s = {
        .pid = ui.pid,
        .recording = ui.recording,
        .record_bytes = ui.record_bytes,
        .record_s = ui.record_s,
        .frame = f,
        .frozen = ui.frozen,
        .exited = exited,
        .exit_how = ui.exit_how[0] != '\0' ? ui.exit_how : NULL,
        .rate_hz = ui.replay && f != NULL && f->stats != NULL ? f->stats->rate_hz
                                                              : ui.opts->rate_hz,
        .mode = ui.mode,
        .active_only = ui.opts->active_only,
        .reader_line = ui.reader_line,
        .delay = ui.delay,
        .window_s = ui.window,
        .late_s = late,
        .titles = titles,
        .n_views = VIEWS,
        .view = ui.view,
        .enter_does = cur_ops()->enter_does,
        .filter = ui.filter,
        .editing = ui.editing,
        .message = ui.message,
        .message_is_error = ui.message_is_error,
        .sorts = cur_ops()->sort != NULL,
        .log_path = ui.spawn != NULL ? ui.spawn->log_path : NULL,
        .replay = ui.replay ? &ui.at : NULL,
        .goto_text = ui.going ? ui.goto_text : NULL,
    };
    return s;
}

/* The help screen's lines, made from the key tables. */
size_t ui_help(struct ui_help_line *out, size_t cap)
{
    static const struct ui_binding none[] = {{NULL}};
    struct ui_keys_table tables[VIEWS + 5] = {{ui_bindings, NULL}, {ui_list_bindings, NULL}};
    for (int i = 0; i < VIEWS; i++) {
        const struct ui_binding *keys = VIEW_OPS[i]->keys != NULL ? VIEW_OPS[i]->keys : none;
        tables[2 + i] = (struct ui_keys_table){keys, VIEW_OPS[i]->title(ui.views[i])};
    }
    tables[VIEWS + 2] = (struct ui_keys_table){view_source_ops.keys, "Source"};
    tables[VIEWS + 3] = (struct ui_keys_table){ui_sort_bindings, NULL};
    tables[VIEWS + 4] = (struct ui_keys_table){ui_replay_bindings, NULL};
    return ui_keys_help(tables, VIEWS + 5, out, cap);
}

static void draw_help(bool fresh)
{
    struct ui_help_line lines[HELP_LINES];
    size_t n = ui_help(lines, HELP_LINES);
    /* The replay's keys (the last part) only in a replay, where they come first. */
    size_t replay_at = n;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].title && strncmp(lines[i].text, "A replay", 8) == 0) {
            replay_at = i;
            break;
        }
    }
    if (ui.replay && replay_at < n) {
        struct ui_help_line moved[HELP_LINES];
        size_t k = 0;
        for (size_t i = replay_at; i < n; i++) {
            moved[k++] = lines[i];
        }
        for (size_t i = 0; i < replay_at; i++) {
            moved[k++] = lines[i];
        }
        memcpy(lines, moved, n * sizeof *lines);
    } else {
        n = replay_at;
    }
    ui_screen_help(ui.term.full, lines, n, &ui.style);
    if (fresh) {
        touchwin(ui.term.full);
    }
    wnoutrefresh(ui.term.full);
}

/* The views' layout: the header and the two bottom lines, and the current view when NEED says
 * it changed. */
static void draw_views(enum ui_redraw need, bool fresh)
{
    const char *titles[VIEWS];
    for (int i = 0; i < VIEWS; i++) {
        titles[i] = VIEW_OPS[i]->title(ui.views[i]);
    }
    struct ui_model m = model();
    struct ui_screen s = screen_info(titles);
    ui_screen_header(ui.term.header, &s, &ui.style);
    if (need >= UI_REDRAW_VIEW) {
        werase(ui.term.body);
        cur_ops()->draw(cur_state(), &m, ui.term.body);
    }
    /* What the filter hides is known once the view has drawn. */
    char note[128] = "";
    if (cur_ops()->filter_note != NULL) {
        cur_ops()->filter_note(cur_state(), &m, note, sizeof note);
    } else if (ui.filter[0] != '\0') {
        snprintf(note, sizeof note, "no effect in this view");
    }
    s.filter_note = note;
    ui_screen_footer(ui.term.footer, &s, &ui.style);
    WINDOW *order[] = {ui.term.header, ui.term.body,
                       ui.term.footer}; /* the footer last: it has the cursor */
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        if (fresh) {
            touchwin(order[i]);
        }
        if (order[i] != ui.term.body || need >= UI_REDRAW_VIEW) {
            wnoutrefresh(order[i]);
        }
    }
}

/* Repaints what NEED says changed: ncurses sends only the difference, which matters over slow
 * links. */
static void draw(enum ui_redraw need)
{
    enum ui_layout want = ui.term.header == NULL ? UI_LAYOUT_SMALL
                          : ui.help              ? UI_LAYOUT_HELP
                                                 : UI_LAYOUT_VIEWS;
    if (want != ui.drawn) {
        need = UI_REDRAW_SCREEN;
    }
    bool fresh = need == UI_REDRAW_SCREEN;
    ui.drawn = want;
    if (want == UI_LAYOUT_SMALL) {
        ui_screen_too_small(ui.term.rows, ui.term.cols, &ui.style);
        wnoutrefresh(stdscr);
    } else if (want == UI_LAYOUT_HELP) {
        draw_help(fresh);
    } else {
        draw_views(need, fresh);
    }
    curs_set(want == UI_LAYOUT_VIEWS && ui.editing ? 1 : 0);
    doupdate();
    ui.redraw = UI_REDRAW_NONE;
}

/* --- frames from the sampling thread ----------------------------------------------------- */

static void take_frames(void)
{
    struct live_frame *f = live_take(ui.live);
    if (f == NULL) {
        return;
    }
    /* The target became a program that cannot be read: the view ends, saying so. */
    if (f->state == LIVE_EXECED) {
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: %s", f->status);
        ui.quit = true;
        live_frame_free(f);
        return;
    }
    if (f->replay.on) {
        ui.at = f->replay;
        if (f->snap != NULL) {
            ui.pid = f->snap->pid;
        }
        need(UI_REDRAW_LINES);
    }
    ui.recording = f->recording;
    ui.record_bytes = f->record_bytes;
    ui.record_s = f->record_s;
    if (strcmp(f->record_note, ui.record_note) != 0) {
        snprintf(ui.record_note, sizeof ui.record_note, "%s", f->record_note);
        set_message(strncmp(f->record_note, "recording to", 12) != 0 &&
                        strncmp(f->record_note, "recorded", 8) != 0,
                    "%s", f->record_note);
        need(UI_REDRAW_LINES);
    }
    /* A snapshot that could not be read keeps the last picture too. */
    if (f->state == LIVE_GONE || f->snap == NULL) {
        live_frame_keep_picture(f, ui.newest != NULL ? ui.newest : ui.shown);
    }
    if (ui.frozen) {
        live_frame_free(ui.newest);
        ui.newest = f;
        if (f->state == LIVE_GONE) {
            need(UI_REDRAW_LINES); /* EXITED shows even on a frozen picture */
        }
        return;
    }
    live_frame_free(ui.shown);
    ui.shown = f;
    ui.frame_no++;
    need(UI_REDRAW_VIEW);
}

static void check_command(void)
{
    if (ui.spawn != NULL && !ui.spawn->exited && spawn_poll(ui.spawn)) {
        spawn_describe(ui.spawn, ui.exit_how, sizeof ui.exit_how);
        need(UI_REDRAW_LINES);
    }
}

/* --- keys: the global table's actions ----------------------------------------------------- */

static enum ui_redraw quit(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.quit = true;
    return UI_REDRAW_NONE;
}

static enum ui_redraw show_help(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.help = true;
    return UI_REDRAW_SCREEN;
}

/* Opens the source heat view: the sampling thread counts the function's lines from now on. */
void ui_show_heat(struct snap_str function, struct snap_str file, int first_line)
{
    if (function.ptr == NULL || file.ptr == NULL) {
        set_message(true, "no source: %.*s is no Python function pytop could read",
                    function.ptr != NULL ? (int)(function.len < 64 ? function.len : 64) : 1,
                    function.ptr != NULL ? function.ptr : "?");
        return;
    }
    unsigned no = live_set_heat(ui.live, &function, &file, first_line);
    if (no == 0) {
        set_message(true, "source heat view: the function's name is too long");
        return;
    }
    ui.heat_no = no;
    ui.heat = true;
    view_source_open(ui.heat_view, function, file, first_line);
    set_message(false, "source heat: counting from now on (Esc: back)");
    need(UI_REDRAW_VIEW);
}

void ui_close_heat(void)
{
    if (ui.heat) {
        ui.heat = false;
        live_set_heat(ui.live, NULL, NULL, 0);
        need(UI_REDRAW_VIEW);
    }
}

/* Tab: the next view (Shift-Tab: the one before); 1-4: that view. */
static enum ui_redraw switch_view(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    if (ui.heat) {
        ui_close_heat();
        if (key->type != TERMKEY_TYPE_KEYSYM) {
            ui.view = (int)(key->code.codepoint - '1');
        }
        return UI_REDRAW_VIEW; /* Tab from the source goes back to where it was opened */
    }
    if (key->type == TERMKEY_TYPE_KEYSYM) {
        bool back = (key->modifiers & TERMKEY_KEYMOD_SHIFT) != 0;
        ui.view = (ui.view + (back ? VIEWS - 1 : 1)) % VIEWS;
    } else {
        ui.view = (int)(key->code.codepoint - '1');
    }
    return UI_REDRAW_VIEW;
}

static enum ui_redraw freeze(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.frozen = !ui.frozen;
    if (ui.frozen) {
        return UI_REDRAW_LINES; /* FROZEN in the header; the picture stays */
    }
    if (ui.newest != NULL) {
        live_frame_free(ui.shown);
        ui.shown = ui.newest;
        ui.newest = NULL;
        ui.frame_no++;
    }
    return UI_REDRAW_VIEW;
}

static enum ui_redraw start_filter(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    memcpy(ui.filter_before, ui.filter, sizeof ui.filter);
    ui.editing = true;
    return UI_REDRAW_LINES;
}

static enum ui_redraw clear_filter(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.filter[0] = '\0';
    return UI_REDRAW_VIEW;
}

static enum ui_redraw reset(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    live_reset(ui.live);
    set_message(false, "statistics reset");
    return UI_REDRAW_LINES; /* the statistics start afresh with the next frame */
}

static enum ui_redraw redraw(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    clearok(curscr, TRUE);
    return UI_REDRAW_SCREEN;
}

/* d: the frozen or current picture to a file; a message says which. */
static enum ui_redraw dump(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    const struct snapshot *s = ui.shown != NULL ? ui.shown->snap : NULL;
    if (s == NULL) {
        set_message(true, "nothing to dump: no sample taken yet");
        return UI_REDRAW_LINES;
    }
    char name[128];
    struct pt_error err = {0};
    if (ui.heat) {
        if (m->heat == NULL) {
            set_message(true, "nothing to dump: no counts of the function yet");
        } else if (ui_dump_heat(ui.shown, ui.pid, m->heat, live_source(ui.live), name,
                                sizeof name, &err) < 0) {
            set_message(true, "dump failed: %s", err.msg);
        } else {
            set_message(false, "dumped the annotated source to %s", name);
        }
        return UI_REDRAW_LINES;
    }
    if (ui_dump_frame(ui.shown, ui.opts, ui.window, ui.delay, ui.frozen, live_source(ui.live), name,
                      sizeof name, &err) < 0) {
        set_message(true, "dump failed: %s", err.msg);
    } else {
        set_message(false, "dumped the %s snapshot to %s", ui.frozen ? "frozen" : "current", name);
    }
    return UI_REDRAW_LINES;
}

/* '+' refreshes more often, '-' less, along DELAYS. */
static enum ui_redraw change_delay(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    bool faster = key->code.codepoint == '+';
    size_t n = sizeof DELAYS / sizeof DELAYS[0];
    double next = ui.delay;
    for (size_t i = 0; i < n; i++) {
        size_t k = faster ? n - 1 - i : i;
        if (faster ? DELAYS[k] < ui.delay - 1e-9 : DELAYS[k] > ui.delay + 1e-9) {
            next = DELAYS[k];
            break;
        }
    }
    ui.delay = next;
    live_set_period(ui.live, next);
    set_message(false, "refresh every %g s", next);
    return UI_REDRAW_LINES;
}

/* 'w': the statistics reach back 1 s, 10 s, 60 s, then since the last reset, and round. */
static enum ui_redraw cycle_window(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    size_t n = sizeof WINDOWS / sizeof WINDOWS[0];
    double next = INFINITY;
    for (size_t i = 0; i < n && !isinf(ui.window); i++) {
        if (WINDOWS[i] > ui.window + 1e-9) {
            next = WINDOWS[i];
            break;
        }
    }
    if (isinf(ui.window)) {
        next = WINDOWS[0];
    }
    bool longer = next > ui.window;
    ui.window = next;
    live_set_window(ui.live, next);
    if (isinf(next)) {
        set_message(false, "statistics since the last reset (r resets; w: 1 s)");
    } else {
        set_message(false, "statistics over the last %g s%s", next,
                    longer ? "" : ": started afresh");
    }
    return UI_REDRAW_LINES;
}

/* 'm': the statistics count every thread-sample, those on a CPU, holding the GIL, handling an
 * exception, and round; they start afresh. */
static enum ui_redraw cycle_mode(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.mode = (enum sampler_mode)((ui.mode + 1) % SAMPLER_MODE_COUNT);
    live_set_mode(ui.live, ui.mode);
    set_message(false, "mode %s: the statistics count %sthread-samples%s, from now on",
                sampler_mode_name(ui.mode), ui.mode == SAMPLER_MODE_WALL ? "all " : "",
                sampler_mode_words(ui.mode));
    return UI_REDRAW_LINES;
}

/* 'o': the next pictures' frames carry their instruction, or no longer. */
static enum ui_redraw toggle_opcodes(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.opcodes = !ui.opcodes;
    live_set_opcodes(ui.live, ui.opcodes);
    set_message(false, ui.opcodes ? "instructions: each frame shows the one it is at (o: off)"
                                  : "instructions: off");
    return UI_REDRAW_LINES;
}

/* 'R': every sample into pytop-PID-TIME.pyrec here from now on, or no more. */
static enum ui_redraw toggle_record(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    if (ui.replay) {
        set_message(true, "a replay is a recording already: nothing to record");
        return UI_REDRAW_LINES;
    }
    if (ui.recording) {
        live_record(ui.live, -1, NULL);
        ui.recording = false;
        set_message(false, "recording stops");
        return UI_REDRAW_LINES;
    }
    char name[PATH_MAX];
    struct pt_error err = {0};
    int fd = ui_dump_create(ui.pid, 0, "", "pyrec", name, sizeof name, &err);
    if (fd < 0) {
        set_message(true, "cannot record: %s", err.msg);
        return UI_REDRAW_LINES;
    }
    live_record(ui.live, fd, name);
    ui.recording = true;
    ui.record_bytes = 0;
    ui.record_s = 0;
    set_message(false, "recording to %s (R stops)", name);
    return UI_REDRAW_LINES;
}

/* 'i': the bottom line shows what reading the target costs, or the key hints again. */
static enum ui_redraw toggle_reader(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.reader_line = !ui.reader_line;
    return UI_REDRAW_LINES;
}

/* 't': the Functions view counts the thread selected in the Threads view alone, or all. */
static enum ui_redraw toggle_focus(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    pid_t tid = VIEW_OPS[0]->selected_tid(ui.views[0]);
    if (ui_focus_toggle(&ui.focus, ui.shown != NULL ? ui.shown->snap : NULL, tid) != 0) {
        set_message(false, "Functions: thread %d alone (t again: all threads)", (int)tid);
    } else {
        set_message(false, "Functions: %s",
                    ui.focus.n_named > 0 ? "the threads the filter names" : "all threads");
    }
    return UI_REDRAW_VIEW;
}

/* Typing the filter: it applies as it grows. */
static enum ui_redraw edit_filter(const TermKeyKey *key)
{
    switch (ui_edit_key(ui.filter, sizeof ui.filter, key)) {
    case UI_EDIT_DONE:
        ui.editing = false;
        break;
    case UI_EDIT_CANCEL:
        memcpy(ui.filter, ui.filter_before, sizeof ui.filter);
        ui.editing = false;
        break;
    case UI_EDIT_GOES_ON:
        break;
    }
    return UI_REDRAW_VIEW;
}

/* --- a replay's keys ---------------------------------------------------------------------- */

/* Space: plays or pauses. */
static enum ui_redraw replay_play(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.at.playing = !ui.at.playing;
    live_replay_play(ui.live, ui.at.playing);
    return UI_REDRAW_LINES;
}

/* , and .: a sample back or forward (pausing). */
static enum ui_redraw replay_step(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    if (ui.at.playing) {
        ui.at.playing = false;
        live_replay_play(ui.live, false);
    }
    live_replay_step(ui.live, key->code.codepoint == ',' ? -1 : 1);
    return UI_REDRAW_NONE;
}

/* < and >: a second back or forward. */
static enum ui_redraw replay_second(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.at.position += key->code.codepoint == '<' ? -1 : 1;
    ui.at.position = ui.at.position < 0 ? 0 : ui.at.position > ui.at.length ? ui.at.length
                                                                              : ui.at.position;
    live_replay_seek(ui.live, ui.at.position);
    return UI_REDRAW_LINES;
}

/* { and }: the start or the end. */
static enum ui_redraw replay_ends(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.at.position = key->code.codepoint == '{' ? 0 : ui.at.length;
    live_replay_seek(ui.live, ui.at.position);
    return UI_REDRAW_LINES;
}

/* [ and ]: half or twice the speed, 0.25x to 64x. */
static enum ui_redraw replay_speed(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    double speed = ui.at.speed > 0 ? ui.at.speed : 1;
    speed = key->code.codepoint == '[' ? speed / 2 : speed * 2;
    ui.at.speed = speed < 0.25 ? 0.25 : speed > 64 ? 64 : speed;
    live_replay_speed(ui.live, ui.at.speed);
    set_message(false, "replay speed %gx", ui.at.speed);
    return UI_REDRAW_LINES;
}

/* g: the prompt for a time to go to. */
static enum ui_redraw replay_goto(void *ctx, const struct ui_model *m, const TermKeyKey *key)
{
    ui.going = true;
    ui.goto_text[0] = '\0';
    return UI_REDRAW_LINES;
}

/* "75", "12.5", "1:15", "1:02:03": seconds; -1 for none of those. */
static double parse_time(const char *text)
{
    double t = 0;
    const char *p = text;
    for (int part = 0; part < 3; part++) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v >= 0) || !isfinite(v)) {
            return -1;
        }
        t = t * 60 + v;
        if (*end == '\0') {
            return t;
        }
        if (*end != ':') {
            return -1;
        }
        p = end + 1;
    }
    return -1;
}

/* Typing the time to go to. */
static enum ui_redraw edit_goto(const TermKeyKey *key)
{
    switch (ui_edit_key(ui.goto_text, sizeof ui.goto_text, key)) {
    case UI_EDIT_DONE: {
        ui.going = false;
        double t = parse_time(ui.goto_text);
        if (t < 0) {
            set_message(true, "not a time: '%s' (seconds, or M:SS)", ui.goto_text);
        } else {
            ui.at.position = t > ui.at.length ? ui.at.length : t;
            live_replay_seek(ui.live, ui.at.position);
        }
        break;
    }
    case UI_EDIT_CANCEL:
        ui.going = false;
        break;
    case UI_EDIT_GOES_ON:
        break;
    }
    return UI_REDRAW_LINES;
}

/* A replay's keys, offered before every other table: Space plays rather than freezes. */
const struct ui_binding ui_replay_bindings[] = {
    {"Space", {{UI_KEY_CHAR, ' '}, {UI_KEY_SYM, TERMKEY_SYM_SPACE}}, replay_play, UI_HELP_REPLAY,
     "play / pause the replay (p and Z freeze the picture)"},
    {"comma / period",
     {{UI_KEY_CHAR, ','}, {UI_KEY_CHAR, '.'}},
     replay_step,
     UI_HELP_REPLAY,
     "one sample back / forward"},
    {"< / >",
     {{UI_KEY_CHAR, '<'}, {UI_KEY_CHAR, '>'}},
     replay_second,
     UI_HELP_REPLAY,
     "one second back / forward"},
    {"[ / ]",
     {{UI_KEY_CHAR, '['}, {UI_KEY_CHAR, ']'}},
     replay_speed,
     UI_HELP_REPLAY,
     "slower / faster (0.25x to 64x)"},
    {"{ / }",
     {{UI_KEY_CHAR, '{'}, {UI_KEY_CHAR, '}'}},
     replay_ends,
     UI_HELP_REPLAY,
     "the start / the end of the recording"},
    {"g", {{UI_KEY_CHAR, 'g'}}, replay_goto, UI_HELP_REPLAY,
     "go to a time (seconds, or M:SS; Enter goes, Esc cancels)"},
    {NULL},
};

/* The keys that mean the same in every view, each bound to its action. */
const struct ui_binding ui_bindings[] = {
    {"q, Ctrl-C", {{UI_KEY_CHAR, 'q'}, {UI_KEY_CTRL, 'c'}}, quit, UI_HELP_TOP, "quit"},
    {"h, ?",
     {{UI_KEY_CHAR, 'h'}, {UI_KEY_CHAR, '?'}},
     show_help,
     UI_HELP_TOP,
     "this help (any key closes it)"},
    {"Tab, 1-4",
     {{UI_KEY_SYM, TERMKEY_SYM_TAB},
      {UI_KEY_CHAR, '1'},
      {UI_KEY_CHAR, '2'},
      {UI_KEY_CHAR, '3'},
      {UI_KEY_CHAR, '4'}},
     switch_view,
     UI_HELP_VIEWS,
     "Threads, Functions, GC, Tasks"},
    {"t",
     {{UI_KEY_CHAR, 't'}},
     toggle_focus,
     UI_HELP_VIEWS,
     "Functions: the selected thread only / all threads"},
    {"p, Space, Z",
     {{UI_KEY_CHAR, 'p'}, {UI_KEY_CHAR, ' '}, {UI_KEY_SYM, TERMKEY_SYM_SPACE}, {UI_KEY_CHAR, 'Z'}},
     freeze,
     UI_HELP_PICTURE,
     "freeze / unfreeze (sampling goes on behind)"},
    {"/",
     {{UI_KEY_CHAR, '/'}},
     start_filter,
     UI_HELP_PICTURE,
     "filter by function, file or thread name, as you type\n"
     "Enter keeps it, Esc cancels; c clears it\n"
     "Functions: a thread's name counts that thread's samples alone\n"
     "Tasks: the matching rows and the way to them, even into folded tasks"},
    {"c", {{UI_KEY_CHAR, 'c'}}, clear_filter, UI_HELP_PICTURE, "clear the filter"},
    {"d",
     {{UI_KEY_CHAR, 'd'}},
     dump,
     UI_HELP_PICTURE,
     "dump the frozen (or current) picture and its statistics to\npytop-PID-TIME.txt here "
     "(the source heat view: its annotated source)"},
    {"r", {{UI_KEY_CHAR, 'r'}}, reset, UI_HELP_PICTURE, "reset the statistics"},
    {"w",
     {{UI_KEY_CHAR, 'w'}},
     cycle_window,
     UI_HELP_PICTURE,
     "statistics over 1 s, 10 s, 60 s, since the reset (header: window)"},
    {"m",
     {{UI_KEY_CHAR, 'm'}},
     cycle_mode,
     UI_HELP_PICTURE,
     "mode: count every thread-sample (wall), those on a CPU (cpu),\n"
     "holding the GIL (gil) or handling an exception; starts afresh"},
    {"o",
     {{UI_KEY_CHAR, 'o'}},
     toggle_opcodes,
     UI_HELP_PICTURE,
     "instructions: each frame of the stacks shows the one it is at,\n"
     "[LOAD_ATTR] and its specialised form / no more"},
    {"R",
     {{UI_KEY_CHAR, 'R'}},
     toggle_record,
     UI_HELP_PICTURE,
     "record every sample to pytop-PID-TIME.pyrec here / stop"},
    {"i",
     {{UI_KEY_CHAR, 'i'}},
     toggle_reader,
     UI_HELP_PICTURE,
     "the bottom line: what reading costs (reads, bytes a sample, code\n"
     "cache hits, failed reads, kept stacks) / the key hints"},
    {"+ / -",
     {{UI_KEY_CHAR, '+'}, {UI_KEY_CHAR, '-'}},
     change_delay,
     UI_HELP_PICTURE,
     "refresh more / less often"},
    {"Ctrl-L", {{UI_KEY_CTRL, 'l'}}, redraw, UI_HELP_PICTURE, "redraw the screen"},
    {NULL},
};

/* Offers KEY to the global table, then (when a view is shown) to the sort keys of a view that
 * sorts, the move keys, and the view's own. Returns what its action changed. */
static enum ui_redraw offer_key(const TermKeyKey *key)
{
    struct ui_model m = model();
    const struct ui_binding *b = ui.replay ? ui_keys_find(ui_replay_bindings, key) : NULL;
    if (b != NULL) {
        return b->action(NULL, &m, key);
    }
    b = ui_keys_find(ui_bindings, key);
    if (b != NULL) {
        return b->action(NULL, &m, key);
    }
    if (ui.term.header == NULL) {
        return UI_REDRAW_NONE; /* too small: no view is shown */
    }
    const struct view_ops *v = cur_ops();
    void *state = cur_state();
    struct ui_list_mover mover = {v->move, state};
    if (v->sort != NULL && (b = ui_keys_find(ui_sort_bindings, key)) != NULL) {
        return b->action(v->sort(state), &m, key);
    }
    if ((b = ui_keys_find(ui_list_bindings, key)) != NULL) {
        return b->action(&mover, &m, key);
    }
    b = ui_keys_find(v->keys, key);
    return b != NULL ? b->action(state, &m, key) : UI_REDRAW_NONE;
}

static void handle_key(const TermKeyKey *key)
{
    static const struct ui_key ctrl_c = {UI_KEY_CTRL, 'c'};
    if (ui_keys_is(&ctrl_c, key)) {
        ui.quit = true; /* wherever keys go: the help, the filter being typed */
    } else if (ui.help) {
        ui.help = false;
        need(UI_REDRAW_SCREEN);
    } else if (ui.going) {
        need(edit_goto(key));
    } else if (ui.editing) {
        need(edit_filter(key));
    } else {
        need(offer_key(key));
    }
}

/* Reads the keys that have arrived. Returns true when a key is half-read (a lone Esc may be
 * the start of a sequence) and needs another look after termkey's wait time. */
static bool read_keys(void)
{
    TermKeyKey key;
    TermKeyResult r = termkey_advisereadable(ui.term.tk);
    if (r == TERMKEY_RES_EOF || r == TERMKEY_RES_ERROR) {
        ui.quit = true; /* the terminal went away */
        return false;
    }
    while ((r = termkey_getkey(ui.term.tk, &key)) == TERMKEY_RES_KEY) {
        handle_key(&key);
    }
    return r == TERMKEY_RES_AGAIN;
}

/* --- the loop ---------------------------------------------------------------------------- */

static void drain_wake(void)
{
    char buf[64];
    while (read(ui.wake[0], buf, sizeof buf) > 0) {
    }
}

static void handle_signals(void)
{
    if (got_quit) {
        ui.quit = true;
    }
    if (got_winch) {
        got_winch = 0;
        resize();
    }
}

/* A message goes when its time is up, whatever else keeps the loop busy (frames arrive more
 * often than the tick). */
static void expire_message(void)
{
    if (ui.message[0] != '\0' && clock_now() >= ui.message_until) {
        ui.message[0] = '\0';
        need(UI_REDRAW_LINES);
    }
}

/* How long the loop may sleep: a tick, or less when a message is due to go. */
static int poll_timeout(void)
{
    int timeout = TICK_MS;
    if (ui.message[0] != '\0') {
        double left_ms = (ui.message_until - clock_now()) * 1000.0 + 1;
        timeout = left_ms < 0 ? 0 : left_ms < TICK_MS ? (int)left_ms : TICK_MS;
    }
    return timeout;
}

static void run_loop(void)
{
    bool pending = false;
    need(UI_REDRAW_SCREEN);
    while (!ui.quit) {
        handle_signals();
        take_frames();
        check_command();
        if (ui_focus_update(&ui.focus, ui.shown != NULL ? ui.shown->snap : NULL, ui.filter,
                            ui.live)) {
            need(UI_REDRAW_VIEW);
        }
        expire_message();
        if (ui.redraw != UI_REDRAW_NONE && !ui.quit) {
            draw(ui.redraw);
        }
        struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {ui.wake[0], POLLIN, 0}};
        int timeout = pending ? termkey_get_waittime(ui.term.tk) : poll_timeout();
        int n = poll(fds, 2, timeout);
        if (n < 0 && errno != EINTR) {
            snprintf(ui.fatal, sizeof ui.fatal, "pytop: poll: %s", strerror(errno));
            break;
        }
        if (n > 0 && fds[1].revents != 0) {
            drain_wake();
        }
        if (n > 0 && fds[0].revents != 0) {
            pending = read_keys();
        } else if (n == 0 && pending) {
            TermKeyKey key;
            if (termkey_getkey_force(ui.term.tk, &key) == TERMKEY_RES_KEY) {
                handle_key(&key);
            }
            pending = false;
        } else if (n == 0) {
            need(UI_REDRAW_LINES); /* the tick: the header's clock and how late samples are */
        }
    }
}

/* --- start and end ----------------------------------------------------------------------- */

int ui_open(const struct cli_options *opts, double window, const int wake[2])
{
    ui.opts = opts;
    ui.pid = opts->pid;
    ui.replay = opts->replay != NULL;
    ui.at.speed = 1;
    ui.delay = opts->delay;
    ui.window = window;
    ui.mode = opts->sample_mode;
    ui.opcodes = opts->opcodes;
    ui.wake[0] = wake[0];
    ui.wake[1] = wake[1];
    if (opts->filter != NULL) {
        snprintf(ui.filter, sizeof ui.filter, "%s", opts->filter);
    }
    for (int i = 0; i < VIEWS; i++) {
        ui.views[i] = VIEW_OPS[i]->create();
        if (ui.views[i] == NULL) {
            fprintf(stderr, "pytop: out of memory\n");
            return CLI_EXIT_TARGET;
        }
    }
    ui.heat_view = view_source_ops.create();
    if (ui.heat_view == NULL) {
        fprintf(stderr, "pytop: out of memory\n");
        return CLI_EXIT_TARGET;
    }
    install_signals();
    struct pt_error err = {0};
    if (ui_term_open(&ui.term, !opts->no_color, &ui.style, &err) < 0) {
        if (!ui.term.up) {
            fprintf(stderr, "pytop: %s\n", err.msg);
            return CLI_EXIT_USAGE;
        }
        /* Said once the terminal is back (ui_close()). */
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: %s", err.msg);
        return CLI_EXIT_TARGET;
    }
    return CLI_EXIT_OK;
}

void ui_show(const struct ui_target *t)
{
    ui.live = t->live;
    ui.spawn = t->spawn;
    ui.pid = t->pid;
    run_loop();
}

bool ui_close(void)
{
    ui_term_close(&ui.term);
    live_frame_free(ui.shown);
    live_frame_free(ui.newest);
    ui.shown = NULL;
    ui.newest = NULL;
    for (int i = 0; i < VIEWS; i++) {
        VIEW_OPS[i]->destroy(ui.views[i]);
        ui.views[i] = NULL;
    }
    view_source_ops.destroy(ui.heat_view);
    ui.heat_view = NULL;
    ui.heat = false;
    ui.wake[0] = -1;
    ui.wake[1] = -1; /* the caller closes the pipe: the signal handlers no longer write to it */
    ui.live = NULL;
    ui.spawn = NULL;
    if (ui.fatal[0] != '\0') {
        fprintf(stderr, "%s\n", ui.fatal);
        return true;
    }
    return false;
}
