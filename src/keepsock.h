/* keepsock.h - the keeper's socket (keepsock.c): dlock FD, dlock -u and
 * the keeper process speak over it */
#pragma once
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include "config.h"
#include "lock.h"

#define KEEPSOCK_ANSWER_MS 10000	/* a keeper answers -u once it released:
					 * a round on every server, bounded */

/* What a keeper said it holds ('Q'). */
struct keepsock_held {
	char mode;		/* 'x', 's' or 'l' (--limit) */
	const char *key, *token, *fence;	/* NULL from a keeper of before
						 * --export: the mode alone */
	char buf[1 + PATH_MAX + 256 + LOCK_TOKEN_MAX + 32];	/* they point here */
};

/* Asks the keeper of caller for the lock name: 'Q' (what do you hold?) or
 * 'U' (release). Returns the answer's length (1 or more, at most len: the
 * rest is cut), 0 when there is no keeper, -1 when one did not answer in
 * time. */
ssize_t keepsock_ask(pid_t caller, const struct settings *st, const char *name,
		     char what, char *answer, size_t len);
/* 'Q', the answer parsed into h: 0, or -1 when no keeper answered. */
int keepsock_query(pid_t caller, const struct settings *st, const char *name,
		   struct keepsock_held *h);

/* The keeper's side: its listening socket for caller's lock name (64 in
 * err when another dlock FD of caller's holds or takes it), -1 with err. */
int keepsock_listen(pid_t caller, const struct settings *st, const char *name,
		    int fd, struct error *err);
/* A connection of our user's (or root's) that asked 'Q' or 'U' (*what):
 * its socket; -1 for anything else, closed. */
int keepsock_accept(int listen_fd, char *what);
/* The answer to 'Q': the mode and lk's key, token and fence. */
void keepsock_answer_held(int s, char mode, const struct lock *lk);
/* The answer to 'U' once the release is over; closes s. */
void keepsock_answer_done(int s, bool released);
