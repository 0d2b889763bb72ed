/* waitline.h - the status line shown while waiting on a terminal */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct waitline {
	const char *key;
	bool tty;		/* stderr is a terminal: one line, redrawn */
	bool tty_known;
	bool verbose;
	bool shown;
	int64_t start_ms;
	char said[320];		/* the holder last told of (JSON) */
};

void waitline_init(struct waitline *wl, const char *key, bool verbose);
/* holder: the holder info from the server ("" for a foreign holder);
 * queue_pos: 0 at the head or when not queueing. */
void waitline_update(struct waitline *wl, const char *holder, long queue_pos,
		     bool fair);
/* "held by user@host pid N (command) for Xs", from the holder info. */
void waitline_describe(const char *holder, char *out, size_t len);
/* Whether anybody reads who holds the lock while we wait: the wait line
 * (verbose, or a terminal after a second) and --notify's STATUS. An
 * engine whose refused try needs a statement more to learn the holder
 * asks it only then: in cron and CI nobody reads it, and with many
 * waiters the server spends on it what the hand-offs need. */
bool waitline_holder_shown(bool verbose);
/* Erases the line once the wait is over. */
void waitline_clear(struct waitline *wl);
