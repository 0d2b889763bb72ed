/* sentinel.c - redis-sentinel://: the sentinels asked, one after another,
 * each over a blocking connection of its own with a share of the time
 * left (TLS too), where the master is (SENTINEL MASTER: its address,
 * config-epoch, since when it is the master), and their views made one:
 * the master of the highest config-epoch, aged by the first of them to
 * switch to it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include "clock.h"
#include "sentinel.h"
#include "tls.h"

/* A blocking connection to a sentinel (any of its addresses), by
 * deadline_ms, for questions answered by then. */
static redisContext *sentinel_connect(const struct net_addrs *a, int64_t deadline_ms,
				      char *why, size_t whylen)
{
	int64_t left_ms;
	struct timeval tv;
	redisContext *c;
	int fd;

	if (net_dial(a, deadline_ms, &fd, why, whylen) < 0)
		return NULL;
	left_ms = deadline_ms - clock_now_ms();
	if (left_ms < 1)
		left_ms = 1;
	tv = (struct timeval){ left_ms / 1000, (left_ms % 1000) * 1000 };
	/* redisConnectFd() takes a blocking socket, as redisCommand() does. */
	if (fcntl(fd, F_SETFL, 0) < 0) {
		snprintf(why, whylen, "%s", strerror(errno));
		log_lower_first(why);
		close(fd);
		return NULL;
	}
	if (!(c = redisConnectFd(fd))) {
		snprintf(why, whylen, "out of memory");
		close(fd);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

/* Waits until fd is ready for events, or fails at deadline_ms. Returns 0,
 * or -1 with why. */
static int wait_for(int fd, short events, int64_t deadline_ms, char *why,
		    size_t whylen)
{
	struct pollfd pfd = { fd, events, 0 };
	int64_t left_ms;
	int r;

	do {
		left_ms = deadline_ms - clock_now_ms();
		r = poll(&pfd, 1, left_ms > 0 ? clock_poll_ms(left_ms) : 0);
	} while (r < 0 && errno == EINTR);
	if (r > 0)
		return 0;
	snprintf(why, whylen, "%s", r == 0 ? "no answer in time (--node-timeout)" :
		 strerror(errno));
	log_lower_first(why);
	return -1;
}

/* A sentinel's answers to n questions: 0 when all came (got), else -1
 * and those that came freed. */
static int all_or_none(redisReply **replies, int got, int n)
{
	if (got == n)
		return 0;
	while (got > 0)
		freeReplyObject(replies[--got]);
	return -1;
}

/* Questions to a sentinel over TLS (rediss-sentinel://), each step with
 * poll() and the deadline: connect, handshake, the commands (cmd, len
 * bytes, all at once), n replies. Returns 0, or -1 with why. */
static int sentinel_ask_tls(const struct net_addrs *a, const char *host,
			    const char *cmd, size_t len, redisReply **replies,
			    int n, int64_t deadline_ms, char *why, size_t whylen)
{
	int fd, r, got = 0;
	struct tls *t = NULL;
	redisReader *reader = NULL;
	char buf[4096];
	short ev = POLLOUT;

	if (net_dial(a, deadline_ms, &fd, why, whylen) < 0)
		return -1;
	if (!(t = tls_new(fd, host, why, whylen)))
		goto out;
	while ((r = tls_handshake(t, &ev, why, whylen)) == TLS_WANT)
		if (wait_for(fd, ev, deadline_ms, why, whylen) < 0)
			goto out;
	if (r < 0)
		goto out;
	if (!(reader = redisReaderCreate())) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	for (size_t done = 0; done < len;) {
		ssize_t w = tls_write(t, cmd + done, len - done, &ev, why, whylen);

		if (w > 0)
			done += (size_t)w;
		else if (w != TLS_WANT || wait_for(fd, ev, deadline_ms, why, whylen) < 0)
			goto out;
	}
	while (got < n) {
		void *reply = NULL;
		ssize_t w = tls_read(t, buf, sizeof buf, &ev, why, whylen);

		if (w == TLS_WANT) {
			if (wait_for(fd, ev, deadline_ms, why, whylen) < 0)
				goto out;
			continue;
		}
		if (w <= 0)
			goto out;
		if (redisReaderFeed(reader, buf, (size_t)w) != REDIS_OK)
			goto bad;
		for (;;) {
			if (redisReaderGetReply(reader, &reply) != REDIS_OK)
				goto bad;
			if (!reply)
				break;
			if (got < n)
				replies[got++] = reply;
			else
				freeReplyObject(reply);
		}
	}
	goto out;
bad:
	snprintf(why, whylen, "bad reply: %s", reader->errstr);
out:
	tls_free(t);
	if (reader)
		redisReaderFree(reader);
	close(fd);
	return all_or_none(replies, got, n);
}

/* Sentinel i's replies to n commands (argv each, argc[] words), sent at
 * once, by deadline_ms. Returns 0, or -1 with why. */
static int sentinel_ask(const struct node *n, int i, int64_t deadline_ms,
			const char **const *argv, const int *argc,
			redisReply **replies, int n_cmds, char *why, size_t whylen)
{
	const struct url *u = n->url;
	sds cmds = sdsempty();
	redisContext *c = NULL;
	int got = 0;

	for (int k = 0; cmds && k < n_cmds; k++) {
		sds one = NULL;

		if (redisFormatSdsCommandArgv(&one, argc[k], argv[k], NULL) < 0) {
			sdsfree(cmds);
			cmds = NULL;
			break;
		}
		cmds = sdscatsds(cmds, one);
		sdsfree(one);
	}
	if (!cmds) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (u->tls) {
		int r = sentinel_ask_tls(&u->sentinels[i].addr, u->sentinels[i].host,
					 cmds, sdslen(cmds), replies, n_cmds,
					 deadline_ms, why, whylen);

		sdsfree(cmds);
		return r;
	}
	c = sentinel_connect(&u->sentinels[i].addr, deadline_ms, why, whylen);
	if (c && redisAppendFormattedCommand(c, cmds, sdslen(cmds)) == REDIS_OK)
		while (got < n_cmds &&
		       redisGetReply(c, (void **)&replies[got]) == REDIS_OK)
			got++;
	/* a blocking read past its timeout fails with EAGAIN */
	if (c && got < n_cmds && c->err == REDIS_ERR_IO &&
	    strcmp(c->errstr, strerror(EAGAIN)) == 0) {
		snprintf(why, whylen, "no answer in time (--node-timeout)");
	} else if (c && got < n_cmds) {
		snprintf(why, whylen, "%s", c->errstr[0] ? c->errstr : "out of memory");
		log_lower_first(why);
	}
	sdsfree(cmds);
	if (c)
		redisFree(c);
	return all_or_none(replies, got, n_cmds);
}

static bool is_bulk(const redisReply *r)
{
	return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS;
}

/* SENTINEL MASTER's field name, or NULL. */
static const char *field(const redisReply *r, const char *name)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (is_bulk(r->element[i]) && is_bulk(r->element[i + 1]) &&
		    strcmp(r->element[i]->str, name) == 0)
			return r->element[i + 1]->str;
	return NULL;
}

/* A reply to SENTINEL MASTER (a list of names and values) or, where
 * that is not allowed, to SENTINEL get-master-addr-by-name (host, port)
 * into v. Returns 0, or -1 with why. */
static int master_of(const redisReply *r, struct master_view *v, char *why,
		     size_t whylen)
{
	const char *host = NULL, *port = NULL, *flags, *role, *since, *epoch, *others;

	v->failing_over = false;
	v->since_start = false;
	v->epoch = -1;
	v->n_known = 0;

	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    is_bulk(r->element[0]) && is_bulk(r->element[1])) {
		host = r->element[0]->str;
		port = r->element[1]->str;
		v->age_ms = -1;
	} else if (r->type == REDIS_REPLY_ARRAY) {
		host = field(r, "ip");
		port = field(r, "port");
		flags = field(r, "flags");
		role = field(r, "role-reported");
		since = field(r, "role-reported-time");
		epoch = field(r, "config-epoch");
		others = field(r, "num-other-sentinels");
		v->age_ms = since ? strtoll(since, NULL, 10) : -1;
		v->epoch = epoch ? strtoll(epoch, NULL, 10) : -1;
		v->n_known = others ? 1 + (int)strtol(others, NULL, 10) : 0;
		/* a failover under way: the old master may still take locks
		 * that the new one will not have */
		v->failing_over = (flags && strstr(flags, "failover_in_progress")) ||
				  (role && strcmp(role, "master") != 0);
		if (v->failing_over || v->age_ms < -1)
			v->age_ms = 0;
	}
	if (!host || !port || strlen(host) >= sizeof v->host) {
		snprintf(why, whylen, "%s", r->type == REDIS_REPLY_ERROR ? r->str :
			 "does not know the master");
		return -1;
	}
	snprintf(v->host, sizeof v->host, "%s", host);
	v->port = (int)strtol(port, NULL, 10);
	if (v->port <= 0 || v->port >= 65536) {
		snprintf(why, whylen, "master %s: port out of range", host);
		return -1;
	}
	return 0;
}

/* The sentinel's uptime in ms from INFO server, or -1. */
static int64_t uptime_ms(const redisReply *r)
{
	const char *at = r->type == REDIS_REPLY_STRING ?
			 strstr(r->str, "\nuptime_in_seconds:") : NULL;

	return at ? 1000 * strtoll(at + 19, NULL, 10) : -1;
}

/* Sentinel i's view of the master, by until_ms. Returns 0 with v, or -1
 * with why. */
static int sentinel_view(struct node *n, int i, int64_t until_ms, bool with_age,
			 struct master_view *v, char *why, size_t whylen)
{
	struct url *u = n->url;
	const char *master[] = { "SENTINEL", "MASTER", u->master };
	const char *addr[] = { "SENTINEL", "get-master-addr-by-name", u->master };
	const char *info[] = { "INFO", "server" };
	const char **const both[] = { master, info };
	const char **const fallback[] = { addr };
	const int argc[] = { 3, 2 };
	redisReply *r[2] = { NULL, NULL };
	int got;

	if (node_address(n, u->sentinels[i].host, u->sentinels[i].port,
		    &u->sentinels[i].addr, why, whylen) < 0 ||
	    sentinel_ask(n, i, until_ms, both, argc, r, with_age ? 2 : 1,
			 why, whylen) < 0)
		return -1;
	if (r[0]->type == REDIS_REPLY_ERROR && !strstr(r[0]->str, "No such master")) {
		freeReplyObject(r[0]);
		r[0] = NULL;
		if (sentinel_ask(n, i, until_ms, fallback, argc, r, 1, why,
				 whylen) < 0) {
			if (r[1])
				freeReplyObject(r[1]);
			return -1;
		}
	}
	got = master_of(r[0], v, why, whylen);
	/* The role it reported since the sentinel started (the uptime is in
	 * whole seconds), or since a switch in its first second, when the
	 * hello messages of a failover done while it was down reached it
	 * (with its host and the master on it, killed and started again).
	 * The age is still no more than the master's: whatever a sentinel
	 * learns of a master comes after the failover that made it one. At
	 * config-epoch 0 no failover ever did: the master has been the one
	 * of the sentinels' configuration all along, and no holder can be on
	 * an older one. */
	if (got == 0 && r[1] && v->age_ms > 0 && v->age_ms + 1000 >= uptime_ms(r[1])) {
		if (v->epoch == 0)
			v->age_ms = -1;
		else
			v->since_start = true;
	}
	freeReplyObject(r[0]);
	if (r[1])
		freeReplyObject(r[1]);
	v->sentinel = i;
	return got;
}

/* How many sentinels must answer for their word to count, of n_known:
 * enough that every majority of them has one among those that answered.
 * Sentinel fails a master over only with the votes of a majority of the
 * sentinels it knows, so one of those who answered took part in every
 * failover, and names the new master once the hello messages reached it
 * (every 2 s; SENTINEL_SETTLE_MS in lock.c). A sentinel on the minority
 * side of a partition, alone, still names the old master for as long as
 * the partition lasts. Half of them, rounded up: 1 of 1 or 2, 2 of 3 or
 * 4, 3 of 5. */
static int answers_needed(int n_known)
{
	return (n_known + 1) / 2;
}

static bool same_master(const struct master_view *a, const struct master_view *b)
{
	return a->port == b->port && strcmp(a->host, b->host) == 0;
}

static void sentinel_name(const struct url *u, int i, char *out, size_t len)
{
	snprintf(out, len, "sentinel %s:%d", u->sentinels[i].host, u->sentinels[i].port);
}

/* The master of the views: the one of the highest config-epoch (a
 * failover raises it), as the sentinels themselves settle it. Two
 * masters named at the same epoch, or at an epoch not known, and the
 * views disagree: -1 with why, for a moment while a failover is done. */
static int newest_view(const struct url *u, const struct master_view *views,
		       int n_views, struct master_view *v, char *why, size_t whylen)
{
	const struct master_view *best = &views[0];
	char sa[300], sb[300], a[300], b[300];

	for (int k = 1; k < n_views; k++)
		if (views[k].epoch > best->epoch)
			best = &views[k];
	*v = *best;
	v->since_start = true;
	for (int k = 0; k < n_views; k++) {
		const struct master_view *w = &views[k];

		if (same_master(w, best)) {
			/* since when the first of them has it as master: each
			 * age is no more than the master's */
			if (w->failing_over)
				v->failing_over = true;
			if (w->age_ms > v->age_ms)
				v->age_ms = w->age_ms;
			v->since_start &= w->since_start;
			continue;
		}
		if (w->epoch >= 0 && w->epoch < best->epoch)
			continue;	/* it has not heard of the failover yet */
		sentinel_name(u, best->sentinel, sa, sizeof sa);
		sentinel_name(u, w->sentinel, sb, sizeof sb);
		snprintf(a, sizeof a, "%s:%d", best->host, best->port);
		snprintf(b, sizeof b, "%s:%d", w->host, w->port);
		snprintf(why, whylen, "the sentinels disagree on the master: %.60s names %.80s, %.60s %.80s",
			 sa, a, sb, b);
		return -1;
	}
	if (v->failing_over)
		v->age_ms = 0;
	return 0;
}

/* Why too few sentinels answered: one sentinel's own words; of more,
 * how many answered, and what each of the others did. */
static void too_few(const struct url *u, int n_views, int need,
		    char (*failed)[320], int n_failed, char *why, size_t whylen)
{
	size_t len;

	if (u->n_sentinels == 1) {
		snprintf(why, whylen, "%.319s", n_failed ? failed[0] : "no sentinel answered");
		return;
	}
	snprintf(why, whylen, "%d of %d sentinels answered, %d needed", n_views,
		 u->n_sentinels, need);
	for (int k = 0; k < n_failed; k++) {
		len = strlen(why);
		snprintf(why + len, whylen - len, "%s%.319s", k ? "; " : " (", failed[k]);
	}
	len = strlen(why);
	if (n_failed && len + 2 < whylen)
		strcat(why, ")");
	else if (n_failed)	/* a line cut short still ends its parenthesis */
		strcpy(why + whylen - 5, "...)");
}

/* Whether enough views agree on a master whose age none of them knows but
 * from its own start (sentinels restarted, as with the master's host, or
 * started together): the sentinels not asked yet may know better. Their
 * uptime alone is the age then (it may be the moment of a failover whose
 * hello messages reached them as they started). */
static bool age_from_starts(const struct url *u, const struct master_view *views,
			    int n_views)
{
	struct master_view v;
	char why[384];

	return newest_view(u, views, n_views, &v, why, sizeof why) == 0 &&
	       v.since_start;
}

int sentinel_query(struct node *n, int64_t deadline_ms, bool with_age,
			  struct master_view *v, struct net_addrs *a, char *why,
			  size_t whylen)
{
	struct url *u = n->url;
	struct master_view views[URL_MAX_SENTINELS];
	int n_views = 0, need = answers_needed(u->n_sentinels), n_known = 0;
	char failed[URL_MAX_SENTINELS][320], sentinel[300], what[320];
	int n_failed = 0;

	for (int i = 0; i < u->n_sentinels &&
	     (n_views < need ||
	      (with_age && age_from_starts(u, views, n_views))); i++) {
		int64_t left = deadline_ms - clock_now_ms();
		int64_t until_ms = clock_now_ms() + left / (u->n_sentinels - i);

		if (left <= 0)
			break;
		sentinel_name(u, i, sentinel, sizeof sentinel);
		if (sentinel_view(n, i, until_ms, with_age, &views[n_views], what,
				  sizeof what) < 0) {
			snprintf(failed[n_failed++], sizeof failed[0], "%.150s: %.160s",
				 sentinel, what);
			continue;
		}
		if (views[n_views].n_known > n_known)
			n_known = views[n_views].n_known;
		if (answers_needed(n_known) > need)
			need = answers_needed(n_known);
		n_views++;
	}
	if (need > u->n_sentinels) {
		snprintf(why, whylen, "the sentinels know of %d sentinels of %s, and the URL names %d: at least %d of them must answer (name them all)",
			 n_known, u->master, u->n_sentinels, need);
		return EX_USAGE;
	}
	if (n_views < need) {
		too_few(u, n_views, need, failed, n_failed, why, whylen);
		return EX_UNAVAILABLE;
	}
	if (newest_view(u, views, n_views, v, why, whylen) < 0)
		return EX_UNAVAILABLE;
	a->n = 0;
	if (url_numeric_addr(v->host, v->port, a) < 0 &&
	    node_address(n, v->host, v->port, a, what, sizeof what) < 0) {
		sentinel_name(u, v->sentinel, sentinel, sizeof sentinel);
		snprintf(why, whylen, "%.150s: master %.200s", sentinel, what);
	}
	return 0;
}
