/* conn.c - a ZooKeeper session for dlock's threads (see conn.h), and a
 * lock's session (zk.h): which one it uses (its own, -F's parent's taken
 * over, a token's resumed, a new one for a waiter whose session expired)
 * and the lease that its timeout gives. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "clock.h"
#include "lock.h"
#include "net.h"
#include "zk.h"

/* ---- the library's log ------------------------------------------------ */

/* The library says why a connection failed only in its log ("errno=111
 * (Connection refused)"), from its I/O thread: the last errno it logged,
 * for our own message. File scope: the log callback has no context. */
static atomic_int last_errno;
static atomic_bool log_verbose;

/* Sessions in zs_connect(), for the log to wake: once the library has
 * tried every server and failed, it waits a sixtieth of the session
 * timeout (a second at -t 60) before it tries again, on its own clock and
 * in step with every host that began with it. A fleet's hosts turned away
 * by a full server (maxClientCnxns) then all come back together, once a
 * second, and only that many a second get in (issue 30). Its log says so
 * ("Delaying connection after exhaustively trying all servers"): the try
 * ends there, and the core's jittered pauses pace the next one. */
#define CONNECTING_MAX 8
static pthread_mutex_t connecting_mu = PTHREAD_MUTEX_INITIALIZER;
static struct zk_sess *connecting[CONNECTING_MAX];

static void connect_failed(void)
{
	pthread_mutex_lock(&connecting_mu);
	for (size_t i = 0; i < CONNECTING_MAX; i++) {
		struct zk_sess *s = connecting[i];

		if (!s)
			continue;
		pthread_mutex_lock(&s->mu);
		s->connect_failures++;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_unlock(&connecting_mu);
}

static void set_connecting(struct zk_sess *s, bool on)
{
	pthread_mutex_lock(&connecting_mu);
	for (size_t i = 0; i < CONNECTING_MAX; i++) {
		if (on ? connecting[i] == NULL : connecting[i] == s) {
			connecting[i] = on ? s : NULL;
			break;
		}
	}
	pthread_mutex_unlock(&connecting_mu);
}

static void log_cb(const char *msg)
{
	const char *e = strstr(msg, "errno=");
	const char *from = strstr(msg, "ZOO_");

	if (e) {
		long n = strtol(e + 6, NULL, 10);

		if (n > 0 && n < 4096)
			atomic_store(&last_errno, (int)n);
	}
	if (strstr(msg, "Delaying connection after exhaustively trying all servers"))
		connect_failed();
	if (atomic_load(&log_verbose))
		fprintf(stderr, "dlock: zookeeper: %s\n", from ? from : msg);
}

/* ---- descriptors ------------------------------------------------------- */

/* The descriptors open before the first session: the caller's (a command
 * may be meant to inherit them). File scope: once per process. */
#define FD_BITS 4096
static unsigned char inherited[FD_BITS / 8];
static pthread_once_t inherited_once = PTHREAD_ONCE_INIT;

static void scan_fds(void (*each)(int fd))
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end || fd == dirfd(d))
			continue;
		each((int)fd);
	}
	closedir(d);
}

static void note_inherited(int fd)
{
	if (fd >= 0 && fd < FD_BITS)
		inherited[fd / 8] |= (unsigned char)(1 << (fd % 8));
}

static void record_inherited(void)
{
	scan_fds(note_inherited);
}

static void set_cloexec(int fd)
{
	int flags;

	if (fd < 3 || (fd < FD_BITS && (inherited[fd / 8] & (1 << (fd % 8)))))
		return;
	flags = fcntl(fd, F_GETFD);
	if (flags >= 0 && !(flags & FD_CLOEXEC))
		fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void zs_cloexec(void)
{
	scan_fds(set_cloexec);
}

/* ---- the session ------------------------------------------------------- */

struct zk_sess *zs_new(const struct zk_sess_opts *o)
{
	struct zk_sess *s = calloc(1, sizeof *s);
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	s->efd = -1;
	s->hosts = strdup(o->hosts);
	s->url_text = strdup(o->url_text);
	s->digest = o->digest ? strdup(o->digest) : NULL;
	if (!s->hosts || !s->url_text || (o->digest && !s->digest)) {
		free(s->hosts);
		free(s->url_text);
		free(s->digest);
		free(s);
		return NULL;
	}
	s->timeout_ms = o->timeout_ms;
	if (o->resume) {
		s->resume = *o->resume;
		s->has_resume = true;
	}
	s->pid = getpid();
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store(&log_verbose, o->verbose);
	return s;
}

void zs_watcher(zhandle_t *zh, int type, int state, const char *path,
		void *ctx)
{
	struct zk_sess *s = ctx;
	uint64_t one = 1;
	bool connected = false;

	pthread_mutex_lock(&s->mu);
	if (type == ZOO_SESSION_EVENT) {
		/* path watches hear of the session too: count a change once */
		if (state != s->st.state)
			s->st.changes++;
		s->st.state = state;
		if (state == ZOO_CONNECTED_STATE) {
			s->st.id = *zoo_client_id(zh);
			s->st.timeout_ms = zoo_recv_timeout(zh);
			connected = true;
		} else if (state == ZOO_EXPIRED_SESSION_STATE) {
			s->st.expired = true;
		} else if (state == ZOO_AUTH_FAILED_STATE) {
			s->st.auth_failed = true;
		}
	} else {
		s->st.changes++;
		if (type == ZOO_DELETED_EVENT && s->own && path &&
		    strcmp(path, s->own) == 0)
			s->st.own_deleted = true;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	(void)!write(s->efd, &one, sizeof one);
	/* a new connection is a new socket */
	if (connected)
		zs_cloexec();
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec zs_abs_time(int64_t deadline_ms)
{
	int64_t left_ms = deadline_ms - clock_now_ms(), at_ms;
	struct timespec ts;

	if (left_ms < 0)
		left_ms = 0;
	if (left_ms > INT64_MAX / 4)
		left_ms = INT64_MAX / 4;
	at_ms = mono_ms() + left_ms;
	ts.tv_sec = (time_t)(at_ms / 1000);
	ts.tv_nsec = (long)(at_ms % 1000) * 1000000;
	return ts;
}

/* The library says only ENOENT or EINVAL when none of the hosts
 * resolves: which did not, and why, as getaddrinfo() says it ("cannot
 * resolve zk1: name or service not known"), as the other engines say it.
 * Returns 0 with the message, or -1 when every host resolves now. */
static int unresolved(const char *hosts, char *out, size_t len)
{
	const struct addrinfo hints = {
		.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	};
	char *copy = strdup(hosts), *save = NULL, names[512] = "", why[128] = "";
	size_t n = 0;

	if (!copy)
		return -1;
	for (char *h = strtok_r(copy, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(h, ':');	/* IPv6 has no brackets here */
		struct addrinfo *res;
		int rc;

		if (colon)
			*colon = '\0';
		if ((rc = getaddrinfo(h, NULL, &hints, &res)) == 0) {
			freeaddrinfo(res);
			continue;
		}
		if (n++ == 0)
			snprintf(why, sizeof why, "%s", gai_strerror(rc));
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
			 n > 1 ? ", " : "", h);
	}
	free(copy);
	if (n == 0)
		return -1;
	log_lower_first(why);
	snprintf(out, len, "cannot resolve %s: %s", names, why);
	return 0;
}

static int add_auth(struct zk_sess *s);

/* zookeeper_init() starts the library's threads: every signal blocked
 * meanwhile, so that they take none of dlock's (the core blocks its own
 * in main() before any engine opens; this holds whatever the caller). */
static int start(struct zk_sess *s, struct error *err)
{
	sigset_t all, old;
	int e;

	pthread_once(&inherited_once, record_inherited);
	/* its warnings say when it has tried every server (log_cb());
	 * shown with --verbose only */
	zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
	if (s->efd < 0 &&
	    (s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		error_set(err, EX_OSERR, "eventfd: %s", strerror(errno));
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	errno = 0;
	/* ZOO_NO_LOG_CLIENTENV: else it asks NSS for our user's name, to log
	 * it at a level we never show */
	s->zh = zookeeper_init2(s->hosts, zs_watcher, s->timeout_ms,
				s->has_resume ? &s->resume : NULL, s,
				ZOO_NO_LOG_CLIENTENV, log_cb);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->zh) {
		char why[640];

		if ((e == ENOENT || e == EINVAL) &&
		    unresolved(s->hosts, why, sizeof why) == 0) {
			error_set(err, EX_UNAVAILABLE, "%s: %s", s->url_text, why);
			return -1;
		}
		/* its pipe and threads: out of descriptors or memory is
		 * this host's failure, not an unreachable server */
		error_set(err, net_local_failure(e) ? EX_OSERR : EX_UNAVAILABLE,
			  "%s: cannot start a session: %s",
			  s->url_text, e ? strerror(e) : "the client library failed");
		log_lower_first(err->msg + strlen(s->url_text) + 2);
		return -1;
	}
	/* The library looks the hosts up again before each of its polls
	 * unless told otherwise (getaddrinfo(), a netlink query and a read
	 * of /dev/urandom every time): only when it connects anew. */
	zoo_set_servers_resolution_delay(s->zh, -1);
	/* its pipe: CLOEXEC once connected (the watcher) and before any job
	 * starts (engine.c), in time for every fork */
	s->auth_added = false;
	add_auth(s);
	return 0;
}

/* The digest into the library's list, which it sends first on every
 * connection it makes, before any request. The library refuses it
 * (ZINVALIDSTATE) while it is between two connection attempts (its state
 * 0: the first server it tried refused, on a loaded host before this
 * call): then it is added once connected (zs_connect()), where it goes
 * out at once, ahead of every request of ours. A session without it
 * would create nodes with the creator's ACL and no identity to give
 * them: "invalid acl". */
static int add_auth(struct zk_sess *s)
{
	int rc;

	if (!s->digest || s->auth_added)
		return ZOK;
	rc = zoo_add_auth(s->zh, "digest", s->digest, (int)strlen(s->digest), NULL, NULL);
	s->auth_added = rc == ZOK;
	return rc;
}

/* The library's errno for a connection the server closed before it
 * answered: EHOSTDOWN is its own word for a read of 0 bytes (the end of
 * the stream), the others the kernel's for one closed under a write. A
 * server does that when it has maxClientCnxns connections from our
 * address already (a fleet behind one address, many waiters on one
 * host), or when it is not serving (an ensemble member without quorum):
 * there, and not taking us now. */
static bool closed_by_server(int e)
{
	return e == EHOSTDOWN || e == ECONNRESET || e == EPIPE;
}

/* Whether the library waits before its next try, every server tried and
 * failed (its state is 0 from the failure to the next connect): a wake-up
 * of connect_failed() for this session, not for another one's. */
static bool library_delaying(struct zk_sess *s)
{
	return s->zh && zoo_state(s->zh) == 0;
}

int zs_connect(struct zk_sess *s, int64_t deadline_ms, bool *expired,
	       struct error *err)
{
	struct timespec ts = zs_abs_time(deadline_ms);
	unsigned failures;
	int state;
	bool gone, auth_failed;

	*expired = false;
	s->turned_away = false;
	/* Listed before the library's thread starts: it may try every
	 * server and fail before zookeeper_init() has even returned here (a
	 * server that closes each connection at once, on a loaded host),
	 * and a wake-up missed so would hold this try until the library's
	 * next round, its own second later. */
	set_connecting(s, true);
	pthread_mutex_lock(&s->mu);
	failures = s->connect_failures;
	pthread_mutex_unlock(&s->mu);
	if (!s->zh) {
		atomic_store(&last_errno, 0);
		if (start(s, err) < 0) {
			set_connecting(s, false);
			return -1;
		}
	}
	pthread_mutex_lock(&s->mu);
	while (s->st.state != ZOO_CONNECTED_STATE && !s->st.expired &&
	       !s->st.auth_failed) {
		/* every server tried, for a session that never began: this
		 * try failed (one that began waits for the library's next,
		 * as a holder's renewal always did) */
		if (s->connect_failures != failures) {
			failures = s->connect_failures;
			if (s->st.id.client_id == 0 && library_delaying(s))
				break;
		}
		if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	}
	state = s->st.state;
	gone = s->st.expired;
	auth_failed = s->st.auth_failed;
	pthread_mutex_unlock(&s->mu);
	set_connecting(s, false);
	if (state == ZOO_CONNECTED_STATE && !gone) {
		int rc = add_auth(s);

		if (rc == ZOK)
			return 0;
		/* lost again at once: the next try adds it */
		error_set(err, EX_UNAVAILABLE, "%s: cannot authenticate: %s", s->url_text,
			  zerror(rc));
		log_lower_first(err->msg + strlen(s->url_text) + 2);
		return -1;
	}
	/* A session that never began: its handle goes, and with it the
	 * library's own tries (a second apart at -t 60, whatever the core's
	 * pauses); the next try starts afresh. One that began keeps its
	 * handle: the library takes it up again with its watches. */
	if (!gone && !auth_failed && s->st.id.client_id == 0 &&
	    s->pid == getpid()) {
		zookeeper_close(s->zh);
		s->zh = NULL;
	}
	if (gone) {
		*expired = true;
		error_set(err, EX_TEMPFAIL, "%s: session expired", s->url_text);
	} else if (auth_failed) {
		error_set(err, EX_NOPERM, "%s: authentication failed", s->url_text);
	} else if (closed_by_server(atomic_load(&last_errno))) {
		s->turned_away = true;
		error_set(err, EX_UNAVAILABLE, "%s: cannot connect: the server closed the connection before a session began (the server is full: maxClientCnxns from this address; or it is not serving)",
			  s->url_text);
	} else {
		int e = atomic_load(&last_errno);
		char why[128];

		snprintf(why, sizeof why, "%s", e ? strerror(e) : "");
		log_lower_first(why);
		/* the library's socket() failed so: ours, not the server's */
		error_set(err, net_local_failure(e) ? EX_OSERR : EX_UNAVAILABLE,
			  "%s: cannot connect%s%s", s->url_text,
			  e ? ": " : " (no answer in time)", why);
	}
	return -1;
}

bool zs_turned_away(const struct zk_sess *s)
{
	return s && s->turned_away;
}

int zs_free(struct zk_sess *s, int64_t deadline_ms)
{
	struct timespec ts = zs_abs_time(deadline_ms);
	int rc = ZINVALIDSTATE;

	if (!s)
		return rc;
	/* zookeeper_close() stops the completion thread, and the library
	 * then drops what it had not answered (its entries and ours): let
	 * the answers come first (requests not waited for, history trims) */
	pthread_mutex_lock(&s->mu);
	while (s->pending > 0 && s->zh && s->pid == getpid() &&
	       pthread_cond_timedwait(&s->cv, &s->mu, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&s->mu);
	if (s->zh && s->pid == getpid())
		rc = zookeeper_close(s->zh);
	if (s->efd >= 0)
		close(s->efd);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s->hosts);
	free(s->url_text);
	free(s->digest);
	free(s->own);
	free(s);
	return rc;
}

/* What zs_keep() keeps: reachable, for the leak checkers, until exit. */
static struct zk_sess *kept[8];
static atomic_int n_kept;

void zs_keep(struct zk_sess *s)
{
	int i = atomic_fetch_add(&n_kept, 1);

	if (s && i < (int)(sizeof kept / sizeof kept[0]))
		kept[i] = s;
}

void zs_state(struct zk_sess *s, struct zk_state *st)
{
	pthread_mutex_lock(&s->mu);
	*st = s->st;
	pthread_mutex_unlock(&s->mu);
}

void zs_watch_own(struct zk_sess *s, const char *path)
{
	char *copy = path ? strdup(path) : NULL;

	pthread_mutex_lock(&s->mu);
	free(s->own);
	s->own = copy;
	s->st.own_deleted = false;
	pthread_mutex_unlock(&s->mu);
}

int zs_event_fd(struct zk_sess *s)
{
	return s->efd;
}

void zs_event_clear(struct zk_sess *s)
{
	uint64_t n;

	if (s->efd >= 0)
		(void)!read(s->efd, &n, sizeof n);
}

pid_t zs_pid(const struct zk_sess *s)
{
	return s->pid;
}

/* Perms by value: the library's ZOO_PERM_* are variables. Not const: the
 * library's create calls take them so. */
static struct ACL shared_acl[] = {
	{ 0x1f, { (char *)"auth", (char *)"" } },	/* the creator: all */
	/* read, create, delete: queue, take, give back, break */
	{ 0x0d, { (char *)"world", (char *)"anyone" } },
};
static struct ACL own_acl[] = {
	{ 0x1f, { (char *)"auth", (char *)"" } },
	{ 0x01, { (char *)"world", (char *)"anyone" } },	/* read */
};
static struct ACL_vector shared_acls = { 2, shared_acl };
static struct ACL_vector own_acls = { 2, own_acl };

struct ACL_vector *zs_acl(const struct zk_sess *s, int flags)
{
	if (!s->digest)
		return &ZOO_OPEN_ACL_UNSAFE;
	return flags == ZOO_PERSISTENT ? &shared_acls : &own_acls;
}

/* ---- errors ------------------------------------------------------------ */

bool zs_transient(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZK_TIMEDOUT ||
	       rc == ZCLOSING || rc == ZSESSIONMOVED || rc == ZNOTHING ||
	       rc == ZINVALIDSTATE || rc == ZSESSIONEXPIRED;
}

int zs_exit_of(int rc)
{
	switch (rc) {
	case ZNOAUTH:
	case ZAUTHFAILED:
	case ZSESSIONCLOSEDREQUIRESASLAUTH:
		return EX_NOPERM;
	case ZBADARGUMENTS:
	case ZNOCHILDRENFOREPHEMERALS:
		return EX_USAGE;
	case ZUNIMPLEMENTED:	/* a request the server does not know */
	case ZNOTREADONLY:	/* a member cut off from its quorum */
	case ZTHROTTLEDOP:
	case ZSSLCONNECTIONERROR:
		return EX_UNAVAILABLE;
	case ZSYSTEMERROR:
		return EX_OSERR;
	}
	return zs_transient(rc) ? EX_UNAVAILABLE : EX_SOFTWARE;
}

/* What the library's codes mean to whoever runs dlock, where zerror()
 * says too little. */
static const struct {
	int rc;
	const char *why;
} reasons[] = {
	{ ZK_TIMEDOUT, "no answer in time" },
	{ ZNOAUTH, "not allowed (the node's ACL: check the user and password)" },
	/* a 3.4 server answers create2 so (ZOOKEEPER-1495), and closes the
	 * connection */
	{ ZUNIMPLEMENTED, "the server does not implement the request: dlock needs ZooKeeper " ZK_MIN_VERSION " or later" },
	{ ZNOCHILDRENFOREPHEMERALS, "a lock name inside another lock's contender (an ephemeral node has no children)" },
	{ ZSESSIONCLOSEDREQUIRESASLAUTH, "the server requires SASL authentication (dlock authenticates with digest only)" },
	{ ZEPHEMERALONLOCALSESSION, "the server gave a local session, which cannot own ephemeral nodes (localSessionsUpgradingEnabled)" },
	{ ZNOTREADONLY, "the server is read-only (cut off from its quorum)" },
};

void zs_error(struct error *err, int rc, const char *what)
{
	const char *text = NULL;
	char why[160];

	for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
		if (reasons[i].rc == rc)
			text = reasons[i].why;
	snprintf(why, sizeof why, "%s", text ? text : zerror(rc));
	log_lower_first(why);
	error_set(err, zs_exit_of(rc), "%s: %s", what, why);
}

/* ---- the lock's session ------------------------------------------------ */

/* The longest session timeout asked for, in ms: see new_session(). */
#define ZK_TIMEOUT_ASK_MAX 1000000000

int zk_token_session(const char *token, clientid_t *id)
{
	unsigned long long sid = 0;

	if (strlen(token) != 64 || strspn(token, "0123456789abcdef") != 64)
		return -1;
	for (int i = 0; i < 16; i++)
		sid = sid << 4 | (unsigned)(token[i] <= '9' ? token[i] - '0' : token[i] - 'a' + 10);
	id->client_id = (int64_t)sid;
	for (int i = 0; i < 16; i++) {
		char b[3] = { token[32 + 2 * i], token[33 + 2 * i], 0 };

		id->passwd[i] = (char)strtol(b, NULL, 16);
	}
	return 0;
}

static int new_session(struct zk *z, const clientid_t *resume, struct error *err)
{
	const struct lock_params *p = z->lk->p;
	struct zk_sess_opts o = {
		.hosts = z->u->hosts,
		.url_text = z->u->text,
		.digest = z->digest[0] ? z->digest : NULL,
		/* the client doubles it in an int (2^30 ms and more: no
		 * connection); the server lowers what it is asked to its
		 * maxSessionTimeout anyway, and the lease follows that */
		.timeout_ms = p->ttl_ms > ZK_TIMEOUT_ASK_MAX ? ZK_TIMEOUT_ASK_MAX : (int)p->ttl_ms,
		.resume = resume,
		.verbose = p->verbose,
	};

	if (!(z->s = zs_new(&o))) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	z->told = false;
	z->own_watched = false;
	return 0;
}

/* Requests whose answers we no longer read: their completions free them. */
void zk_drop_requests(struct zk *z)
{
	zc_free(z->watch_req);
	zc_free(z->acq_event);
	zc_free(z->set_req);
	zc_free(z->stale_req);
	z->watch_req = z->acq_event = z->set_req = z->stale_req = NULL;
}

/* Ours no more: the session is over, so is anything it held. */
void zk_forget_own(struct zk *z)
{
	free(z->own);
	z->own = NULL;
	z->create_tried = false;
	z->eval_ms = -1;
}

int zk_end_session(struct zk *z, int rc, struct error *err)
{
	char what[2048];	/* a message: a long name cut */

	snprintf(what, sizeof what, "%s: deleting %s", z->u->text, z->own);
	zs_error(err, rc, what);
	zk_drop_requests(z);
	rc = zs_free(z->s, clock_now_ms() + z->lk->node_timeout_ms);
	z->s = NULL;
	zk_forget_own(z);
	if (rc != ZOK)
		return -1;
	log_line(z->lk->p->name, "release refused: %s; ended the session instead, which deleted our node",
		 err->msg);
	err->msg[0] = '\0';
	return 0;
}

int zk_session(struct zk *z, int64_t deadline_ms, bool renew_expired,
	       bool *expired, struct error *err)
{
	struct zk_state st;

	*expired = false;
	/* -F's helper: the library's threads stayed in the parent (fork()
	 * copies only the caller's), with the session's handle. The session
	 * itself lives on the server: take it over with its id and password,
	 * as a client that reconnects does. The old handle is left as it is,
	 * never touched again (its mutexes may be held by threads that do
	 * not exist here). */
	if (z->s && zs_pid(z->s) != getpid()) {
		zs_keep(z->s);
		z->s = NULL;
		/* the parent's */
		z->watch_req = z->acq_event = z->set_req = z->stale_req = NULL;
		if (new_session(z, &z->id, err) < 0)
			return -1;
		z->adopted = true;
	}
	if (!z->s && new_session(z, NULL, err) < 0)
		return -1;
	if (zs_connect(z->s, deadline_ms, expired, err) < 0) {
		if (!*expired || !renew_expired)
			return -1;
		/* a waiter's session: a new one, and a new place in line */
		zk_drop_requests(z);
		zs_free(z->s, clock_now_ms() + z->lk->node_timeout_ms);
		z->s = NULL;
		zk_forget_own(z);
		if (new_session(z, NULL, err) < 0 ||
		    zs_connect(z->s, deadline_ms, expired, err) < 0)
			return -1;
	}
	zs_state(z->s, &st);
	z->id = st.id;
	z->timeout_ms = st.timeout_ms > 0 ? st.timeout_ms : z->lk->p->ttl_ms;
	/* the lease follows the session's timeout, whatever --ttl asked */
	z->lk->ttl_ms = z->timeout_ms;
	/* and --node-timeout, where the server granted less than --ttl */
	if (z->lk->node_timeout_ms > lock_node_timeout_ms(z->lk))
		z->lk->node_timeout_ms = lock_node_timeout_ms(z->lk);
	/* The server expires a session it has not heard from for the
	 * timeout, at its next tick (sessions expire in buckets a tick
	 * wide), and the library pings it until the end: gone within the
	 * timeout and a tick of the kill. A tick is at most half the
	 * timeout where minSessionTimeout is its default (two ticks), and
	 * 1% + 2 ms for the rates of the clocks. */
	z->lk->lapse_ms = z->timeout_ms + z->timeout_ms / 2 + z->timeout_ms / 100 + 2;
	if (!z->told && z->lk->p->verbose) {
		char lowered[64] = "";

		if (z->lk->node_timeout_ms < z->lk->p->node_timeout_ms)
			snprintf(lowered, sizeof lowered, ", --node-timeout %.3g s",
				 (double)z->lk->node_timeout_ms / 1000);
		log_line(z->lk->p->name, "%s: session 0x%" PRIx64 ", timeout %.3g s%s%s",
			 z->u->text, (uint64_t)st.id.client_id,
			 (double)z->timeout_ms / 1000,
			 z->timeout_ms != z->lk->p->ttl_ms ?
			 " (the server's bounds differ from --ttl)" : "", lowered);
	}
	z->told = true;
	return 0;
}

int zk_resume(struct zk *z, const char *token, int64_t deadline_ms,
	      struct error *err)
{
	clientid_t id;
	bool expired;

	if (zk_token_session(token, &id) < 0)
		return 1;
	if (new_session(z, &id, err) < 0)
		return err->exit;
	if (zk_session(z, deadline_ms, false, &expired, err) < 0)
		return expired ? 1 : err->exit;
	return 0;
}
