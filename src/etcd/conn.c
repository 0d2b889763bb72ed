/* conn.c - calls to an etcd cluster's JSON gateway (/v3/...): a member
 * that does not answer is left for the next, a kept-alive connection the
 * server closed is opened again, an expired auth token is renewed, and
 * what etcd says goes up as dlock's exit statuses. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include "clock.h"
#include "conn.h"
#include "reply.h"

void etcd_cluster_init(struct etcd_cluster *cl, const struct etcd_url *url,
		       const struct tls_options *tls, const char *password)
{
	*cl = (struct etcd_cluster){ .url = url, .tls = tls };
	if (url->user[0]) {
		cl->user = url->user;
		cl->password = url->has_password ? url->password :
			       password ? password : "";
	}
}

void etcd_cluster_free(struct etcd_cluster *cl)
{
	free(cl->token);
	cl->token = NULL;
}

void etcd_cluster_resolve(struct etcd_cluster *cl)
{
	if (cl->resolved_all || cl->url->tls)	/* libcurl looks names up */
		return;
	for (size_t i = 0; i < cl->url->n_ep; i++)
		cl->resolved[i] = http_resolve(&cl->url->ep[i], &cl->addr[i],
					       cl->resolve_err[i],
					       sizeof cl->resolve_err[i]) == 0;
	cl->resolved_all = true;
}

const char *etcd_member_text(const struct etcd_cluster *cl, size_t i, char *buf,
			     size_t len)
{
	const struct etcd_endpoint *ep = &cl->url->ep[i];

	snprintf(buf, len, ep->v6 ? "%s://[%s]:%d" : "%s://%s:%d",
		 cl->url->tls ? "etcds" : "etcd", ep->host, ep->port);
	return buf;
}

void etcd_client_init(struct etcd_client *c, struct etcd_cluster *cl)
{
	*c = (struct etcd_client){ .cl = cl, .conn = { .fd = -1 } };
	http_resp_init(&c->stream);
}

void etcd_client_close(struct etcd_client *c)
{
	http_close(&c->conn);
	free(c->conn.in);
	c->conn.in = NULL;
	c->conn.in_cap = 0;
	http_resp_free(&c->stream);
	c->streaming = false;
}

static void fail(struct etcd_client *c, size_t ep, struct error *err, int exit,
		 const char *why)
{
	char url[300];

	error_set(err, exit, "%s: %s", etcd_member_text(c->cl, ep, url, sizeof url),
		  why);
}

/* Whether a signal ended a wait of this try since net_stopped() said
 * before (net.h): the try is over, and the next member is not asked. */
static bool stopped_since(bool before)
{
	return !before && net_stopped();
}

/* Connects to the member that answered last, else the next ones in turn. */
static int connect_any(struct etcd_client *c, int64_t deadline_ms,
		       struct error *err)
{
	struct etcd_cluster *cl = c->cl;
	size_t n = cl->url->n_ep;
	bool stopped = net_stopped();

	etcd_cluster_resolve(cl);
	for (size_t k = 0; k < n; k++) {
		size_t i = (cl->cur + k) % n;
		char why[512];
		bool refused = false;

		if ((clock_now_ms() >= deadline_ms || stopped_since(stopped)) && k > 0)
			break;
		if (!cl->url->tls && !cl->resolved[i]) {
			fail(c, i, err, EX_UNAVAILABLE, cl->resolve_err[i]);
			continue;
		}
		if (http_connect(&c->conn, &cl->url->ep[i], &cl->addr[i], cl->url->tls,
				 cl->tls, deadline_ms, why, sizeof why, &refused) == 0) {
			c->ep = i;
			c->fresh = true;
			cl->cur = i;
			return 0;
		}
		if (net_local_failure(errno)) {
			/* ours, not the member's: the next would fail alike */
			fail(c, i, err, EX_OSERR, why);
			return -1;
		}
		cl->tls_refused |= refused;
		fail(c, i, err, EX_UNAVAILABLE, why);
	}
	return -1;
}

/* One request on the connection, its whole answer in r. -1: the
 * connection failed (why), -2: what came is not HTTP as etcd speaks it;
 * closed either way. */
static int request(struct etcd_client *c, const char *method, const char *path,
		   const char *body, bool auth, int64_t deadline_ms,
		   struct http_resp *r, char *why, size_t whylen)
{
	const struct etcd_endpoint *ep = &c->cl->url->ep[c->ep];
	size_t len = strlen(body);
	char *req;
	int n, done;

	n = asprintf(&req, ep->v6 ?
		     "%s %s HTTP/1.1\r\nHost: [%s]:%d\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s%s\r\n%s" :
		     "%s %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s%s\r\n%s",
		     method, path, ep->host, ep->port, len,
		     auth && c->cl->token && c->cl->token[0] ? "Authorization: " : "",
		     auth && c->cl->token && c->cl->token[0] ? c->cl->token : "",
		     auth && c->cl->token && c->cl->token[0] ? "\r\n" : "", body);
	if (n < 0) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	http_resp_init(r);
	c->conn.in_len = 0;
	n = http_send(&c->conn, req, (size_t)n, deadline_ms, why, whylen);
	free(req);
	c->fresh = false;
	while (n == 0 && (done = http_parse_conn(r, &c->conn, why, whylen)) == 0) {
		int got = http_read(&c->conn, why, whylen);

		if (got < 0)
			n = -1;
		else if (got == 0 && !http_wait(&c->conn, deadline_ms)) {
			snprintf(why, whylen, "no answer in time");
			n = -1;
		}
	}
	if (n == 0 && done < 0)
		n = -2;
	if (n < 0 || r->close) {
		http_close(&c->conn);
		if (n < 0)
			http_resp_free(r);
	}
	return n;
}

/* etcd's words for a failure, as an exit status (the man page's list):
 * 77 for credentials and rights, 69 for a cluster that cannot serve now
 * (no leader, a minority member, too many requests, no space left, a
 * learner), 70 for anything else, an answer dlock did not expect. */
int etcd_exit_of(int code, const char *msg)
{
	switch (code) {
	case GRPC_UNAUTHENTICATED:
	case GRPC_PERMISSION_DENIED:
		return EX_NOPERM;
	case GRPC_INVALID_ARGUMENT:
		if (strstr(msg, "authentication failed") || strstr(msg, "user name is empty"))
			return EX_NOPERM;
		/* a name longer than the server's --max-request-bytes */
		if (strstr(msg, "request is too large"))
			return EX_USAGE;
		/* the users and roles changed since we authenticated */
		return strstr(msg, "revision of auth store is old") ? EX_UNAVAILABLE :
		       EX_SOFTWARE;
	case GRPC_FAILED_PRECONDITION:
		if (strstr(msg, "user name not found") || strstr(msg, "role name not found") ||
		    strstr(msg, "root user does not have root role"))
			return EX_NOPERM;
		/* a member that lost its leadership as it answered */
		return strstr(msg, "not leader") ? EX_UNAVAILABLE : EX_SOFTWARE;
	case GRPC_CANCELLED:
	case GRPC_DEADLINE_EXCEEDED:
	case GRPC_RESOURCE_EXHAUSTED:	/* too many requests; no space (an alarm) */
	case GRPC_ABORTED:
	case GRPC_UNAVAILABLE:		/* no leader, timed out, a learner */
	case GRPC_DATA_LOSS:		/* corrupt: an alarm the cluster raised */
		return EX_UNAVAILABLE;
	case GRPC_UNKNOWN:
		/* a member cut off from the majority times out its proposals
		 * (a lease grant) with the gateway's own deadline */
		return strstr(msg, "context deadline exceeded") ||
		       strstr(msg, "context canceled") ? EX_UNAVAILABLE : EX_SOFTWARE;
	default:
		return EX_SOFTWARE;
	}
}

/* An HTTP status without etcd's JSON (a proxy in front, or not etcd). */
static int exit_of_status(int status)
{
	switch (status) {
	case 401:
	case 403:
	case 407:
		return EX_NOPERM;
	case 429:
	case 502:
	case 503:
	case 504:
		return EX_UNAVAILABLE;
	default:
		return EX_SOFTWARE;
	}
}

/* What a status without etcd's words means, for the one line: a server
 * too busy to answer is named as such, not as an error of etcd's. */
static const char *status_words(int status)
{
	switch (status) {
	case 404:
		return " (not etcd v3.4 or later?)";
	case 429:
		return " (Too Many Requests: the server is overloaded)";
	case 502:
	case 504:
		return " (a proxy in front could not reach etcd in time)";
	case 503:
		return " (Service Unavailable: the server is overloaded or has no leader)";
	}
	return "";
}

static int authenticate(struct etcd_client *c, int64_t deadline_ms,
			struct error *err);

/* The oldest etcd whose JSON gateway serves /v3/ (3.3 has /v3beta/, 3.2
 * /v3alpha/): every call dlock makes is there since. */
#define MIN_MAJOR 3
#define MIN_MINOR 4

/* After a /v3/ path was not found: whether the member is an etcd older
 * than that, by its GET /version, asked then only (nothing on the way of
 * a server that has /v3/). why names it. */
static bool too_old(struct etcd_client *c, int64_t deadline_ms, char *why,
		    size_t whylen)
{
	struct http_resp r;
	json_object *o = NULL, *v;
	const char *version;
	unsigned major, minor;
	bool old = false;
	bool refused;
	char ignored[256];

	if (c->conn.fd < 0 &&
	    http_connect(&c->conn, &c->cl->url->ep[c->ep], &c->cl->addr[c->ep],
			 c->cl->url->tls, c->cl->tls, deadline_ms, ignored,
			 sizeof ignored, &refused) < 0)
		return false;
	if (request(c, "GET", "/version", "", false, deadline_ms, &r, ignored,
		    sizeof ignored) < 0)
		return false;
	if (r.status == 200 && (o = etcd_json_parse(r.body ? r.body : "", r.body_len)) &&
	    json_object_object_get_ex(o, "etcdserver", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    sscanf(version = json_object_get_string(v), "%u.%u", &major, &minor) == 2 &&
	    (major < MIN_MAJOR || (major == MIN_MAJOR && minor < MIN_MINOR))) {
		snprintf(why, whylen, "etcd %.32s is too old: dlock needs etcd %d.%d or later",
			 version, MIN_MAJOR, MIN_MINOR);
		old = true;
	}
	json_object_put(o);
	http_resp_free(&r);
	return old;
}

/* The cluster an answer (or a stream's result) came from: its header's
 * cluster_id, a uint64 in decimal; NULL when it has none. */
static const char *cluster_of(json_object *o)
{
	json_object *h, *id;

	if (!o || !json_object_object_get_ex(o, "header", &h) ||
	    !json_object_object_get_ex(h, "cluster_id", &id) ||
	    !json_object_is_type(id, json_type_string) ||
	    json_object_get_string_len(id) == 0)
		return NULL;
	return json_object_get_string(id);
}

/* Whether id is the cluster of the first answer (which it becomes when
 * there was none); else why, naming member ep, the first member and
 * both clusters (in hex, as etcdctl shows IDs). */
static bool same_cluster(struct etcd_cluster *cl, size_t ep, const char *id,
			 char *why, size_t whylen)
{
	char mine[300], first[300];

	if (!id)
		return true;
	if (!cl->cluster_id[0]) {
		snprintf(cl->cluster_id, sizeof cl->cluster_id, "%.20s", id);
		cl->cluster_ep = ep;
		return true;
	}
	if (strcmp(id, cl->cluster_id) == 0)
		return true;
	etcd_member_text(cl, ep, mine, sizeof mine);
	etcd_member_text(cl, cl->cluster_ep, first, sizeof first);
	snprintf(why, whylen, "%.280s is a member of etcd cluster %llx, %.280s of cluster %llx: one URL, one cluster",
		 mine, strtoull(id, NULL, 10), first,
		 strtoull(cl->cluster_id, NULL, 10));
	return false;
}

/* A request and its answer: 0 and *reply for 200; -1 with err and *code. */
static int call_once(struct etcd_client *c, const char *path, const char *body,
		     bool auth, int64_t deadline_ms, json_object **reply, int *code,
		     bool *retry, struct error *err)
{
	struct http_resp r;
	char why[512];
	const char *msg;
	bool was_fresh = c->fresh;
	json_object *o;
	int n;

	*retry = false;
	if ((n = request(c, "POST", path, body, auth, deadline_ms, &r, why,
			 sizeof why)) == -2) {
		fail(c, c->ep, err, EX_SOFTWARE, why);
		return -1;
	}
	if (n < 0) {
		fail(c, c->ep, err, EX_UNAVAILABLE, why);
		/* a kept-alive connection the server had closed */
		*retry = !was_fresh && clock_now_ms() < deadline_ms;
		return -1;
	}
	o = etcd_json_parse(r.body ? r.body : "", r.body_len);
	if (r.status == 200 && o &&
	    !same_cluster(c->cl, c->ep, cluster_of(o), why, sizeof why)) {
		/* never counted: a setting to fix, before anything is taken
		 * there (check_members), or at once when first met later */
		http_resp_free(&r);
		json_object_put(o);
		error_set(err, EX_USAGE, "%s", why);
		return -1;
	}
	if (r.status == 200 && o) {
		http_resp_free(&r);
		*reply = o;
		return 0;
	}
	if (!o || etcd_error_parse(o, &msg, code) < 0) {
		int status = r.status;

		http_resp_free(&r);
		json_object_put(o);
		/* an older etcd: a setting to fix, but a member of its own,
		 * so the next member is asked (an upgrade under way) */
		if (status == 404 && too_old(c, deadline_ms, why, sizeof why)) {
			c->cl->too_old = true;
			fail(c, c->ep, err, EX_UNAVAILABLE, why);
			return -1;
		}
		snprintf(why, sizeof why, status == 200 ? "an answer that is not etcd's JSON" :
			 "HTTP status %d%s", status, status_words(status));
		fail(c, c->ep, err, exit_of_status(status), why);
		c->cl->busy |= exit_of_status(status) == EX_UNAVAILABLE;
		return -1;
	}
	n = etcd_exit_of(*code, msg);
	c->cl->busy |= n == EX_UNAVAILABLE;
	if (*code == GRPC_PERMISSION_DENIED && c->cl->user)
		snprintf(why, sizeof why, "%s (etcd user %s)", msg, c->cl->user);
	else
		snprintf(why, sizeof why, "%s", msg);
	fail(c, c->ep, err, n, why);
	http_resp_free(&r);
	json_object_put(o);
	return -1;
}

static int authenticate(struct etcd_client *c, int64_t deadline_ms,
			struct error *err)
{
	struct etcd_cluster *cl = c->cl;
	json_object *body = json_object_new_object(), *reply = NULL, *t;
	int code = -1, r;
	bool retry;

	json_object_object_add(body, "name", json_object_new_string(cl->user));
	json_object_object_add(body, "password", json_object_new_string(cl->password));
	r = call_once(c, "/v3/auth/authenticate",
		      json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
		      false, deadline_ms, &reply, &code, &retry, err);
	json_object_put(body);
	if (r < 0) {
		/* a cluster without authentication takes anyone */
		if (code == GRPC_FAILED_PRECONDITION && strstr(err->msg, "not enabled")) {
			free(cl->token);
			cl->token = strdup("");
			return cl->token ? 0 : -1;
		}
		return -1;
	}
	if (!json_object_object_get_ex(reply, "token", &t) ||
	    !json_object_is_type(t, json_type_string) ||
	    strpbrk(json_object_get_string(t), "\r\n")) {
		fail(c, c->ep, err, EX_SOFTWARE, "authenticate: no token in the answer");
		json_object_put(reply);
		return -1;
	}
	free(cl->token);
	cl->token = strdup(json_object_get_string(t));
	json_object_put(reply);
	return cl->token ? 0 : -1;
}

/* Whether the client URL u ("http://10.0.0.1:2379", "https://[::1]:2379")
 * names endpoint ep: the same port, and the same host name, or an address
 * the endpoint's name has (a, looked up before). */
static bool names_endpoint(const char *u, const struct etcd_endpoint *ep,
			   const struct net_addrs *a)
{
	const char *h = strstr(u, "://"), *end, *colon;
	char host[256];
	unsigned char bin[16];
	size_t len;
	long port;

	h = h ? h + 3 : u;
	if (*h == '[') {
		if (!(end = strchr(++h, ']')) || end[1] != ':')
			return false;
		colon = end + 1;
	} else if (!(colon = end = strrchr(h, ':'))) {
		return false;
	}
	port = strtol(colon + 1, NULL, 10);
	len = (size_t)(end - h);
	if (port != ep->port || len >= sizeof host)
		return false;
	memcpy(host, h, len);
	host[len] = '\0';
	if (strcasecmp(host, ep->host) == 0)
		return true;
	for (size_t k = 0; a && k < a->n; k++) {
		const struct sockaddr_storage *sa = &a->addr[k].sa;

		if (sa->ss_family == AF_INET && inet_pton(AF_INET, host, bin) == 1 &&
		    memcmp(&((const struct sockaddr_in *)sa)->sin_addr, bin, 4) == 0)
			return true;
		if (sa->ss_family == AF_INET6 && inet_pton(AF_INET6, host, bin) == 1 &&
		    memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, bin, 16) == 0)
			return true;
	}
	return false;
}

/* Whether one of the members in a MemberList answer has a client URL
 * that names endpoint i of the URL. */
static bool among_members(const struct etcd_cluster *cl, json_object *list, size_t i)
{
	json_object *members, *m, *urls;
	const struct net_addrs *a = cl->url->tls || !cl->resolved[i] ? NULL : &cl->addr[i];

	if (!json_object_object_get_ex(list, "members", &members) ||
	    !json_object_is_type(members, json_type_array))
		return false;
	for (size_t k = 0; k < json_object_array_length(members); k++) {
		m = json_object_array_get_idx(members, k);
		if (!json_object_is_type(m, json_type_object) ||
		    !json_object_object_get_ex(m, "clientURLs", &urls) ||
		    !json_object_is_type(urls, json_type_array))
			continue;
		for (size_t j = 0; j < json_object_array_length(urls); j++) {
			json_object *u = json_object_array_get_idx(urls, j);

			if (json_object_is_type(u, json_type_string) &&
			    names_endpoint(json_object_get_string(u), &cl->url->ep[i], a))
				return true;
		}
	}
	return false;
}

/* Endpoint i, which the member list did not name: its own MemberList's
 * header says its cluster. 0: the same, or no answer by until_ms (a
 * member that is down cannot say; a call that reaches it later compares
 * then); -1 with err (64): another cluster. */
static int ask_member(struct etcd_client *from, size_t i, int64_t until_ms,
		      struct error *err)
{
	struct etcd_cluster *cl = from->cl;
	struct etcd_client probe;
	struct http_resp r;
	json_object *o = NULL;
	char why[700];
	bool refused, same = true;

	etcd_client_init(&probe, cl);
	probe.ep = i;
	if ((cl->url->tls || cl->resolved[i]) &&
	    http_connect(&probe.conn, &cl->url->ep[i], &cl->addr[i], cl->url->tls,
			 cl->tls, until_ms, why, sizeof why, &refused) == 0 &&
	    request(&probe, "POST", "/v3/cluster/member/list", "{}", false, until_ms,
		    &r, why, sizeof why) == 0) {
		if (r.status == 200 && (o = etcd_json_parse(r.body ? r.body : "", r.body_len)))
			same = same_cluster(cl, i, cluster_of(o), why, sizeof why);
		json_object_put(o);
		http_resp_free(&r);
	}
	etcd_client_close(&probe);
	if (same)
		return 0;
	error_set(err, EX_USAGE, "%s", why);
	return -1;
}

/* One URL, one cluster, checked before the first request of a URL that
 * names several members: each host must not lock in a cluster of its
 * own, as two hosts whose URLs list the members of two clusters in other
 * orders (or whose first member is down) would. The member answering
 * gives its cluster's members (one request more, on its connection);
 * another endpoint of the URL that is none of their client URLs (a
 * proxy, a NAT, names other than advertised) is asked its cluster, each
 * in a share of half the time left. 0, or -1 with err: 64 when another
 * cluster answered, or how the MemberList request failed (69: then the
 * next member, as for any call). A MemberList refused otherwise (a proxy
 * that does not pass it) leaves the answers' own cluster_id to compare. */
static int check_members(struct etcd_client *c, int64_t deadline_ms,
			 struct error *err)
{
	struct etcd_cluster *cl = c->cl;
	json_object *list = NULL;
	size_t n_ep = cl->url->n_ep, ask[ETCD_MAX_ENDPOINTS], n_ask = 0;
	int64_t end_ms;
	int code;
	bool retry, stopped = net_stopped();

	if (call_once(c, "/v3/cluster/member/list", "{}", true, deadline_ms, &list,
		      &code, &retry, err) < 0) {
		if (err->exit == EX_UNAVAILABLE || err->exit == EX_USAGE)
			return -1;
		*err = (struct error){ 0 };
		cl->members_checked = true;
		return 0;
	}
	for (size_t i = 0; i < n_ep; i++)
		if (i != c->ep && !among_members(cl, list, i))
			ask[n_ask++] = i;
	json_object_put(list);
	end_ms = clock_now_ms() + (deadline_ms - clock_now_ms()) / 2;
	for (size_t k = 0; k < n_ask; k++) {
		int64_t left_ms = end_ms - clock_now_ms();

		if (left_ms <= 0 || stopped_since(stopped))
			break;
		if (ask_member(c, ask[k], clock_now_ms() + left_ms / (int64_t)(n_ask - k),
			       err) < 0)
			return -1;
	}
	cl->members_checked = true;
	return 0;
}

int etcd_call(struct etcd_client *c, const char *path, json_object *body,
	      int64_t deadline_ms, json_object **reply, int *code,
	      struct error *err)
{
	const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	struct etcd_cluster *cl = c->cl;
	size_t n_ep = cl->url->n_ep, moved = 0;
	bool reauthed = false, stale_retried = false, stopped = net_stopped();

	*reply = NULL;
	for (;;) {
		bool retry;
		int r;

		*code = -1;
		if (c->conn.fd < 0 && connect_any(c, deadline_ms, err) < 0)
			return -1;
		if (cl->user && !cl->token && authenticate(c, deadline_ms, err) < 0) {
			if (err->exit != EX_UNAVAILABLE)
				return -1;
			http_close(&c->conn);
			goto next_member;
		}
		if (n_ep > 1 && !cl->members_checked &&
		    check_members(c, deadline_ms, err) < 0) {
			if (err->exit != EX_UNAVAILABLE)
				return -1;
			http_close(&c->conn);
			goto next_member;
		}
		r = call_once(c, path, text, true, deadline_ms, reply, code, &retry, err);
		if (r == 0)
			return 0;
		if (retry && !stale_retried && !stopped_since(stopped)) {
			stale_retried = true;
			continue;
		}
		if ((*code == GRPC_UNAUTHENTICATED ||
		     strstr(err->msg, "revision of auth store is old")) &&
		    cl->user && !reauthed) {
			reauthed = true;
			free(cl->token);
			cl->token = NULL;
			continue;
		}
		if (err->exit != EX_UNAVAILABLE)
			return -1;
		http_close(&c->conn);
next_member:
		/* this member cannot serve (down, cut off from the majority):
		 * the next, now while time is left, else in the next call */
		cl->cur = (c->ep + 1) % n_ep;
		if (++moved >= n_ep || clock_now_ms() >= deadline_ms ||
		    stopped_since(stopped))
			return -1;
	}
}

int etcd_stream_start(struct etcd_client *c, const char *path, json_object *body,
		      int64_t deadline_ms, struct error *err)
{
	const char *text = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	const struct etcd_endpoint *ep;
	char why[512], *req;
	int n;

	etcd_client_close(c);
	if (connect_any(c, deadline_ms, err) < 0)
		return -1;
	if (c->cl->user && !c->cl->token && authenticate(c, deadline_ms, err) < 0) {
		http_close(&c->conn);
		return -1;
	}
	ep = &c->cl->url->ep[c->ep];
	n = asprintf(&req, ep->v6 ?
		     "POST %s HTTP/1.1\r\nHost: [%s]:%d\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s%s\r\n%s" :
		     "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s%s%s\r\n%s",
		     path, ep->host, ep->port, strlen(text),
		     c->cl->token && c->cl->token[0] ? "Authorization: " : "",
		     c->cl->token && c->cl->token[0] ? c->cl->token : "",
		     c->cl->token && c->cl->token[0] ? "\r\n" : "", text);
	if (n < 0) {
		error_set(err, EX_OSERR, "out of memory");
		http_close(&c->conn);
		return -1;
	}
	c->conn.in_len = 0;
	if (http_send(&c->conn, req, (size_t)n, deadline_ms, why, sizeof why) < 0) {
		free(req);
		fail(c, c->ep, err, EX_UNAVAILABLE, why);
		http_close(&c->conn);
		return -1;
	}
	free(req);
	http_resp_init(&c->stream);
	c->stream_at = 0;
	c->streaming = true;
	return 0;
}

int etcd_stream_next(struct etcd_client *c, json_object **msg, struct error *err)
{
	struct http_resp *r = &c->stream;
	json_object *res;
	char why[700];

	*msg = NULL;
	if (!c->streaming || c->conn.fd < 0) {
		error_set(err, EX_UNAVAILABLE, "no stream");
		return -1;
	}
	for (;;) {
		int done = http_parse_conn(r, &c->conn, why, sizeof why), got;
		char *nl;

		if (done < 0) {
			fail(c, c->ep, err, EX_SOFTWARE, why);
			return -1;
		}
		if (r->status && r->status != 200) {
			const char *m;
			int code;
			json_object *o;

			if (!done)
				goto read_more;
			o = etcd_json_parse(r->body ? r->body : "", r->body_len);
			if (etcd_error_parse(o, &m, &code) == 0)
				fail(c, c->ep, err, etcd_exit_of(code, m), m);
			else
				fail(c, c->ep, err, EX_SOFTWARE, "a stream refused");
			json_object_put(o);
			return -1;
		}
		nl = r->body ? memchr(r->body + c->stream_at, '\n',
				      r->body_len - c->stream_at) : NULL;
		if (nl) {
			size_t start = c->stream_at;

			c->stream_at = (size_t)(nl + 1 - r->body);
			*msg = etcd_json_parse(r->body + start, (size_t)(nl - r->body) - start);
			if (*msg && json_object_object_get_ex(*msg, "result", &res) &&
			    !same_cluster(c->cl, c->ep, cluster_of(res), why, sizeof why)) {
				json_object_put(*msg);
				*msg = NULL;
				error_set(err, EX_USAGE, "%s", why);
				return -1;
			}
			/* what was read goes, now and then */
			if (c->stream_at > 65536) {
				memmove(r->body, r->body + c->stream_at,
					r->body_len - c->stream_at + 1);
				r->body_len -= c->stream_at;
				c->stream_at = 0;
			}
			if (!*msg) {
				fail(c, c->ep, err, EX_SOFTWARE, "a stream message that is not etcd's JSON");
				return -1;
			}
			return 1;
		}
		if (done) {
			fail(c, c->ep, err, EX_UNAVAILABLE, "the stream ended");
			return -1;
		}
read_more:
		got = http_read(&c->conn, why, sizeof why);
		if (got < 0) {
			fail(c, c->ep, err, EX_UNAVAILABLE, why);
			return -1;
		}
		if (got == 0)
			return 0;
	}
}
