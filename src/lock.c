/* lock.c - the lock itself: one server, or RedLock over several masters.
 *
 * Every round goes to all servers at once (fanout.c). The lock is ours
 * when a majority said yes and time is left of the lease once drift is
 * allowed for; anything less is given back on every server, including
 * those that did not answer (their SET may have landed after all). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <bsd/stdlib.h>
#include <sys/signalfd.h>
#include "clock.h"
#include "fanout.h"
#include "lock.h"
#include "quorum.h"
#include "scripts.h"

/* With no -w, an unreachable service fails after this many tries, with
 * backoff 0.1, 0.2, 0.4, 0.8 and 1.6 s between them (about 3 s). */
#define CONNECT_ATTEMPTS 6
#define RETRY_MIN_MS 50
#define RETRY_JITTER_MS 100

/* A key in the lock key's Redis Cluster hash slot: "{key}suffix", or
 * "key suffix" when the key already has a {hash tag} of its own. */
static char *derived_key(const char *key, const char *suffix)
{
	const char *open = strchr(key, '{');
	const char *close = open ? strchr(open + 1, '}') : NULL;
	char *out;

	if (open && close && close > open + 1) {
		if (asprintf(&out, "%s%s", key, suffix) < 0)
			return NULL;
	} else if (asprintf(&out, "{%s}%s", key, suffix) < 0) {
		return NULL;
	}
	return out;
}

static void describe_holder(struct lock *lk, const struct options *opts)
{
	const char *user = getenv("USER");
	size_t len = 0;

	if (gethostname(lk->host, sizeof lk->host) < 0)
		strcpy(lk->host, "?");
	snprintf(lk->pid, sizeof lk->pid, "%d", (int)getpid());
	if (!user || !*user)
		user = getenv("LOGNAME");
	if (user && *user)
		snprintf(lk->user, sizeof lk->user, "%s", user);
	else
		snprintf(lk->user, sizeof lk->user, "%u", (unsigned)getuid());
	if (opts->shell_cmd) {
		snprintf(lk->cmd, sizeof lk->cmd, "%s", opts->shell_cmd);
		return;
	}
	for (char **a = opts->argv; a && *a && len + 1 < sizeof lk->cmd; a++)
		len += (size_t)snprintf(lk->cmd + len, sizeof lk->cmd - len, "%s%s",
					a == opts->argv ? "" : " ", *a);
}

int lock_init(struct lock *lk, const struct options *opts,
	      const struct settings *st, struct error *err)
{
	const char *env_key = getenv("DLOCK_KEY");
	const char *env_token = getenv("DLOCK_TOKEN");

	*lk = (struct lock){
		.opts = opts,
		.n_nodes = st->n_urls,
		.ttl_ms = st->ttl_ms,
		.node_timeout_ms = st->node_timeout_ms,
	};
	if (asprintf(&lk->key, "%s%s", st->prefix, opts->key) < 0 ||
	    !(lk->fence_key = derived_key(lk->key, ":fence")) ||
	    !(lk->owner_key = derived_key(lk->key, ":owner"))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < st->n_urls; i++)
		node_init(&lk->nodes[i], &st->urls[i], st->password);
	if (env_key && env_token && *env_token && strcmp(env_key, lk->key) == 0)
		lk->reentry_token = env_token;
	snprintf(lk->ttl_arg, sizeof lk->ttl_arg, "%" PRId64, lk->ttl_ms);
	describe_holder(lk, opts);
	return 0;
}

void lock_free(struct lock *lk)
{
	for (size_t i = 0; i < lk->n_nodes; i++) {
		node_end(&lk->nodes[i]);
		node_close(&lk->nodes[i]);
	}
	free(lk->key);
	free(lk->fence_key);
	free(lk->owner_key);
}

static void new_token(struct lock *lk)
{
	unsigned char raw[16];

	arc4random_buf(raw, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(lk->token + 2 * i, 3, "%02x", raw[i]);
}

/* {status, value} from the acquire script; -1 when it is not that. */
static int acquire_reply(const redisReply *r, long long *value)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER)
		return -1;
	*value = r->element[1]->integer;
	return (int)r->element[0]->integer;
}

static size_t release_round(struct lock *lk)
{
	const char *argv[] = { lk->key, lk->owner_key, lk->token };
	struct cmd cmd = { &script_release, 3, argv, NULL };

	return fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
}

static void no_quorum(struct lock *lk, size_t n_ok, struct error *err,
		      const char *what)
{
	const struct error *worst = fanout_worst_error(lk->nodes, lk->n_nodes);
	size_t need = quorum_majority(lk->n_nodes);

	if (lk->n_nodes == 1 && worst) {
		*err = *worst;
		return;
	}
	if (lk->opts->verbose)
		for (size_t i = 0; i < lk->n_nodes; i++)
			if (lk->nodes[i].state == NODE_FAILED)
				log_error(lk->opts->key, &lk->nodes[i].err);
	error_set(err, worst ? worst->exit : EX_UNAVAILABLE,
		  "%zu of %zu servers %s, %zu needed%s%s%s", n_ok, lk->n_nodes,
		  what, need, worst ? " (" : "", worst ? worst->msg : "",
		  worst ? ")" : "");
}

/* RedLock fencing: each server counts acquisitions; the fence is the
 * highest count of this majority, written back to a majority so the next
 * majority (which shares a server with this one) counts past it. */
static int fence_write_back(struct lock *lk, struct error *err)
{
	const char *argv[] = { lk->fence_key, lk->fence };
	struct cmd cmd = { &script_fence_max, 2, argv, NULL };
	size_t n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1,
				   lk->node_timeout_ms);

	if (n_ok >= quorum_majority(lk->n_nodes))
		return 0;
	no_quorum(lk, n_ok, err, "stored the fencing token");
	return -1;
}

static int wait_replicas(struct lock *lk, struct error *err)
{
	char n_arg[16], timeout_arg[24];
	const char *argv[] = { "WAIT", n_arg, timeout_arg };
	struct cmd cmd = { NULL, 3, argv, NULL };
	size_t n_ok = 0, need = quorum_majority(lk->n_nodes);
	long long least = -1;

	snprintf(n_arg, sizeof n_arg, "%d", lk->opts->wait_replicas);
	/* WAIT must answer before this node's deadline does. */
	snprintf(timeout_arg, sizeof timeout_arg, "%" PRId64,
		 lk->node_timeout_ms > 20 ? lk->node_timeout_ms - 10 : 1);
	fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		if (lk->nodes[i].state != NODE_DONE || r->type != REDIS_REPLY_INTEGER)
			continue;
		if (least < 0 || r->integer < least)
			least = r->integer;
		n_ok += r->integer >= lk->opts->wait_replicas;
	}
	if (n_ok >= need)
		return 0;
	if (lk->n_nodes == 1 && least >= 0)
		error_set(err, EX_UNAVAILABLE, "%s: %lld of %d replicas acknowledged in time",
			  lk->nodes[0].url->text, least, lk->opts->wait_replicas);
	else
		no_quorum(lk, n_ok, err, "had enough replicas acknowledge");
	return -1;
}

static enum lock_result try_once(struct lock *lk, int64_t *retry_ms,
				 struct error *err)
{
	const char *argv[] = {
		lk->key, lk->fence_key, lk->owner_key,
		lk->token, lk->ttl_arg,
		lk->reentry_token ? lk->reentry_token : "",
		lk->host, lk->pid, lk->user, lk->cmd, lk->since,
	};
	struct cmd cmd = { &script_acquire, 11, argv, NULL };
	size_t need = quorum_majority(lk->n_nodes), n_yes = 0, n_again = 0;
	size_t n_answered;
	long long fence = 0, value;
	int64_t start_ms, validity_ms;

	new_token(lk);
	snprintf(lk->since, sizeof lk->since, "%" PRId64, clock_wall_ms());
	start_ms = clock_now_ms();
	n_answered = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1,
				  lk->node_timeout_ms);
	*retry_ms = -1;
	for (size_t i = 0; i < lk->n_nodes; i++) {
		struct node *n = &lk->nodes[i];

		if (n->state != NODE_DONE)
			continue;
		switch (acquire_reply(n->replies[0], &value)) {
		case 1:
			n_yes++;
			if (value > fence)
				fence = value;
			break;
		case 2:
			n_again++;
			break;
		case 0:
			if (value > 0 && (*retry_ms < 0 || value < *retry_ms))
				*retry_ms = value;
			break;
		default:
			error_set(&n->err, EX_SOFTWARE, "%s: unexpected reply to the lock script",
				  n->url->text);
			n->state = NODE_FAILED;
			n_answered--;
		}
	}
	validity_ms = quorum_validity_ms(lk->ttl_ms, clock_now_ms() - start_ms);

	if (n_again >= need) {
		const char *env_fence = getenv("DLOCK_FENCE");

		snprintf(lk->token, sizeof lk->token, "%s", lk->reentry_token);
		snprintf(lk->fence, sizeof lk->fence, "%s", env_fence ? env_fence : "0");
		return LOCK_REENTERED;
	}
	if (n_yes >= need && validity_ms > 0) {
		snprintf(lk->fence, sizeof lk->fence, "%lld", fence);
		lk->valid_until_ms = start_ms + lk->ttl_ms - quorum_drift_ms(lk->ttl_ms);
		if ((lk->n_nodes == 1 || fence_write_back(lk, err) == 0) &&
		    (!lk->opts->wait_replicas || wait_replicas(lk, err) == 0) &&
		    clock_now_ms() < lk->valid_until_ms)
			return LOCK_ACQUIRED;
		if (clock_now_ms() >= lk->valid_until_ms)
			error_set(err, EX_UNAVAILABLE, "acquiring took longer than the lease");
		release_round(lk);
		return LOCK_FAILED;
	}
	if (n_yes > 0 || n_answered < lk->n_nodes)
		release_round(lk);
	if (n_yes >= need) {
		error_set(err, EX_UNAVAILABLE,
			  "acquiring took longer than the lease (--ttl too short?)");
		return LOCK_FAILED;
	}
	if (n_answered >= need)
		return LOCK_HELD;
	no_quorum(lk, n_answered, err, "answered");
	return LOCK_FAILED;
}

/* Sleeps up to ms; returns 1 with *signo when a signal came first. */
static int sleep_or_signal(int sigfd, int64_t ms, int *signo)
{
	struct pollfd pfd = { sigfd, POLLIN, 0 };
	struct signalfd_siginfo si;

	if (poll(&pfd, 1, (int)ms) <= 0)
		return 0;
	if (read(sigfd, &si, sizeof si) != (ssize_t)sizeof si)
		return 0;
	*signo = (int)si.ssi_signo;
	return 1;
}

enum lock_result lock_acquire(struct lock *lk, int sigfd, int *signo,
			      struct error *err)
{
	const struct options *opts = lk->opts;
	int64_t start_ms = clock_now_ms();
	int64_t deadline_ms = opts->nonblock ? start_ms :
			      opts->wait_ms >= 0 ? start_ms + opts->wait_ms : -1;
	int64_t backoff_ms = 100;
	int n_failures = 0;
	bool told = false;

	for (;;) {
		int64_t sleep_ms, retry_ms, now_ms;
		enum lock_result r = try_once(lk, &retry_ms, err);

		if (r == LOCK_ACQUIRED || r == LOCK_REENTERED)
			return r;
		if (r == LOCK_FAILED) {
			if (err->exit != EX_UNAVAILABLE)
				return r;	/* credentials, bad replies: no retry */
			if (deadline_ms < 0 && ++n_failures >= CONNECT_ATTEMPTS)
				return r;
			sleep_ms = backoff_ms;
			backoff_ms = backoff_ms * 2 > 1600 ? 1600 : backoff_ms * 2;
		} else {
			n_failures = 0;
			backoff_ms = 100;
			sleep_ms = RETRY_MIN_MS + arc4random_uniform(RETRY_JITTER_MS);
			/* No sleeping past the holder's lease. */
			if (retry_ms >= 0 && retry_ms < sleep_ms)
				sleep_ms = retry_ms;
		}
		now_ms = clock_now_ms();
		if (deadline_ms >= 0) {
			if (now_ms >= deadline_ms)
				return r;
			if (sleep_ms > deadline_ms - now_ms)
				sleep_ms = deadline_ms - now_ms;
		}
		if (opts->verbose && r == LOCK_HELD && !told) {
			log_line(opts->key, "lock is held; waiting");
			told = true;
		}
		if (sleep_or_signal(sigfd, sleep_ms, signo))
			return LOCK_INTERRUPTED;
	}
}

enum extend_result lock_extend(struct lock *lk, int64_t timeout_ms,
			       struct error *err)
{
	const char *argv[] = { lk->key, lk->owner_key, lk->token, lk->ttl_arg };
	struct cmd cmd = { &script_extend, 4, argv, NULL };
	size_t need = quorum_majority(lk->n_nodes), n_yes = 0, n_no = 0;
	int64_t start_ms = clock_now_ms();

	fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		if (lk->nodes[i].state != NODE_DONE)
			continue;
		if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
			n_yes++;
		else
			n_no++;
	}
	if (n_yes >= need &&
	    quorum_validity_ms(lk->ttl_ms, clock_now_ms() - start_ms) > 0) {
		lk->valid_until_ms = start_ms + lk->ttl_ms - quorum_drift_ms(lk->ttl_ms);
		return EXTEND_OK;
	}
	if (n_no > lk->n_nodes - need) {
		error_set(err, EX_TEMPFAIL, lk->n_nodes == 1 ?
			  "the lock was deleted or taken over%s%s" :
			  "the lock was deleted or taken over on a majority%s%s",
			  lk->n_nodes == 1 ? " on " : "",
			  lk->n_nodes == 1 ? lk->nodes[0].url->text : "");
		return EXTEND_LOST;
	}
	no_quorum(lk, n_yes, err, "renewed the lease");
	return EXTEND_FAILED;
}

int lock_release(struct lock *lk, struct error *err)
{
	size_t n_ok = release_round(lk);

	if (n_ok == lk->n_nodes)
		return 0;
	no_quorum(lk, n_ok, err, "confirmed the release");
	return -1;
}
