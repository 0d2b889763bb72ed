/* lease.h - the renewal thread */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "lock.h"
#include "log.h"

struct lease {
	struct lock *lk;	/* owned by the thread while it runs */
	pthread_t thread;
	pthread_mutex_t mutex;
	pthread_cond_t wake;
	bool started, stop, joined;
	int notify_fd;		/* eventfd, written once when the lease is lost;
				 * -1 until lease_start() */
	struct error err;	/* why; read after notify_fd fires */
};

/* Prepares the lease of a freshly acquired lk; nothing runs yet. */
void lease_init(struct lease *ls, struct lock *lk);
/* When the first renewal is due (monotonic ms): the thread must run by
 * then. A command that ends sooner never pays for a thread. */
int64_t lease_first_renewal_ms(const struct lease *ls);
/* Starts renewing every TTL/3 on a thread of its own, which owns lk's
 * connections until lease_stop() joins it. Returns 0, or -1 (errno). */
int lease_start(struct lease *ls);
/* Stops renewing at once and joins the thread; a second call, or one
 * before lease_start(), does nothing. */
void lease_stop(struct lease *ls);
void lease_free(struct lease *ls);
