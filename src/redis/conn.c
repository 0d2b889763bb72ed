/* conn.c - one Redis server, driven by fanout.c's poll loop: a non-blocking
 * connect to the addresses of a name looked up once (each address in turn,
 * for a bounded time: net.c), the AUTH/SELECT handshake (its
 * replies awaited before the round's commands go out), the round's
 * commands written (EVALSHA); reply.c reads the replies (an EVAL resent on
 * NOSCRIPT) and sorts errors into exit codes. Any failure closes the
 * connection: the next round starts on a fresh one, never on a stream with
 * replies still in flight. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <hiredis/sds.h>
#include "clock.h"
#include "cluster.h"
#include "conn.h"
#include "sentinel.h"
#include "tls.h"

#define MAX_ARGS 24

void node_init(struct node *n, struct url *url, const char *password)
{
	*n = (struct node){ .url = url, .password = password, .master_age_ms = -1 };
	n->dial.fd = -1;
}

int node_fd(const struct node *n)
{
	return n->dialing ? n->dial.fd : n->c ? n->c->fd : -1;
}

void node_close(struct node *n)
{
	if (n->dialing)
		net_dial_end(&n->dial);
	n->dialing = false;
	tls_free(n->tls);
	n->tls = NULL;
	n->handshaking = false;
	n->tls_write_wait = 0;
	n->tls_wlen = 0;
	if (n->c)
		redisFree(n->c);
	n->c = NULL;
	n->ready = false;
}

/* redis+cluster://: a seed node failed this round (unreachable, or in a
 * passing state). Any node of the cluster names the owner of the lock's
 * slot (MOVED), so the rounds that follow go to the next seed; this one
 * too while some seed is untried, time is left, nothing came back (not
 * even the handshake: the server was there, and its answer stands) and
 * none of the round's commands was written: a server that got them may
 * have run them (then lost the connection), and running them again
 * elsewhere, which leads to the same owner, would find the lock taken by
 * this very round. Not for a cluster node that a MOVED named
 * (cluster_forget() sends the next round to the seeds), nor past a TLS
 * handshake that failed (a setting to fix). Returns whether the round
 * goes on at the next seed. */
static bool next_seed(struct node *n)
{
	if (n->url->n_seeds < 2 || n->state != NODE_BUSY || n->via[0] ||
	    n->tls_refused)
		return false;
	n->seed = (n->seed + 1) % n->url->n_seeds;
	if (n->answered || n->sent || n->seeds_tried >= n->url->n_seeds - 1 ||
	    clock_now_ms() >= n->deadline_ms)
		return false;
	n->seeds_tried++;
	return true;
}

void node_fail(struct node *n, int exit, const char *fmt, ...)
{
	char why[384], seed[300] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	log_lower_first(why);
	if (n->url->n_seeds > 1 && !n->via[0])
		snprintf(seed, sizeof seed, " (seed %s:%d)",
			 n->url->seeds[n->seed].host, n->url->seeds[n->seed].port);
	error_set(&n->err, exit, "%s%s%s%s%s: %s", n->url->text,
		  n->via[0] ? " (cluster node " : "", n->via, n->via[0] ? ")" : "",
		  seed, why);
	/* an owner that is gone: the URL's node names the next one */
	if (n->via[0] && exit == EX_UNAVAILABLE)
		cluster_forget(n->url);
	if (exit == EX_UNAVAILABLE && next_seed(n)) {
		node_close(n);
		n->err = (struct error){ 0 };
		if (node_connect_start(n) == 0)
			node_start_round(n);
		return;
	}
	n->state = NODE_FAILED;
	node_close(n);
}

/* When a connect must be done by: the round's deadline, or where the round
 * has none (BLPOP), connect_ms from now. */
static int64_t connect_deadline(const struct node *n)
{
	int64_t now_ms = clock_now_ms();

	if (n->connect_ms > 0 && n->deadline_ms - now_ms > n->connect_ms)
		return now_ms + n->connect_ms;
	return n->deadline_ms;
}

/* Looks host up (blocking): every address it has, in getaddrinfo()'s
 * order, into a. The count last: a reader sees no address, or all of them.
 * Returns 0, or -1 with "cannot resolve HOST: why". */
static int lookup(const char *host, int port, struct net_addrs *a, char *why,
		  size_t whylen)
{
	struct net_addrs found;

	if (net_resolve(host, port, AF_UNSPEC, &found, why, whylen) < 0)
		return -1;
	memcpy(a->addr, found.addr, found.n * sizeof found.addr[0]);
	a->n = found.n;
	return 0;
}

void node_resolve(struct node *n)
{
	struct url *u = n->url;
	char why[384];

	n->resolve_err[0] = '\0';
	if (u->kind == URL_TCP && !u->addr.n &&
	    lookup(u->host, u->port, &u->addr, why, sizeof why) < 0)
		snprintf(n->resolve_err, sizeof n->resolve_err, "%s", why);
	/* Another seed that does not resolve fails when its turn comes. */
	for (int i = 1; i < u->n_seeds; i++)
		if (!u->seeds[i].addr.n)
			lookup(u->seeds[i].host, u->seeds[i].port, &u->seeds[i].addr,
			       why, sizeof why);
	/* A sentinel that does not resolve is looked up again when asked. */
	for (int i = 0; u->kind == URL_SENTINEL && i < u->n_sentinels; i++)
		if (!u->sentinels[i].addr.n)
			lookup(u->sentinels[i].host, u->sentinels[i].port,
			       &u->sentinels[i].addr, why, sizeof why);
}

int node_address(const struct node *n, const char *host, int port,
		 struct net_addrs *a, char *why, size_t whylen)
{
	if (a->n)
		return 0;
	if (!n->no_resolve)
		return lookup(host, port, a, why, whylen);
	snprintf(why, whylen, "cannot resolve %s: not resolved before the lease started",
		 host);
	return -1;
}

/* Asks the sentinels for the master's address (the answer this round
 * already had, if any); its host as they name it goes to n->master_host. */
static int sentinel_resolve(struct node *n, struct net_addrs *master)
{
	struct master_view v;
	char why[384];
	int exit;

	if (n->next_asked && !n->next_addr.n) {	/* asked, no answer */
		node_fail(n, n->next_exit ? n->next_exit : EX_UNAVAILABLE, "%s", n->next_why);
		return -1;
	}
	if (n->next_asked) {
		*master = n->next_addr;
		return 0;
	}
	exit = sentinel_query(n, connect_deadline(n), false, &v, master, why,
			      sizeof why);
	if (exit || !master->n) {
		node_fail(n, exit ? exit : EX_UNAVAILABLE, "%s", why);
		return -1;
	}
	snprintf(n->master_host, sizeof n->master_host, "%s", v.host);
	n->master_port = v.port;
	n->master_age_ms = -1;	/* not asked with its age */
	return 0;
}

int node_confirm_master(struct node *n, int64_t deadline_ms, bool with_age)
{
	struct master_view v;
	struct net_addrs a;

	if (n->url->kind != URL_SENTINEL)
		return -1;
	if (n->next_asked)
		return n->next_exit ? -1 : 0;
	n->next_asked = true;
	n->next_addr.n = 0;
	n->next_exit = sentinel_query(n, deadline_ms, with_age, &v, &a, n->next_why,
				      sizeof n->next_why);
	if (n->next_exit)
		return -1;
	n->master_age_ms = v.age_ms;
	n->master_seen_ms = clock_now_ms();
	n->failing_over = v.failing_over;
	/* a master named by a host name not looked up (the renewal thread
	 * looks nothing up): the same name, or another server */
	if ((n->c || n->dialing) &&
	    (a.n ? url_addrs_shared(&a, &n->master_addr) < 0 :
		     v.port != n->master_port || strcmp(v.host, n->master_host) != 0)) {
		/* a failover: this round goes to the new master, where the
		 * lock is ours only if it was replicated in time */
		snprintf(n->moved, sizeof n->moved, "%s:%d", n->master_host,
			 n->master_port);
		node_close(n);
	}
	snprintf(n->master_host, sizeof n->master_host, "%s", v.host);
	n->master_port = v.port;
	n->next_addr = a;
	return 0;
}

bool node_follow(struct node *n, const struct node *to)
{
	if (n->url->kind != URL_SENTINEL)
		return true;
	if (!to->master_addr.n)
		return false;
	if (n->c || n->dialing) {
		if (url_addrs_shared(&n->master_addr, &to->master_addr) >= 0)
			return true;
		node_end(n);	/* a BLPOP on the old master: given up */
		node_close(n);
	}
	/* the next connection goes there, asking no sentinel */
	n->next_asked = true;
	n->next_exit = 0;
	n->next_addr = to->master_addr;
	snprintf(n->master_host, sizeof n->master_host, "%s", to->master_host);
	n->master_port = to->master_port;
	return true;
}

int64_t node_master_age_ms(const struct node *n)
{
	if (n->url->kind != URL_SENTINEL || n->master_age_ms < 0)
		return -1;
	return n->master_age_ms + (clock_now_ms() - n->master_seen_ms);
}

/* The connection is up on fd (non-blocking, close-on-exec): hiredis'
 * context over it, for its output buffer and reply reader, and for
 * rediss:// a TLS session checked against n->tls_host, whose handshake
 * node_start_round() begins. Returns 0, or -1 failed. */
static int connected(struct node *n, int fd)
{
	char why[384];

	n->c = redisConnectFd(fd);
	if (!n->c) {
		close(fd);
		node_fail(n, EX_OSERR, "out of memory");
		return -1;
	}
	/* redisConnectFd() takes the socket for a blocking one: EAGAIN would
	 * be an error. */
	n->c->flags &= ~REDIS_BLOCK;
	if (!n->url->tls)
		return 0;
	n->tls = tls_new(fd, n->tls_host, why, sizeof why);
	if (!n->tls) {
		node_fail(n, EX_OSERR, "%s", why);
		return -1;
	}
	n->handshaking = true;
	n->tls_read_wait = POLLOUT;
	return 0;
}

/* No address connected: 69 with what each said; one address that did not
 * answer in time is the round's deadline, said as such. */
static void dial_failed(struct node *n, const char *why)
{
	const struct net_dial *d = &n->dial;
	int e = 0;

	for (size_t i = 0; i < d->addrs->n; i++)
		if (d->errs[i])
			e = d->errs[i];
	if (e == EMFILE || e == ENFILE || e == ENOMEM || e == ENOBUFS)
		node_fail(n, EX_OSERR, "%s", why);
	else if (d->addrs->n == 1 && e == ETIMEDOUT)
		node_fail(n, EX_UNAVAILABLE, "no answer in time (--node-timeout)");
	else
		node_fail(n, EX_UNAVAILABLE, "%s", why);
}

/* Moves the connect on (net.c). Returns 0 (still connecting, or connected:
 * n->c set), or -1 failed. */
static int dial_step(struct node *n)
{
	char why[512];
	int fd, r = net_dial_step(&n->dial, &fd, why, sizeof why);

	if (r == 0)
		return 0;
	n->dialing = false;
	if (r < 0) {
		dial_failed(n, why);
		return -1;
	}
	return connected(n, fd);
}

/* A connection to the addresses a, started: each in turn, one that does
 * not answer given its share of the time (net.c), by the round's
 * deadline, or by connect_ms where the round has none. For rediss://, the
 * server's certificate must name host. Returns 0 (connecting, or
 * connected: n->c set), or -1 failed. */
static int tcp_start(struct node *n, const struct net_addrs *a, const char *host)
{
	snprintf(n->tls_host, sizeof n->tls_host, "%s", host);
	n->dial_addrs = *a;
	net_dial_start(&n->dial, &n->dial_addrs, connect_deadline(n));
	n->dialing = true;
	return dial_step(n);
}

int node_connect_start(struct node *n)
{
	struct url *u = n->url;
	struct net_addrs master;
	char why[384], named[256];

	switch (u->kind) {
	case URL_SENTINEL:
		if (sentinel_resolve(n, &master) < 0)
			return -1;
		n->master_addr = master;
		return tcp_start(n, &master, n->master_host);
	case URL_TCP:
		/* a cluster node that a MOVED or ASK named, checked against
		 * its own name (a seed's, when the redirection named none) */
		if (cluster_target(&n->round, u, &master, n->via, sizeof n->via,
				   named, sizeof named))
			return tcp_start(n, &master, named[0] ? named :
					 u->seeds[n->seed].host[0] ?
					 u->seeds[n->seed].host : u->host);
		if (n->seed > 0) {	/* redis+cluster://: a seed after the first */
			if (node_address(n, u->seeds[n->seed].host, u->seeds[n->seed].port,
				    &u->seeds[n->seed].addr, why, sizeof why) < 0) {
				node_fail(n, EX_UNAVAILABLE, "%s", why);
				return -1;
			}
			return tcp_start(n, &u->seeds[n->seed].addr,
					 u->seeds[n->seed].host);
		}
		if (n->resolve_err[0]) {
			/* node_resolve() just tried: report, look again next time */
			node_fail(n, EX_UNAVAILABLE, "%s", n->resolve_err);
			n->resolve_err[0] = '\0';
			return -1;
		}
		if (node_address(n, u->host, u->port, &u->addr, why, sizeof why) < 0) {
			node_fail(n, EX_UNAVAILABLE, "%s", why);
			return -1;
		}
		return tcp_start(n, &u->addr, u->host);
	case URL_UNIX:
		break;
	}
	n->c = redisConnectUnixNonBlock(u->path);
	if (!n->c) {
		node_fail(n, EX_OSERR, "out of memory");
		return -1;
	}
	if (n->c->err) {
		/* socket() failed: hiredis says its strerror() */
		node_fail(n, net_local_failure_said(n->c->errstr) ? EX_OSERR : EX_UNAVAILABLE,
			  "%s", n->c->errstr);
		return -1;
	}
	/* hiredis 0.14 opens sockets without SOCK_CLOEXEC. */
	if (fcntl(n->c->fd, F_SETFD, FD_CLOEXEC) < 0) {
		node_fail(n, EX_OSERR, "fcntl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void node_append_cmd(struct node *n, int i, bool by_sha)
{
	const struct cmd *cmd = &n->cmds[i];
	const char *argv[MAX_ARGS];
	size_t argvlen[MAX_ARGS];
	char numkeys[16];
	int argc = 0;

	if (n->round.asking) {	/* ASK: each command of the round is let in */
		redisAppendCommand(n->c, "ASKING");
		n->order[n->n_order++] = -1;
	}
	if (!cmd->script) {
		redisAppendCommandArgv(n->c, cmd->argc, cmd->argv, cmd->argvlen);
		n->order[n->n_order++] = i;
		return;
	}
	snprintf(numkeys, sizeof numkeys, "%d", cmd->script->n_keys);
	argv[argc++] = by_sha ? "EVALSHA" : "EVAL";
	argv[argc++] = by_sha ? cmd->script->sha : cmd->script->body;
	argv[argc++] = numkeys;
	for (int k = 0; k < argc; k++)
		argvlen[k] = strlen(argv[k]);
	for (int k = 0; k < cmd->argc && argc < MAX_ARGS; k++, argc++) {
		argv[argc] = cmd->argv[k];
		argvlen[argc] = cmd->argvlen ? cmd->argvlen[k] : strlen(cmd->argv[k]);
	}
	redisAppendCommandArgv(n->c, argc, argv, argvlen);
	n->order[n->n_order++] = by_sha ? i : i + NODE_MAX_CMDS;
}

void node_queue_cmds(struct node *n)
{
	for (int i = 0; i < n->n_cmds; i++)
		node_append_cmd(n, i, true);
}

static void queue_round(struct node *n)
{
	const struct url *u = n->url;
	const char *password = u->has_password ? u->password : n->password;

	n->n_order = n->next_order = n->n_handshake = 0;
	n->auth_queued = false;
	if (!n->ready) {
		if (password && *password) {
			if (u->user[0])
				redisAppendCommand(n->c, "AUTH %s %s", u->user, password);
			else
				redisAppendCommand(n->c, "AUTH %s", password);
			n->n_handshake++;
			n->auth_queued = true;
		}
		if (u->db) {
			redisAppendCommand(n->c, "SELECT %d", u->db);
			n->n_handshake++;
		}
		/* redis+cluster:// (database 0, no SELECT): seeds that are
		 * standalone servers would each be a lock of their own, and
		 * hosts that reach different ones would both hold it */
		if (u->n_seeds) {
			redisAppendCommand(n->c, "CLUSTER MYID");
			n->n_handshake++;
		}
	}
	/* The commands wait for the handshake's replies: pipelined behind a
	 * failed AUTH they would run as the default user, behind a failed
	 * SELECT in database 0. One more round trip, only on a connection
	 * that needs a handshake, once. */
	if (n->n_handshake == 0) {
		n->ready = true;
		node_queue_cmds(n);
	}
}

void node_flush(struct node *n)
{
	size_t before;
	int done = 0;

	if (!n->c)	/* connecting: written once connected */
		return;
	before = n->tls ? 0 : sdslen(n->c->obuf);
	if (n->tls) {
		node_tls_flush(n);
		return;
	}
	if (sdslen(n->c->obuf) == 0)
		return;
	if (redisBufferWrite(n->c, &done) != REDIS_OK) {
		node_fail(n, EX_UNAVAILABLE, "%s", n->c->errstr);
		return;
	}
	/* once written, the round's commands may run (see next_seed) */
	n->sent |= n->ready && sdslen(n->c->obuf) < before;
}

void node_begin(struct node *n, const struct cmd *cmds, int n_cmds,
		int64_t deadline_ms)
{
	n->cmds = cmds;
	n->n_cmds = n_cmds;
	n->deadline_ms = deadline_ms;
	n->err = (struct error){ 0 };
	memset(n->replies, 0, sizeof n->replies);
	n->round.n_redirects = 0;
	n->seeds_tried = 0;
	n->answered = n->sent = false;
	if (n->round.asking) {	/* an ASK lasts one round */
		node_close(n);
		n->round.asking = false;
	}
	if (n->dialing)		/* a connect a round left: afresh */
		node_close(n);
	n->state = NODE_BUSY;
	/* redis-sentinel://: a round goes where the sentinels say the master
	 * is now, asking them once (rlock_try() may have already) */
	n->moved[0] = '\0';
	/* The rest for the round itself. Without the sentinels' word the
	 * master it knows may be one they failed over (which acts as master
	 * for seconds, or for as long as it is cut off with us): nothing
	 * there proves the lock ours, so the round fails; the connection,
	 * with nothing sent, stays for a release, which goes there all the
	 * same: it deletes only what is ours. */
	if (n->c && n->follow_master && n->url->kind == URL_SENTINEL &&
	    node_confirm_master(n, clock_now_ms() +
				(deadline_ms - clock_now_ms()) / 2, false) < 0 &&
	    !n->any_master) {
		n->next_asked = false;
		error_set(&n->err, n->next_exit ? n->next_exit : EX_UNAVAILABLE,
			  "%s: %s", n->url->text, n->next_why);
		n->state = NODE_FAILED;
		return;
	}
	if (!n->c) {
		n->via[0] = '\0';
		/* failed, or (redis+cluster://) passed on to the next seed */
		if (node_connect_start(n) < 0) {
			n->next_asked = false;
			return;
		}
	}
	n->next_asked = false;
	node_start_round(n);
}

/* The round's commands, behind the handshake a new connection needs,
 * written at once: an idle socket is writable. Saves a poll() per round.
 * Not while connecting: the connect does this once done. */
void node_start_round(struct node *n)
{
	if (!n->c)
		return;
	queue_round(n);
	if (n->handshaking)	/* TLS: the handshake first, now */
		node_tls_step(n);
	else
		node_flush(n);
}

short node_events(const struct node *n)
{
	if (n->state != NODE_BUSY)
		return 0;
	if (n->dialing)
		return POLLOUT;
	if (n->tls && n->handshaking)
		return n->tls_read_wait;
	if (n->tls)
		return (short)(n->tls_read_wait | (sdslen(n->c->obuf) == 0 ? 0 :
			       n->tls_write_wait ? n->tls_write_wait : POLLOUT));
	return (short)(POLLIN | (sdslen(n->c->obuf) > 0 ? POLLOUT : 0));
}

void node_step(struct node *n, short revents)
{
	if (n->state != NODE_BUSY)
		return;
	if (n->dialing) {
		if (dial_step(n) == 0)
			node_start_round(n);
		return;
	}
	if (n->tls) {
		node_tls_step(n);
		return;
	}
	if (revents & POLLOUT) {
		node_flush(n);
		if (n->state != NODE_BUSY)
			return;
	}
	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return;
	if (redisBufferRead(n->c) != REDIS_OK) {
		node_fail(n, EX_UNAVAILABLE, "%s",
		     n->c->errstr[0] ? n->c->errstr : "connection lost");
		return;
	}
	node_take_replies(n);
}

int64_t node_wake_ms(const struct node *n)
{
	if (n->state != NODE_BUSY)
		return INT64_MAX;
	if (n->dialing && net_dial_wake_ms(&n->dial) < n->deadline_ms)
		return net_dial_wake_ms(&n->dial);
	return n->deadline_ms;
}

void node_check_deadline(struct node *n, int64_t now_ms)
{
	/* an address that did not answer in its time: the next one */
	if (n->state == NODE_BUSY && n->dialing &&
	    now_ms >= net_dial_wake_ms(&n->dial) && dial_step(n) == 0)
		node_start_round(n);
	if (n->state == NODE_BUSY && now_ms >= n->deadline_ms && n->tls &&
	    n->handshaking)
		n->tls_refused = true;
	if (n->state == NODE_BUSY && now_ms >= n->deadline_ms)
		node_fail(n, EX_UNAVAILABLE, "%s", n->tls && n->handshaking ?
		     "TLS handshake: no answer in time (--node-timeout; does the server speak TLS on that port?)" :
		     "no answer in time (--node-timeout)");
}

void node_end(struct node *n)
{
	for (int i = 0; i < NODE_MAX_CMDS; i++) {
		if (n->replies[i])
			freeReplyObject(n->replies[i]);
		n->replies[i] = NULL;
	}
	n->state = NODE_IDLE;
}

int node_read_pushes(struct node *n)
{
	int count = 0;
	char why[384];
	void *r;

	if (!n->c || (n->tls ? node_tls_receive(n, why, sizeof why) < 0 :
		      redisBufferRead(n->c) != REDIS_OK)) {
		node_close(n);
		return -1;
	}
	for (;;) {
		if (redisGetReplyFromReader(n->c, &r) != REDIS_OK) {
			node_close(n);
			return -1;
		}
		if (!r)
			return count;
		freeReplyObject(r);
		count++;
	}
}

/* One host:port under two names, or twice the same name. */
static bool same_host(const char *ha, int pa, const struct net_addrs *aa,
		      const char *hb, int pb, const struct net_addrs *ab,
		      char *why, size_t whylen)
{
	int i;

	if (aa->n && ab->n) {
		if ((i = url_addrs_shared(aa, ab)) < 0)
			return false;
		net_addr_text(&aa->addr[i], why, whylen);
		return true;
	}
	if (pa != pb || strcasecmp(ha, hb) != 0)
		return false;
	snprintf(why, whylen, "%s:%d", ha, pa);
	return true;
}

/* path with "//" and "/./" collapsed and no trailing '/': how a socket
 * that does not exist (yet) is compared. */
static void normal_path(const char *path, char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *p = path; *p && o + 1 < outlen; p++) {
		if (*p == '/' && o > 0 && out[o - 1] == '/')
			continue;
		if (*p == '.' && o > 0 && out[o - 1] == '/' && (p[1] == '/' || !p[1]))
			continue;
		out[o++] = *p;
	}
	while (o > 1 && out[o - 1] == '/')
		o--;
	out[o] = '\0';
}

bool node_same_server(const struct node *a, const struct node *b, char *why,
		      size_t whylen)
{
	const struct url *ua = a->url, *ub = b->url;

	if (ua->kind != ub->kind)
		return false;	/* unix and TCP to one server: not told apart */
	switch (ua->kind) {
	case URL_TCP:
		return same_host(ua->host, ua->port, &ua->addr, ub->host, ub->port,
				 &ub->addr, why, whylen);
	case URL_UNIX: {
		char pa[sizeof ua->path], pb[sizeof ub->path];
		struct stat sa, sb;

		snprintf(why, whylen, "%s", ua->path);
		if (stat(ua->path, &sa) == 0 && stat(ub->path, &sb) == 0)
			return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
		normal_path(ua->path, pa, sizeof pa);
		normal_path(ub->path, pb, sizeof pb);
		return strcmp(pa, pb) == 0;
	}
	case URL_SENTINEL:
		if (strcmp(ua->master, ub->master) != 0)
			return false;
		for (int i = 0; i < ua->n_sentinels; i++)
			for (int k = 0; k < ub->n_sentinels; k++)
				if (same_host(ua->sentinels[i].host, ua->sentinels[i].port,
					      &ua->sentinels[i].addr,
					      ub->sentinels[k].host, ub->sentinels[k].port,
					      &ub->sentinels[k].addr, why, whylen)) {
					size_t len = strlen(why);

					snprintf(why + len, whylen - len, " master %s",
						 ua->master);
					return true;
				}
		return false;
	}
	return false;
}
