/* reply.c - a round's replies on one Redis server (conn.c's connection):
 * the handshake's (AUTH, SELECT, CLUSTER MYID), whose errors stop the round
 * before its commands go out; then the commands' own, in the order they
 * were sent: an EVALSHA's NOSCRIPT resent once as EVAL, a MOVED or ASK
 * followed (cluster.c), a script's error told by its file and line rather
 * than its SHA-1. Every error is sorted into an exit code: 69 unreachable
 * or in a passing state (loading, busy, a replica, full), 77 credentials,
 * 64 a database the server lacks or a setting the lock refuses, 70
 * anything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <hiredis/hiredis.h>
#include "cluster.h"
#include "conn.h"

/* node_fail() with words that keep their capital ("Redis ..."). */
static void fail_as_said(struct node *n, int exit, const char *words)
{
	error_set(&n->err, exit, "%s: %s", n->url->text, words);
	n->state = NODE_FAILED;
	node_close(n);
}

static bool is_auth_error(const char *s)
{
	static const char *const prefixes[] = {
		"NOAUTH", "WRONGPASS", "NOPERM", "ERR invalid password",
		"ERR AUTH", "ERR Client sent AUTH", "ERR invalid username",
		/* Redis 7 to a client that sends a long command before AUTH */
		"ERR Protocol error: unauthenticated", NULL
	};

	for (const char *const *p = prefixes; *p; p++)
		if (strncmp(s, *p, strlen(*p)) == 0)
			return true;
	return false;
}

/* A server that will answer otherwise soon, so a wait and not a failure:
 * loading its data set, busy in a long script, moving a cluster slot, a
 * replica cut off from its master, or a replica, which a failover may be
 * about to promote. Redis 7 passes an error met inside a script on with
 * its own code first ("READONLY You can't write ... script: SHA, on
 * @user_script:1."); Redis 6 wraps it ("ERR Error running script (call to
 * f_SHA): @user_script:1: @user_script: 1: -READONLY You can't ..."). */
static bool is_transient(const char *s)
{
	static const char *const codes[] = {
		"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "READONLY",
		"CLUSTERDOWN", NULL
	};
	bool wrapped = strncmp(s, "ERR Error running script", 24) == 0;

	for (const char *const *c = codes; *c; c++) {
		size_t len = strlen(*c);
		const char *p = s;

		if (strncmp(s, *c, len) == 0 && (s[len] == ' ' || s[len] == '\0'))
			return true;
		while (wrapped && (p = strstr(p + 1, *c)))
			if ((p[-1] == '-' || p[-1] == ' ') &&
			    (p[len] == ' ' || p[len] == '\0'))
				return true;
	}
	return false;
}

/* A server at its maxclients answers a new connection's first command
 * with this, then closes it: it is there, and full (a fleet's minute),
 * which is a passing state like the ones above, named as such. */
static bool is_full(const char *s)
{
	return strncmp(s, "ERR max number of clients reached", 33) == 0;
}

/* A handshake reply that is an error: the round stops before its
 * commands were sent. */
static void handshake_failed(struct node *n, bool auth, const char *s)
{
	if (is_full(s))
		node_fail(n, EX_UNAVAILABLE, "%s (the server is full: maxclients)", s);
	else if (is_transient(s))
		node_fail(n, EX_UNAVAILABLE, "%s", s);
	else if (auth || is_auth_error(s))
		node_fail(n, EX_NOPERM, "%s", s);
	else if (n->url->n_seeds)	/* CLUSTER MYID refused */
		node_fail(n, EX_USAGE, "not a Redis Cluster node (redis+cluster:// lists "
		     "nodes of one cluster; redis:// names a single server): %s", s);
	else	/* a database past the server's "databases", or a cluster */
		node_fail(n, EX_USAGE, "database %d: %s", n->url->db, s);
}

/* Line n of the body -> "line M" of the script's own file, or
 * "lib/FILE.lua line M". */
static void where(const struct script *script, const char *digits,
		  size_t n_digits, char *out, size_t len)
{
	const struct script_line *seg = NULL;
	long n = strtol(digits, NULL, 10);
	char own[64];

	for (const struct script_line *l = script->lines; l && l->body; l++)
		if (l->body <= n)
			seg = l;
	if (!seg || n_digits > 9) {
		snprintf(out, len, "line %.*s", (int)n_digits, digits);
		return;
	}
	snprintf(own, sizeof own, "%s.lua", script->name);
	snprintf(out, len, "%s%sline %ld", strcmp(seg->file, own) ? seg->file : "",
		 strcmp(seg->file, own) ? " " : "", seg->line + (n - seg->body));
}

void node_script_error(const char *s, const struct script *script, char *out,
		       size_t len)
{
	const char *name = script->name;
	char at_line[96];
	static const char wrapped[] = "ERR Error running script (call to f_";
	const char *p = strstr(s, " script: "), *at, *line;
	size_t n_digits;

	if (strncmp(s, wrapped, sizeof wrapped - 1) == 0 &&
	    strspn(s + sizeof wrapped - 1, "0123456789abcdef") == 40 &&
	    strncmp(s + sizeof wrapped - 1 + 40, "): @user_script:", 16) == 0) {
		line = s + sizeof wrapped - 1 + 40 + 16;
		n_digits = strspn(line, "0123456789");
		p = line + n_digits + (line[n_digits] == ':');
		p += strspn(p, " ");
		/* a redis.call() error: "@user_script: 1: -READONLY ..." */
		if (strncmp(p, "@user_script: ", 14) == 0) {
			p += 14 + strspn(p + 14, "0123456789");
			p += (*p == ':');
			p += strspn(p, " ");
		}
		p += (*p == '-');
		where(script, line, n_digits, at_line, sizeof at_line);
		snprintf(out, len, "%s (%s script, %s)", p, name, at_line);
	} else if (p && strspn(p + 9, "0123456789abcdef") == 40) {
		at = strstr(p + 49, "@user_script:");
		line = at ? at + 13 : "";
		n_digits = strspn(line, "0123456789");
		if (n_digits)
			where(script, line, n_digits, at_line, sizeof at_line);
		snprintf(out, len, "%.*s (%s script%s%s)", (int)(p - s), s, name,
			 n_digits ? ", " : "", n_digits ? at_line : "");
	} else {
		snprintf(out, len, "%s", s);
	}
}

/* s as the server said it, for its class; shown as the user reads it. */
static void reply_failed(struct node *n, const char *s, const char *shown)
{
	if (strncmp(s, "DLOCKMODE ", 10) == 0)
		node_fail(n, EX_USAGE, "%s", s + 10);	/* -s vs --limit N */
	else if (strncmp(s, "DLOCKVERSION ", 13) == 0)
		fail_as_said(n, EX_SOFTWARE, s + 13);	/* "Redis 6.0 ..." */
	else if (is_full(s))
		node_fail(n, EX_UNAVAILABLE, "%s (the server is full: maxclients)", s);
	else if (is_transient(s))
		node_fail(n, EX_UNAVAILABLE, "%s", shown);
	else if (is_auth_error(s))
		node_fail(n, EX_NOPERM, "%s", strstr(s, "unauthenticated") ?
		     "authentication required (no password given)" : shown);
	else
		node_fail(n, EX_SOFTWARE, "%s", shown);
}

/* A MOVED or ASK reply: the round starts again, whole, on the node that
 * cluster.c names, on a connection of its own. The slot is the same for
 * every command of a round (one hash tag), so a redirection comes for the
 * first of them; one after a command ran here means the slot moved in
 * between: a passing state, the round is tried again later. */
static enum cluster_reply redirected(struct node *n, const char *s)
{
	struct error err;
	const struct cluster_conn conn = {
		n->url, node_fd(n), n->no_resolve, n->tls_host,
	};
	enum cluster_reply how = cluster_redirect(&n->round, &conn, s, &err);

	if (how == CLUSTER_NONE)
		return how;
	if (how == CLUSTER_ERROR) {
		node_fail(n, err.exit, "%s", err.msg);
		return how;
	}
	for (int i = 0; i < NODE_MAX_CMDS; i++)
		if (n->replies[i]) {
			node_fail(n, EX_UNAVAILABLE, "the cluster moved the lock's slot "
			     "during a round: %s", s);
			return CLUSTER_ERROR;
		}
	node_close(n);
	if (node_connect_start(n) < 0)
		return CLUSTER_ERROR;
	node_start_round(n);
	return how;
}

/* Returns false when the node stopped being busy (done or failed). */
static bool take_reply(struct node *n, redisReply *r)
{
	bool by_eval;
	int i;

	n->answered = true;
	if (n->n_handshake > 0) {
		bool auth = n->auth_queued;

		n->n_handshake--;
		n->auth_queued = false;
		if (r->type == REDIS_REPLY_ERROR) {
			handshake_failed(n, auth, r->str);
			freeReplyObject(r);
			return false;
		}
		freeReplyObject(r);
		if (n->n_handshake > 0)
			return true;
		n->ready = true;
		node_queue_cmds(n);
		node_flush(n);
		return n->state == NODE_BUSY;
	}
	i = n->order[n->next_order++];
	if (i < 0) {	/* ASKING's: the command's own reply tells */
		freeReplyObject(r);
		return true;
	}
	by_eval = i >= NODE_MAX_CMDS;
	i %= NODE_MAX_CMDS;
	if (r->type == REDIS_REPLY_ERROR) {
		switch (redirected(n, r->str)) {
		case CLUSTER_NONE:
			break;
		case CLUSTER_FOLLOW:
		case CLUSTER_ERROR:
			freeReplyObject(r);
			return n->state == NODE_BUSY;
		}
		/* Once per command: a NOSCRIPT to the EVAL that carried the
		 * script is an error like any other, not a cue to send it
		 * again (nor room in order[] for another). */
		if (strncmp(r->str, "NOSCRIPT", 8) == 0 && n->cmds[i].script &&
		    !by_eval) {
			freeReplyObject(r);
			node_append_cmd(n, i, false);
			node_flush(n);
			return n->state == NODE_BUSY;
		}
		if (n->cmds[i].script) {
			char why[384];

			node_script_error(r->str, n->cmds[i].script, why,
					  sizeof why);
			reply_failed(n, r->str, why);
		} else {
			reply_failed(n, r->str, r->str);
		}
		freeReplyObject(r);
		return false;
	}
	n->replies[i] = r;
	if (n->next_order == n->n_order) {
		n->state = NODE_DONE;
		return false;
	}
	return true;
}

/* The replies the reader has whole, in order. */
void node_take_replies(struct node *n)
{
	void *r;

	for (;;) {
		if (!n->c)	/* redirected: the new connection is not up yet */
			return;
		if (redisGetReplyFromReader(n->c, &r) != REDIS_OK) {
			node_fail(n, EX_SOFTWARE, "bad reply: %s", n->c->errstr);
			return;
		}
		if (!r || !take_reply(n, r))
			return;
	}
}

