/* fuzz_replies.c - libFuzzer target for every server reply dlock reads.
 *
 * The servers are the input: each connection dlock opens gets the next
 * part of it (parts separated by SEP) as everything that server will ever
 * say, on a socketpair, and then EOF. So the replies go through hiredis'
 * reader and dlock's own code as they would from a socket: conn.c (the
 * handshake, NOSCRIPT, error classes, script errors), fanout.c, and the
 * code that interprets each reply: the acquire script's (lock.c, with
 * --fair's ticket, --limit's slots, --wait-replicas' WAIT, the fence
 * write-back, and wait.c's retry on a named slot), extend's, release's
 * (as a job ends, --token, --force), status's (named locks and the SCAN
 * listing, text and JSON) and history's (XREVRANGE). Once the parts run
 * out, a connection fails (no such socket), as a server that went away.
 *
 * The seam is the connect: the target links with
 * -Wl,--wrap=redisConnectUnixNonBlock (tests/meson.build), and the
 * servers' URLs are unix sockets. Nothing in src/ knows of the fuzzer.
 *
 * Input: byte 0 picks the scenario, byte 1 the settings (FLAG_*), the
 * rest are the servers' parts. See tests/fuzz/README.md.
 */
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "commands.h"
#include "lock.h"
#include "signals.h"
#include "url.h"
#include "wait.h"

extern const struct engine redis_engine;

#define SEP "\n--\n"	/* between two connections' parts */
#define MAX_CONNS 64

/* byte 1 */
#define FLAG_SERVERS 0x03	/* 1, 3, 2 or 5 servers */
#define FLAG_FAIR 0x04		/* --fair: a ticket first (INCR) */
#define FLAG_MODE 0x18		/* exclusive, -s, --limit 2, --limit 3 */
#define FLAG_REPLICAS 0x20	/* --wait-replicas 1: WAIT after acquiring */
#define FLAG_HANDSHAKE 0x40	/* a password and ?db=2: AUTH and SELECT */
#define FLAG_ALT 0x80		/* --json; acquire: re-entry (DLOCK_KEY) */

enum scenario { ACQUIRE, EXTEND, RELEASE_TOKEN, RELEASE_FORCE, STATUS,
		STATUS_ALL, HISTORY, N_SCENARIOS };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
redisContext *__real_redisConnectUnixNonBlock(const char *path);
redisContext *__wrap_redisConnectUnixNonBlock(const char *path);

static const uint8_t *rest;	/* the parts not handed out yet */
static size_t rest_len;
static bool parts_left;
static int peers[MAX_CONNS];
static int n_peers;

/* The next part: up to the next SEP, or the end. */
static bool next_part(const uint8_t **part, size_t *len)
{
	const uint8_t *sep;

	if (!parts_left)
		return false;
	*part = rest;
	sep = memmem(rest, rest_len, SEP, strlen(SEP));
	if (!sep) {
		*len = rest_len;
		parts_left = false;
		return true;
	}
	*len = (size_t)(sep - rest);
	rest_len -= *len + strlen(SEP);
	rest = sep + strlen(SEP);
	return true;
}

/* hiredis' own reply functions, and createArray bounded by what the
 * input could hold: "*400000000\r\n" makes hiredis calloc 3 GB (as any
 * hiredis would, for any client), which says nothing about dlock and
 * makes an input take seconds under ASan. An array that claims more
 * elements than bytes are left is cut short by EOF either way. */
static redisReplyObjectFunctions hiredis_fn, capped_fn;
static size_t input_size;

static void *capped_array(const redisReadTask *task, int elements)
{
	if (elements > 0 && (size_t)elements > input_size)
		return NULL;	/* hiredis: "Out of memory", the node fails */
	return hiredis_fn.createArray(task, elements);
}

/* dlock's connect to a unix socket: a socketpair whose other end has
 * already said all this server will say. */
redisContext *__wrap_redisConnectUnixNonBlock(const char *path)
{
	const uint8_t *part;
	size_t len;
	int sv[2];
	redisContext *c;

	if (n_peers == MAX_CONNS || !next_part(&part, &len) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return __real_redisConnectUnixNonBlock("/nonexistent/dlock-fuzz.sock");
	/* Larger than any part (-max_len), and than what dlock writes. */
	for (size_t off = 0; off < len;) {
		ssize_t n = write(sv[1], part + off, len - off);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);	/* then EOF; dlock may still write */
	peers[n_peers++] = sv[1];
	c = redisConnectFd(sv[0]);
	if (!c)
		return NULL;
	c->flags &= ~REDIS_BLOCK;	/* as conn.c does for TCP */
	if (!capped_fn.createArray) {
		hiredis_fn = *c->reader->fn;
		capped_fn = hiredis_fn;
		capped_fn.createArray = capped_array;
	}
	c->reader->fn = &capped_fn;
	return c;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	signal(SIGPIPE, SIG_IGN);	/* as dlock: a closed peer is an error */
	if (!freopen("/dev/null", "w", stdout))	/* status, history print */
		abort();
	stderr = fopen("/dev/null", "w");	/* dlock's lines; libFuzzer keeps its own */
	return stderr ? 0 : -1;
}

static void acquire(const struct lock_params *p)
{
	struct signals sig = { .fd = -1 };	/* never polled: no wait */
	struct lock lk;
	struct error err = { 0 };
	enum lock_result r;
	int signo = 0;

	if (lock_init(&lk, p, &err) == 0) {
		r = wait_acquire(&lk, 0, &sig, &signo, &err);
		if (r == LOCK_ACQUIRED) {
			lock_extend(&lk, p->node_timeout_ms, &err);
			lock_release_job(&lk, 0, false, &err);
		}
	}
	lock_free(&lk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t n_servers[] = { 1, 3, 2, 5 };
	static const long modes[] = { 0, LOCK_SHARED, 2, 3 };
	static const char *keys[] = { "K", "other", NULL };
	struct url urls[5];
	char text[64], why[128];
	struct lock_params p;
	struct command_args a = { .keys = keys, .count = 10, .history = 100,
				  .conflict_exit = 1 };
	uint8_t flags;

	if (size < 2)
		return 0;
	flags = data[1];
	input_size = size;
	rest = data + 2;
	rest_len = size - 2;
	parts_left = true;
	n_peers = 0;
	p = (struct lock_params){
		.name = "K", .prefix = "dlock:", .engine = &redis_engine,
		.servers = urls, .n_servers = n_servers[flags & FLAG_SERVERS],
		.password = flags & FLAG_HANDSHAKE ? "secret" : NULL,
		.ttl_ms = 30000, .node_timeout_ms = 100,
		.limit = modes[(flags & FLAG_MODE) >> 3],
		.fair = flags & FLAG_FAIR, .waits = true,
		.wait_replicas = flags & FLAG_REPLICAS ? 1 : 0,
		.command = "fuzz", .history = 100,
	};
	for (size_t i = 0; i < p.n_servers; i++) {
		/* a path each: one server named twice is a usage error */
		snprintf(text, sizeof text, "unix:/nonexistent/dlock-fuzz-%zu.sock%s",
			 i, flags & FLAG_HANDSHAKE ? "?db=2" : "");
		if (url_parse(text, &urls[i], why, sizeof why) < 0)
			abort();
	}
	a.json = flags & FLAG_ALT;
	switch (data[0] % N_SCENARIOS) {
	case ACQUIRE:
		if (flags & FLAG_ALT) {	/* a re-entry: {2, fence} is an answer */
			setenv("DLOCK_KEY", "dlock:K", 1);
			setenv("DLOCK_TOKEN", "00112233445566778899aabbccddeeff", 1);
		}
		acquire(&p);
		unsetenv("DLOCK_KEY");
		unsetenv("DLOCK_TOKEN");
		break;
	case EXTEND:
		a.token = "00112233445566778899aabbccddeeff";
		extend_main(&p, &a);
		break;
	case RELEASE_TOKEN:
		a.token = "00112233445566778899aabbccddeeff";
		release_main(&p, &a);
		break;
	case RELEASE_FORCE:
		a.force = true;
		release_main(&p, &a);
		break;
	case STATUS:
		a.n_keys = 2;
		status_main(&p, &a);
		break;
	case STATUS_ALL:
		a.n_keys = 0;
		status_main(&p, &a);
		break;
	case HISTORY:
		a.n_keys = 1;
		history_main(&p, &a);
		break;
	}
	for (int i = 0; i < n_peers; i++)
		close(peers[i]);
	return 0;
}
