/* release.c - Redis: dlock release, one holder by its token, or the lock
 * broken whoever holds it (--force); and dlock extend by a token. Either
 * way a dlock that runs a job under that lock is told at once: the scripts
 * push it a notice (see engine.c). The core prints (src/release.c). */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "fanout.h"
#include "quorum.h"
#include "rcommands.h"
#include "rlock.h"
#include "scripts.h"
#include "show.h"

/* "root@web1 pid 77": who we are, for the notice and the history. */
static void me(const struct rlock *lk, char *out, size_t len)
{
	struct show_info hi;

	if (show_info_parse(lk->core->info, strlen(lk->core->info), &hi) < 0) {
		snprintf(out, len, "another process");
		return;
	}
	snprintf(out, len, "%s@%s pid %lld", hi.user, hi.host, hi.pid);
	show_info_free(&hi);
}

/* script_release's and script_force's KEYS. */
static void keys_of(const struct rlock *lk, const char **argv)
{
	const char *keys[] = {
		lk->key, lk->alive_key, lk->history_key, lk->queue_key,
		lk->wake_key, lk->writers_key, lk->owner_key, lk->mode_key,
		lk->slots_key, lk->notice_key, lk->fence_key,
	};

	memcpy(argv, keys, sizeof keys);
}

static int unreachable(struct rlock *lk, size_t n_ok, const char *what,
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
	return err->exit;
}

/* Releases the holder of token, in any mode. 0 released (by a majority),
 * 1 not held by that token (err says more where there is more to say). */
int redis_release_token(struct lock *core, const char *token, struct error *err)
{
	struct rlock *lk = redis_rlock(core);
	char who[300], note[400], shown[80];
	const char *argv[21];
	struct cmd cmd = { &script_release, 21, argv, NULL };
	size_t n_ok, n_yes = 0, need = quorum_majority(lk->n_nodes);

	me(lk, who, sizeof who);
	snprintf(note, sizeof note, "released by %s (dlock release --token)", who);
	keys_of(lk, argv);
	argv[11] = token;
	argv[12] = lk->history_arg;
	argv[13] = "token";
	argv[14] = argv[15] = argv[16] = "";
	argv[17] = lk->core->info;
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
		return unreachable(lk, n_ok, "answered", err);
	show_text(token, strlen(token), shown, sizeof shown);
	if (n_yes > 0)
		error_set(err, 1, "not held by token %s: it was on %zu of %zu servers only (released there)",
			  shown, n_yes, lk->n_nodes);
	else
		error_set(err, 1, "not held by token %s", shown);
	return 1;
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

static char *dup_reply(const redisReply *r)
{
	char *d = malloc(r->len + 1);

	if (d) {
		memcpy(d, r->str, r->len);
		d[r->len] = '\0';
	}
	return d;
}

/* Breaks the lock on every server, whoever holds it. 0 broken, 1 free, 70
 * a key left alone (no TTL, another type), or another exit with err. */
int redis_force(struct lock *core, struct broken_holder **out, size_t *n_out,
		struct error *err)
{
	struct rlock *lk = redis_rlock(core);
	char who[300], note[400];
	const char *argv[14];
	struct cmd cmd = { &script_force, 14, argv, NULL };
	struct broken_holder *b = NULL;
	size_t n_ok, n_b = 0, cap = 0;
	bool left_alone = false;
	int status;

	me(lk, who, sizeof who);
	snprintf(note, sizeof note, "broken by %s (dlock release --force)", who);
	keys_of(lk, argv);
	argv[11] = lk->history_arg;
	argv[12] = lk->core->info;
	argv[13] = note;
	n_ok = fanout_round(lk->nodes, lk->n_nodes, &cmd, 1, lk->node_timeout_ms);
	for (size_t i = 0; i < lk->n_nodes; i++)
		if (lk->nodes[i].state == NODE_DONE)
			cap += lk->nodes[i].replies[0]->elements / 2;
	b = calloc(cap ? cap : 1, sizeof *b);
	if (!b) {
		error_set(err, EX_OSERR, "out of memory");
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
			const redisReply *token = r->element[e], *info = r->element[e + 1];
			size_t j;

			for (j = 0; j < n_b; j++)
				if (b[j].token_len == token->len &&
				    memcmp(b[j].token, token->str, token->len) == 0)
					break;
			if (j == n_b) {
				b[n_b] = (struct broken_holder){
					.token = dup_reply(token), .token_len = token->len,
					.left_ms = r->element[2]->integer,
				};
				if (!b[n_b++].token) {
					broken_free(b, n_b);
					error_set(err, EX_OSERR, "out of memory");
					return EX_OSERR;
				}
			}
			b[j].n_servers++;
			if (!b[j].info && info->len) {
				b[j].info = dup_reply(info);
				b[j].info_len = b[j].info ? info->len : 0;
			}
		}
	}
	*out = b;
	*n_out = n_b;
	if (left_alone)
		status = EX_SOFTWARE;
	else if (n_ok < quorum_majority(lk->n_nodes))
		status = unreachable(lk, n_ok, "answered", err);
	else
		status = n_b > 0 ? EX_OK : 1;
	fanout_end(lk->nodes, lk->n_nodes);
	return status;
}

/* extend --token: the token's lease renewed to the TTL. */
enum extend_result redis_extend_token(struct lock *core, struct error *err)
{
	struct rlock *lk = redis_rlock(core);
	enum extend_result r;

	if (strlen(core->token) >= sizeof lk->token) {
		error_set(err, EX_USAGE, "bad --token '%s': a token has at most %zu characters",
			  core->token, sizeof lk->token - 1);
		return EXTEND_FAILED;
	}
	snprintf(lk->token, sizeof lk->token, "%s", core->token);
	r = rlock_extend(lk, lk->node_timeout_ms, err);
	core->valid_until_ms = lk->valid_until_ms;
	return r;
}
