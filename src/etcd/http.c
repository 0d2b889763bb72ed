/* http.c - HTTP/1.1 to etcd's JSON gateway, written here rather than
 * through libcurl's transfers: loading libcurl (and its OpenSSL, GnuTLS,
 * Kerberos, LDAP, SSH and RTMP libraries) takes 10 to 30 ms on Debian 12,
 * as long as a whole `etcdctl lock`, on every run of a plain etcd://
 * lock, while the gateway needs little of HTTP: POST with a length, and
 * answers with a length or chunked (a watch is one endless chunked
 * answer). TLS (etcds://) is libcurl's, loaded then only: it connects,
 * checks the certificate and host name as curl does, and carries our
 * bytes (CURLOPT_CONNECT_ONLY, curl_easy_send/recv). */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <curl/curl.h>
#include "clock.h"
#include "http.h"

#define MAX_HEAD 16384

enum { S_HEAD, S_BODY, S_CHUNK_SIZE, S_CHUNK_DATA, S_CHUNK_END, S_TRAILER, S_DONE };

/* ---- libcurl, for TLS only ------------------------------------------ */

static struct {
	void *lib;
	CURLcode (*global_init)(long);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	CURLcode (*easy_send)(CURL *, const void *, size_t, size_t *);
	CURLcode (*easy_recv)(CURL *, void *, size_t, size_t *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
} curl;

int http_tls_init(struct error *err)
{
	static const char *const names[] = {
		"curl_global_init", "curl_global_cleanup", "curl_easy_init",
		"curl_easy_setopt", "curl_easy_perform", "curl_easy_getinfo",
		"curl_easy_send", "curl_easy_recv", "curl_easy_cleanup",
		"curl_easy_strerror",
	};
	void **slots[] = {
		(void **)&curl.global_init, (void **)&curl.global_cleanup,
		(void **)&curl.easy_init, (void **)&curl.easy_setopt,
		(void **)&curl.easy_perform, (void **)&curl.easy_getinfo,
		(void **)&curl.easy_send, (void **)&curl.easy_recv,
		(void **)&curl.easy_cleanup, (void **)&curl.easy_strerror,
	};

	if (curl.lib)
		return 0;
	if (!(curl.lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL))) {
		error_set(err, EX_UNAVAILABLE, "etcds:// needs libcurl: %s", dlerror());
		return -1;
	}
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (!(*slots[i] = dlsym(curl.lib, names[i]))) {
			error_set(err, EX_UNAVAILABLE, "libcurl: no %s", names[i]);
			dlclose(curl.lib);
			curl.lib = NULL;
			return -1;
		}
	/* Before any thread: curl_global_init is not thread-safe. */
	if (curl.global_init(CURL_GLOBAL_SSL) != CURLE_OK) {
		error_set(err, EX_SOFTWARE, "libcurl: curl_global_init failed");
		dlclose(curl.lib);
		curl.lib = NULL;
		return -1;
	}
	return 0;
}

void http_tls_end(void)
{
	if (!curl.lib)
		return;
	curl.global_cleanup();
	/* not dlclose(): OpenSSL's atexit handlers point into it */
}

/* ---- connections ---------------------------------------------------- */

int http_resolve(const struct etcd_endpoint *ep, struct net_addrs *a,
		 char *err, size_t errlen)
{
	return net_resolve(ep->host, ep->port, AF_UNSPEC, a, err, errlen);
}

static int connect_tls(struct http_conn *c, const struct etcd_endpoint *ep,
		       const struct tls_options *o, int64_t deadline_ms,
		       char *err, size_t errlen, bool *tls_refused)
{
	char url[300], why[CURL_ERROR_SIZE] = "";
	int64_t left_ms = deadline_ms - clock_now_ms();
	curl_socket_t fd;
	CURLcode e;
	CURL *h;

	if (!curl.lib) {
		snprintf(err, errlen, "libcurl not loaded");
		return -1;
	}
	if (!(h = curl.easy_init())) {
		snprintf(err, errlen, "libcurl: out of memory");
		return -1;
	}
	snprintf(url, sizeof url, ep->v6 ? "https://[%s]:%d/" : "https://%s:%d/",
		 ep->host, ep->port);
	curl.easy_setopt(h, CURLOPT_URL, url);
	curl.easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);	/* threads */
	/* ALPN offers HTTP/1.1 only: the bytes we send are HTTP/1.1 */
	curl.easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(left_ms > 1 ? left_ms : 1));
	curl.easy_setopt(h, CURLOPT_ERRORBUFFER, why);
	if (o && o->ca)
		curl.easy_setopt(h, CURLOPT_CAINFO, o->ca);
	if (o && o->cert) {
		curl.easy_setopt(h, CURLOPT_SSLCERT, o->cert);
		curl.easy_setopt(h, CURLOPT_SSLKEY, o->key);
	}
	if (o && o->insecure) {
		curl.easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl.easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	e = curl.easy_perform(h);
	if (e == CURLE_OK && (curl.easy_getinfo(h, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK ||
			      fd == CURL_SOCKET_BAD))
		e = CURLE_COULDNT_CONNECT;
	curl.easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	if (e != CURLE_OK) {
		snprintf(err, errlen, "%s", why[0] ? why : curl.easy_strerror(e));
		log_lower_first(err);
		/* a certificate to fix, not an outage */
		*tls_refused = e == CURLE_PEER_FAILED_VERIFICATION ||
			       e == CURLE_SSL_CERTPROBLEM || e == CURLE_SSL_CACERT_BADFILE ||
			       e == CURLE_SSL_CONNECT_ERROR;
		curl.easy_cleanup(h);
		return -1;
	}
	c->fd = (int)fd;
	c->tls = h;
	return 0;
}

int http_connect(struct http_conn *c, const struct etcd_endpoint *ep,
		 const struct net_addrs *a, bool tls,
		 const struct tls_options *o, int64_t deadline_ms,
		 char *err, size_t errlen, bool *tls_refused)
{
	int r;

	*tls_refused = false;
	http_close(c);
	if (!tls)
		return net_dial(a, deadline_ms, &c->fd, err, errlen);
	r = connect_tls(c, ep, o, deadline_ms, err, errlen, tls_refused);
	errno = 0;	/* libcurl says its failures in words */
	return r;
}

void http_close(struct http_conn *c)
{
	if (c->tls)
		curl.easy_cleanup(c->tls);	/* closes the socket */
	else if (c->fd >= 0)
		close(c->fd);
	c->tls = NULL;
	c->fd = -1;
	c->in_len = 0;
}

int http_send(struct http_conn *c, const char *buf, size_t len,
	      int64_t deadline_ms, char *err, size_t errlen)
{
	while (len > 0) {
		size_t n = 0;

		if (c->tls) {
			CURLcode e = curl.easy_send(c->tls, buf, len, &n);

			if (e != CURLE_OK && e != CURLE_AGAIN) {
				snprintf(err, errlen, "%s", curl.easy_strerror(e));
				log_lower_first(err);
				return -1;
			}
		} else {
			ssize_t w = send(c->fd, buf, len, MSG_NOSIGNAL);

			if (w < 0 && errno != EAGAIN && errno != EINTR) {
				snprintf(err, errlen, "%s", strerror(errno));
				log_lower_first(err);
				return -1;
			}
			n = w > 0 ? (size_t)w : 0;
		}
		buf += n;
		len -= n;
		if (len > 0 && n == 0 && net_wait(c->fd, POLLOUT, deadline_ms) <= 0) {
			snprintf(err, errlen, "timed out sending");
			return -1;
		}
	}
	return 0;
}

int http_read(struct http_conn *c, char *err, size_t errlen)
{
	int got = 0;

	for (;;) {
		size_t n = 0;

		if (c->in_cap - c->in_len < 16384) {
			size_t cap = c->in_cap ? c->in_cap * 2 : 32768;
			char *in;

			if (cap > HTTP_MAX_BODY * 2 || !(in = realloc(c->in, cap))) {
				snprintf(err, errlen, "answer too long");
				return -1;
			}
			c->in = in;
			c->in_cap = cap;
		}
		if (c->tls) {
			CURLcode e = curl.easy_recv(c->tls, c->in + c->in_len,
						    c->in_cap - c->in_len, &n);

			if (e == CURLE_AGAIN)
				return got;
			if (e != CURLE_OK) {
				snprintf(err, errlen, "%s", curl.easy_strerror(e));
				log_lower_first(err);
				return -1;
			}
		} else {
			ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);

			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return got;
			if (r < 0) {
				snprintf(err, errlen, "%s", strerror(errno));
				log_lower_first(err);
				return -1;
			}
			n = (size_t)r;
		}
		if (n == 0) {
			snprintf(err, errlen, "connection closed by the server");
			return -1;
		}
		c->in_len += n;
		got = 1;
	}
}

int http_wait(struct http_conn *c, int64_t deadline_ms)
{
	return net_wait(c->fd, POLLIN, deadline_ms) > 0;
}

/* ---- answers ---------------------------------------------------------- */

void http_resp_init(struct http_resp *r)
{
	*r = (struct http_resp){ .state = S_HEAD, .length = -1 };
}

void http_resp_free(struct http_resp *r)
{
	free(r->body);
	http_resp_init(r);
}

static int append(struct http_resp *r, const char *s, size_t n)
{
	if (r->body_len + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		char *b;

		while (cap < r->body_len + n + 1)
			cap *= 2;
		if (r->body_len + n > HTTP_MAX_BODY || !(b = realloc(r->body, cap)))
			return -1;
		r->body = b;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, s, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

/* Whether the header line [s, s+len) is name: ..., and where its value is. */
static bool header(const char *s, size_t len, const char *name, const char **value,
		   size_t *vlen)
{
	size_t n = strlen(name);

	if (len <= n || strncasecmp(s, name, n) != 0 || s[n] != ':')
		return false;
	s += n + 1;
	len -= n + 1;
	while (len > 0 && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	*value = s;
	*vlen = len;
	return true;
}

static bool has_token(const char *v, size_t len, const char *token)
{
	size_t n = strlen(token);

	for (size_t i = 0; i + n <= len; i++)
		if (strncasecmp(v + i, token, n) == 0 &&
		    (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
		    (i + n == len || v[i + n] == ',' || v[i + n] == ' '))
			return true;
	return false;
}

static int parse_head(struct http_resp *r, const char *in, size_t len,
		      size_t *used, char *why, size_t whylen)
{
	const char *end = NULL, *line, *eol;

	for (size_t i = 0; i + 3 < len && i < MAX_HEAD; i++)
		if (in[i] == '\r' && in[i + 1] == '\n' && in[i + 2] == '\r' &&
		    in[i + 3] == '\n') {
			end = in + i;
			break;
		}
	if (!end) {
		if (len >= MAX_HEAD) {
			snprintf(why, whylen, "an HTTP head longer than %d bytes", MAX_HEAD);
			return -1;
		}
		return 0;
	}
	if (end - in < 12 || (strncmp(in, "HTTP/1.1 ", 9) != 0 &&
			      strncmp(in, "HTTP/1.0 ", 9) != 0) ||
	    !isdigit((unsigned char)in[9]) || !isdigit((unsigned char)in[10]) ||
	    !isdigit((unsigned char)in[11]) || (end - in > 12 && in[12] != ' ' &&
						 in[12] != '\r')) {
		snprintf(why, whylen, "not an HTTP/1.1 answer (an etcd client URL?)");
		return -1;
	}
	r->status = (in[9] - '0') * 100 + (in[10] - '0') * 10 + (in[11] - '0');
	r->close = in[7] == '0';
	line = (const char *)memchr(in, '\n', (size_t)(end - in + 2)) + 1;
	while (line < end + 2) {
		const char *v;
		size_t vlen;

		eol = memchr(line, '\r', (size_t)(end + 2 - line));
		if (!eol)
			eol = end;
		if (header(line, (size_t)(eol - line), "Content-Length", &v, &vlen)) {
			long long n = 0;

			if (vlen == 0 || vlen > 12)
				goto bad_length;
			for (size_t i = 0; i < vlen; i++) {
				if (!isdigit((unsigned char)v[i]))
					goto bad_length;
				n = n * 10 + (v[i] - '0');
			}
			if (r->length >= 0 && r->length != n)
				goto bad_length;
			r->length = n;
		} else if (header(line, (size_t)(eol - line), "Transfer-Encoding", &v, &vlen)) {
			if (!has_token(v, vlen, "chunked")) {
				snprintf(why, whylen, "an HTTP transfer encoding we do not take");
				return -1;
			}
			r->chunked = true;
		} else if (header(line, (size_t)(eol - line), "Connection", &v, &vlen)) {
			r->close |= has_token(v, vlen, "close");
		}
		line = eol + 2;
	}
	if (r->length > (long long)HTTP_MAX_BODY) {
		snprintf(why, whylen, "an answer of %lld bytes: too long", r->length);
		return -1;
	}
	if (r->chunked) {
		r->length = -1;
		r->state = S_CHUNK_SIZE;
	} else if (r->length >= 0) {
		r->state = r->length ? S_BODY : S_DONE;
	} else {
		snprintf(why, whylen, "an HTTP answer without a length");
		return -1;
	}
	*used = (size_t)(end + 4 - in);
	return 1;
bad_length:
	snprintf(why, whylen, "a bad Content-Length");
	return -1;
}

/* A chunk's size line at in + *at: 1 read (*at past it, the state set
 * for its data, or the trailer after the last), 0 not all there yet,
 * CHUNK_TOO_LONG or CHUNK_BAD. */
#define CHUNK_TOO_LONG (-1)
#define CHUNK_BAD (-2)
static int chunk_size(struct http_resp *r, const char *in, size_t len,
		      size_t *at)
{
	const char *nl = memchr(in + *at, '\n', len - *at);
	unsigned long long size = 0;
	size_t i = *at;

	if (!nl) {
		if (len - *at > 256)
			goto bad_chunk;
		return 0;
	}
	for (; in + i < nl && isxdigit((unsigned char)in[i]); i++) {
		int d = isdigit((unsigned char)in[i]) ? in[i] - '0' :
			tolower((unsigned char)in[i]) - 'a' + 10;

		if (size > HTTP_MAX_BODY)
			goto too_long;
		size = size * 16 + (unsigned)d;
	}
	if (i == *at || (in[i] != ';' && in[i] != '\r') || nl[-1] != '\r')
		goto bad_chunk;
	if (size > HTTP_MAX_BODY)
		goto too_long;
	r->chunk_left = size;
	r->state = size ? S_CHUNK_DATA : S_TRAILER;
	*at = (size_t)(nl + 1 - in);
	return 1;
too_long:
	return CHUNK_TOO_LONG;
bad_chunk:
	return CHUNK_BAD;
}

int http_parse(struct http_resp *r, const char *in, size_t len, size_t *used,
	       char *why, size_t whylen)
{
	size_t at = 0;

	if (!in)	/* nothing received yet */
		in = "", len = 0;
	while (r->state != S_DONE) {
		const char *nl;
		size_t n;

		switch (r->state) {
		case S_HEAD: {
			int h = parse_head(r, in, len, &n, why, whylen);

			if (h <= 0) {
				*used = 0;
				return h;
			}
			at = n;
			break;
		}
		case S_BODY:
			n = len - at;
			if ((long long)n > r->length - (long long)r->body_len)
				n = (size_t)(r->length - (long long)r->body_len);
			if (append(r, in + at, n) < 0)
				goto too_long;
			at += n;
			if ((long long)r->body_len == r->length)
				r->state = S_DONE;
			else
				goto more;
			break;
		case S_CHUNK_SIZE: {
			int c = chunk_size(r, in, len, &at);

			if (c == CHUNK_TOO_LONG)
				goto too_long;
			if (c == CHUNK_BAD)
				goto bad_chunk;
			if (c == 0)
				goto more;
			break;
		}
		case S_CHUNK_DATA:
			n = len - at;
			if (n > r->chunk_left)
				n = (size_t)r->chunk_left;
			if (append(r, in + at, n) < 0)
				goto too_long;
			at += n;
			r->chunk_left -= n;
			if (r->chunk_left)
				goto more;
			r->state = S_CHUNK_END;
			break;
		case S_CHUNK_END:
			if (len - at < 2)
				goto more;
			if (in[at] != '\r' || in[at + 1] != '\n')
				goto bad_chunk;
			at += 2;
			r->state = S_CHUNK_SIZE;
			break;
		case S_TRAILER:
			nl = memchr(in + at, '\n', len - at);
			if (!nl) {
				if (len - at > 4096)
					goto bad_chunk;
				goto more;
			}
			if (nl == in + at || nl[-1] != '\r')
				goto bad_chunk;
			if (nl - (in + at) == 1)
				r->state = S_DONE;
			at = (size_t)(nl + 1 - in);
			break;
		}
	}
	*used = at;
	return 1;
more:
	*used = at;
	return 0;
too_long:
	snprintf(why, whylen, "an answer longer than %u bytes", HTTP_MAX_BODY);
	return -1;
bad_chunk:
	snprintf(why, whylen, "bad HTTP chunked encoding");
	return -1;
}

int http_parse_conn(struct http_resp *r, struct http_conn *c, char *why,
		    size_t whylen)
{
	size_t used = 0;
	int done = http_parse(r, c->in, c->in_len, &used, why, whylen);

	if (done < 0)
		return -1;
	if (used) {
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
	}
	return done;
}
