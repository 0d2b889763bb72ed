/* sentinel.h - redis-sentinel://: asking the sentinels where the master
 * is, and since when, as many of them as must answer for their word to
 * count. conn.c asks before a round (its connection goes there). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "net.h"
#include "conn.h"

/* What a sentinel says of the master. */
struct master_view {
	char host[256];		/* as the sentinels name it */
	int port;
	int64_t age_ms;		/* since this sentinel has it as the master
				 * (or started); 0 while it fails the master
				 * over; -1 unknown */
	bool since_start;	/* age_ms is about the sentinel's uptime: it
				 * has had the master since it started, or
				 * switched to it just after */
	bool failing_over;
	long long epoch;	/* its config-epoch, which each failover
				 * raises: -1 unknown (get-master-addr-by-name) */
	int n_known;		/* the sentinels it knows of for the master,
				 * itself included: 0 unknown */
	int sentinel;		/* which of the URL's sentinels said it */
};

/* Asks the sentinels, one after another until enough of them answered
 * by deadline_ms (answers_needed() of the URL's sentinels, or of those
 * they know of, whichever is more), where the master is: SENTINEL MASTER,
 * which also says since when it is the master and the config-epoch
 * (get-master-addr-by-name only where an ACL refuses it). Each sentinel
 * gets its share of the time left, so that one that does not answer at
 * all leaves time for the next. With with_age, the same request asks the
 * sentinel's uptime too: where each sentinel that answered has had the
 * master only since it started, the others are asked as well, while time
 * is left. Returns 0 with v, and its addresses in a (n 0, why said,
 * when the name cannot be looked up now); or an exit status with why: 69
 * when too few answered, 64 when the sentinels know of more sentinels
 * than the URL names enough of. */
int sentinel_query(struct node *n, int64_t deadline_ms, bool with_age,
		   struct master_view *v, struct net_addrs *a, char *why,
		   size_t whylen);
