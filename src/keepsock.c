/* keepsock.c - the keeper's socket: how dlock FD, dlock -u and the
 * keeper process (keeper.c) find and speak to each other.
 *
 * An abstract unix socket named by the user, the caller's pid and the
 * lock (dlock-keeper/UID/PID/HASH), answered for the same user (or root)
 * only. One byte asks: 'Q', what do you hold (the mode, then the key,
 * token and fence, for --export), or 'U', release (one byte once done:
 * 'R' released, 'F' failed). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include "keepsock.h"

/* FNV-1a over the Redis key: the socket's name has no room for a key. */
static uint64_t hash_key(const char *prefix, const char *name)
{
	uint64_t h = 14695981039346656037ULL;

	for (const char *s = prefix; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	h = (h ^ 0xff) * 1099511628211ULL;	/* "a" + "bc" is not "ab" + "c" */
	for (const char *s = name; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static socklen_t sock_name(struct sockaddr_un *sa, pid_t caller,
			   const struct settings *st, const char *name)
{
	int n;

	*sa = (struct sockaddr_un){ .sun_family = AF_UNIX };
	n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1,
		     "dlock-keeper/%u/%d/%016" PRIx64, (unsigned)getuid(),
		     (int)caller, hash_key(st->prefix, name));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Whether the other end of s is our user's (or root's, for a keeper). */
static bool same_user(int s, bool root_too)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == getuid() || (root_too && cr.uid == 0);
}

ssize_t keepsock_ask(pid_t caller, const struct settings *st, const char *name,
		     char what, char *answer, size_t len)
{
	struct sockaddr_un sa;
	socklen_t sa_len = sock_name(&sa, caller, st, name);
	struct pollfd pfd;
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ssize_t r = 0;

	if (s < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&sa, sa_len) < 0 || !same_user(s, false))
		goto out;
	r = -1;
	if (send(s, &what, 1, MSG_NOSIGNAL) != 1)
		goto out;
	pfd = (struct pollfd){ s, POLLIN, 0 };
	if (poll(&pfd, 1, KEEPSOCK_ANSWER_MS) == 1 && (r = recv(s, answer, len, 0)) < 1)
		r = -1;
out:
	close(s);
	return r;
}

int keepsock_listen(pid_t caller, const struct settings *st, const char *name,
		    int fd, struct error *err)
{
	struct sockaddr_un sa;
	socklen_t len = sock_name(&sa, caller, st, name);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (s >= 0 && bind(s, (struct sockaddr *)&sa, len) == 0 &&
	    listen(s, 8) == 0)
		return s;
	if (errno == EADDRINUSE)
		error_set(err, EX_USAGE, "another dlock %d of process %d holds or takes this lock",
			  fd, (int)caller);
	else
		error_set(err, EX_OSERR, "keeper socket: %s", strerror(errno));
	if (s >= 0)
		close(s);
	return -1;
}

int keepsock_accept(int listen_fd, char *what)
{
	int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	/* The asker sends its byte right after connecting: wait for it, but
	 * not for one that never comes while the lease needs renewing. */
	struct timeval patience = { 0, 500 * 1000 };

	*what = 0;
	if (s < 0)
		return -1;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
	if (!same_user(s, true) || recv(s, what, 1, 0) != 1 ||
	    (*what != 'Q' && *what != 'U')) {
		close(s);
		return -1;
	}
	return s;
}

/* One message: the mode, then key, token and fence, each NUL-terminated
 * (a keeper of before --export sent the mode alone). */
void keepsock_answer_held(int s, char mode, const struct lock *lk)
{
	size_t key_len = strlen(lk->key) + 1, token_len = strlen(lk->token) + 1;
	size_t fence_len = strlen(lk->fence) + 1;
	char *msg = malloc(1 + key_len + token_len + fence_len);

	if (!msg) {
		(void)!send(s, &mode, 1, MSG_NOSIGNAL);
		return;
	}
	msg[0] = mode;
	memcpy(msg + 1, lk->key, key_len);
	memcpy(msg + 1 + key_len, lk->token, token_len);
	memcpy(msg + 1 + key_len + token_len, lk->fence, fence_len);
	(void)!send(s, msg, 1 + key_len + token_len + fence_len, MSG_NOSIGNAL);
	free(msg);
}

void keepsock_answer_done(int s, bool released)
{
	char done = released ? 'R' : 'F';

	(void)!send(s, &done, 1, MSG_NOSIGNAL);
	close(s);
}

/* The NUL-terminated string at *p, before end; *p moves past it. NULL
 * when there is none. */
static const char *next_field(const char **p, const char *end)
{
	const char *s = *p, *nul = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;

	if (!nul)
		return NULL;
	*p = nul + 1;
	return s;
}

int keepsock_query(pid_t caller, const struct settings *st, const char *name,
		   struct keepsock_held *h)
{
	ssize_t n = keepsock_ask(caller, st, name, 'Q', h->buf, sizeof h->buf);
	const char *p = h->buf + 1, *end = h->buf + (n > 0 ? n : 0);

	if (n <= 0)
		return -1;
	h->mode = h->buf[0];
	h->key = next_field(&p, end);
	h->token = h->key ? next_field(&p, end) : NULL;
	h->fence = h->token ? next_field(&p, end) : NULL;
	return 0;
}
