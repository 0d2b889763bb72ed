/* tls.c - TLS over a node's socket (OpenSSL), only where a rediss:// URL
 * asks for it.
 *
 * Debian 12's hiredis 0.14 has no TLS, and dlock drives its sockets itself
 * anyway (conn.c): this wraps one connected socket in an SSL object whose
 * handshake, reads and writes never block, each returning what poll()
 * should wait for. hiredis still formats the commands and parses the
 * replies. At the end of this file, a node's stream over such a session:
 * the handshake, hiredis' output buffer written, the reply reader fed.
 *
 * libssl is not linked: mapping it and libcrypto and running their
 * constructors would cost every plain run a good part of its start-up.
 * tls_init() dlopen()s libssl.so.3 and looks up the few functions used
 * here, typed by the headers (so each call is checked as a direct one
 * would be). Those pointers and the one SSL_CTX are the process's: set
 * once on the main thread, before any thread exists, and read by every
 * thread's connections (the renewal thread's among them), which is why
 * they live at file scope. An SSL_CTX may be shared by threads; each SSL
 * has one owner at a time, as its node does. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/err.h>
#include <openssl/pemerr.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <hiredis/sds.h>
#include "conn.h"
#include "tls.h"

#if OPENSSL_VERSION_MAJOR < 3
#error "OpenSSL 3 headers needed: dlock loads libssl.so.3"
#endif

#define FUNCTIONS(X) \
	X(TLS_client_method) X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl) \
	X(SSL_CTX_set_verify) X(SSL_CTX_set_default_verify_paths) \
	X(SSL_CTX_load_verify_locations) X(SSL_CTX_set_default_passwd_cb) \
	X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey_file) \
	X(SSL_CTX_check_private_key) X(SSL_CTX_set_client_cert_cb) \
	X(SSL_set_ex_data) X(SSL_get_ex_data) \
	X(SSL_new) X(SSL_free) X(SSL_set_fd) X(SSL_ctrl) X(SSL_set1_host) \
	X(SSL_get0_param) X(SSL_connect) X(SSL_read) X(SSL_write) \
	X(SSL_get_error) X(SSL_get_verify_result) \
	X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_VERIFY_PARAM_set_hostflags) \
	X(X509_verify_cert_error_string) \
	X(ERR_get_error) X(ERR_clear_error) X(ERR_reason_error_string)

static struct {
#define FIELD(f) __typeof__(f) *f;
	FUNCTIONS(FIELD)
#undef FIELD
} ssl;

static SSL_CTX *ctx;
static bool insecure, has_ca, has_cert;

struct tls {
	SSL *ssl;
	bool cert_asked;	/* the server asked for a client certificate
				 * that we do not have */
	char host[256];		/* what the certificate must name */
};

/* Looks every function up; returns 0, or -1 with err. */
static int load(struct error *err)
{
	void *lib = dlopen(TLS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;
	void *p;

	if (!lib) {
		error_set(err, EX_UNAVAILABLE, "TLS needs OpenSSL 3: %s", dlerror());
		return -1;
	}
	/* dlsym() on libssl's handle also finds libcrypto's functions: it
	 * searches the library and what it depends on. A data pointer to a
	 * function pointer by memcpy, as ISO C has no cast between them. */
#define LOOKUP(f) \
	if (!missing && !(p = dlsym(lib, #f))) \
		missing = #f; \
	else if (!missing) \
		memcpy(&ssl.f, &p, sizeof p);
	FUNCTIONS(LOOKUP)
#undef LOOKUP
	if (missing) {
		error_set(err, EX_UNAVAILABLE, "TLS needs OpenSSL 3: %s lacks %s",
			  TLS_LIBRARY, missing);
		dlclose(lib);
		return -1;
	}
	return 0;	/* never unloaded: OpenSSL's exit handlers run from it */
}

/* The reason of the oldest error OpenSSL queued ("no certificate or crl
 * found"), or fallback, and its code in *code when not NULL; the queue is
 * emptied. */
static const char *reason_code(const char *fallback, int *code)
{
	unsigned long e = ssl.ERR_get_error();
	const char *s = e ? ssl.ERR_reason_error_string(e) : NULL;

	if (code)
		*code = e ? ERR_GET_REASON(e) : 0;
	ssl.ERR_clear_error();
	return s ? s : fallback;
}

static const char *reason(const char *fallback)
{
	return reason_code(fallback, NULL);
}

/* A file for --tls-OPT that can be opened: OpenSSL's own error for a
 * missing one says nothing a user can act on. */
static int readable(const char *opt, const char *path, struct error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = fd < 0 ? errno : 0;
	struct stat sb;
	char why[128];

	if (fd >= 0) {
		if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode))
			e = EISDIR;
		close(fd);
	}
	if (!e)
		return 0;
	snprintf(why, sizeof why, "%s", strerror(e));
	log_lower_first(why);
	error_set(err, EX_USAGE, "--tls-%s %s: %s", opt, path, why);
	return -1;
}

/* The server asked for a client certificate and there is none: noted, as
 * with TLS 1.3 its refusal comes after our side of the handshake is done,
 * and may be lost to a reset (the alert in a buffer the kernel drops). */
static int no_client_cert(SSL *s, X509 **cert, EVP_PKEY **key)
{
	struct tls *t = ssl.SSL_get_ex_data(s, 0);

	if (t)
		t->cert_asked = true;
	return 0;	/* none: the handshake goes on without */
}

/* No pass phrase is asked for: a prompt would hang a cron job. */
static int no_passphrase(char *buf, int size, int rwflag, void *data)
{
	return -1;
}

/* The client certificate and its key. */
static int use_cert(const struct tls_options *o, struct error *err)
{
	const char *why;
	int code;

	if (readable("cert", o->cert, err) < 0 || readable("key", o->key, err) < 0)
		return -1;
	if (ssl.SSL_CTX_use_certificate_chain_file(ctx, o->cert) != 1) {
		error_set(err, EX_USAGE, "--tls-cert %s: no PEM certificate in it (%s)",
			  o->cert, reason("none found"));
		return -1;
	}
	if (ssl.SSL_CTX_use_PrivateKey_file(ctx, o->key, SSL_FILETYPE_PEM) != 1 ||
	    ssl.SSL_CTX_check_private_key(ctx) != 1) {
		why = reason_code("none found", &code);
		if (code == X509_R_KEY_VALUES_MISMATCH)
			error_set(err, EX_USAGE, "--tls-key %s: not the key of --tls-cert %s",
				  o->key, o->cert);
		else if (code == ERR_R_INTERRUPTED_OR_CANCELLED ||
			 code == PEM_R_BAD_PASSWORD_READ)
			error_set(err, EX_USAGE, "--tls-key %s: the key has a pass phrase, which dlock does not ask for",
				  o->key);
		else
			error_set(err, EX_USAGE, "--tls-key %s: no PEM private key in it (%s)",
				  o->key, why);
		return -1;
	}
	has_cert = true;
	return 0;
}

static int setup(const struct tls_options *o, struct error *err)
{
	ctx = ssl.SSL_CTX_new(ssl.TLS_client_method());
	if (!ctx) {
		error_set(err, EX_SOFTWARE, "TLS: %s", reason("cannot create a context"));
		return -1;
	}
	/* TLS 1.2 at least, as Redis offers by default. Partial writes and a
	 * write buffer that may move: conn.c writes hiredis' output buffer,
	 * which grows (and moves) between tries. */
	ssl.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
	ssl.SSL_CTX_ctrl(ctx, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
	ssl.SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
	ssl.SSL_CTX_set_client_cert_cb(ctx, no_client_cert);
	insecure = o->insecure;
	ssl.SSL_CTX_set_verify(ctx, insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
	if (insecure) {
		;	/* nothing verified: no CA needed */
	} else if (o->ca) {
		if (readable("ca", o->ca, err) < 0)
			return -1;
		if (ssl.SSL_CTX_load_verify_locations(ctx, o->ca, NULL) != 1) {
			error_set(err, EX_USAGE, "--tls-ca %s: no PEM certificate in it (%s)",
				  o->ca, reason("none found"));
			return -1;
		}
		has_ca = true;
	} else if (ssl.SSL_CTX_set_default_verify_paths(ctx) != 1) {
		error_set(err, EX_SOFTWARE, "TLS: the system's CAs: %s",
			  reason("cannot be loaded"));
		return -1;
	}
	return o->cert ? use_cert(o, err) : 0;
}

int tls_init(const struct tls_options *o, struct error *err)
{
	if (!ssl.SSL_new && load(err) < 0)
		return -1;
	if (setup(o, err) < 0) {
		tls_end();
		return -1;
	}
	return 0;
}

void tls_end(void)
{
	if (ctx)
		ssl.SSL_CTX_free(ctx);
	ctx = NULL;
}

static bool is_address(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

struct tls *tls_new(int fd, const char *host, char *why, size_t whylen)
{
	struct tls *t = calloc(1, sizeof *t);
	bool address = is_address(host);
	X509_VERIFY_PARAM *param;
	int ok;

	if (!t || !(t->ssl = ssl.SSL_new(ctx))) {
		snprintf(why, whylen, "TLS: %s", t ? reason("out of memory") : "out of memory");
		free(t);
		return NULL;
	}
	snprintf(t->host, sizeof t->host, "%s", host);
	param = ssl.SSL_get0_param(t->ssl);
	ok = ssl.SSL_set_fd(t->ssl, fd) && ssl.SSL_set_ex_data(t->ssl, 0, t);
	/* The name the certificate must have: a DNS name (no partial
	 * wildcards such as "w*.example.com"), or an IP address SAN. */
	if (ok && !insecure && address)
		ok = ssl.X509_VERIFY_PARAM_set1_ip_asc(param, host);
	else if (ok && !insecure) {
		ssl.X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		ok = ssl.SSL_set1_host(t->ssl, host);
	}
	/* SNI names a host, never an address (RFC 6066, 3). */
	if (ok && !address)
		ok = (int)ssl.SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME,
				       TLSEXT_NAMETYPE_host_name, t->host);
	if (!ok) {
		snprintf(why, whylen, "TLS: %s: %s", host, reason("cannot be checked"));
		tls_free(t);
		return NULL;
	}
	return t;
}

/* What went wrong, in words a user can act on. */
static void describe(struct tls *t, int code, int sys, const char *what,
		     char *why, size_t whylen)
{
	unsigned long e = ssl.ERR_get_error();
	int r = e ? ERR_GET_REASON(e) : 0;
	const char *s = e ? ssl.ERR_reason_error_string(e) : NULL;
	const char *hint = "", *host = "";
	char cause[256];
	long v;

	if (r == SSL_R_CERTIFICATE_VERIFY_FAILED) {
		v = ssl.SSL_get_verify_result(t->ssl);
		snprintf(cause, sizeof cause, "certificate verify failed: %s",
			 ssl.X509_verify_cert_error_string(v));
		if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
			hint = ": the certificate is not for ";
			host = t->host;
		} else if (v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
			 v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
			 v == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT)
			hint = has_ca ? " (is --tls-ca the CA that signed it?)" :
			       " (no CA the system trusts signed it: --tls-ca names one)";
	} else if (r == SSL_R_UNEXPECTED_EOF_WHILE_READING || (!e && !sys)) {
		snprintf(cause, sizeof cause, "server closed the connection");
	} else if (!e) {
		snprintf(cause, sizeof cause, "%s", strerror(sys));
		log_lower_first(cause);
	} else {
		snprintf(cause, sizeof cause, "%s", s ? s : "error");
		if (r == SSL_R_WRONG_VERSION_NUMBER || r == SSL_R_PACKET_LENGTH_TOO_LONG ||
		    r == SSL_R_RECORD_LENGTH_MISMATCH)
			hint = " (does the server speak TLS on that port?)";
		else if (r == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
			 r == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
			 r == SSL_R_TLSV1_ALERT_UNKNOWN_CA)
			hint = has_cert ? ": the server refused the client certificate" :
			       "";
	}
	/* A refusal for want of a client certificate may be any of these. */
	if (t->cert_asked && r != SSL_R_CERTIFICATE_VERIFY_FAILED)
		hint = ": the server wants a client certificate (--tls-cert, --tls-key)";
	snprintf(why, whylen, "%s: %s%s%s", what, cause, hint, host);
	ssl.ERR_clear_error();
}

/* The outcome of an operation that returned n: TLS_WANT with events, or
 * TLS_ERR with why. */
static int outcome(struct tls *t, int n, const char *what, short *events,
		   char *why, size_t whylen)
{
	int sys = errno;	/* what the socket said, before anything else */
	int code = ssl.SSL_get_error(t->ssl, n);

	if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
		*events = code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return TLS_WANT;
	}
	if (code == SSL_ERROR_ZERO_RETURN) {	/* the server's close_notify */
		snprintf(why, whylen, "server closed the connection");
		return 0;
	}
	describe(t, code, sys, what, why, whylen);
	return TLS_ERR;
}

int tls_handshake(struct tls *t, short *events, char *why, size_t whylen)
{
	int n;

	ssl.ERR_clear_error();
	errno = 0;
	n = ssl.SSL_connect(t->ssl);
	if (n == 1)
		return 1;
	n = outcome(t, n, "TLS handshake", events, why, whylen);
	return n == 0 ? TLS_ERR : n;	/* a close in the handshake is a failure */
}

ssize_t tls_read(struct tls *t, void *buf, size_t len, short *events, char *why,
		 size_t whylen)
{
	int n;

	ssl.ERR_clear_error();
	errno = 0;
	n = ssl.SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	return n > 0 ? n : outcome(t, n, "TLS", events, why, whylen);
}

ssize_t tls_write(struct tls *t, const void *buf, size_t len, short *events,
		  char *why, size_t whylen)
{
	int n;

	ssl.ERR_clear_error();
	errno = 0;
	n = ssl.SSL_write(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
	if (n > 0)
		return n;
	n = outcome(t, n, "TLS", events, why, whylen);
	return n == 0 ? TLS_ERR : n;
}

void tls_free(struct tls *t)
{
	if (!t)
		return;
	ssl.SSL_free(t->ssl);
	ssl.ERR_clear_error();
	free(t);
}

/* A node's stream (conn.c): the session above over its socket. */

/* TLS: writes what hiredis queued, once the handshake is done (until
 * then node_step() drives the connection, and writes after it). */
void node_tls_flush(struct node *n)
{
	char why[384];

	if (n->handshaking)
		return;
	while (sdslen(n->c->obuf) > 0) {
		/* a write to retry passes the same bytes again (OpenSSL) */
		size_t len = n->tls_wlen ? n->tls_wlen : sdslen(n->c->obuf);
		ssize_t w = tls_write(n->tls, n->c->obuf, len, &n->tls_write_wait,
				      why, sizeof why);

		if (w == TLS_WANT) {
			n->tls_wlen = len;
			return;
		}
		if (w < 0) {
			node_fail(n, EX_UNAVAILABLE, "%s", why);
			return;
		}
		sdsrange(n->c->obuf, (int)w, -1);
		n->sent |= n->ready && w > 0;
		n->tls_wlen = 0;
		n->tls_write_wait = 0;
	}
}

/* TLS: feeds the reply reader all that can be read now. Bytes OpenSSL
 * has decrypted and holds do not make the socket readable: left there,
 * they would wait for a poll() that never wakes. Returns 0, or -1 with
 * why when the connection is over (what was read before still counts). */
int node_tls_receive(struct node *n, char *why, size_t whylen)
{
	char buf[16 * 1024];

	for (;;) {
		ssize_t r = tls_read(n->tls, buf, sizeof buf, &n->tls_read_wait,
				     why, whylen);

		if (r == TLS_WANT)
			return 0;
		if (r <= 0)
			return -1;
		if (redisReaderFeed(n->c->reader, buf, (size_t)r) != REDIS_OK) {
			snprintf(why, whylen, "%s", "out of memory");
			return -1;
		}
	}
}

/* TLS: the connect, then the handshake, then the round's writes and
 * reads. Any readiness may be what OpenSSL waited for (a read may need a
 * write, and the other way round): both are tried. */
void node_tls_step(struct node *n)
{
	char why[384];
	int r;

	if (n->handshaking) {
		r = tls_handshake(n->tls, &n->tls_read_wait, why, sizeof why);
		if (r == TLS_WANT)
			return;
		if (r < 0) {
			n->tls_refused = true;
			node_fail(n, EX_UNAVAILABLE, "%s", why);
			return;
		}
		n->handshaking = false;
		n->tls_read_wait = POLLIN;
	}
	node_tls_flush(n);
	if (n->state != NODE_BUSY)
		return;
	r = node_tls_receive(n, why, sizeof why);
	node_take_replies(n);
	/* Gone after the round's last reply: the next round connects anew
	 * rather than fail on it. */
	if (r < 0 && n->state == NODE_BUSY)
		node_fail(n, EX_UNAVAILABLE, "%s", why);
	else if (r < 0 && n->state == NODE_DONE)
		node_close(n);
}
