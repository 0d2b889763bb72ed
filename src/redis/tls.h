/* tls.h - TLS over a node's socket, for rediss:// URLs. OpenSSL is loaded
 * with dlopen() by tls_init(), and only when a URL asks for TLS: a plain
 * run never maps it (start-up is most of what a `dlock K true` costs). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "engine.h"
#include "log.h"

#define TLS_LIBRARY "libssl.so.3"	/* OpenSSL 3, as the headers built against */


/* Loads OpenSSL and builds the context every TLS connection of the process
 * shares: the CAs, the client certificate and key are read now, before any
 * server is contacted. Once, on the main thread, before any other thread
 * exists. Returns 0, or -1 with err: 69 when libssl.so.3 cannot be loaded,
 * 64 for a file that cannot be read or used. */
int tls_init(const struct tls_options *o, struct error *err);
/* Frees the context (at exit; valgrind counts it otherwise). */
void tls_end(void);

/* What an operation returns besides a count: try again once poll() gives
 * *events, or failed (why says how; the connection is done for). */
#define TLS_WANT (-1)
#define TLS_ERR (-2)

struct tls;
/* A client on the TCP socket fd, whose connect has completed, for host (a
 * name, or an IPv4 or IPv6 address without brackets): SNI for a name, and
 * the certificate must name host unless --tls-insecure. NULL with why. */
struct tls *tls_new(int fd, const char *host, char *why, size_t whylen);
/* 1 when the handshake is done, TLS_WANT or TLS_ERR. */
int tls_handshake(struct tls *t, short *events, char *why, size_t whylen);
/* Bytes read (> 0), 0 at the server's close_notify, TLS_WANT or TLS_ERR.
 * Decrypted data OpenSSL holds does not make the socket readable: read
 * until TLS_WANT before poll() again. */
ssize_t tls_read(struct tls *t, void *buf, size_t len, short *events, char *why,
		 size_t whylen);
/* Bytes written (> 0), TLS_WANT or TLS_ERR. After TLS_WANT, the next call
 * must pass the same bytes again (at the same or another address). */
ssize_t tls_write(struct tls *t, const void *buf, size_t len, short *events,
		  char *why, size_t whylen);
/* Ends the session; the socket is the caller's to close. No close_notify
 * is sent: a socket of the lock may be shared with -F's helper process
 * after fork(), whose session one from us would end, and Redis needs none
 * (it frees the client at the TCP close). NULL is fine. */
void tls_free(struct tls *t);
