/* unlock.c - the lock given back: a job's end (its exit status and
 * --min-hold for the history and the script), or an undo of a try that
 * did not get a majority, on every server at once; a server in a passing
 * state is asked again until the lease's end (at most RELEASE_RETRY_MS).
 * Sentinel: to the master of the last round when too few sentinels
 * answer, as the script deletes only what is ours. */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "config.h"
#include "fanout.h"
#include "quorum.h"
#include "rlock.h"
#include "scripts.h"

/* A release that meets a passing state is tried again until the lease's
 * end, but no longer than this. */
#define RELEASE_RETRY_MS 5000

/* how: "job" (exit status known, or LOCK_EXIT_UNKNOWN) or "undo"; see
 * script_release. min_hold: keep the lock for what is left of --min-hold. */
static size_t release_script(struct rlock *lk, const char *how, int exit_status,
			     bool min_hold, int64_t timeout_ms)
{
	char exit_arg[16] = "", held_arg[24] = "", hold_arg[24] = "";
	char finished_arg[24] = "";
	const char *argv[] = {
		lk->key, lk->alive_key, lk->history_key, lk->queue_key,
		lk->wake_key, lk->writers_key, lk->owner_key, lk->mode_key,
		lk->slots_key, lk->notice_key, lk->fence_key,
		lk->token, lk->history_arg, how, exit_arg, held_arg, lk->fence,
		lk->core->info, "", hold_arg, finished_arg,
	};
	/* KEYS 1-6 and ARGV 1-7 (see script_release) */
	const char *short_argv[] = {
		argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
		argv[11], argv[12], argv[13], argv[14], argv[15], argv[16],
		argv[17],
	};
	struct script short_release = script_release;
	struct cmd cmd = { &script_release, 21, argv, NULL };
	struct cmd short_cmd = { &short_release, 13, short_argv, NULL };
	int64_t held_ms = clock_now_ms() - lk->acquired_ms;
	const redisReply *r;
	size_t n_ok;

	if (exit_status != LOCK_EXIT_UNKNOWN)
		snprintf(exit_arg, sizeof exit_arg, "%d", exit_status);
	snprintf(held_arg, sizeof held_arg, "%" PRId64, held_ms);
	/* Counted from the start of the round that acquired, before any
	 * server granted it: what is left on a server is never more than the
	 * minimum. The server's clock counts the rest down. */
	if (min_hold && lk->p->min_hold_ms > held_ms) {
		snprintf(hold_arg, sizeof hold_arg, "%" PRId64,
			 lk->p->min_hold_ms - held_ms);
		snprintf(finished_arg, sizeof finished_arg, "%" PRId64,
			 clock_wall_ms());
	}
	/* The common case, an exclusive job's end on one server, in the
	 * short call; the script asks for the full one (3) when the lock is
	 * not ours (any more). */
	if (lk->n_nodes == 1 && lk->p->limit == 0 && strcmp(how, "job") == 0 &&
	    !hold_arg[0]) {
		short_release.n_keys = 6;
		n_ok = fanout_round(lk->nodes, 1, &short_cmd, 1, timeout_ms);
		r = lk->nodes[0].replies[0];
		if (n_ok == 0 || r->type != REDIS_REPLY_INTEGER || r->integer != 3)
			return n_ok;
	}
	return fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, timeout_ms);
}

/* release_script() where the lock is: Sentinel's rounds go to the master
 * of the last round when too few sentinels answer, as the script deletes
 * only what is ours (renewals and tries fail then). */
size_t rlock_release_round(struct rlock *lk, const char *how, int exit_status,
			   bool min_hold, int64_t timeout_ms)
{
	size_t n_ok;

	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].any_master = true;
	n_ok = release_script(lk, how, exit_status, min_hold, timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].any_master = false;
	return n_ok;
}

/* Whether a failed release on n is worth another try: a passing state
 * (TRYAGAIN while the cluster moves the lock's slot, LOADING, BUSY, ...;
 * an ASK is followed within the round), while time is left; or, once, a
 * connection that was there before the round and broke without a word
 * (the server restarted since: "broken pipe"), on a fresh one. A server
 * that refuses connections is not asked again. */
static bool retry_release(const struct node *n, bool had_conn, int tries)
{
	if (n->state != NODE_FAILED || n->err.exit != EX_UNAVAILABLE)
		return false;
	return n->answered || (had_conn && tries == 1);
}

static int release_all(struct rlock *lk, const char *how, int exit_status,
		       bool min_hold, struct error *err)
{
	/* The release's deadline: the lease's end (the lock lapses then,
	 * released or not), at most RELEASE_RETRY_MS from now. */
	int64_t now_ms = clock_now_ms(), deadline_ms = now_ms + RELEASE_RETRY_MS;
	int64_t pause_ms = 10;
	size_t n_ok, n_no = 0, need = quorum_majority(lk->n_nodes);
	bool had_conn[MAX_SERVERS], again;
	const struct error *worst;

	if (lk->valid_until_ms > now_ms && lk->valid_until_ms < deadline_ms)
		deadline_ms = lk->valid_until_ms;
	for (size_t i = 0; i < lk->n_nodes; i++)
		had_conn[i] = lk->nodes[i].c != NULL;
	/* Every server, also one that did not answer lately: a paused server
	 * that resumes runs our queued SET, then this release, in that order,
	 * instead of keeping a key nobody knows for a whole TTL. */
	n_ok = rlock_release_round(lk, how, exit_status, min_hold, lk->node_timeout_ms);
	for (int tries = 1;; tries++) {
		again = false;
		for (size_t i = 0; i < lk->n_nodes; i++) {
			lk->nodes[i].skip = !retry_release(&lk->nodes[i], had_conn[i], tries);
			again |= !lk->nodes[i].skip;
		}
		now_ms = clock_now_ms();
		if (!again || now_ms + pause_ms >= deadline_ms)
			break;
		poll(NULL, 0, (int)pause_ms);
		pause_ms = pause_ms * 2 > 200 ? 200 : pause_ms * 2;
		n_ok += rlock_release_round(lk, how, exit_status, min_hold,
				      deadline_ms - clock_now_ms());
	}
	rlock_all_servers(lk);
	/* The servers that said the lock is not ours (script_release: 0). A
	 * retried node's reply is its last round's. */
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		n_no += lk->nodes[i].state == NODE_DONE && r &&
			r->type == REDIS_REPLY_INTEGER && r->integer == 0;
	}
	if (strcmp(how, "job") == 0 && n_no > lk->n_nodes - need) {
		error_set(err, EX_TEMPFAIL, lk->n_nodes == 1 ?
			  "the lock was deleted or taken over%s%s" :
			  "the lock was deleted or taken over on a majority%s%s",
			  lk->n_nodes == 1 ? " on " : "",
			  lk->n_nodes == 1 ? lk->nodes[0].url->text : "");
		return LOCK_RELEASE_LOST;
	}
	if (n_ok == lk->n_nodes)
		return 0;
	worst = fanout_worst_error(lk->nodes, lk->n_nodes);
	if (n_ok < need) {
		rlock_no_quorum(lk, n_ok, err, "confirmed the release");
		return -1;
	}
	error_set(err, 0, "released on %zu of %zu servers; %s", n_ok,
		  lk->n_nodes, worst ? worst->msg : "no answer");
	return 1;
}

int rlock_release(struct rlock *lk, struct error *err)
{
	return release_all(lk, "undo", LOCK_EXIT_UNKNOWN, false, err);
}

int rlock_release_job(struct rlock *lk, int exit_status, bool min_hold,
		     struct error *err)
{
	return release_all(lk, "job", exit_status, min_hold, err);
}
