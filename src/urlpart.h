/* urlpart.h - the parts every engine's URL has: %XX escapes,
 * host[:port], and the URL as messages show it (passwords masked). Pure:
 * no I/O; unit-tested and fuzzed with each engine's URL parser. */
#pragma once
#include <stddef.h>

/* [s, s+len) into out (outlen with its NUL), %XX decoded; an escape that
 * is cut short, not hex, or a NUL (%00) is refused. Returns 0 or -1. */
int url_decode(const char *s, size_t len, char *out, size_t outlen);

/* A URL's user info, the whole of [s, s+len) (what precedes its '@'):
 * the user, and after the first ':' the password, each %XX decoded into
 * user and password (their sizes with the NUL); password is left alone
 * when there is no ':'. Returns 0 without a password, 1 with one (empty
 * too: "user:@"), -1 when the user does not decode (a bad escape, too
 * long), -2 when the password does not (the user is decoded then). */
int url_userinfo(const char *s, size_t len, char *user, size_t userlen,
		 char *password, size_t passwordlen);

/* The decimal digits that are the whole of [s, s+len), 1 to max_digits
 * of them (at most 18: no overflow), into *out; no sign, no space. A
 * URL's port or database number, and the numbers inside other names (the
 * holder info's, ZooKeeper's nodes'); the caller checks the range.
 * Returns 0 or -1. */
int url_digits(const char *s, size_t len, size_t max_digits, long long *out);

/* host[:port] or [IPv6][:port], the whole of [s, s+len): the host into
 * host (without brackets), the port (1..65535) into *port, default_port
 * when none is given. A host name holds letters, digits, '.', '-' and
 * '_'. Returns 0, or -1 with the reason in err. */
int url_hostport(const char *s, size_t len, char *host, size_t hostlen,
		 int *port, int default_port, char *err, size_t errlen);

/* What stands for a password in a message. */
#define URL_MASK "***"

/* url as messages show it: the password of its user info (after the
 * first ':' of what precedes the last '@' before the first '/' that
 * follows "://") and the value of every query parameter whose name, %XX
 * decoded, ends in "password" (password=, sslpassword=: after a '?' or
 * '&', up to the next '&') each as URL_MASK; the rest as it is. Like
 * snprintf: writes at most outlen bytes with the NUL (nothing when
 * outlen is 0) and returns the whole length; never a byte of a password,
 * however short out is. */
size_t url_mask(const char *url, char *out, size_t outlen);
