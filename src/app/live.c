/* live: the target of the live view, sampled on a thread of its own; the screen takes frames. */
#include "config.h"

#include "app/live.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app/record.h"
#include "app/replayer.h"
#include "core/record/recsample.h"
#include "core/util/clock.h"
#include "core/util/error.h"
#include "core/target/proc.h"
#include "core/target/runtime.h"
#include "core/sampler/sampler.h"
#include "core/sampler/schedule.h"
#include "core/model/snapshot.h"
#include "core/model/snapshot_arena.h"
#include "core/write/snapshot_write.h"
#include "core/target/source.h"
#include "app/snapcopy.h"
#include "app/target.h"

static const double FIRST_TRIES_S = 2; /* a starting command is looked at often this long */
static const double RETRY_FAST_S = 0.01;
static const double RETRY_SLOW_S = 0.25;
static const double CLOSE_WAIT_S = 1.0;

/* What the screen asked for since the thread last looked. */
struct requests {
    bool reset;
    unsigned record_no;  /* counts the live_record() requests */
    unsigned play_no;    /* a replay's: counts the play/pause requests, */
    bool play;           /* the newest of them; */
    unsigned seek_no;    /* counts the seeks, */
    double seek_to;      /* the newest of them; */
    int step;            /* samples to step (taken: 0); */
    double speed;
    int record_fd;       /* the newest's file (the thread takes it); -1: stop, or taken */
    char record_name[1024];
    struct sampler_thread_key focus[LIVE_FOCUS_MAX];
    size_t n_focus;
    double period_s;
    double window_s;
    enum sampler_mode mode;
    bool opcodes;
    struct live_heat_key heat; /* the source heat view's function; heat.no 0: none asked yet */
};

struct live {
    struct live_opts opts;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* on CLOCK_MONOTONIC: the thread's sleeps, cut short by requests */
    /* Shared, under LOCK. */
    bool stop;
    bool poked; /* a request came: stop sleeping */
    struct requests asked;
    struct live_frame *ready;
    bool attached; /* the sampling thread found the interpreter */
    /* The sampling thread's own. */
    enum live_state state;
    struct proc *proc;
    struct runtime rt;
    struct sampler *sampler;
    struct sampler_thread_key focus[LIVE_FOCUS_MAX];
    size_t n_focus;
    double window_s; /* the sampler's window */
    enum sampler_mode mode; /* the sampler's mode */
    bool opcodes;           /* the sampler reads instructions */
    unsigned heat_no;       /* the heat request the sampler counts for */
    bool heat_on;
    double started;
    double next_frame;
    struct schedule schedule; /* when the next sample is due */
    double last_sample;
    double age_s;
    char command[512];
    char status[256];
    /* The screen's own (live_source()): source files are read through a handle of its own, so
     * that the screen never calls into the sampling thread's PROC. */
    struct proc *ui_proc;
    struct source_cache *ui_sources;
    struct snapshot_source ui_source;
    char exec_note[160];
    /* The R key's recording (the sampling thread's), the request it answers, and what the
     * last one ended with. */
    struct recording_app *rec;
    unsigned record_no;
    /* A replay instead of a process, and the requests it has answered. */
    struct replayer *replay;
    unsigned play_no;
    unsigned seek_no;
    char record_note[sizeof((struct live_frame *)0)->record_note];
};

void live_frame_free(struct live_frame *f)
{
    if (f == NULL) {
        return;
    }
    snapshot_free(f->snap);
    snapshot_free(f->tasks);
    sampler_stats_free(f->stats);
    sampler_stats_free(f->focus);
    free(f->heat);
    free(f);
}

void live_frame_keep_picture(struct live_frame *f, const struct live_frame *before)
{
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

/* Sleeps until DEADLINE (clock_now() seconds), a request or stop. */
static void sleep_until(struct live *l, double deadline)
{
    struct timespec at;
    double left = deadline - clock_now();
    if (left <= 0) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &at);
    double ns = (double)at.tv_nsec + left * 1e9;
    at.tv_sec += (time_t)(ns / 1e9);
    at.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
    pthread_mutex_lock(&l->lock);
    while (!l->stop && !l->poked) {
        if (pthread_cond_timedwait(&l->cond, &l->lock, &at) == ETIMEDOUT) {
            break;
        }
    }
    l->poked = false;
    pthread_mutex_unlock(&l->lock);
}

/* Copies what the screen asked for into *RQ and clears it. Returns false once asked to stop. */
static bool take_requests(struct live *l, struct requests *rq)
{
    pthread_mutex_lock(&l->lock);
    bool stop = l->stop;
    /* The heat key is large and rarely changes: copied only when it did. */
    memcpy(rq, &l->asked, offsetof(struct requests, heat));
    if (rq->heat.no != l->asked.heat.no) {
        rq->heat = l->asked.heat;
    }
    l->asked.reset = false;
    l->asked.record_fd = -1; /* the file is the thread's now */
    l->asked.step = 0;
    pthread_mutex_unlock(&l->lock);
    return !stop;
}

static bool same_keys(const struct sampler_thread_key *a, size_t na,
                      const struct sampler_thread_key *b, size_t nb)
{
    for (size_t i = 0; na == nb && i < na; i++) {
        if (a[i].interp_id != b[i].interp_id || a[i].tid != b[i].tid ||
            a[i].thread_id != b[i].thread_id) {
            return false;
        }
    }
    return na == nb;
}

/* A function's identity, as the sampler counts it: (function, file, first line), and what
 * could not be read apart. */
static int compare_identity(const void *pa, const void *pb)
{
    const struct sampler_function *a = pa;
    const struct sampler_function *b = pb;
    int c = snapshot_str_compare(a->function, b->function, SNAP_STR_BYTES);
    c = c != 0 ? c : snapshot_str_compare(a->file, b->file, SNAP_STR_BYTES);
    c = c != 0 ? c : (a->first_line > b->first_line) - (a->first_line < b->first_line);
    return c != 0 ? c : (a->unreadable > b->unreadable) - (a->unreadable < b->unreadable);
}

/* Most own samples first, then most total (the order sampler_stats() gives). */
static int compare_counts(const void *pa, const void *pb)
{
    const struct sampler_function *a = pa;
    const struct sampler_function *b = pb;
    if (a->own != b->own) {
        return a->own > b->own ? -1 : 1;
    }
    if (a->total != b->total) {
        return a->total > b->total ? -1 : 1;
    }
    return compare_identity(a, b);
}

/* Copies *S into ST's store; an unknown string (ptr NULL) stays unknown. */
static bool copy_str(struct sampler_stats *st, struct snap_str *s)
{
    if (s->ptr == NULL) {
        return true;
    }
    *s = snapshot_strdup(st->store, s->ptr, s->len);
    return s->ptr != NULL;
}

/* Adds the functions of ONE (another thread's alone) to SUM's, strings copied into SUM. */
static bool add_functions(struct sampler_stats *sum, const struct sampler_stats *one)
{
    size_t n = sum->n_functions + one->n_functions;
    if (one->n_functions == 0) {
        return true;
    }
    struct sampler_function *all = snapshot_alloc_array(sum->store, n, sizeof *all);
    if (all == NULL) {
        return false;
    }
    if (sum->n_functions > 0) {
        memcpy(all, sum->functions, sum->n_functions * sizeof *all);
    }
    for (size_t i = 0; i < one->n_functions; i++) {
        struct sampler_function f = one->functions[i];
        if (!copy_str(sum, &f.function) || !copy_str(sum, &f.file)) {
            return false;
        }
        all[sum->n_functions + i] = f;
    }
    qsort(all, n, sizeof *all, compare_identity);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept > 0 && compare_identity(&all[kept - 1], &all[i]) == 0) {
            all[kept - 1].own += all[i].own;
            all[kept - 1].total += all[i].total;
        } else {
            all[kept++] = all[i];
        }
    }
    sum->functions = all;
    sum->n_functions = kept;
    sum->thread_samples += one->thread_samples;
    sum->functions_truncated |= one->functions_truncated;
    return true;
}

/* The statistics with the functions of the threads KEYS[0..N) alone: each thread's own
 * (sampler_stats_thread()), added up: a function's own and total count thread-samples, so
 * the sums are what counting those threads together gives. NULL on out of memory. */
static struct sampler_stats *stats_threads(struct sampler *s, double now,
                                           const struct sampler_thread_key *keys, size_t n)
{
    struct sampler_stats *sum = sampler_stats_thread(s, now, &keys[0]);
    for (size_t i = 1; sum != NULL && i < n; i++) {
        struct sampler_stats *one = sampler_stats_thread(s, now, &keys[i]);
        if (one == NULL || !add_functions(sum, one)) {
            sampler_stats_free(sum);
            sum = NULL;
        }
        sampler_stats_free(one);
    }
    if (sum != NULL && n > 1 && sum->n_functions > 1) {
        qsort(sum->functions, sum->n_functions, sizeof *sum->functions, compare_counts);
    }
    return sum;
}

/* Hands a new frame to the screen, replacing one it has not taken. */
static void stop_recording(struct live *l, double now);

static void publish(struct live *l, double now)
{
    struct live_frame *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return;
    }
    f->state = l->state;
    /* Samples are compact; the picture on screen is one full snapshot per frame, the asyncio
     * graph with it, read with the samples' own caches. A failure keeps the last picture. */
    if (l->replay != NULL) {
        struct pt_error err = {0};
        double at = replayer_position(l->replay);
        f->snap = replayer_snapshot(l->replay, &err);
        f->stats = sampler_stats(l->sampler, at);
        f->replay = (struct live_replay_info){true, at, replayer_length(l->replay),
                                              replayer_speed(l->replay),
                                              replayer_playing(l->replay), ""};
        replayer_timeline(l->replay, f->replay.timeline, LIVE_TIMELINE);
        if (f->snap == NULL) {
            snprintf(l->status, sizeof l->status, "%s", err.msg);
        } else if (f->snap->started >= 0 && f->snap->time >= f->snap->started) {
            l->age_s = f->snap->time - f->snap->started;
        }
        now = at; /* the statistics below are of the recording's time */
    } else if (l->sampler != NULL && l->state == LIVE_SAMPLING) {
        sampler_update_cpu(l->sampler, now);
        sampler_snapshot(l->sampler, true, NULL);
        f->snap = sampler_take_latest(l->sampler);
        if (l->rec != NULL && record_interval(l->rec, f->snap, now) < 0) {
            stop_recording(l, now);
        }
    }
    if (l->rec != NULL) {
        f->recording = true;
        record_size(l->rec, now, &f->record_bytes, &f->record_s);
    }
    snprintf(f->record_note, sizeof f->record_note, "%s", l->record_note);
    if (l->replay == NULL) {
        f->stats = l->sampler != NULL ? sampler_stats(l->sampler, now) : NULL;
    }
    if (l->sampler != NULL && l->n_focus > 0) {
        f->focus = stats_threads(l->sampler, now, l->focus, l->n_focus);
        memcpy(f->focus_keys, l->focus, l->n_focus * sizeof *l->focus);
        f->n_focus = l->n_focus;
    }
    if (l->sampler != NULL && l->heat_on) {
        f->heat = sampler_heat(l->sampler, now);
        f->heat_no = l->heat_no;
    }
    if (l->proc != NULL && l->state == LIVE_SAMPLING) {
        proc_age(l->proc, &l->age_s, NULL);
    }
    f->made = l->replay != NULL ? clock_now() : now;
    f->last_sample = l->last_sample;
    f->age_s = l->age_s;
    snprintf(f->command, sizeof f->command, "%s", l->command);
    snprintf(f->status, sizeof f->status, "%s", l->status);
    snprintf(f->exec_note, sizeof f->exec_note, "%s", l->exec_note);
    pthread_mutex_lock(&l->lock);
    struct live_frame *old = l->ready;
    l->ready = f;
    pthread_mutex_unlock(&l->lock);
    live_frame_free(old);
    if (l->opts.wake_fd >= 0) {
        ssize_t w = write(l->opts.wake_fd, "f", 1);
        (void)w; /* a full pipe already holds a wake-up */
    }
}

/* Ends the R key's recording, noting how in RECORD_NOTE. */
static void stop_recording(struct live *l, double now)
{
    if (l->rec == NULL) {
        return;
    }
    char name[1024];
    char failure[320];
    snprintf(name, sizeof name, "%s", record_name(l->rec));
    snprintf(failure, sizeof failure, "%s", record_failure(l->rec));
    char status[160];
    record_status(l->rec, now, status, sizeof status);
    char took[32];
    struct pt_error err = {0};
    int rc = record_finish(l->rec, now, took, sizeof took, &err);
    l->rec = NULL;
    if (rc < 0) {
        snprintf(l->record_note, sizeof l->record_note, "recording %.200s stopped: %.200s", name,
                 err.msg);
    } else {
        snprintf(l->record_note, sizeof l->record_note, "recorded %.200s: %s", name, status);
    }
}

/* R: starts recording into the file the screen made (or stops). */
static void apply_record(struct live *l, const struct requests *rq, double now)
{
    if (rq->record_no == l->record_no) {
        return;
    }
    l->record_no = rq->record_no;
    stop_recording(l, now);
    if (rq->record_fd < 0) {
        return;
    }
    struct pt_error err = {0};
    l->rec = record_start(rq->record_fd, rq->record_name, l->sampler, l->opts.rate_hz,
                          rq->period_s, l->opcodes, now, &err);
    if (l->rec == NULL) {
        snprintf(l->record_note, sizeof l->record_note, "cannot record to %.200s: %.200s",
                 rq->record_name, err.msg);
    } else {
        snprintf(l->record_note, sizeof l->record_note, "recording to %.200s (R stops)",
                 rq->record_name);
    }
    l->next_frame = now;
}

/* Counts for the source heat view as last asked. */
static void apply_heat(struct live *l, const struct requests *rq, double now)
{
    if (rq->heat.no == l->heat_no) {
        return;
    }
    const struct live_heat_key *k = &rq->heat;
    l->heat_no = k->no;
    int rc = sampler_set_heat(l->sampler, k->on ? k->function : NULL, k->function_len,
                              k->has_file ? k->file : NULL, k->file_len, k->first_line, now, NULL);
    l->heat_on = k->on && rc == 0;
    l->next_frame = now;
}

/* Finds the interpreter and gets ready to sample it, over the window asked for. Returns 0, or
 * -1 with ERR set. */
static int attach(struct live *l, const struct requests *rq, struct pt_error *err)
{
    struct proc *p = proc_open(l->opts.pid, err);
    if (p == NULL) {
        return -1;
    }
    struct sampler_opts so = {
        .rate_hz = l->opts.rate_hz,
        .window_s = rq->window_s,
        .blocking = l->opts.blocking,
        .mode = rq->mode,
        .active_only = l->opts.active_only,
        .no_gc_frames = l->opts.no_gc_frames,
        .opcodes = rq->opcodes,
        .native = l->opts.native,
    };
    l->window_s = rq->window_s;
    l->mode = rq->mode;
    l->opcodes = rq->opcodes;
    if (runtime_locate(p, &l->rt, err) < 0 ||
        (l->opts.wait_for_frame && !target_runs_python(p, &l->rt, err)) ||
        (l->sampler = sampler_new(p, &l->rt, &so, err)) == NULL) {
        proc_close(p);
        return -1;
    }
    l->proc = p;
    l->heat_no = 0;
    l->heat_on = false;
    apply_heat(l, rq, clock_now());
    if (proc_cmdline(p, l->command, sizeof l->command, NULL) < 0) {
        l->command[0] = '\0';
    }
    pthread_mutex_lock(&l->lock);
    l->attached = true;
    pthread_mutex_unlock(&l->lock);
    l->status[0] = '\0';
    return 0;
}

static bool is_gone(const struct pt_error *err)
{
    return err->code == PT_E_GONE || err->code == PT_E_NOPROC;
}

/* One step while there is nothing to sample. Returns when to look again. */
static double step_waiting(struct live *l, const struct requests *rq, double now)
{
    struct pt_error err = {0};
    if (attach(l, rq, &err) == 0) {
        l->state = LIVE_SAMPLING;
        l->next_frame = now;
        schedule_start(&l->schedule, l->opts.rate_hz, now, schedule_seed());
        return now;
    }
    snprintf(l->status, sizeof l->status, "%s", err.msg);
    if (is_gone(&err)) {
        l->state = LIVE_GONE;
        publish(l, now);
        return now;
    }
    if (now >= l->next_frame) {
        publish(l, now);
        l->next_frame = now + rq->period_s;
    }
    return now + (now - l->started < FIRST_TRIES_S ? RETRY_FAST_S : RETRY_SLOW_S);
}

static void apply_requests(struct live *l, const struct requests *rq, double now)
{
    if (rq->reset) {
        sampler_reset(l->sampler);
        l->next_frame = now;
    }
    if (rq->window_s != l->window_s) {
        /* Out of memory leaves the new window, empty: nothing else to do. */
        sampler_set_window(l->sampler, rq->window_s, now, NULL);
        l->window_s = rq->window_s;
        l->next_frame = now;
    }
    if (rq->opcodes != l->opcodes) {
        sampler_set_opcodes(l->sampler, rq->opcodes);
        l->opcodes = rq->opcodes;
        l->next_frame = now;
    }
    if (rq->mode != l->mode) {
        sampler_set_mode(l->sampler, rq->mode);
        l->mode = rq->mode;
        l->next_frame = now;
    }
    if (!same_keys(rq->focus, rq->n_focus, l->focus, l->n_focus)) {
        memcpy(l->focus, rq->focus, rq->n_focus * sizeof *rq->focus);
        l->n_focus = rq->n_focus;
        l->next_frame = now;
    }
    apply_heat(l, rq, now);
    apply_record(l, rq, now);
}

/* The target exec()ed: samples the new program on when it is a Python pytop can read (the
 * header notes it), else ends the view saying why. */
static void follow_exec(struct live *l, double now)
{
    struct pt_error err = {0};
    if (sampler_follow_exec(l->sampler, &l->rt, &err) == 0) {
        char exe[256];
        char when[16] = "?";
        time_t t = time(NULL);
        struct tm tm;
        if (proc_exe(l->proc, exe, sizeof exe, NULL) < 0) {
            snprintf(exe, sizeof exe, "?");
        }
        if (localtime_r(&t, &tm) != NULL) {
            strftime(when, sizeof when, "%H:%M:%S", &tm);
        }
        const char *base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
        snprintf(l->exec_note, sizeof l->exec_note, "exec()ed %.100s at %s", base, when);
        if (l->rec != NULL) {
            record_exec(l->rec, exe, clock_now());
        }
        if (proc_cmdline(l->proc, l->command, sizeof l->command, NULL) < 0) {
            l->command[0] = '\0';
        }
        l->status[0] = '\0';
        l->next_frame = clock_now();
        return;
    }
    snprintf(l->status, sizeof l->status, "%s", err.msg);
    l->state = is_gone(&err) ? LIVE_GONE : LIVE_EXECED;
    stop_recording(l, now);
    publish(l, now);
}

/* A sample when one is due (a wake for a frame or a key takes none off the schedule), and a
 * frame when one is due. Returns when the next sample is. */
static double step_sampling(struct live *l, const struct requests *rq, double now)
{
    apply_requests(l, rq, now);
    if (now >= sampler_due(l->sampler, schedule_due(&l->schedule))) {
        struct pt_error err = {0};
        int rc = sampler_sample(l->sampler, now, &err);
        now = clock_now();
        l->last_sample = now;
        /* Keep to the rate, but after a stall go on from now rather than catch up in a burst;
         * a run of failed samples backs off (sampler_due()). */
        schedule_next(&l->schedule, now);
        if (rc < 0) {
            snprintf(l->status, sizeof l->status, "%s", err.msg);
            if (is_gone(&err)) {
                l->state = LIVE_GONE;
                stop_recording(l, now);
                publish(l, now);
                return now;
            }
            if (err.code == PT_E_EXEC) {
                follow_exec(l, now);
                if (l->state != LIVE_SAMPLING) {
                    return now;
                }
                now = clock_now();
            }
        }
    }
    if (now >= l->next_frame) {
        publish(l, now);
        l->next_frame = now + rq->period_s;
    }
    return sampler_due(l->sampler, schedule_due(&l->schedule));
}

/* A replay: the position moved as asked (or by playing), the samples up to it counted, and a
 * frame when one is due (at once after a move). Returns when to look again. */
static double step_replay(struct live *l, const struct requests *rq, double now)
{
    bool reset = rq->reset || rq->window_s != l->window_s || rq->mode != l->mode;
    unsigned heat_no = l->heat_no;
    apply_requests(l, rq, now);
    /* The source heat view counts from when it is asked: in a replay, over the window again. */
    reset = reset || l->heat_no != heat_no;
    if (reset) {
        replayer_refill(l->replay);
    }
    bool moved = reset;
    if (rq->seek_no != l->seek_no) {
        l->seek_no = rq->seek_no;
        replayer_seek(l->replay, rq->seek_to);
        moved = true;
    }
    if (rq->step != 0) {
        replayer_step(l->replay, rq->step);
        moved = true;
    }
    replayer_set_speed(l->replay, rq->speed);
    if (rq->play_no != l->play_no) {
        l->play_no = rq->play_no;
        replayer_play(l->replay, rq->play, now);
        moved = true;
    }
    bool playing = replayer_playing(l->replay);
    replayer_advance(l->replay, l->sampler, l->window_s, now);
    l->last_sample = clock_now();
    if (moved || (playing && !replayer_playing(l->replay))) {
        l->next_frame = now;
    }
    if (now >= l->next_frame) {
        publish(l, now);
        /* Playing fast, the picture follows more often than the refresh asks. */
        double every = rq->period_s / (playing && replayer_speed(l->replay) > 1
                                           ? replayer_speed(l->replay) : 1);
        l->next_frame = now + (every < 0.1 ? 0.1 : every);
    }
    return replayer_playing(l->replay) ? now + 0.02 : now + 3600;
}

static void *run(void *arg)
{
    struct live *l = arg;
    struct requests rq = {0};
    double next = clock_now();
    while (take_requests(l, &rq)) {
        double now = clock_now();
        switch (l->state) {
        case LIVE_WAITING:
            next = step_waiting(l, &rq, now);
            break;
        case LIVE_SAMPLING:
            next = l->replay != NULL ? step_replay(l, &rq, now) : step_sampling(l, &rq, now);
            break;
        case LIVE_GONE:
        case LIVE_EXECED:
            if (rq.reset) {
                publish(l, now);
            }
            next = now + 3600;
            break;
        }
        double wake = l->state == LIVE_SAMPLING && l->next_frame < next ? l->next_frame : next;
        sleep_until(l, wake);
    }
    /* Quitting with R on: the file is closed whole. */
    stop_recording(l, clock_now());
    return NULL;
}

/* Starts the thread with the asynchronous signals blocked: they are the screen's business. */
static int start_thread(struct live *l, struct pt_error *err)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    sigset_t block;
    sigset_t old;
    sigfillset(&block);
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        sigdelset(&block, faults[i]);
    }
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&l->thread, NULL, run, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        return pt_error_set(err, PT_E_IO, rc, "cannot start the sampling thread: %s", strerror(rc));
    }
    return 0;
}

/* The recording instead of a process: a sampler fed from it, already in the sampling state. */
static int open_replay(struct live *l, struct pt_error *err)
{
    if ((l->replay = replayer_open(l->opts.replay, err)) == NULL) {
        return -1;
    }
    const struct rec_header *h = replayer_header(l->replay);
    struct sampler_opts so = {.rate_hz = h->rate_hz, .window_s = l->opts.window_s,
                              .mode = l->opts.mode};
    if ((l->sampler = sampler_new(NULL, NULL, &so, err)) == NULL) {
        replayer_close(l->replay);
        return -1;
    }
    l->window_s = l->opts.window_s;
    l->mode = l->opts.mode;
    l->opcodes = l->opts.opcodes;
    l->state = LIVE_SAMPLING;
    l->age_s = -1;
    char *p = l->command;
    size_t left = sizeof l->command;
    for (size_t i = 0; h->cmdline != NULL && i < h->n_cmdline && left > 1; i++) {
        int n = snprintf(p, left, "%s%.*s", i > 0 ? " " : "", (int)h->cmdline[i].len,
                         h->cmdline[i].ptr);
        if (n < 0 || (size_t)n >= left) {
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

struct live *live_open(const struct live_opts *opts, struct pt_error *err)
{
    struct live *l = calloc(1, sizeof *l);
    pthread_condattr_t ca;
    if (l == NULL) {
        pt_error_set(err, PT_E_NOMEM, ENOMEM, "live view");
        return NULL;
    }
    l->opts = *opts;
    l->asked.period_s = opts->period_s;
    l->asked.window_s = opts->window_s;
    l->asked.mode = opts->mode;
    l->asked.opcodes = opts->opcodes;
    l->asked.record_fd = -1;
    l->asked.speed = 1;
    l->age_s = -1;
    if (opts->replay != NULL && open_replay(l, err) < 0) {
        free(l);
        return NULL;
    }
    l->started = clock_now();
    l->next_frame = l->started;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (start_thread(l, err) < 0) {
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l);
        return NULL;
    }
    return l;
}

void live_close(struct live *l)
{
    if (l == NULL) {
        return;
    }
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->lock);
    source_cache_free(l->ui_sources);
    proc_close(l->ui_proc);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)CLOSE_WAIT_S;
    if (pthread_timedjoin_np(l->thread, NULL, &until) != 0) {
        return;
    }
    if (l->asked.record_fd >= 0) {
        close(l->asked.record_fd);
    }
    live_frame_free(l->ready);
    sampler_free(l->sampler);
    replayer_close(l->replay);
    proc_close(l->proc);
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

struct live_frame *live_take(struct live *l)
{
    pthread_mutex_lock(&l->lock);
    struct live_frame *f = l->ready;
    l->ready = NULL;
    pthread_mutex_unlock(&l->lock);
    return f;
}

/* Wakes the thread so that a request is seen at once. Called with LOCK held. */
static void poke(struct live *l)
{
    l->poked = true;
    pthread_cond_signal(&l->cond);
}

void live_reset(struct live *l)
{
    pthread_mutex_lock(&l->lock);
    l->asked.reset = true;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_focus(struct live *l, const struct sampler_thread_key *keys, size_t n)
{
    n = n < LIVE_FOCUS_MAX ? n : LIVE_FOCUS_MAX;
    pthread_mutex_lock(&l->lock);
    if (n > 0) {
        memcpy(l->asked.focus, keys, n * sizeof *keys);
    }
    l->asked.n_focus = n;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_set_period(struct live *l, double period_s)
{
    pthread_mutex_lock(&l->lock);
    l->asked.period_s = period_s;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_set_window(struct live *l, double window_s)
{
    pthread_mutex_lock(&l->lock);
    l->asked.window_s = window_s;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_set_opcodes(struct live *l, bool on)
{
    pthread_mutex_lock(&l->lock);
    l->asked.opcodes = on;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

unsigned live_set_heat(struct live *l, const struct snap_str *function,
                       const struct snap_str *file, int first_line)
{
    pthread_mutex_lock(&l->lock);
    struct live_heat_key *k = &l->asked.heat;
    k->no++;
    k->on = function != NULL && function->ptr != NULL &&
            function->len <= sizeof k->function && (file == NULL || file->ptr == NULL ||
                                                    file->len <= sizeof k->file);
    if (k->on) {
        memcpy(k->function, function->ptr, function->len);
        k->function_len = function->len;
        k->has_file = file != NULL && file->ptr != NULL;
        k->file_len = k->has_file ? file->len : 0;
        if (k->has_file) {
            memcpy(k->file, file->ptr, file->len);
        }
        k->first_line = first_line;
    }
    unsigned no = k->on ? k->no : 0;
    poke(l);
    pthread_mutex_unlock(&l->lock);
    return no;
}

void live_record(struct live *l, int fd, const char *name)
{
    pthread_mutex_lock(&l->lock);
    /* A file asked for and not yet taken is replaced: it stays empty, closed here. */
    if (l->asked.record_fd >= 0) {
        close(l->asked.record_fd);
    }
    l->asked.record_fd = fd;
    snprintf(l->asked.record_name, sizeof l->asked.record_name, "%s", name != NULL ? name : "");
    l->asked.record_no++;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_replay_play(struct live *l, bool on)
{
    pthread_mutex_lock(&l->lock);
    l->asked.play = on;
    l->asked.play_no++;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_replay_seek(struct live *l, double t)
{
    pthread_mutex_lock(&l->lock);
    l->asked.seek_to = t;
    l->asked.seek_no++;
    l->asked.step = 0;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_replay_step(struct live *l, int n)
{
    pthread_mutex_lock(&l->lock);
    l->asked.step += n;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_replay_speed(struct live *l, double speed)
{
    pthread_mutex_lock(&l->lock);
    l->asked.speed = speed;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

void live_set_mode(struct live *l, enum sampler_mode mode)
{
    pthread_mutex_lock(&l->lock);
    l->asked.mode = mode;
    poke(l);
    pthread_mutex_unlock(&l->lock);
}

const struct snapshot_source *live_source(struct live *l)
{
    if (l->opts.replay != NULL) {
        return NULL; /* the recorded process's files are not read */
    }
    if (l->ui_sources != NULL) {
        return &l->ui_source;
    }
    pthread_mutex_lock(&l->lock);
    bool attached = l->attached;
    pthread_mutex_unlock(&l->lock);
    if (!attached) {
        return NULL;
    }
    /* Opened once; a target already gone (or no memory) is tried again at the next call. */
    if (l->ui_proc == NULL && (l->ui_proc = proc_open(l->opts.pid, NULL)) == NULL) {
        return NULL;
    }
    l->ui_sources = source_cache_new(l->ui_proc);
    if (l->ui_sources == NULL) {
        return NULL;
    }
    l->ui_source = source_cache_lines(l->ui_sources);
    return &l->ui_source;
}
