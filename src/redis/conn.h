/* conn.h - one Redis server: a non-blocking connection, the AUTH/SELECT
 * handshake, and the commands of the current round with their replies. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <hiredis/hiredis.h>
#include "cluster.h"
#include "log.h"
#include "net.h"
#include "url.h"

#define NODE_MAX_CMDS 4

/* From line body of a script's body on: the lines of file (a name under
 * src/redis/lua), from its line line on. */
struct script_line {
	int body;
	const char *file;
	int line;
};

/* A Lua script, as the connection sends it: EVALSHA by sha, EVAL with the
 * body when the server says NOSCRIPT. The scripts themselves are the lock
 * layer's: src/redis/lua/NAME.lua, embedded by the build (src/redis/lua/embed.py),
 * with the files they include (src/redis/lua/lib). */
struct script {
	const char *name;	/* for messages: "acquire script, line 3" */
	const char *body;
	const char *sha;	/* SHA-1 of body, for EVALSHA */
	int n_keys;
	const struct script_line *lines;	/* ends with body 0; NULL:
						 * lines counted from body */
};

/* One command of a round: a script call (EVALSHA, EVAL on NOSCRIPT) or,
 * with script NULL, a plain command. argv excludes the script/numkeys. */
struct cmd {
	const struct script *script;
	int argc;
	const char **argv;
	const size_t *argvlen;
};

enum node_state {
	NODE_IDLE,		/* nothing asked this round */
	NODE_BUSY,		/* connecting, writing commands, reading replies */
	NODE_DONE,		/* every reply of the round is in */
	NODE_FAILED,		/* err says why; the connection is closed */
};

struct node {
	struct url *url;	/* its addresses are cached there, shared by
				 * every node of that URL */
	const char *password;	/* when the URL carries none */
	redisContext *c;
	/* A TCP connect under way (c is NULL until it is done): every
	 * address of the host in turn (net.c), each for a bounded time. */
	bool dialing;
	struct net_dial dial;
	struct net_addrs dial_addrs;	/* the dial's addresses (a copy) */
	int64_t connect_ms;	/* the most a connect may take where the round
				 * has no deadline (BLPOP, BRPOP): --node-timeout;
				 * 0: the round's deadline */
	/* TLS (rediss://): the session over c's socket, which conn.c reads
	 * and writes itself; c keeps the output buffer and the reply reader. */
	struct tls *tls;
	bool handshaking;	/* TLS: the handshake is not done yet */
	bool tls_refused;	/* a TLS handshake failed (certificate, client
				 * certificate, no TLS there): a setting to
				 * fix, not an outage; sticky for the run */
	short tls_read_wait;	/* what the handshake or the reads wait for:
				 * POLLIN, or POLLOUT when OpenSSL must
				 * write first */
	short tls_write_wait;	/* the same for a write to retry, 0: none */
	size_t tls_wlen;	/* the length a write to retry passed */
	char master_host[256];	/* a sentinel's master as the sentinels name
				 * it: what its certificate must name */
	int master_port;
	/* redis-sentinel://: where the connection goes, and whether each
	 * round first asks a sentinel that it is still the master (the
	 * lock's own rounds; not a BLPOP's or BRPOP's, which wait without a
	 * deadline: a BLPOP goes where the rounds went, node_follow()). A
	 * failover moves the next round to the new master. */
	bool follow_master;
	struct net_addrs master_addr;	/* the master the connection went to
					 * (n 0: none yet) */
	bool next_asked;	/* a sentinel was asked for this round: */
	struct net_addrs next_addr;	/* its answer (n 0: none), */
	char next_why[384];	/* or why none, */
	int next_exit;		/* and its exit status (0: an answer) */
	bool any_master;	/* this round (a release) goes to the master
				 * of the last round when the sentinels do
				 * not say where it is now */
	int64_t master_age_ms;	/* since when the sentinel had the master
				 * as master when last asked: -1 unknown */
	int64_t master_seen_ms;	/* when it was last asked (monotonic) */
	bool failing_over;	/* it said it fails the master over */
	char moved[300];	/* "HOST:PORT" this round's failover left */
	/* Set before another thread drives the node (the renewal thread):
	 * connecting never looks a name up then, as getaddrinfo() blocks
	 * beyond any deadline. A host not resolved before fails the node
	 * with 69 ("cannot resolve"), and so does a sentinel's master given
	 * by name. Also, the URL's address cache is only written while
	 * this is unset. */
	bool no_resolve;
	char resolve_err[384];	/* why node_resolve() found no address, for
				 * the first connect to report rather than
				 * look again at once; "" when none */
	bool ready;		/* handshake done on this connection */
	bool auth_queued;	/* the next handshake reply answers AUTH */
	enum node_state state;
	bool skip;		/* sits rounds out (lock.c's only_granted()) */
	int64_t deadline_ms;
	const struct cmd *cmds;
	int n_cmds;
	int n_handshake;	/* handshake replies still expected; the round's
				 * commands are sent once all of them said OK */
	int order[NODE_MAX_CMDS * 4];	/* cmd index of each reply to come,
					 * + NODE_MAX_CMDS when sent as EVAL;
					 * -1: an ASKING's */
	int n_order, next_order;
	redisReply *replies[NODE_MAX_CMDS];
	struct error err;
	/* Redis Cluster (cluster.c): this round's ASK target and the
	 * redirections followed in it, and where the connection went when
	 * not to the URL's own address ("HOST:PORT", for messages). */
	struct cluster_round round;
	char via[80];
	/* rediss://: the name the connection's certificate is checked
	 * against (the URL's host, or the one a MOVED or ASK named) */
	char tls_host[256];
	/* redis+cluster://: the seed node connections go to (an index of
	 * url->seeds), how many others this round tried, whether this
	 * round had any reply (then a failure is not the seed's to pass on),
	 * and whether its commands were written (then they may have run) */
	int seed;
	int seeds_tried;
	bool answered;
	bool sent;
};

void node_init(struct node *n, struct url *url, const char *password);
/* Looks up the URL's host names that are not addresses (TCP host,
 * sentinels) and caches their addresses in the URL. Blocks (getaddrinfo):
 * for the main thread, before the first round. A name that does not
 * resolve is left to the first round, which fails the node with 69. */
void node_resolve(struct node *n);
/* The addresses of a host, looked up now where they were not before (a
 * cache in the URL) and the node may (no_resolve). Returns 0, or -1 with
 * "cannot resolve HOST: why". */
int node_address(const struct node *n, const char *host, int port,
		 struct net_addrs *a, char *why, size_t whylen);
/* Whether a and b name one server: the same address and port (after
 * resolution), the same unix socket (same file, or same path when it does
 * not exist), or the same sentinels' master. why gets "ADDRESS". */
bool node_same_server(const struct node *a, const struct node *b, char *why,
		      size_t whylen);
/* redis-sentinel://: asks the sentinels (enough of them to count, by
 * deadline_ms) where the master is, for the coming round, which then
 * asks no more; a connection to another server is closed (its host:port
 * in moved), so that the round opens one to the master named. with_age:
 * also for how long it has been the master (node_master_age_ms()).
 * Returns 0, or -1 when too few answered (next_why, next_exit): then the
 * round fails, unless any_master lets it go to the connection it has.
 * Asked again in a round, the same answer. */
int node_confirm_master(struct node *n, int64_t deadline_ms, bool with_age);
/* redis-sentinel://: n (a waiter's BLPOP connection) goes where to's last
 * connection went, the master the lock's rounds use: a connection of n's
 * elsewhere is closed (its round ended), and the next one goes to that
 * master without asking the sentinels. false: to has been nowhere yet
 * (then n has nowhere to go). Any other URL: true, nothing done. */
bool node_follow(struct node *n, const struct node *to);
/* redis-sentinel://: how long the master of the last answer has been the
 * master, by the sentinel that gave it (0 while it fails the master over);
 * -1 unknown (another URL, not asked with_age, an older or restricted
 * sentinel). A sentinel started since counts from its start: no more
 * than the master's age, as every sentinel's. */
int64_t node_master_age_ms(const struct node *n);
/* Starts a round: connects if needed and queues the handshake and cmds. */
void node_begin(struct node *n, const struct cmd *cmds, int n_cmds,
		int64_t deadline_ms);
/* The events poll() should wait for; 0 when the node is not in a round. */
short node_events(const struct node *n);
/* Handles poll() results, advancing the state. */
void node_step(struct node *n, short revents);
/* When node_check_deadline() must be called at the latest (its round's
 * deadline, or the end of a connect attempt to one of a host's
 * addresses); INT64_MAX when it is not in a round. */
int64_t node_wake_ms(const struct node *n);
/* Fails the node if its deadline has passed; moves a connect on to the
 * host's next address when the attempt on one has had its time. */
void node_check_deadline(struct node *n, int64_t now_ms);
/* Frees the replies of the last round. */
void node_end(struct node *n);
void node_close(struct node *n);
/* On a connection that has SUBSCRIBEd: reads what arrived and returns the
 * number of messages, or -1 when the connection is gone (then closed). */
int node_read_pushes(struct node *n);
/* A script's error without the script's SHA-1, which tells a user nothing:
 * Redis 7's "ERROR script: SHA, on @user_script:N." and Redis 6's
 * "ERR Error running script (call to f_SHA): @user_script:N: ERROR" both
 * become "ERROR (NAME script, line M)", M counted from the top of the
 * script's file, or "ERROR (NAME script, lib/FILE.lua line M)" for a line
 * of a file it includes; anything else is copied. */
void node_script_error(const char *s, const struct script *script, char *out,
		       size_t len);
int node_fd(const struct node *n);

/* Between conn.c, reply.c and tls.c, not for the lock layer: a round's
 * steps. */
/* Fails the round with exit and why (the node's URL, cluster node or seed
 * put first); the connection is closed. A redis+cluster:// seed that is
 * unreachable passes the round on to the next seed instead. */
void node_fail(struct node *n, int exit, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A connection to where the URL (or this round's MOVED or ASK) says, its
 * connect started. Returns 0, or -1 failed. */
int node_connect_start(struct node *n);
/* Queues the handshake the connection needs and the round's commands and
 * writes them (not while connecting). */
void node_start_round(struct node *n);
/* Queues the round's command i: by SHA-1 (EVALSHA), or its script's body
 * (EVAL); behind an ASKING where the round follows an ASK. */
void node_append_cmd(struct node *n, int i, bool by_sha);
/* Queues every command of the round, by SHA-1. */
void node_queue_cmds(struct node *n);
/* Writes what is queued, as much as the socket takes. */
void node_flush(struct node *n);
/* reply.c: the replies the reader has whole, in order: the handshake's,
 * then the round's commands' (a NOSCRIPT resent as EVAL, a MOVED or ASK
 * followed), each error sorted into an exit code. */
void node_take_replies(struct node *n);
/* tls.c: rediss://, the connection's TLS stream. Writes what hiredis
 * queued, once the handshake is done. */
void node_tls_flush(struct node *n);
/* Feeds the reply reader all that can be read now. Returns 0, or -1 with
 * why when the connection is over. */
int node_tls_receive(struct node *n, char *why, size_t whylen);
/* The handshake, then the round's writes and reads. */
void node_tls_step(struct node *n);
