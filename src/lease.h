/* lease.h - the renewal thread */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include "lock.h"
#include "log.h"

struct lease {
	struct lock *lk;	/* owned by the thread until lease_stop() */
	pthread_t thread;
	pthread_mutex_t mutex;
	pthread_cond_t wake;
	bool stop;
	bool joined;
	int notify_fd;		/* written once when the lease is lost */
	struct error err;	/* why; read after notify_fd fires */
};

/* Renews lk every TTL/3 on its own thread, which owns lk's connections
 * until lease_stop() joins it. Returns 0, or -1 (errno). */
int lease_start(struct lease *ls, struct lock *lk, int notify_fd);
/* Stops renewing at once and joins the thread; a second call does nothing. */
void lease_stop(struct lease *ls);
