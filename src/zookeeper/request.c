/* request.c - the requests of a ZooKeeper session (conn.h): each sent
 * without blocking, its completion recorded on the library's thread,
 * waited for until a deadline. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "conn.h"

static void free_zc(struct zc *c)
{
	free(c->path);
	free(c->data);
	for (int i = 0; i < c->n_kids; i++)
		free(c->kids[i]);
	free(c->kids);
	for (size_t i = 0; i < sizeof c->strs / sizeof c->strs[0]; i++)
		free(c->strs[i]);
	free(c);
}

static struct zc *new_zc(struct zk_sess *s, enum zc_kind kind)
{
	struct zc *c = calloc(1, sizeof *c);

	if (c) {
		c->s = s;
		c->kind = kind;
		c->data_len = -1;
	}
	return c;
}

/* A completion: the caller's, or freed when it gave up waiting. Returns
 * with s->mu held when the caller still waits, the node's stat kept
 * (fill in the rest, then done()). */
static struct zc *arrived(const void *data, int rc, const struct Stat *stat)
{
	struct zc *c = (struct zc *)data;

	pthread_mutex_lock(&c->s->mu);
	if (--c->s->pending <= 0)
		pthread_cond_broadcast(&c->s->cv);
	if (c->abandoned) {
		pthread_mutex_unlock(&c->s->mu);
		free_zc(c);
		return NULL;
	}
	if (rc == ZOK && stat)
		c->stat = *stat;
	return c;
}

static void done(struct zc *c, int rc)
{
	struct zk_sess *s = c->s;
	bool notify = c->notify;
	uint64_t one = 1;

	c->done = true;
	c->done_rc = rc;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);	/* c may be gone from here */
	/* a watch set: whoever polls learns of the answer too (a node
	 * already gone sets none, and nothing else would say so) */
	if (notify)
		(void)!write(s->efd, &one, sizeof one);
}

static void on_void(int rc, const void *data)
{
	struct zc *c = arrived(data, rc, NULL);

	if (c)
		done(c, rc);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
	struct zc *c = arrived(data, rc, stat);

	if (c)
		done(c, rc);
}

static void on_string_stat(int rc, const char *path, const struct Stat *stat,
			   const void *data)
{
	struct zc *c = arrived(data, rc, stat);

	if (!c)
		return;
	if (rc == ZOK && path && !(c->path = strdup(path)))
		rc = ZSYSTEMERROR;
	done(c, rc);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat,
		    const void *data)
{
	struct zc *c = arrived(data, rc, stat);

	if (!c)
		return;
	if (rc == ZOK && value && len >= 0) {
		if ((c->data = malloc((size_t)len + 1))) {
			memcpy(c->data, value, (size_t)len);
			c->data[len] = '\0';
			c->data_len = len;
		} else {
			rc = ZSYSTEMERROR;
		}
	}
	done(c, rc);
}

static void on_children(int rc, const struct String_vector *v,
			const struct Stat *stat, const void *data)
{
	struct zc *c = arrived(data, rc, stat);

	if (!c)
		return;
	if (rc == ZOK && v && v->count > 0) {
		if (!(c->kids = calloc((size_t)v->count, sizeof *c->kids)))
			rc = ZSYSTEMERROR;
		for (int i = 0; rc == ZOK && i < v->count; i++) {
			if (!(c->kids[i] = strdup(v->data[i])))
				rc = ZSYSTEMERROR;
			else
				c->n_kids = i + 1;
		}
	}
	done(c, rc);
}

/* After a zoo_a*() call: rc ZOK, it is on its way and its completion
 * will come. Otherwise it may come still, unless the call refused before
 * registering it (bad arguments, a session over): then c is the answer,
 * else a copy is, and c waits for its completion to free it. */
static struct zc *sent(struct zc *c, int rc)
{
	struct zc *answer;

	if (rc == ZOK) {
		pthread_mutex_lock(&c->s->mu);
		c->s->pending++;	/* its completion may have come already */
		pthread_mutex_unlock(&c->s->mu);
		return c;
	}
	if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) {
		c->done = true;
		c->done_rc = rc;
		return c;
	}
	answer = new_zc(c->s, c->kind);
	pthread_mutex_lock(&c->s->mu);
	c->abandoned = true;
	pthread_mutex_unlock(&c->s->mu);
	if (answer) {
		answer->done = true;
		answer->done_rc = rc;
	}
	return answer;
}

static struct zc *unsent(struct zc *c)
{
	if (c) {
		c->done = true;
		c->done_rc = ZINVALIDSTATE;
	}
	return c;
}

struct zc *zc_create(struct zk_sess *s, const char *path, const char *data,
		     int len, int flags)
{
	struct zc *c = new_zc(s, ZC_CREATE);

	if (!c || !s->zh)
		return unsent(c);
	return sent(c, zoo_acreate2(s->zh, path, data, len, zs_acl(s, flags), flags,
				    on_string_stat, c));
}

struct zc *zc_delete(struct zk_sess *s, const char *path)
{
	struct zc *c = new_zc(s, ZC_DELETE);

	if (!c || !s->zh)
		return unsent(c);
	return sent(c, zoo_adelete(s->zh, path, -1, on_void, c));
}

/* A read of path (exists, get, children); watch: it sets a watch. */
static struct zc *read_req(struct zk_sess *s, enum zc_kind kind,
			   const char *path, bool watch)
{
	struct zc *c = new_zc(s, kind);
	watcher_fn fn = watch ? zs_watcher : NULL;
	void *ctx = watch ? s : NULL;
	int rc;

	if (!c || !s->zh)
		return unsent(c);
	c->notify = watch;
	if (kind == ZC_EXISTS)
		rc = zoo_awexists(s->zh, path, fn, ctx, on_stat, c);
	else if (kind == ZC_GET)
		rc = zoo_awget(s->zh, path, fn, ctx, on_data, c);
	else
		rc = zoo_awget_children2(s->zh, path, fn, ctx, on_children, c);
	return sent(c, rc);
}

struct zc *zc_exists(struct zk_sess *s, const char *path, bool watch)
{
	return read_req(s, ZC_EXISTS, path, watch);
}

struct zc *zc_get(struct zk_sess *s, const char *path, bool watch)
{
	return read_req(s, ZC_GET, path, watch);
}

struct zc *zc_children(struct zk_sess *s, const char *path, bool watch)
{
	return read_req(s, ZC_CHILDREN, path, watch);
}

struct zc *zc_set(struct zk_sess *s, const char *path, const char *data, int len,
		  int version)
{
	struct zc *c = new_zc(s, ZC_SET);

	if (!c || !s->zh)
		return unsent(c);
	return sent(c, zoo_aset(s->zh, path, data, len, version, on_stat, c));
}

static void on_string(int rc, const char *value, const void *data)
{
	struct zc *c = arrived(data, rc, NULL);

	if (c)
		done(c, rc);
}

struct zc *zc_sync(struct zk_sess *s, const char *path)
{
	struct zc *c = new_zc(s, ZC_SYNC);

	if (!c || !s->zh)
		return unsent(c);
	return sent(c, zoo_async(s->zh, path, on_string, c));
}

struct zc *zc_multi_new(struct zk_sess *s)
{
	return new_zc(s, ZC_MULTI);
}

/* What a created node's path may have after the one asked for: the
 * sequence number the server appends (10 digits, 11 with the '-' of a
 * parent's counter past 2^31), and more, so that a path cut to fit shows
 * as one (zc_made()). */
#define ZC_SEQ_ROOM 16

/* A copy of s (len bytes; -1: a string) kept until the reply, with room
 * bytes after its NUL (zeroed); NULL when out of memory (the op is then
 * left out, and the multi fails). */
static char *keep(struct zc *c, const char *s, int len, size_t room)
{
	size_t n = len < 0 ? strlen(s) : (size_t)len;

	for (size_t i = 0; i < sizeof c->strs / sizeof c->strs[0]; i++) {
		if (c->strs[i])
			continue;
		if ((c->strs[i] = malloc(n + 1 + room))) {
			memcpy(c->strs[i], s, n);
			memset(c->strs[i] + n, 0, 1 + room);
		}
		return c->strs[i];
	}
	return NULL;
}

void zc_multi_delete(struct zc *c, const char *path)
{
	const char *p;

	if (c && c->n_ops < ZC_MAX_OPS && (p = keep(c, path, -1, 0)))
		zoo_delete_op_init(&c->ops[c->n_ops++], p, -1);
}

/* The node's path comes back in a buffer of ours, the library cuts what
 * does not fit in it, and a path has no limit short of the server's
 * jute.maxbuffer: its buffer is the path's copy's tail, sized for it (no
 * allocation of its own). */
void zc_multi_create(struct zc *c, const char *path, const char *data, int len,
		     int flags)
{
	size_t n = strlen(path);
	char *p;
	const char *d;

	if (!c || c->n_ops >= ZC_MAX_OPS || n > INT_MAX / 2 ||
	    !(p = keep(c, path, -1, n + ZC_SEQ_ROOM)) || !(d = keep(c, data, len, 0)))
		return;
	c->made[c->n_ops] = p + n + 1;
	c->made_len[c->n_ops] = (int)(n + ZC_SEQ_ROOM);
	zoo_create_op_init(&c->ops[c->n_ops], p, d, len, zs_acl(c->s, flags), flags,
			   c->made[c->n_ops], c->made_len[c->n_ops]);
	c->n_ops++;
}

/* A sequence number as the server appends it: 10 digits, or '-' and 10
 * once the parent's counter went past 2^31 - 1. */
static bool is_seq(const char *s)
{
	s += *s == '-';
	return strlen(s) == 10 && strspn(s, "0123456789") == 10;
}

const char *zc_made(const struct zc *c, int i)
{
	const char *asked, *made;
	size_t n;
	int flags;

	if (!c || c->kind != ZC_MULTI || c->rc != ZOK || i < 0 || i >= c->n_ops ||
	    c->ops[i].type != ZOO_CREATE_OP || !(made = c->made[i]))
		return NULL;
	asked = c->ops[i].create_op.path;
	flags = c->ops[i].create_op.flags;
	n = strlen(asked);
	/* a path cut to fit fills its buffer */
	if (strnlen(made, (size_t)c->made_len[i]) >= (size_t)c->made_len[i] - 1 ||
	    strncmp(made, asked, n) != 0)
		return NULL;
	if (flags == ZOO_PERSISTENT_SEQUENTIAL || flags == ZOO_EPHEMERAL_SEQUENTIAL)
		return is_seq(made + n) ? made : NULL;
	return made[n] ? NULL : made;
}

struct zc *zc_multi_send(struct zc *c)
{
	if (!c || !c->s->zh || c->n_ops == 0)
		return unsent(c);
	return sent(c, zoo_amulti(c->s->zh, c->n_ops, c->ops, c->res, on_void, c));
}

size_t zc_wait(struct zc **c, size_t n, int64_t deadline_ms)
{
	struct zk_sess *s = NULL;
	struct timespec ts = zs_abs_time(deadline_ms);
	size_t n_done = 0, n_calls = 0;

	for (size_t i = 0; i < n; i++)
		if (c[i]) {
			s = c[i]->s;
			n_calls++;
		}
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		n_done = 0;
		for (size_t i = 0; i < n; i++)
			n_done += c[i] && c[i]->done;
		if (n_done == n_calls ||
		    pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
			break;
	}
	n_done = 0;
	for (size_t i = 0; i < n; i++) {
		if (!c[i])
			continue;
		c[i]->rc = c[i]->done ? c[i]->done_rc : ZK_TIMEDOUT;
		n_done += c[i]->done;
	}
	pthread_mutex_unlock(&s->mu);
	return n_done;
}

void zc_free(struct zc *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->s->mu);
	if (!c->done) {
		c->abandoned = true;	/* its completion frees it */
		pthread_mutex_unlock(&c->s->mu);
		return;
	}
	pthread_mutex_unlock(&c->s->mu);
	free_zc(c);
}

int zc_stat(struct zk_sess *s, const char *path, int64_t deadline_ms,
	    struct Stat *stat)
{
	struct zc *c = zc_exists(s, path, false);
	int rc;

	zc_wait(&c, 1, deadline_ms);
	rc = zc_rc(c);
	if (rc == ZOK)
		*stat = c->stat;
	zc_free(c);
	return rc;
}

int zc_ensure(struct zk_sess *s, const char *const *paths, size_t n_paths,
	      int64_t deadline_ms, struct error *err)
{
	struct zc *reqs[64];
	char *made[64];
	size_t n = 0;
	int r = 0;

	/* one create per ancestor and path, pipelined (a session's requests
	 * are served in order), each once: paths share the chroot's */
	for (size_t k = 0; k < n_paths; k++) {
		char *copy = strdup(paths[k]);

		if (!copy) {
			r = -1;
			break;
		}
		for (char *slash = strchr(copy + 1, '/');; slash = strchr(slash + 1, '/')) {
			bool dup = false;

			if (slash)
				*slash = '\0';
			for (size_t i = 0; i < n && !dup; i++)
				dup = strcmp(made[i], copy) == 0;
			if (!dup && n < sizeof reqs / sizeof reqs[0] &&
			    (made[n] = strdup(copy))) {
				reqs[n] = zc_create(s, made[n], "", 0, ZOO_PERSISTENT);
				n++;
			}
			if (!slash)
				break;
			*slash = '/';
		}
		free(copy);
	}
	if (r < 0)
		error_set(err, EX_OSERR, "out of memory");
	zc_wait(reqs, n, deadline_ms);
	for (size_t i = 0; i < n; i++) {
		int rc = zc_rc(reqs[i]);

		if (r == 0 && rc != ZOK && rc != ZNODEEXISTS) {
			char what[2048];

			snprintf(what, sizeof what, "%s: creating %s", s->url_text, made[i]);
			zs_error(err, rc, what);
			r = -1;
		}
		zc_free(reqs[i]);
		free(made[i]);
	}
	return r;
}
