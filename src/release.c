/* release.c - dlock release: one holder by its token, or the lock broken
 * whoever holds it (--force). Either way a dlock that runs a job under
 * that lock is told at once: the scripts push it a notice (see lease.c). */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "commands.h"
#include "fanout.h"
#include "quorum.h"
#include "scripts.h"
#include "show.h"

/* "root@web1 pid 77": who we are, for the notice and the history. */
static void me(const struct lock *lk, char *out, size_t len)
{
	struct show_info hi;

	if (show_info_parse(lk->info, strlen(lk->info), &hi) < 0) {
		snprintf(out, len, "another process");
		return;
	}
	snprintf(out, len, "%s@%s pid %lld", hi.user, hi.host, hi.pid);
	show_info_free(&hi);
}

/* script_release's and script_force's KEYS. */
static void keys_of(const struct lock *lk, const char **argv)
{
	const char *keys[] = {
		lk->key, lk->alive_key, lk->history_key, lk->queue_key,
		lk->wake_key, lk->writers_key, lk->owner_key, lk->mode_key,
		lk->slots_key, lk->notice_key, lk->fence_key,
	};

	memcpy(argv, keys, sizeof keys);
}

/* The holder's token: --token, else DLOCK_TOKEN when DLOCK_KEY is this
 * lock's key (as a job, or `eval "$(dlock acquire --export KEY)"`, has
 * them). */
static const char *token_of(const struct lock *lk, const struct command_args *a)
{
	const char *env_key = getenv("DLOCK_KEY");
	const char *env_token = getenv("DLOCK_TOKEN");

	if (a->token)
		return a->token;
	if (env_key && env_token && *env_token && strcmp(env_key, lk->key) == 0)
		return env_token;
	return NULL;
}

static int unreachable(struct lock *lk, size_t n_ok, const char *what,
		       struct error *err)
{
	const struct error *worst = fanout_worst_error(lk->nodes, lk->n_nodes);

	if (worst && lk->n_nodes == 1)
		*err = *worst;
	else
		error_set(err, worst ? worst->exit : EX_UNAVAILABLE,
			  "%zu of %zu servers %s, %zu needed%s%s%s", n_ok, lk->n_nodes,
			  what, quorum_majority(lk->n_nodes), worst ? " (" : "",
			  worst ? worst->msg : "", worst ? ")" : "");
	log_error(lk->p->name, err);
	return err->exit;
}

/* Releases the holder of token, in any mode. 0 released (by a majority),
 * 1 not held by that token. */
static int by_token(struct lock *lk, const char *token)
{
	char who[300], note[400], shown[80];
	const char *argv[21];
	struct cmd cmd = { &script_release, 21, argv, NULL };
	size_t n_ok, n_yes = 0, need = quorum_majority(lk->n_nodes);
	struct error err = { 0 };

	me(lk, who, sizeof who);
	snprintf(note, sizeof note, "released by %s (dlock release --token)", who);
	keys_of(lk, argv);
	argv[11] = token;
	argv[12] = lk->history_arg;
	argv[13] = "token";
	argv[14] = argv[15] = argv[16] = "";
	argv[17] = lk->info;
	argv[18] = note;
	argv[19] = argv[20] = "";	/* no --min-hold: an explicit release */
	n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++) {
		const redisReply *r = lk->nodes[i].replies[0];

		if (lk->nodes[i].state == NODE_DONE && r->type == REDIS_REPLY_INTEGER)
			n_yes += r->integer == 1;
	}
	if (n_yes >= need)
		return EX_OK;
	if (n_ok < need && n_yes + (lk->n_nodes - n_ok) >= need)
		return unreachable(lk, n_ok, "answered", &err);
	show_text(token, strlen(token), shown, sizeof shown);
	if (n_yes > 0)
		log_line(lk->p->name, "not held by token %s: it was on %zu of %zu servers only (released there)",
			 shown, n_yes, lk->n_nodes);
	else
		log_line(lk->p->name, "not held by token %s", shown);
	return 1;
}

/* A holder broken, as the servers tell it. */
struct broken {
	const redisReply *token, *info;
	size_t n_servers;
	int64_t left_ms;
};

static void print_broken(const struct lock *lk, const struct broken *b)
{
	struct show_info hi;
	char value[80], host[128], user[64], cmd[300], since[32], left[32];
	char servers[48] = "";

	if (lk->n_nodes > 1)
		snprintf(servers, sizeof servers, " (on %zu of %zu servers)",
			 b->n_servers, lk->n_nodes);
	if (b->info->len && show_info_parse(b->info->str, b->info->len, &hi) == 0) {
		show_text(hi.host, strlen(hi.host), host, sizeof host);
		show_text(hi.user, strlen(hi.user), user, sizeof user);
		show_text(hi.command, hi.command_len, cmd, sizeof cmd);
		show_ago(hi.since_ms, clock_wall_ms(), since, sizeof since);
		printf("broken: %s@%s pid %lld (%s), acquired %s", user, host, hi.pid,
		       cmd, since);
		if (hi.fence >= 0)
			printf(", fence %lld", hi.fence);
		show_text(b->token->str, b->token->len, value, sizeof value);
		printf(", token %s%s\n", value, servers);
		show_info_free(&hi);
		return;
	}
	show_text(b->token->str, b->token->len, value, sizeof value);
	show_duration(b->left_ms, left, sizeof left);
	printf("broken: another client's lock, value '%s', %s left%s\n", value, left,
	       servers);
}

/* {1, type, pttl, token, info...}, {0, type, pttl} or {-1, type, pttl} */
static bool force_reply(const redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
	    r->elements % 2 == 0 || r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_STRING ||
	    r->element[2]->type != REDIS_REPLY_INTEGER)
		return false;
	for (size_t i = 3; i < r->elements; i++)
		if (r->element[i]->type != REDIS_REPLY_STRING)
			return false;
	return true;
}

/* Breaks the lock on every server, whoever holds it. 0 broken, 1 free, 70
 * a key left alone (no TTL, another type). */
static int force(struct lock *lk)
{
	char who[300], note[400];
	const char *argv[14];
	struct cmd cmd = { &script_force, 14, argv, NULL };
	struct broken *b = NULL;
	size_t n_ok, n_b = 0, cap = 0;
	bool left_alone = false;
	struct error err = { 0 };
	int status;

	me(lk, who, sizeof who);
	snprintf(note, sizeof note, "broken by %s (dlock release --force)", who);
	keys_of(lk, argv);
	argv[11] = lk->history_arg;
	argv[12] = lk->info;
	argv[13] = note;
	n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++)
		if (lk->nodes[i].state == NODE_DONE)
			cap += lk->nodes[i].replies[0]->elements / 2;
	b = calloc(cap ? cap : 1, sizeof *b);
	if (!b) {
		log_line(lk->p->name, "out of memory");
		return EX_OSERR;
	}
	for (size_t i = 0; i < lk->n_nodes; i++) {
		struct node *n = &lk->nodes[i];
		const redisReply *r = n->replies[0];

		if (n->state != NODE_DONE)
			continue;
		if (!force_reply(r)) {
			log_line(lk->p->name, "%s: unexpected reply to the force script",
				 n->url->text);
			n_ok--;
			continue;
		}
		if (r->element[0]->integer < 0) {
			bool no_ttl = r->element[2]->integer < 0;

			log_line(lk->p->name, "%s: %s is a %s%s: left alone", n->url->text,
				 lk->key, r->element[1]->str,
				 no_ttl ? " without TTL, not a lease" : ", not a lock");
			left_alone = true;
		}
		for (size_t e = 3; e + 1 < r->elements; e += 2) {
			size_t j;

			for (j = 0; j < n_b; j++)
				if (b[j].token->len == r->element[e]->len &&
				    memcmp(b[j].token->str, r->element[e]->str,
					   r->element[e]->len) == 0)
					break;
			if (j == n_b)
				b[n_b++] = (struct broken){ r->element[e], r->element[e + 1],
							    0, r->element[2]->integer };
			b[j].n_servers++;
			if (!b[j].info->len && r->element[e + 1]->len)
				b[j].info = r->element[e + 1];
		}
	}
	for (size_t j = 0; j < n_b; j++)
		print_broken(lk, &b[j]);
	fflush(stdout);
	free(b);
	if (left_alone)
		status = EX_SOFTWARE;
	else if (n_ok < quorum_majority(lk->n_nodes))
		status = unreachable(lk, n_ok, "answered", &err);
	else if (n_b > 0)
		status = EX_OK;
	else
		status = (log_line(lk->p->name, "not held"), 1);
	return status;
}

int release_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock lk;
	struct error err = { 0 };
	const char *token;
	int status;

	if (lock_init(&lk, base, &err) < 0) {
		log_error(base->name, &err);
		status = err.exit;
		goto out;
	}
	if (a->force) {
		status = force(&lk);
		goto out;
	}
	token = token_of(&lk, a);
	if (!token) {
		log_line(base->name, "no token: give --token or --force, or DLOCK_KEY=%s and DLOCK_TOKEN",
			 lk.key);
		status = EX_USAGE;
		goto out;
	}
	status = by_token(&lk, token);
out:
	lock_free(&lk);
	return status;
}
