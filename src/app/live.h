/* live: the target of the live view, sampled on a thread of its own; the screen takes frames. */
#ifndef PYTOP_LIVE_H
#define PYTOP_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sampler/sampler.h"

struct pt_error;
struct snapshot;
struct snapshot_source;

enum {
    LIVE_FOCUS_MAX = 64, /* threads whose functions are counted apart, at most */
};

enum live_state {
    LIVE_WAITING, /* no interpreter to sample yet: a command still starting, or a refusal */
    LIVE_SAMPLING,
    LIVE_GONE,   /* the target exited; the last frame keeps what was seen */
    LIVE_EXECED, /* the target exec()ed a program that cannot be followed: STATUS says which */
};

struct live_opts {
    pid_t pid;
    double rate_hz;      /* samples a second; 0 = as fast as possible */
    double window_s;     /* how far back the statistics reach; INFINITY: since the reset */
    double period_s;     /* how often a frame is made */
    bool blocking;       /* pause the target while each sample is read */
    enum sampler_mode mode; /* which thread-samples the statistics count */
    bool active_only;    /* samples read only the GIL holders' stacks */
    bool no_gc_frames;   /* no <GC> frames */
    bool opcodes;        /* snapshots read each frame's instruction (o toggles it) */
    bool native;         /* <native> frames */
    bool wait_for_frame; /* a command just started: sample once its main thread runs Python */
    int wake_fd;         /* a byte is written here whenever a frame is ready; -1 for none */
    const char *replay;  /* a recording to play instead of a process (pid unused) */
};

enum { LIVE_TIMELINE = 72 }; /* cells of a replay's timeline */

/* Where a replay is (pytop --replay FILE in the live view). */
struct live_replay_info {
    bool on;             /* the frame is of a recording */
    double position;     /* seconds from its start */
    double length;
    double speed;        /* 0.25 to 64 */
    bool playing;
    char timeline[LIVE_TIMELINE + 1]; /* replayer_timeline() */
};

/* The function the source heat view asks about (live_set_heat()). */
struct live_heat_key {
    unsigned no; /* counts the requests */
    bool on;
    char function[1024];
    size_t function_len;
    char file[4096];
    size_t file_len;
    bool has_file;
    int first_line;
};

/* One picture for the screen. Everything in it is owned by the frame. */
struct live_frame {
    enum live_state state;
    struct snapshot *snap;       /* read in full for this frame, with the asyncio task graph;
                                  * NULL before the first, or when it could not be read */
    struct snapshot *tasks;      /* the task graph, when it comes apart from SNAP; else NULL */
    struct sampler_stats *stats; /* over the window; NULL before sampling starts */
    struct sampler_stats *focus; /* functions of the threads FOCUS_KEYS alone (their counts
                                  * added up); NULL: not asked, or out of memory */
    struct sampler_thread_key focus_keys[LIVE_FOCUS_MAX]; /* the threads FOCUS is about */
    size_t n_focus;                                       /* 0 = none */
    struct sampler_heat *heat;   /* the source heat view's counts (free()); NULL: none asked */
    unsigned heat_no;            /* the live_set_heat() request HEAT answers */
    double made;                 /* when the frame was made (clock_now()) */
    double last_sample;          /* when the newest sample, good or failed, ended; 0 none */
    double age_s;                /* how long the target had run; < 0 unknown */
    char command[512];           /* the target's command line; "" unknown */
    char status[256];            /* why it waits, or the newest sample's error; "" none */
    char exec_note[160];         /* the target exec()ed and is followed: "exec()ed PROGRAM at
                                  * HH:MM:SS" (the latest exec); "" none */
    bool recording;              /* R: every sample goes into a recording */
    uint64_t record_bytes;       /* its size so far */
    double record_s;             /* and length */
    char record_note[480];       /* how the last live_record() request went ("recording to
                                  * NAME", "recorded NAME: ...", why not); "" none yet */
    struct live_replay_info replay;
};

struct live;

/* Starts sampling OPTS->pid on a new thread (signals blocked there). Errors: PT_E_NOMEM,
 * PT_E_IO (no thread). The caller closes it. */
struct live *live_open(const struct live_opts *opts, struct pt_error *err);

/* Stops the thread and frees L. A thread stuck in a read for more than a second is left
 * behind (with what it uses) rather than waited for: the process is about to exit. */
void live_close(struct live *l);

/* The newest frame not yet taken, or NULL. The caller frees it with live_frame_free(). */
struct live_frame *live_take(struct live *l);
void live_frame_free(struct live_frame *f);
/* F has no picture, or the target has gone (its last samples show an interpreter shutting
 * down): F takes a copy of BEFORE's (the frame last shown or waiting to be), its task graph
 * included, so that the screen and a dump keep what was seen. Nothing when BEFORE has none,
 * or when BEFORE already saw the target gone and F has a picture; out of memory leaves F as
 * it was. */
void live_frame_keep_picture(struct live_frame *f, const struct live_frame *before);

/* Asks the thread to forget the statistics gathered so far. */
void live_reset(struct live *l);
/* Asks for the functions of the threads KEYS[0..N) alone as well, added up (N 0: stop); N is
 * at most LIVE_FOCUS_MAX (more are not counted). Frames carry the keys they answer. */
void live_focus(struct live *l, const struct sampler_thread_key *keys, size_t n);
/* Changes how often frames are made. */
void live_set_period(struct live *l, double period_s);
/* Changes how far back the statistics reach, as sampler_set_window() does (a longer window
 * keeps what was counted, a shorter one starts afresh). */
void live_set_window(struct live *l, double window_s);
/* Changes which thread-samples the statistics count, starting them afresh
 * (sampler_set_mode()). */
void live_set_mode(struct live *l, enum sampler_mode mode);
/* Asks for the lines and instructions of the function (FUNCTION, FILE, FIRST_LINE) to be
 * counted, from now on, for the source heat view (FUNCTION NULL: stop counting). Returns the
 * request's number, which the frames that answer it carry in heat_no; 0 when nothing is
 * counted (stopped, or a name longer than struct live_heat_key holds). */
unsigned live_set_heat(struct live *l, const struct snap_str *function,
                       const struct snap_str *file, int first_line);
/* R: starts recording every sample (and a snapshot a frame) into FD, a new file named NAME that
 * the thread takes (closes); FD -1 stops. Frames say how it goes (recording, record_note). */
void live_record(struct live *l, int fd, const char *name);
/* A replay (live_opts.replay): plays or pauses; goes to T seconds from the start; goes N
 * samples on (back when negative); plays at SPEED (0.25 to 64). */
void live_replay_play(struct live *l, bool on);
void live_replay_seek(struct live *l, double t);
void live_replay_step(struct live *l, int n);
void live_replay_speed(struct live *l, double speed);

/* Whether the frames read from now on carry each frame's instruction. */
void live_set_opcodes(struct live *l, bool on);

/* Source lines of the target's files, once sampling has started (else NULL), read through a
 * target handle of the caller's own: the sampling thread's is never touched. For one thread
 * only, the screen's; valid until live_close(). */
const struct snapshot_source *live_source(struct live *l);

#endif
