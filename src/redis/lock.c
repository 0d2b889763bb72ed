/* lock.c - the lock itself: one server, or RedLock over several masters.
 *
 * Every round goes to all servers at once (fanout.c). The lock is ours
 * when a majority said yes and time is left of the lease once drift is
 * allowed for; anything less is given back on every server, including
 * those that did not answer (their SET may have landed after all):
 * unlock.c, which also gives the lock back when the job ends. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "clock.h"
#include "config.h"
#include "fanout.h"
#include "names.h"
#include "rlock.h"
#include "quorum.h"
#include "scripts.h"

/* How long the fencing and ticket counters outlive the lock's last use;
 * the scripts say 86400000 where they set it. */
#define COUNTER_IDLE_MS "86400000"
/* RedLock: the servers' clocks count in the fence in whole seconds (see
 * src/redis/lua/lib/fence.lua), so that they mostly hand out one value and the
 * write-back round is seldom needed. */
#define FENCE_GRAIN_REDLOCK "1000000"
/* Sentinel: what a holder on a failed-over master may take beyond its
 * next renewal round to learn of the failover (the sentinels switch
 * within about a second of each other, and tell one another within 2). */
#define SENTINEL_SETTLE_MS 2000
/* the least an undo after a failed try is given, past -w's end */
#define UNDO_MIN_MS 100

/* RedLock counts servers: one named twice would count twice, and its
 * failure would cost two votes. A usage error, before anything is sent. */
static int same_server_twice(const struct rlock *lk, struct error *err)
{
	char where[300];

	for (size_t i = 0; i < lk->n_nodes; i++)
		for (size_t k = i + 1; k < lk->n_nodes; k++)
			if (node_same_server(&lk->nodes[i], &lk->nodes[k], where,
					     sizeof where)) {
				error_set(err, EX_USAGE,
					  "%.200s and %.200s are the same server (%.200s): RedLock needs independent servers",
					  lk->nodes[i].url->text, lk->nodes[k].url->text,
					  where);
				return -1;
			}
	return 0;
}

int rlock_init(struct rlock *lk, struct lock *core, struct error *err)
{
	const struct lock_params *p = core->p;

	*lk = (struct rlock){
		.p = p,
		.core = core,
		.n_nodes = p->n_servers,
		.ttl_ms = p->ttl_ms,
		.node_timeout_ms = p->node_timeout_ms,
	};
	lk->nodes = calloc(lk->n_nodes, sizeof *lk->nodes);
	lk->why = calloc(lk->n_nodes, sizeof *lk->why);
	lk->granted = calloc(lk->n_nodes, sizeof *lk->granted);
	if (!lk->nodes || !lk->why || !lk->granted ||
	    asprintf(&lk->key, "%s%s", p->prefix, p->name) < 0 ||
	    /* each tail is one of names.c's: no lock key can be these */
	    !(lk->fence_key = keys_derived(lk->key, ":fence")) ||
	    !(lk->owner_key = keys_derived(lk->key, ":owner")) ||
	    !(lk->mode_key = keys_derived(lk->key, ":mode")) ||
	    !(lk->queue_key = keys_derived(lk->key, ":queue")) ||
	    !(lk->alive_key = keys_derived(lk->key, ":alive")) ||
	    !(lk->ticket_key = keys_derived(lk->key, ":ticket")) ||
	    !(lk->slots_key = keys_derived(lk->key, ":slots")) ||
	    !(lk->wake_key = keys_derived(lk->key, ":wake")) ||
	    !(lk->writers_key = keys_derived(lk->key, ":writers")) ||
	    !(lk->history_key = keys_derived(lk->key, ":history")) ||
	    !(lk->notice_key = keys_derived(lk->key, ":notice"))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	/* "" is status's listing, which names no lock of its own */
	if (*p->name && keys_check(lk->key, err->msg, sizeof err->msg) < 0) {
		err->exit = EX_USAGE;
		return -1;
	}
	for (size_t i = 0; i < p->n_servers; i++) {
		node_init(&lk->nodes[i], &((struct url *)p->servers)[i], p->password);
		node_resolve(&lk->nodes[i]);	/* before any round */
		lk->nodes[i].follow_master = true;
	}
	if (same_server_twice(lk, err) < 0)
		return -1;
	snprintf(lk->ttl_arg, sizeof lk->ttl_arg, "%" PRId64, lk->ttl_ms);
	snprintf(lk->history_arg, sizeof lk->history_arg, "%ld", p->history);
	if (p->limit == 0)
		strcpy(lk->mode_arg, "x");
	else if (p->limit == LOCK_SHARED)
		strcpy(lk->mode_arg, "s");
	else
		snprintf(lk->mode_arg, sizeof lk->mode_arg, "%ld", p->limit);
	/* A waiter that stops trying is gone after this: its longest pause,
	 * and 2 s and two rounds' deadlines for a slow try or a busy host.
	 * Its place in the --fair queue and its writer's mark go with it. */
	snprintf(lk->alive_arg, sizeof lk->alive_arg, "%" PRId64,
		 LOCK_RETRY_MAX_MS + 2000 + 2 * lk->node_timeout_ms);
	return 0;
}

void rlock_log_servers(const struct rlock *lk)
{
	for (size_t i = 0; lk->n_nodes > 1 && i < lk->n_nodes; i++)
		if (lk->why[i].exit)
			log_error(lk->p->name, &lk->why[i]);
}

void rlock_free(struct rlock *lk)
{
	for (size_t i = 0; lk->nodes && i < lk->n_nodes; i++) {
		node_end(&lk->nodes[i]);
		node_close(&lk->nodes[i]);
	}
	free(lk->nodes);
	free(lk->why);
	free(lk->granted);
	free(lk->key);
	free(lk->fence_key);
	free(lk->owner_key);
	free(lk->mode_key);
	free(lk->queue_key);
	free(lk->alive_key);
	free(lk->ticket_key);
	free(lk->slots_key);
	free(lk->wake_key);
	free(lk->writers_key);
	free(lk->history_key);
	free(lk->notice_key);
	free(lk->wake_list);
}

static void new_token(struct rlock *lk)
{
	if (lk->p->token)
		snprintf(lk->token, sizeof lk->token, "%s", lk->p->token);
	else
		engine_random_hex(lk->token, 16);
}

/* The acquire script's answer: {1, fence[, slot]}, {2, fence}, or
 * {0, retry hint, queue position, holder[, free slot]}; -1 when it is none
 * of these. */
static int acquire_reply(struct rlock *lk, const redisReply *r, long long *value,
			 long long *slot)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER)
		return -1;
	*value = r->element[1]->integer;
	*slot = r->elements == 3 && r->element[2]->type == REDIS_REPLY_INTEGER ?
		r->element[2]->integer : -1;
	if (r->element[0]->integer == 0 && r->elements == 5 &&
	    r->element[4]->type == REDIS_REPLY_INTEGER && r->element[4]->integer >= 0)
		lk->free_slot = (long)r->element[4]->integer;
	if (r->element[0]->integer == 0 && r->elements >= 4 &&
	    r->element[2]->type == REDIS_REPLY_INTEGER &&
	    r->element[3]->type == REDIS_REPLY_STRING) {
		if (r->element[2]->integer > lk->queue_pos)
			lk->queue_pos = (long)r->element[2]->integer;
		snprintf(lk->held_by, sizeof lk->held_by, "%s", r->element[3]->str);
	}
	return (int)r->element[0]->integer;
}

/* The acquire script's {3}: the short call asks for the full one. */
static bool short_again(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	       r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer == 3;
}

void rlock_no_quorum(struct rlock *lk, size_t n_ok, struct error *err,
		     const char *what)
{
	const struct error *worst = fanout_worst_error(lk->nodes, lk->n_nodes);
	size_t need = quorum_majority(lk->n_nodes);

	if (worst && (lk->n_nodes == 1 || worst->exit == EX_USAGE)) {
		*err = *worst;	/* one server, or a clash of modes: its words */
		return;
	}
	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->why[i] = lk->nodes[i].state == NODE_FAILED ? lk->nodes[i].err :
			     (struct error){ 0 };
	error_set(err, worst ? worst->exit : EX_UNAVAILABLE,
		  "%zu of %zu servers %s, %zu needed", n_ok, lk->n_nodes, what,
		  need);
	/* Every server that failed, on the one line: the one to fix may be
	 * any of them. A line cut short still ends its parenthesis. */
	for (size_t i = 0, n = 0; worst && i < lk->n_nodes; i++) {
		size_t len = strlen(err->msg), room = sizeof err->msg - len;

		if (lk->nodes[i].state != NODE_FAILED)
			continue;
		if ((size_t)snprintf(err->msg + len, room, "%s%s", n++ ? "; " : " (",
				     lk->nodes[i].err.msg) >= room - 1) {
			strcpy(err->msg + sizeof err->msg - 5, "...)");
			return;
		}
	}
	if (worst)
		strcat(err->msg, ")");
}

/* Leaves out of the next rounds the servers that did not grant the lock
 * (counted[i] < 0), and those whose count equals except. */
static void only_granted(struct rlock *lk, const long long *counted,
			 long long except)
{
	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].skip = counted[i] < 0 || counted[i] == except;
}

void rlock_all_servers(struct rlock *lk)
{
	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].skip = false;
}

/* RedLock fencing: each server counts acquisitions, and the fence is the
 * highest count of this majority. The next majority shares a server with
 * this one, so it counts past the fence once a majority holds it: the
 * granting servers that lag behind get it written back. When the counts
 * agree, the usual case, no round is needed. */
static int fence_write_back(struct rlock *lk, const long long *counted,
			    struct error *err)
{
	const char *argv[] = { lk->fence_key, lk->owner_key, lk->fence, lk->token };
	struct cmd cmd = { &script_fence_max, 4, argv, NULL };
	long long fence = strtoll(lk->fence, NULL, 10);
	size_t need = quorum_majority(lk->n_nodes), n_at = 0, n_ok;

	for (size_t i = 0; i < lk->n_nodes; i++)
		n_at += counted[i] == fence;
	if (n_at >= need)
		return 0;
	only_granted(lk, counted, fence);
	n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	rlock_all_servers(lk);
	if (n_at + n_ok >= need)
		return 0;
	rlock_no_quorum(lk, n_at + n_ok, err, "stored the fencing token");
	return -1;
}

int rlock_raise_fence(struct rlock *lk, const char *fence, struct error *err)
{
	const char *argv[] = { lk->fence_key, lk->owner_key, fence, lk->token };
	struct cmd cmd = { &script_fence_max, 4, argv, NULL };
	size_t n_ok;

	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].skip = !lk->granted[i];
	n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	rlock_all_servers(lk);
	if (n_ok < quorum_majority(lk->n_nodes)) {
		rlock_no_quorum(lk, n_ok, err, "stored the fencing token");
		return -1;
	}
	snprintf(lk->fence, sizeof lk->fence, "%s", fence);
	return 0;
}

static int wait_replicas(struct rlock *lk, struct error *err)
{
	char n_arg[16], timeout_arg[24];
	const char *argv[] = { "WAIT", n_arg, timeout_arg };
	struct cmd cmd = { NULL, 3, argv, NULL };
	size_t n_ok = 0, need = quorum_majority(lk->n_nodes);
	long long least = -1;

	snprintf(n_arg, sizeof n_arg, "%d", lk->p->wait_replicas);
	/* The replicas get one --node-timeout to confirm, and the answer
	 * another to arrive. */
	snprintf(timeout_arg, sizeof timeout_arg, "%" PRId64, lk->node_timeout_ms);
	fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, 2 * lk->node_timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		if (lk->nodes[i].state != NODE_DONE || r->type != REDIS_REPLY_INTEGER)
			continue;
		if (least < 0 || r->integer < least)
			least = r->integer;
		n_ok += r->integer >= lk->p->wait_replicas;
	}
	if (n_ok >= need)
		return 0;
	if (lk->n_nodes == 1 && least >= 0)
		error_set(err, EX_UNAVAILABLE, "%s: %lld of %d replicas acknowledged in time",
			  lk->nodes[0].url->text, least, lk->p->wait_replicas);
	else
		rlock_no_quorum(lk, n_ok, err, "had enough replicas acknowledge");
	return -1;
}

/* --limit over several servers: a holder needs a majority on one slot.
 * Grants of other slots are stray: not counted, given back. Returns the
 * grants on the slot granted most. */
static size_t keep_one_slot(struct rlock *lk, long long *counted,
			    const long long *slot, bool *stray, size_t n_yes)
{
	size_t best_n = 0;
	long long best = -1;

	if (lk->p->limit <= 0 || lk->n_nodes == 1)
		return n_yes;
	for (size_t i = 0; i < lk->n_nodes; i++) {
		size_t n = 0;

		for (size_t k = 0; counted[i] >= 0 && k < lk->n_nodes; k++)
			n += counted[k] >= 0 && slot[k] == slot[i];
		if (n > best_n) {
			best_n = n;
			best = slot[i];
		}
	}
	for (size_t i = 0; i < lk->n_nodes; i++) {
		stray[i] = counted[i] >= 0 && slot[i] != best;
		if (stray[i])
			counted[i] = -1;
	}
	return best_n;
}

/* Releases where a grant does not count (stray slots). */
static void give_back(struct rlock *lk, const bool *stray)
{
	bool any = false;

	for (size_t i = 0; i < lk->n_nodes; i++) {
		lk->nodes[i].skip = !stray[i];
		any |= stray[i];
	}
	if (any)
		rlock_release_round(lk, "undo", LOCK_EXIT_UNKNOWN, false, lk->node_timeout_ms);
	rlock_all_servers(lk);
}

/* Sentinel: a failover leaves a holder on the old master, which goes on
 * acting as master for seconds, until its next renewal round asks the
 * sentinels (every round does, node_confirm_master()) and moves to the new
 * master: there its lock is renewed if it was replicated, and lost (the
 * job told) if not. That takes up to TTL/3 and a round's deadline after
 * the sentinels it asks switched (within SENTINEL_SETTLE_MS of the first).
 * A holder that cannot hear enough sentinels renews nowhere and is told
 * before its lease runs out, which its replicated lock outlasts on the new
 * master. Until then a new master lacks what the old one
 * had not replicated, so a master the sentinels named as recently as that
 * is not asked for the lock: a refusal, tried again once that is over.
 * (Holders of one lock are taken to use one --ttl.) Returns how many
 * servers were left out so (skip), with when to try again in *fresh_ms. */
static size_t hold_off_fresh(struct rlock *lk, int64_t *fresh_ms)
{
	int64_t settle_ms = lk->ttl_ms / 3 + 2 * lk->node_timeout_ms +
			    SENTINEL_SETTLE_MS, age_ms;
	size_t n_fresh = 0;

	for (size_t i = 0; i < lk->n_nodes; i++) {
		struct node *n = &lk->nodes[i];

		if (n->url->kind != URL_SENTINEL ||
		    node_confirm_master(n, clock_now_ms() + lk->node_timeout_ms,
					true) < 0 ||
		    (age_ms = node_master_age_ms(n)) < 0 || age_ms >= settle_ms)
			continue;
		n->skip = true;
		n->next_asked = false;	/* no round there to use the answer */
		n_fresh++;
		if (*fresh_ms < 0 || settle_ms - age_ms < *fresh_ms)
			*fresh_ms = settle_ms - age_ms;
		if (lk->p->verbose && n->failing_over)
			log_event(LOG_INFO, lk->p->name, "failover", NULL, 0,
				  "%s: the sentinels fail %s:%d over: no lock until they are done and %.1fs more, so that any holder on the old master has moved or been told",
				  n->url->text, n->master_host, n->master_port,
				  (double)settle_ms / 1000);
		else if (lk->p->verbose)
			log_event(LOG_INFO, lk->p->name, "failover", NULL, 0,
				  "%s: the sentinels made %s:%d the master %.1fs ago: no lock there for %.1fs more, so that any holder on the old master has moved or been told",
				  n->url->text, n->master_host, n->master_port,
				  (double)age_ms / 1000,
				  (double)(settle_ms - age_ms) / 1000);
	}
	return n_fresh;
}

static enum lock_result try_servers(struct rlock *lk, size_t n_fresh,
				    int64_t *retry_ms, struct error *err);

enum lock_result rlock_try(struct rlock *lk, int64_t *retry_ms, struct error *err)
{
	int64_t fresh_ms = -1;
	size_t n_fresh = hold_off_fresh(lk, &fresh_ms);
	enum lock_result r = try_servers(lk, n_fresh, retry_ms, err);

	if (n_fresh == 0)
		return r;
	rlock_all_servers(lk);
	if (r == LOCK_HELD && (*retry_ms < 0 || fresh_ms < *retry_ms))
		*retry_ms = fresh_ms;
	return r;
}

/* One try on the servers but the n_fresh that hold_off_fresh() left out
 * (skip), which count as refusals. */
/* The acquire script on every server (the short call first where it
 * may do: see script_acquire). Returns how many answered. */
static size_t ask_servers(struct rlock *lk)
{
	const char *argv[] = {
		lk->key, lk->fence_key, lk->history_key, lk->owner_key,
		lk->mode_key, lk->queue_key, lk->alive_key, lk->slots_key,
		lk->wake_key, lk->writers_key,
		lk->token, lk->ttl_arg, lk->core->info, lk->history_arg,
		lk->n_nodes > 1 ? FENCE_GRAIN_REDLOCK : "1",
		lk->mode_arg, lk->ticket,
		lk->reentry_token ? lk->reentry_token : "",
		lk->alive_arg, lk->slot_arg,
		!lk->p->waits ? "" : lk->waited ? "2" : "1",
	};
	struct cmd cmd = { &script_acquire, 21, argv, NULL };
	/* KEYS 1-3, ARGV 1-5 (see script_acquire): a first exclusive try */
	const char *short_argv[] = {
		argv[0], argv[1], argv[2], argv[10], argv[11], argv[12],
		argv[13], argv[14],
	};
	struct script short_acquire = script_acquire;
	struct cmd short_cmd = { &short_acquire, 8, short_argv, NULL };
	bool short_call = lk->n_nodes == 1 && lk->p->limit == 0 &&
			  !lk->ticket[0] && !lk->reentry_token && !lk->waited;
	size_t n_answered;

	short_acquire.n_keys = 3;
	n_answered = fanout_round(lk->nodes, lk->n_nodes,
				  short_call ? &short_cmd : &cmd, 1,
				  lk->node_timeout_ms);
	/* the short call found the lock taken: {3}, the full one then */
	if (short_call && n_answered == 1 && short_again(lk->nodes[0].replies[0]))
		n_answered = fanout_round(lk->nodes, 1, &cmd, 1, lk->node_timeout_ms);
	return n_answered;
}

/* What the servers said to one try. */
struct tally {
	size_t n_answered, n_yes, n_again, n_granted;
	long long fence;	/* the largest of the grants */
	long long held_fence;	/* re-entered: the outer holder's */
	long long counted[MAX_SERVERS];	/* fencing count of each grant, or -1 */
	long long slot[MAX_SERVERS];	/* --limit: the slot each granted */
	bool stray[MAX_SERVERS];	/* a grant of a slot that does not count */
};

/* Each server's reply to the acquire script into t; a refusal's retry
 * hint into *retry_ms (the earliest). */
static void count_replies(struct rlock *lk, struct tally *t, int64_t *retry_ms)
{
	long long value, value_slot;

	*retry_ms = -1;
	for (size_t i = 0; i < lk->n_nodes; i++) {
		struct node *n = &lk->nodes[i];

		t->counted[i] = t->slot[i] = -1;
		t->stray[i] = false;
		if (n->state != NODE_DONE)
			continue;
		switch (acquire_reply(lk, n->replies[0], &value, &value_slot)) {
		case 1:
			t->counted[i] = value;
			t->slot[i] = value_slot;
			t->n_yes++;
			break;
		case 2:
			t->n_again++;
			if (value > t->held_fence)
				t->held_fence = value;
			break;
		case 0:
			/* A refusal counts us among the waiters there. */
			lk->waited |= lk->p->waits;
			lk->refused = true;
			if (value >= 0 && (*retry_ms < 0 || value < *retry_ms))
				*retry_ms = value;
			break;
		default:
			error_set(&n->err, EX_SOFTWARE, "%s: unexpected reply to the lock script",
				  n->url->text);
			n->state = NODE_FAILED;
			t->n_answered--;
		}
	}
	t->n_granted = t->n_yes;
	t->n_yes = keep_one_slot(lk, t->counted, t->slot, t->stray, t->n_yes);
	for (size_t i = 0; i < lk->n_nodes; i++) {
		lk->granted[i] = t->counted[i] >= 0;
		if (t->counted[i] > t->fence)
			t->fence = t->counted[i];
	}
}

/* A majority granted the lock in time: the fence written back, the
 * replicas waited for (--wait-replicas), stray grants given back. */
static enum lock_result granted(struct rlock *lk, struct tally *t,
				int64_t start_ms, struct error *err)
{
	bool ok;

	snprintf(lk->fence, sizeof lk->fence, "%lld", t->fence);
	lk->valid_until_ms = start_ms + lk->ttl_ms - quorum_drift_ms(lk->ttl_ms);
	/* The fence write-back and WAIT go only to servers that granted the
	 * lock, a majority: one that did not answer would cost another
	 * deadline. */
	ok = lk->n_nodes == 1 || fence_write_back(lk, t->counted, err) == 0;
	if (ok && lk->p->wait_replicas) {
		only_granted(lk, t->counted, -1);
		ok = wait_replicas(lk, err) == 0;
		rlock_all_servers(lk);
	}
	if (ok && clock_now_ms() < lk->valid_until_ms) {
		give_back(lk, t->stray);
		lk->acquired_ms = start_ms;
		return LOCK_ACQUIRED;
	}
	if (ok)
		error_set(err, EX_UNAVAILABLE, "acquiring took longer than the lease");
	rlock_release_round(lk, "undo", LOCK_EXIT_UNKNOWN, false, lk->node_timeout_ms);
	return LOCK_FAILED;
}

/* The undo after a failed try: --node-timeout, but no further than what
 * is left of -w, and at least UNDO_MIN_MS. A server that did not answer
 * the try will seldom answer its undo, and -w bounds the whole wait (the
 * undo is care, not safety: a SET that landed all the same is ours, with
 * the token the whole wait keeps, and lapses with its TTL). */
static int64_t undo_timeout_ms(const struct rlock *lk)
{
	int64_t deadline_ms = lk->core->wait_deadline_ms, left_ms;

	if (deadline_ms < 0)
		return lk->node_timeout_ms;
	left_ms = deadline_ms - clock_now_ms();
	if (left_ms < UNDO_MIN_MS)
		left_ms = UNDO_MIN_MS;
	return left_ms < lk->node_timeout_ms ? left_ms : lk->node_timeout_ms;
}

static enum lock_result try_servers(struct rlock *lk, size_t n_fresh,
				    int64_t *retry_ms, struct error *err)
{
	size_t need = quorum_majority(lk->n_nodes);
	struct tally t = { 0 };
	int64_t start_ms, validity_ms;
	enum lock_result r;

	lk->held_by[0] = '\0';
	lk->queue_pos = 0;
	lk->free_slot = -1;
	start_ms = clock_now_ms();
	t.n_answered = ask_servers(lk) + n_fresh;
	lk->refused |= n_fresh > 0;
	count_replies(lk, &t, retry_ms);
	validity_ms = quorum_validity_ms(lk->ttl_ms, clock_now_ms() - start_ms);

	if (t.n_again >= need) {
		/* A server the outer dlock did not get (it was down then)
		 * granted this request a lock of its own: given back, with
		 * our own token, before it is replaced by the outer one.
		 * So are servers that did not answer, which may have. */
		if (t.n_granted > 0 || t.n_answered < lk->n_nodes)
			rlock_release_round(lk, "undo", LOCK_EXIT_UNKNOWN, false, lk->node_timeout_ms);
		snprintf(lk->token, sizeof lk->token, "%s", lk->reentry_token);
		/* the outer holder's fence, as the servers keep it: never the
		 * caller's DLOCK_FENCE, which nothing checks */
		snprintf(lk->fence, sizeof lk->fence, "%lld", t.held_fence);
		return LOCK_REENTERED;
	}
	if (t.n_yes >= need && validity_ms > 0)
		return granted(lk, &t, start_ms, err);
	if (t.n_yes >= need) {
		error_set(err, EX_UNAVAILABLE,
			  "acquiring took longer than the lease (--ttl too short?)");
		r = LOCK_FAILED;
	} else if (t.n_answered >= need) {
		r = LOCK_HELD;
	} else {
		rlock_no_quorum(lk, t.n_answered, err, "answered");
		r = LOCK_FAILED;
	}
	/* What did not answer may have taken the SET all the same. */
	if (t.n_granted > 0 || t.n_answered < lk->n_nodes)
		rlock_release_round(lk, "undo", LOCK_EXIT_UNKNOWN, false, undo_timeout_ms(lk));
	return r;
}

/* --fair: one ticket for all servers, the highest any of them gave, so
 * every server orders the waiters alike. The counter lapses a day after
 * the last ticket, as the fencing counter does: a queue has long been
 * empty by then, so starting again from 1 reorders nobody. */
int rlock_take_ticket(struct rlock *lk, struct error *err)
{
	const char *incr[] = { "INCR", lk->ticket_key };
	const char *pexpire[] = { "PEXPIRE", lk->ticket_key, COUNTER_IDLE_MS };
	const struct cmd cmds[] = {
		{ NULL, 2, incr, NULL },
		{ NULL, 3, pexpire, NULL },
	};
	size_t n_ok = fanout_round(lk->nodes, lk->n_nodes, cmds, 2,
				   lk->node_timeout_ms);
	long long ticket = 0;

	if (n_ok < quorum_majority(lk->n_nodes)) {
		rlock_no_quorum(lk, n_ok, err, "answered");
		return -1;
	}
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		if (lk->nodes[i].state == NODE_DONE &&
		    r->type == REDIS_REPLY_INTEGER && r->integer > ticket)
			ticket = r->integer;
	}
	snprintf(lk->ticket, sizeof lk->ticket, "%lld", ticket);
	return 0;
}

int rlock_begin(struct rlock *lk, struct error *err)
{
	/* One token for the whole wait: a SET that lands late, after its
	 * round timed out, then holds a lock we know and will release. */
	new_token(lk);
	lk->waited = false;
	/* A fair waiter is woken on a list of its own, as the head; so is an
	 * exclusive one, as a writer that readers wait behind. */
	free(lk->wake_list);
	if ((lk->p->fair || lk->p->limit == 0 ?
	     asprintf(&lk->wake_list, "%s:%s", lk->wake_key, lk->token) :
	     asprintf(&lk->wake_list, "%s", lk->wake_key)) < 0) {
		lk->wake_list = NULL;
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	lk->ticket[0] = '\0';	/* --fair: rlock_take_ticket() before a try */
	return 0;
}

void rlock_end_wait(struct rlock *lk, enum lock_result r)
{
	const char *argv[] = {
		lk->queue_key, lk->alive_key, lk->wake_key, lk->writers_key,
		lk->token,
	};
	struct cmd cmd = { &script_leave, 5, argv, NULL };

	/* in a queue where a server refused us; --fair, also where a try
	 * (sent with a ticket, never without) may have landed unanswered */
	if ((!(lk->p->fair && lk->ticket[0]) && !lk->waited) || r == LOCK_REENTERED)
		return;
	/* Acquired, we are still a waiter where a server said no. */
	for (size_t i = 0; i < lk->n_nodes; i++)
		lk->nodes[i].skip = r == LOCK_ACQUIRED && lk->granted[i];
	fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	rlock_all_servers(lk);
}

enum extend_result rlock_extend(struct rlock *lk, int64_t timeout_ms,
			       struct error *err)
{
	const char *argv[] = {
		lk->key, lk->owner_key, lk->mode_key, lk->slots_key,
		lk->fence_key, lk->token, lk->ttl_arg,
	};
	struct cmd cmd = { &script_extend, 7, argv, NULL };
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
		const struct node *n = &lk->nodes[0];

		if (lk->n_nodes == 1 && n->moved[0])
			error_set(err, EX_TEMPFAIL, "%s: the sentinels failed %s over to %s:%d, which does not have the lock (not replicated in time)",
				  n->url->text, n->moved, n->master_host,
				  n->master_port);
		else
			error_set(err, EX_TEMPFAIL, lk->n_nodes == 1 ?
				  "the lock was deleted or taken over%s%s" :
				  "the lock was deleted or taken over on a majority%s%s",
				  lk->n_nodes == 1 ? " on " : "",
				  lk->n_nodes == 1 ? n->url->text : "");
		return EXTEND_LOST;
	}
	rlock_no_quorum(lk, n_yes, err, "renewed the lease");
	return EXTEND_FAILED;
}

bool rlock_busy(const struct rlock *lk)
{
	for (size_t i = 0; i < lk->n_nodes; i++)
		if (lk->nodes[i].state == NODE_FAILED &&
		    (lk->nodes[i].err.exit != EX_UNAVAILABLE || !lk->nodes[i].answered))
			return false;
	return true;
}
