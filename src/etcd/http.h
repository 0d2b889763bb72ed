/* http.h - HTTP/1.1 to etcd's JSON gateway: one connection, plain TCP or
 * TLS (through libcurl, loaded only for etcds://), requests sent whole,
 * answers read as they come (a watch is one endless answer). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine.h"
#include "net.h"
#include "url.h"

/* The longest answer taken: a status of a lock with very many waiters. */
#define HTTP_MAX_BODY (64u << 20)

struct http_conn {
	int fd;			/* -1: not connected */
	void *tls;		/* libcurl's handle (etcds://), or NULL */
	char *in;		/* received, not parsed yet */
	size_t in_len, in_cap;
};

/* An answer being read: the head, then the body (Content-Length or
 * chunked), decoded into body. */
struct http_resp {
	int state;
	int status;		/* 200... */
	bool chunked;
	bool close;		/* Connection: close */
	long long length;	/* Content-Length; -1: none */
	unsigned long long chunk_left;
	char *body;		/* NUL-terminated */
	size_t body_len, body_cap;
};

/* Loads libcurl for TLS; once, on the main thread. */
int http_tls_init(struct error *err);
void http_tls_end(void);

/* An endpoint's addresses, looked up on the main thread (net.h): the
 * renewal thread must not wait on a name lookup. */
int http_resolve(const struct etcd_endpoint *ep, struct net_addrs *a,
		 char *err, size_t errlen);

/* Connects by the deadline (absolute, clock.h), to each of a's addresses
 * in turn (plain TCP; libcurl walks them for TLS). tls: o's files. On
 * -1, errno is a local failure (net_local_failure()) or 0. */
int http_connect(struct http_conn *c, const struct etcd_endpoint *ep,
		 const struct net_addrs *a, bool tls,
		 const struct tls_options *o, int64_t deadline_ms,
		 char *err, size_t errlen, bool *tls_refused);
void http_close(struct http_conn *c);
/* Sends all of buf by the deadline. */
int http_send(struct http_conn *c, const char *buf, size_t len,
	      int64_t deadline_ms, char *err, size_t errlen);
/* What has arrived, without waiting: 1 read some, 0 nothing yet, -1 the
 * connection ended or failed (err says). */
int http_read(struct http_conn *c, char *err, size_t errlen);
/* Waits for input until the deadline: 1 some, 0 the deadline passed. */
int http_wait(struct http_conn *c, int64_t deadline_ms);

void http_resp_init(struct http_resp *r);
void http_resp_free(struct http_resp *r);
/* Parses in[0..len) into r, *used of it taken. 1: the answer is complete;
 * 0: more is needed; -1: not HTTP as we take it (why says). Pure. */
int http_parse(struct http_resp *r, const char *in, size_t len, size_t *used,
	       char *why, size_t whylen);
/* http_parse on what the connection holds, dropping what it used. */
int http_parse_conn(struct http_resp *r, struct http_conn *c, char *why,
		    size_t whylen);
