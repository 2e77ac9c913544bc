/* replayer: a recording played back for the live view (pytop --replay FILE): a position that
 * moves (playing at a speed, or by seeks and steps), the samples up to it counted by a sampler
 * as live ones are, the recording at the position as a snapshot, and a timeline of where
 * errors, exec()s and collections happened. Owned by the live view's sampling thread. */
#ifndef PYTOP_REPLAYER_H
#define PYTOP_REPLAYER_H

#include <stdbool.h>
#include <stddef.h>

struct pt_error;
struct rec_header;
struct sampler;
struct snapshot;
struct replayer;

/* Opens the recording at PATH, at its start, paused. Errors: as recording_open(). */
struct replayer *replayer_open(const char *path, struct pt_error *err);
void replayer_close(struct replayer *p);

const struct rec_header *replayer_header(const struct replayer *p);
double replayer_length(const struct replayer *p);
double replayer_position(const struct replayer *p);
double replayer_speed(const struct replayer *p);
bool replayer_playing(const struct replayer *p);
/* What could not be read of the file ("" when all could). */
const char *replayer_damage(const struct replayer *p);

/* Goes to T (held within the recording). */
void replayer_seek(struct replayer *p, double t);
/* Goes N samples forward (back when negative) from the position. */
void replayer_step(struct replayer *p, int n);
/* Plays (from NOW on; from the start when at the end) or pauses. */
void replayer_play(struct replayer *p, bool on, double now);
/* Sets the speed, held within 0.25x to 64x. */
void replayer_set_speed(struct replayer *p, double speed);
/* The sampler must count the window afresh (its mode, window or counts changed). */
void replayer_refill(struct replayer *p);

/* Moves a playing position on to NOW (pausing at the end), then counts the samples up to it
 * into S, whose window reaches WINDOW_S back (INFINITY: to the start): only the new ones while
 * the position moves forward within the window, else the window's afresh. */
void replayer_advance(struct replayer *p, struct sampler *s, double window_s, double now);

/* The recording at the position (recording_snapshot_at()). NULL: ERR says why. */
struct snapshot *replayer_snapshot(struct replayer *p, struct pt_error *err);

/* CELLS characters (and a NUL) into BUF, one per equal span of the recording: 'E' a failed
 * sample, 'X' an exec(), 'g' a collection, '-' samples, ' ' none (a pytop recording's chunks say;
 * a file of another kind: '-' throughout). */
void replayer_timeline(const struct replayer *p, char *buf, size_t cells);

#endif
