/* ui: the live view (pytop -p PID, pytop -- CMD), on ncursesw and libtermkey. */
#include "config.h"

#include "ui/ui.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <ncurses.h>
#include <termkey.h>

#include "cli.h"
#include "core/error.h"
#include "core/report.h"
#include "core/sampler.h"
#include "core/snapshot.h"
#include "live.h"
#include "snapcopy.h"
#include "spawn.h"
#include "ui/ui_dump.h"
#include "ui/ui_edit.h"
#include "ui/ui_screen.h"
#include "ui/ui_style.h"
#include "ui/ui_text.h"
#include "ui/view.h"

enum {
    DUMP_TOP_FUNCTIONS = 20, /* rows of the dump's functions table */
    VIEWS = 4,
    FILTER_BYTES = 256,
    TICK_MS = 1000, /* the screen is looked at this often even when nothing happens */
    RESTORE_BYTES = 256,
};

static const double MESSAGE_S = 5.0;     /* how long a message stays */
static const double SPAWN_GRACE_S = 2.0; /* a command still running at quit: SIGTERM, then KILL */
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
enum layout { LAYOUT_NONE, LAYOUT_VIEWS, LAYOUT_HELP, LAYOUT_SMALL };

/* The live view's one mutable global: the terminal and everything the loop keeps. */
struct ui {
    const struct cli_options *opts;
    /* The terminal. */
    bool term_up;
    SCREEN *screen;
    TermKey *tk;
    WINDOW *header;
    WINDOW *body;
    WINDOW *footer;
    WINDOW *full; /* the help screen */
    int rows;
    int cols;
    enum layout drawn;
    struct ui_style style;
    struct termios tio; /* the terminal as pytop found it, for a crash */
    bool tio_saved;
    char restore[RESTORE_BYTES]; /* what puts the terminal back, for a crash */
    size_t restore_len;
    int wake[2]; /* self-pipe: signals and the sampling thread wake the loop */
    /* The target. */
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
    bool help;
    char filter[FILTER_BYTES];
    char filter_before[FILTER_BYTES];
    bool editing;
    /* Which threads the Functions view counts (update_focus()): the one chosen with t, else
     * those the filter names; ASKED is what the sampling thread was last asked for. */
    pid_t focus_tid;
    struct sampler_thread_key focus_key;
    size_t n_named;
    struct sampler_thread_key asked[LIVE_FOCUS_MAX];
    size_t n_asked;
    double delay;
    double window; /* how far back the statistics reach; INFINITY: since the reset */
    char message[PATH_MAX + 128];
    bool message_is_error;
    double message_until;
    char why[512];
    bool dirty;
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
    if (ui.tio_saved) {
        ssize_t w = write(STDOUT_FILENO, ui.restore, ui.restore_len);
        (void)w;
        tcsetattr(STDIN_FILENO, TCSANOW, &ui.tio);
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

static double now_s(void)
{
    return sampler_now();
}

static void set_message(bool error, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_message(bool error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ui.message, sizeof ui.message, fmt, ap);
    va_end(ap);
    ui.message_is_error = error;
    ui.message_until = now_s() + MESSAGE_S;
    ui.dirty = true;
}

/* --- the terminal ------------------------------------------------------------------------ */

/* The escape sequences that leave the full-screen mode, kept for on_fault(). */
static void keep_restore_sequence(void)
{
    static const char *const caps[] = {"sgr0", "cnorm", "rmkx", "rmcup"};
    ui.restore_len = 0;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        const char *seq = tigetstr(caps[i]);
        if (seq == NULL || seq == (char *)-1) {
            continue;
        }
        size_t n = strlen(seq);
        if (ui.restore_len + n < sizeof ui.restore) {
            memcpy(ui.restore + ui.restore_len, seq, n);
            ui.restore_len += n;
        }
    }
}

static void delete_windows(void)
{
    WINDOW **wins[] = {&ui.header, &ui.body, &ui.footer, &ui.full};
    for (size_t i = 0; i < sizeof wins / sizeof wins[0]; i++) {
        if (*wins[i] != NULL) {
            delwin(*wins[i]);
            *wins[i] = NULL;
        }
    }
}

/* Lays the windows out for the terminal's size. */
static void layout_windows(void)
{
    delete_windows();
    getmaxyx(stdscr, ui.rows, ui.cols);
    ui.drawn = LAYOUT_NONE;
    if (ui.rows < UI_SCREEN_MIN_ROWS || ui.cols < UI_SCREEN_MIN_COLS) {
        return;
    }
    int body = ui.rows - UI_SCREEN_HEADER_ROWS - UI_SCREEN_FOOTER_ROWS;
    ui.header = newwin(UI_SCREEN_HEADER_ROWS, ui.cols, 0, 0);
    ui.body = newwin(body, ui.cols, UI_SCREEN_HEADER_ROWS, 0);
    ui.footer = newwin(UI_SCREEN_FOOTER_ROWS, ui.cols, ui.rows - UI_SCREEN_FOOTER_ROWS, 0);
    ui.full = newwin(ui.rows, ui.cols, 0, 0);
    if (ui.header == NULL || ui.body == NULL || ui.footer == NULL || ui.full == NULL) {
        delete_windows();
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: out of memory laying out the screen");
        ui.quit = true;
    }
}

static int term_open(void)
{
    if (tcgetattr(STDIN_FILENO, &ui.tio) == 0) {
        ui.tio_saved = true;
    }
    const char *term = getenv("TERM") != NULL ? getenv("TERM") : "";
    ui.screen = newterm(NULL, stdout, stdin);
    if (ui.screen == NULL) {
        fprintf(stderr, "pytop: cannot drive the terminal '%s' (TERM); try TERM=xterm\n", term);
        return -1;
    }
    set_term(ui.screen);
    const char *cup = tigetstr("cup");
    if (cup == NULL || cup == (char *)-1) {
        /* A terminal that cannot place the cursor (TERM=dumb) would get a jumble. */
        endwin();
        delscreen(ui.screen);
        ui.screen = NULL;
        fprintf(stderr,
                "pytop: the terminal '%s' (TERM) cannot move the cursor; use --dump or -b\n", term);
        return -1;
    }
    keep_restore_sequence();
    noecho();
    nonl();
    curs_set(0);
    ui_style_init(&ui.style, !ui.opts->no_color);
    ui.term_up = true;
    ui.tk = termkey_new(STDIN_FILENO, TERMKEY_FLAG_CTRLC);
    if (ui.tk == NULL) {
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: cannot read keys from the terminal: %s",
                 strerror(errno));
        return -1;
    }
    layout_windows();
    return 0;
}

static void term_close(void)
{
    if (ui.tk != NULL) {
        termkey_destroy(ui.tk);
        ui.tk = NULL;
    }
    if (ui.term_up) {
        delete_windows();
        curs_set(1);
        endwin();
        delscreen(ui.screen);
        ui.term_up = false;
    }
    if (ui.tio_saved) {
        tcsetattr(STDIN_FILENO, TCSANOW, &ui.tio);
    }
}

static void resize(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        resizeterm(ws.ws_row, ws.ws_col);
    }
    layout_windows();
    ui.dirty = true;
}

/* --- drawing ----------------------------------------------------------------------------- */

static bool same_key(const struct sampler_thread_key *a, const struct sampler_thread_key *b)
{
    return a->interp_id == b->interp_id && a->tid == b->tid && a->thread_id == b->thread_id;
}

/* True when F counted the functions of the threads last asked for. */
static bool answers_focus(const struct live_frame *f)
{
    if (ui.n_asked == 0 || f->n_focus != ui.n_asked) {
        return false;
    }
    for (size_t i = 0; i < ui.n_asked; i++) {
        if (!same_key(&f->focus_keys[i], &ui.asked[i])) {
            return false;
        }
    }
    return true;
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
        .focus = f != NULL && answers_focus(f) ? f->focus : NULL,
        .focus_tid = ui.focus_tid,
        .n_named = ui.n_named,
        .n_named_counted = ui.focus_tid == 0 ? ui.n_asked : 0,
        .filter = ui.filter,
        .frozen = ui.frozen,
        .source = ui.live != NULL ? live_source(ui.live) : NULL,
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
        double since = now_s() - f->last_sample;
        late = f->last_sample > 0 && since > 2 * ui.delay + 1 ? since : 0;
    }
    struct ui_screen s = {
        .pid = ui.pid,
        .frame = f,
        .frozen = ui.frozen,
        .exited = exited,
        .exit_how = ui.exit_how[0] != '\0' ? ui.exit_how : NULL,
        .rate_hz = ui.opts->rate_hz,
        .delay = ui.delay,
        .window_s = ui.window,
        .late_s = late,
        .titles = titles,
        .n_views = VIEWS,
        .view = ui.view,
        .enter_does = VIEW_OPS[ui.view]->enter_does,
        .filter = ui.filter,
        .editing = ui.editing,
        .message = ui.message,
        .message_is_error = ui.message_is_error,
        .sorts = VIEW_OPS[ui.view]->sorts,
        .log_path = ui.spawn != NULL ? ui.spawn->log_path : NULL,
    };
    return s;
}

/* Repaints what changed: ncurses sends only the difference, which matters over slow links. */
static void draw(void)
{
    enum layout want = ui.header == NULL ? LAYOUT_SMALL : ui.help ? LAYOUT_HELP : LAYOUT_VIEWS;
    bool fresh = want != ui.drawn;
    ui.drawn = want;
    if (want == LAYOUT_SMALL) {
        ui_screen_too_small(ui.rows, ui.cols, &ui.style);
        wnoutrefresh(stdscr);
    } else if (want == LAYOUT_HELP) {
        ui_screen_help(ui.full, &ui.style);
        if (fresh) {
            touchwin(ui.full);
        }
        wnoutrefresh(ui.full);
    } else {
        const char *titles[VIEWS];
        for (int i = 0; i < VIEWS; i++) {
            titles[i] = VIEW_OPS[i]->title(ui.views[i]);
        }
        struct ui_model m = model();
        struct ui_screen s = screen_info(titles);
        ui_screen_header(ui.header, &s, &ui.style);
        werase(ui.body);
        VIEW_OPS[ui.view]->draw(ui.views[ui.view], &m, ui.body);
        /* What the filter hides is known once the view has drawn. */
        char note[128] = "";
        if (VIEW_OPS[ui.view]->filter_note != NULL) {
            VIEW_OPS[ui.view]->filter_note(ui.views[ui.view], &m, note, sizeof note);
        } else if (ui.filter[0] != '\0') {
            snprintf(note, sizeof note, "no effect in this view");
        }
        s.filter_note = note;
        ui_screen_footer(ui.footer, &s, &ui.style);
        WINDOW *order[] = {ui.header, ui.body, ui.footer}; /* the footer last: it has the cursor */
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
            if (fresh) {
                touchwin(order[i]);
            }
            wnoutrefresh(order[i]);
        }
    }
    curs_set(want == LAYOUT_VIEWS && ui.editing ? 1 : 0);
    doupdate();
    ui.dirty = false;
}

/* --- frames from the sampling thread ----------------------------------------------------- */

/* The target has exited: its last samples show an interpreter shutting down, so the picture
 * that was on screen stays (the statistics are the final ones). */
static void keep_last_picture(struct live_frame *f)
{
    const struct live_frame *before = ui.newest != NULL ? ui.newest : ui.shown;
    if (before == NULL || before->snap == NULL || (before->state == LIVE_GONE && f->snap != NULL)) {
        return;
    }
    struct snapshot *copy = snapcopy_all(before->snap, NULL);
    if (copy != NULL) {
        snapshot_free(f->snap);
        f->snap = copy;
    }
    /* The task graph too: the Tasks view and a dump still show the last one. */
    copy = before->tasks != NULL ? snapcopy_all(before->tasks, NULL) : NULL;
    if (copy != NULL) {
        snapshot_free(f->tasks);
        f->tasks = copy;
    }
}

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
    /* A snapshot that could not be read keeps the last picture too. */
    if (f->state == LIVE_GONE || f->snap == NULL) {
        keep_last_picture(f);
    }
    if (ui.frozen) {
        live_frame_free(ui.newest);
        ui.newest = f;
        ui.dirty |= f->state == LIVE_GONE; /* EXITED shows even on a frozen picture */
        return;
    }
    live_frame_free(ui.shown);
    ui.shown = f;
    ui.frame_no++;
    ui.dirty = true;
}

static void check_command(void)
{
    if (ui.spawn != NULL && !ui.spawn->exited && spawn_poll(ui.spawn)) {
        spawn_describe(ui.spawn, ui.exit_how, sizeof ui.exit_how);
        ui.dirty = true;
    }
}

/* --- keys -------------------------------------------------------------------------------- */

static bool is_char(const TermKeyKey *key, long c)
{
    return key->type == TERMKEY_TYPE_UNICODE && key->code.codepoint == c &&
           (key->modifiers & (TERMKEY_KEYMOD_CTRL | TERMKEY_KEYMOD_ALT)) == 0;
}

static bool is_ctrl(const TermKeyKey *key, long c)
{
    return key->type == TERMKEY_TYPE_UNICODE && key->code.codepoint == c &&
           key->modifiers == TERMKEY_KEYMOD_CTRL;
}

static bool is_sym(const TermKeyKey *key, TermKeySym sym)
{
    return key->type == TERMKEY_TYPE_KEYSYM && key->code.sym == sym;
}

static void toggle_freeze(void)
{
    ui.frozen = !ui.frozen;
    if (!ui.frozen && ui.newest != NULL) {
        live_frame_free(ui.shown);
        ui.shown = ui.newest;
        ui.newest = NULL;
        ui.frame_no++;
    }
}

static void dump(void)
{
    const struct snapshot *s = ui.shown != NULL ? ui.shown->snap : NULL;
    if (s == NULL) {
        set_message(true, "nothing to dump: no sample taken yet");
        return;
    }
    char name[128];
    char by[512];
    struct pt_error err = {0};
    const struct snapshot *tasks = ui.shown != NULL ? ui.shown->tasks : NULL;
    const struct sampler_stats *st = ui.shown->stats;
    /* The statistics of the picture's own refresh: a frozen picture's window may differ from
     * the one now asked for. */
    double window = st != NULL ? st->window_limit : ui.window;
    cli_settings_text(ui.opts, window, ui.delay,
                      ui.frozen ? "live view, d on the frozen picture" : "live view, d", by,
                      sizeof by);
    struct report_opts ro = {
        .by = by,
        .no_stats = "no sample counted yet",
        .top_functions = DUMP_TOP_FUNCTIONS,
    };
    if (ui_dump_write(s, tasks, st, live_source(ui.live), &ro, name, sizeof name, &err) < 0) {
        set_message(true, "dump failed: %s", err.msg);
    } else {
        set_message(false, "dumped the %s snapshot to %s", ui.frozen ? "frozen" : "current", name);
    }
}

/* '+' refreshes more often, '-' less, along DELAYS. */
static void change_delay(bool faster)
{
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
}

/* 'w': the statistics reach back 1 s, 10 s, 60 s, then since the last reset, and round. */
static void cycle_window(void)
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
}

/* The thread TID of the frame on screen, with its interpreter's id; NULL if not there. */
static const struct snap_thread *find_thread(pid_t tid, int64_t *interp)
{
    const struct snapshot *s = ui.shown != NULL ? ui.shown->snap : NULL;
    for (size_t i = 0; tid != 0 && s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            if (s->interps[i].threads[j].tid == tid) {
                *interp = s->interps[i].id;
                return &s->interps[i].threads[j];
            }
        }
    }
    return NULL;
}

/* Works out which threads the Functions view counts, and asks the sampling thread for their
 * functions when that changed: the thread chosen with t, else the threads of the picture whose
 * name the filter is found in (the first LIVE_FOCUS_MAX), else all (nothing to ask). */
static void update_focus(void)
{
    struct sampler_thread_key want[LIVE_FOCUS_MAX];
    size_t n = 0;
    const struct snapshot *s = ui.shown != NULL ? ui.shown->snap : NULL;
    ui.n_named = 0;
    for (size_t i = 0; ui.filter[0] != '\0' && s != NULL && i < s->n_interps; i++) {
        for (size_t j = 0; j < s->interps[i].n_threads; j++) {
            const struct snap_thread *t = &s->interps[i].threads[j];
            if (t->name.ptr == NULL || !ui_text_match(ui.filter, t->name)) {
                continue;
            }
            if (ui.n_named++ < LIVE_FOCUS_MAX && ui.focus_tid == 0) {
                want[n++] = (struct sampler_thread_key){s->interps[i].id, t->tid, t->thread_id};
            }
        }
    }
    if (ui.focus_tid != 0) {
        want[0] = ui.focus_key;
        n = 1;
    }
    bool same = n == ui.n_asked;
    for (size_t i = 0; same && i < n; i++) {
        same = same_key(&want[i], &ui.asked[i]);
    }
    if (same) {
        return;
    }
    memcpy(ui.asked, want, n * sizeof *want);
    ui.n_asked = n;
    live_focus(ui.live, want, n);
    ui.dirty = true;
}

/* 't': the Functions view counts the thread selected in the Threads view alone, or all. */
static void toggle_focus(void)
{
    pid_t tid = VIEW_OPS[0]->selected_tid(ui.views[0]);
    int64_t interp = 0;
    const struct snap_thread *t = ui.focus_tid == 0 ? find_thread(tid, &interp) : NULL;
    if (t != NULL) {
        ui.focus_key = (struct sampler_thread_key){interp, t->tid, t->thread_id};
        ui.focus_tid = tid;
        set_message(false, "Functions: thread %d alone (t again: all threads)", (int)tid);
        return;
    }
    ui.focus_tid = 0;
    set_message(false, "Functions: %s",
                ui.n_named > 0 ? "the threads the filter names" : "all threads");
}

/* Typing the filter: it applies as it grows. */
static void edit_filter(const TermKeyKey *key)
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
}

static bool view_key(const TermKeyKey *key)
{
    if (is_sym(key, TERMKEY_SYM_TAB)) {
        bool back = (key->modifiers & TERMKEY_KEYMOD_SHIFT) != 0;
        ui.view = (ui.view + (back ? VIEWS - 1 : 1)) % VIEWS;
        return true;
    }
    for (int i = 0; i < VIEWS; i++) {
        if (is_char(key, '1' + i)) {
            ui.view = i;
            return true;
        }
    }
    return false;
}

/* The keys that mean the same in every view. Returns true if KEY was one. */
static bool global_key(const TermKeyKey *key)
{
    if (is_char(key, 'q')) {
        ui.quit = true;
    } else if (is_char(key, 'p') || is_char(key, 'Z') || is_char(key, ' ') ||
               is_sym(key, TERMKEY_SYM_SPACE)) {
        toggle_freeze();
    } else if (is_char(key, '/')) {
        memcpy(ui.filter_before, ui.filter, sizeof ui.filter);
        ui.editing = true;
    } else if (is_char(key, 'c')) {
        ui.filter[0] = '\0';
    } else if (is_char(key, 'd')) {
        dump();
    } else if (is_char(key, 'r')) {
        live_reset(ui.live);
        set_message(false, "statistics reset");
    } else if (is_char(key, '+') || is_char(key, '-')) {
        change_delay(is_char(key, '+'));
    } else if (is_char(key, 'w')) {
        cycle_window();
    } else if (is_char(key, 't')) {
        toggle_focus();
    } else if (is_char(key, 'h') || is_char(key, '?')) {
        ui.help = true;
    } else if (is_ctrl(key, 'l')) {
        clearok(curscr, TRUE);
    } else {
        return view_key(key);
    }
    return true;
}

static void handle_key(const TermKeyKey *key)
{
    ui.dirty = true;
    if (is_ctrl(key, 'c')) {
        ui.quit = true;
    } else if (ui.help) {
        ui.help = false;
    } else if (ui.editing) {
        edit_filter(key);
    } else if (!global_key(key) && ui.header != NULL) {
        struct ui_model m = model();
        VIEW_OPS[ui.view]->on_key(ui.views[ui.view], &m, key);
    }
}

/* Reads the keys that have arrived. Returns true when a key is half-read (a lone Esc may be
 * the start of a sequence) and needs another look after termkey's wait time. */
static bool read_keys(void)
{
    TermKeyKey key;
    TermKeyResult r = termkey_advisereadable(ui.tk);
    if (r == TERMKEY_RES_EOF || r == TERMKEY_RES_ERROR) {
        ui.quit = true; /* the terminal went away */
        return false;
    }
    while ((r = termkey_getkey(ui.tk, &key)) == TERMKEY_RES_KEY) {
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
    if (ui.message[0] != '\0' && now_s() >= ui.message_until) {
        ui.message[0] = '\0';
        ui.dirty = true;
    }
}

/* How long the loop may sleep: a tick, or less when a message is due to go. */
static int poll_timeout(void)
{
    int timeout = TICK_MS;
    if (ui.message[0] != '\0') {
        double left_ms = (ui.message_until - now_s()) * 1000.0 + 1;
        timeout = left_ms < 0 ? 0 : left_ms < TICK_MS ? (int)left_ms : TICK_MS;
    }
    return timeout;
}

static void housekeeping(void)
{
    ui.dirty = true; /* cheap: only changes reach the terminal */
}

static void run_loop(void)
{
    bool pending = false;
    ui.dirty = true;
    while (!ui.quit) {
        handle_signals();
        take_frames();
        check_command();
        update_focus();
        expire_message();
        if (ui.dirty && !ui.quit) {
            draw();
        }
        struct pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {ui.wake[0], POLLIN, 0}};
        int timeout = pending ? termkey_get_waittime(ui.tk) : poll_timeout();
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
            if (termkey_getkey_force(ui.tk, &key) == TERMKEY_RES_KEY) {
                handle_key(&key);
            }
            pending = false;
        } else if (n == 0) {
            housekeeping();
        }
    }
}

/* --- start and end ----------------------------------------------------------------------- */

static int start_target(void)
{
    struct pt_error err = {0};
    const struct cli_options *o = ui.opts;
    if (o->command != NULL) {
        ui.spawn = spawn_open(o->command, &err);
        if (ui.spawn == NULL) {
            snprintf(ui.fatal, sizeof ui.fatal, "pytop: %s", err.msg);
            return -1;
        }
        ui.pid = ui.spawn->pid;
    }
    struct live_opts lo = {
        .pid = ui.pid,
        .rate_hz = o->rate_hz,
        .window_s = ui.window,
        .period_s = o->delay,
        .blocking = o->blocking,
        .wait_for_frame = o->command != NULL,
        .wake_fd = ui.wake[1],
    };
    ui.live = live_open(&lo, &err);
    if (ui.live == NULL) {
        snprintf(ui.fatal, sizeof ui.fatal, "pytop: %s", err.msg);
        return -1;
    }
    return 0;
}

static void stop_all(void)
{
    term_close();
    live_close(ui.live);
    ui.live = NULL;
    spawn_close(ui.spawn, SPAWN_GRACE_S);
    ui.spawn = NULL;
    live_frame_free(ui.shown);
    live_frame_free(ui.newest);
    for (int i = 0; i < VIEWS; i++) {
        VIEW_OPS[i]->destroy(ui.views[i]);
    }
    for (int i = 0; i < 2; i++) {
        if (ui.wake[i] >= 0) {
            close(ui.wake[i]);
        }
    }
}

static int setup(const struct cli_options *opts)
{
    ui.opts = opts;
    ui.pid = opts->pid;
    ui.delay = opts->delay;
    /* Without --window, as long as the refresh interval, within 1 to 60 s. */
    ui.window = opts->delay < 1 ? 1 : opts->delay > 60 ? 60 : opts->delay;
    if (opts->window_s > 0) {
        ui.window = opts->window_s;
    }
    if (opts->filter != NULL) {
        snprintf(ui.filter, sizeof ui.filter, "%s", opts->filter);
    }
    for (int i = 0; i < VIEWS; i++) {
        ui.views[i] = VIEW_OPS[i]->create();
        if (ui.views[i] == NULL) {
            fprintf(stderr, "pytop: out of memory\n");
            return -1;
        }
    }
    if (pipe2(ui.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "pytop: pipe: %s\n", strerror(errno));
        return -1;
    }
    install_signals();
    return 0;
}

int ui_run(const struct cli_options *opts)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "pytop: the live view needs a terminal; for a file or a pipe use "
                        "--dump (one snapshot) or -b (batch mode)\n");
        return CLI_EXIT_USAGE;
    }
    setlocale(LC_ALL, "");
    int status = CLI_EXIT_OK;
    /* The terminal first: a command is started only once it can be shown. */
    if (setup(opts) < 0) {
        status = CLI_EXIT_TARGET;
    } else if (term_open() < 0) {
        status = CLI_EXIT_USAGE;
    } else if (start_target() == 0) {
        run_loop();
    }
    stop_all();
    if (ui.fatal[0] != '\0') {
        fprintf(stderr, "%s\n", ui.fatal);
        status = CLI_EXIT_TARGET;
    }
    return status;
}
