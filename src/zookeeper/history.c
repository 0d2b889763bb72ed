/* history.c - a ZooKeeper lock's history: persistent sequential event
 * nodes ("e-" and the sequence number) under /.dlock-history/NAME beside
 * the lock, each a few "key=value" lines. Written as the lock is taken,
 * given back, lost (lock.c), broken or released from another process
 * (inspect.c); read back by dlock history (inspect.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zk.h"

int zk_event_data(char *out, size_t len, const char *kind, const char *token,
		  long long fence, long long exit, long long held_ms,
		  const char *holder, const char *by)
{
	char f[24] = "", e[24] = "", h[24] = "";
	char hold[LOCK_INFO_MAX], who[LOCK_INFO_MAX];
	int n;

	if (fence >= 0)
		snprintf(f, sizeof f, "%lld", fence);
	else if (fence == ZK_FENCE_TXN)
		snprintf(f, sizeof f, "*");
	if (exit >= 0)
		snprintf(e, sizeof e, "%lld", exit);
	if (held_ms >= 0)
		snprintf(h, sizeof h, "%lld", held_ms);
	/* one line each: a newline in a name (a user's) would end it */
	snprintf(hold, sizeof hold, "%s", holder ? holder : "");
	snprintf(who, sizeof who, "%s", by ? by : "");
	for (char *c = hold; *c; c++)
		*c = *c == '\n' ? ' ' : *c;
	for (char *c = who; *c; c++)
		*c = *c == '\n' ? ' ' : *c;
	n = snprintf(out, len, "event=%s\ntoken=%s\nfence=%s\nexit=%s\nheld_ms=%s\nholder=%s\nby=%s\n",
		     kind, token, f, e, h, hold, who);
	return n < 0 ? 0 : (size_t)n < len ? n : (int)len - 1;
}

/* The history: events sent on their way, read back by dlock history. */
struct zc *zk_send_event(struct zk *z, const char *kind, long long exit,
			 long long held_ms)
{
	char data[2 * LOCK_INFO_MAX + 256];
	char *path = zk_join(z->hist, ZK_EVENT_PREFIX);
	int len = zk_event_data(data, sizeof data, kind, z->guid, z->czxid, exit,
				held_ms, z->lk->info, NULL);
	struct zc *c = path ? zc_create(z->s, path, data, len,
					ZOO_PERSISTENT_SEQUENTIAL) : NULL;

	free(path);
	return c;
}

/* The "acquired" event our node's multi made when its answer was lost:
 * among the newest events, the one made in the same transaction (its
 * czxid is our node's). Its path, or NULL. */
#define UNHEARD_EVENTS 16
char *zk_find_event(struct zk *z, int64_t deadline_ms)
{
	struct zc *kids = zc_children(z->s, z->hist, false), *ex[UNHEARD_EVENTS];
	struct zk_contender seq[UNHEARD_EVENTS];
	char *found = NULL;
	size_t n = 0;

	zc_wait(&kids, 1, deadline_ms);
	for (int i = 0; kids && kids->rc == ZOK && i < kids->n_kids; i++) {
		const char *name = kids->kids[i];
		size_t at = n;
		long long v;

		if (zk_event_seq(name, &v) < 0)
			continue;
		/* the newest UNHEARD_EVENTS, by sequence number */
		if (n == UNHEARD_EVENTS) {
			at = 0;
			for (size_t k = 1; k < n; k++)
				at = seq[k].seq < seq[at].seq ? k : at;
			if (seq[at].seq > v)
				continue;
		} else {
			n++;
		}
		seq[at] = (struct zk_contender){ .name = name, .seq = v };
	}
	for (size_t i = 0; i < n; i++) {
		char *path = zk_join(z->hist, seq[i].name);

		ex[i] = path ? zc_exists(z->s, path, false) : NULL;
		free(path);
	}
	zc_wait(ex, n, deadline_ms);
	for (size_t i = 0; i < n; i++) {
		if (!found && ex[i] && ex[i]->rc == ZOK && ex[i]->stat.czxid == z->czxid)
			found = zk_join(z->hist, seq[i].name);
		zc_free(ex[i]);
	}
	zc_free(kids);
	return found;
}

void zk_write_event(struct zk *z, const char *kind, const char *token,
		    long long fence, long long held_ms, const char *holder,
		    const char *by, int64_t deadline_ms)
{
	char data[2 * LOCK_INFO_MAX + 256], guid[ZK_GUID_LEN + 1];
	char *path = zk_join(z->hist, ZK_EVENT_PREFIX);
	const char *hist = z->hist;
	struct error ignored;
	struct zc *ev;
	int len;

	if (!path)
		return;
	snprintf(guid, sizeof guid, "%.*s", ZK_GUID_LEN, token);
	len = zk_event_data(data, sizeof data, kind, guid, fence, -1, held_ms,
			    holder ? holder : z->lk->info, by);
	ev = zc_create(z->s, path, data, len, ZOO_PERSISTENT_SEQUENTIAL);
	zc_wait(&ev, 1, deadline_ms);
	if (ev && ev->rc == ZNONODE &&
	    zc_ensure(z->s, &hist, 1, deadline_ms, &ignored) == 0) {
		zc_free(ev);	/* the history's znode went: made again */
		ev = zc_create(z->s, path, data, len, ZOO_PERSISTENT_SEQUENTIAL);
		zc_wait(&ev, 1, deadline_ms);
	}
	zc_free(ev);
	free(path);
}

/* A round that made our node and its "acquired" event did not win: the
 * event goes (sent now, its answer read by the next round). */
void zk_forget_event(struct zk *z, char *event)
{
	if (!event)
		return;
	zc_free(z->stale_req);	/* sent: it completes all the same */
	free(z->stale_event);
	z->stale_event = event;
	z->stale_req = zc_delete(z->s, event);
}

/* The last round's delete of a stale event: one the connection lost is
 * sent again. */
void zk_check_stale(struct zk *z)
{
	int rc;

	if (!z->stale_req || zc_wait(&z->stale_req, 1, 0) == 0)
		return;
	rc = z->stale_req->rc;
	zc_free(z->stale_req);
	z->stale_req = NULL;
	if (rc != ZOK && rc != ZNONODE && zs_transient(rc))
		z->stale_req = zc_delete(z->s, z->stale_event);
	else {
		free(z->stale_event);
		z->stale_event = NULL;
	}
}

/* Keeps the history to about --history N events: once it holds an eighth
 * more, the oldest go, in one go (a round trip every few releases, not
 * every one). The deletes are not waited for: closing the session sends
 * them first. */
/* The number: the sequence of the event the release made (its parent's
 * changes: two a run); none made, 2, due only for a small history. */
bool zk_trim_due(const struct zk *z, const struct zc *m)
{
	const char *made = NULL;
	size_t len;

	for (int i = m ? m->n_ops - 1 : -1; i >= 0 && !made; i--)
		made = zc_made(m, i);
	return engine_history_trim_due(z->lk->p->history,
				       made && (len = strlen(made)) > 10 ?
				       strtoll(made + len - 10, NULL, 10) : 2);
}

void zk_trim_history(struct zk *z, struct zc *kids)
{
	long keep = z->lk->p->history, n = kids->n_kids;
	struct zk_contender *seq;

	if (kids->rc != ZOK || n <= keep + keep / 8)
		return;
	if (!(seq = calloc((size_t)n, sizeof *seq)))
		return;
	for (long i = 0; i < n; i++) {
		const char *name = kids->kids[i];
		size_t len = strlen(name);

		seq[i].name = name;
		seq[i].seq = len > 10 ? strtoll(name + len - 10, NULL, 10) : 0;
	}
	zk_contenders_sort(seq, (size_t)n);
	for (long i = 0; i < n - keep; i++) {
		char *path = zk_join(z->hist, seq[i].name);

		if (path)
			zc_free(zc_delete(z->s, path));
		free(path);
	}
	free(seq);
}

/* The value of "key=" in an event's lines, or NULL. */
static char *field(const char *data, const char *key, size_t *len)
{
	size_t klen = strlen(key);

	for (const char *line = data; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (n > klen && strncmp(line, key, klen) == 0 && line[klen] == '=') {
			*len = n - klen - 1;
			return engine_dup(line + klen + 1, *len);
		}
		line = end ? end + 1 : NULL;
	}
	*len = 0;
	return NULL;
}

static long long number_field(const char *data, const char *key)
{
	size_t len;
	char *v = field(data, key, &len), *end;
	long long n = -1;

	if (v && len > 0 && len <= 18 && strspn(v, "0123456789") == len)
		n = strtoll(v, &end, 10);
	free(v);
	return n;
}

/* 0 an event, -1 not one of ours */
int zk_event_parse(const struct zc *g, const char *name,
		   struct history_event *ev)
{
	/* in enum history_kind's order */
	static const char *const kinds[] = { "acquired", "broken", "released", "lost",
					     "killed" };
	const int n_kinds = sizeof kinds / sizeof kinds[0];
	size_t len;
	char *kind, *fence;
	int k;

	if (!g || g->rc != ZOK || g->data_len <= 0 || memchr(g->data, '\0', (size_t)g->data_len))
		return -1;
	if (!(kind = field(g->data, "event", &len)))
		return -1;
	for (k = 0; k < n_kinds && strcmp(kind, kinds[k]) != 0; k++)
		;
	free(kind);
	if (k == n_kinds)
		return -1;
	*ev = (struct history_event){
		.kind = (enum history_kind)k,
		.time_ms = g->stat.ctime,
		.id = strdup(name),
		.fence = number_field(g->data, "fence"),
		.exit = number_field(g->data, "exit"),
		.held_ms = number_field(g->data, "held_ms"),
		.n_servers = 1,
	};
	/* made in the contender's own multi: that transaction's zxid, its
	 * czxid, is the fence (ZK_FENCE_TXN) */
	if ((fence = field(g->data, "fence", &len)) && strcmp(fence, "*") == 0)
		ev->fence = g->stat.czxid;
	free(fence);
	ev->token = field(g->data, "token", &ev->token_len);
	if (!ev->token)
		ev->token = strdup("");
	ev->holder = field(g->data, "holder", &ev->holder_len);
	ev->by = field(g->data, "by", &ev->by_len);
	if (ev->holder && !ev->holder_len) {
		free(ev->holder);
		ev->holder = NULL;
	}
	if (ev->by && !ev->by_len) {
		free(ev->by);
		ev->by = NULL;
	}
	return 0;
}
