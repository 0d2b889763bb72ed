/* fuzz_mysql.c - libFuzzer target for the MySQL engine's pure parts: its
 * server URLs (mysql://, mariadb://), the GET_LOCK name of a prefix and a
 * key, and the SQL hex literals dlock writes them in. Byte 0 picks, the
 * rest is the input (for a name: prefix NUL key). Checks what the engine
 * relies on: a URL's text names no user or password (before a socket's
 * path); a name is at most 64 bytes of printable ASCII, has the hashed
 * names' mark exactly when it is hashed, and its literal reads back as
 * itself. See tests/fuzz/README.md. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mysql/names.h"
#include "mysql/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not SHA-256: the name's shape does not depend on which hash. */
static int fake_sha256(const void *a, size_t alen, const void *b, size_t blen,
		       unsigned char *md)
{
	const unsigned char *p = a, *q = b;

	memset(md, 0x5a, 32);
	for (size_t i = 0; i < alen; i++)
		md[i % 32] = (unsigned char)(md[i % 32] * 31 + p[i]);
	for (size_t i = 0; i < blen; i++)
		md[(alen + i) % 32] = (unsigned char)(md[(alen + i) % 32] * 31 + q[i]);
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A name is at most 64 bytes of printable ASCII; it has the mark only when
 * it is not the name as given (hashed), so no key's plain name is another
 * key's hashed one; its hex literal reads back as itself. */
static void check_name(const char *prefix, const char *key)
{
	char name[MY_NAME_MAX + 1], lit[2 * MY_NAME_MAX + 4], back[MY_NAME_MAX + 1];
	size_t len, plen = strlen(prefix), o = 0;
	bool as_given;

	if (my_lock_name(prefix, key, fake_sha256, name) < 0)
		abort();
	len = strlen(name);
	if (len > MY_NAME_MAX)
		abort();
	for (size_t i = 0; i < len; i++)
		if (name[i] < 0x20 || name[i] > 0x7e)
			abort();
	as_given = len == plen + strlen(key) && strncmp(name, prefix, plen) == 0 &&
		   strcmp(name + plen, key) == 0;
	if ((strchr(name, MY_NAME_MARK) != NULL) == as_given)
		abort();
	my_hex_literal(name, len, lit);
	if (len == 0) {
		if (strcmp(lit, "''") != 0)
			abort();
		return;
	}
	if (lit[0] != 'X' || lit[1] != '\'' || lit[2 * len + 2] != '\'' ||
	    lit[2 * len + 3] != '\0')
		abort();
	for (size_t i = 0; i < len; i++) {
		int hi = hexval(lit[2 + 2 * i]), lo = hexval(lit[3 + 2 * i]);

		if (hi < 0 || lo < 0)
			abort();
		back[o++] = (char)(hi * 16 + lo);
	}
	back[o] = '\0';
	if (strcmp(back, name) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct my_url u;
	char err[256], *text, *hex;
	size_t n;

	if (size == 0)
		return 0;
	n = size - 1;
	text = malloc(n + 2);
	if (!text)
		return 0;
	memcpy(text, data + 1, n);
	text[n] = text[n + 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		if (my_url_parse(text, &u, err, sizeof err) == 0) {
			/* no user info before the socket's path */
			char *q = strchr(u.text, '?');

			if (q)
				*q = '\0';
			if (strchr(u.text, '@') || (u.host[0] == '\0' && u.socket[0] == '\0') ||
			    u.port < 0 || u.port > 65535)
				abort();
		} else if (strlen(err) == 0) {
			abort();
		}
		break;
	case 1:
		check_name(text, text + strlen(text) + 1 <= text + n ?
			   text + strlen(text) + 1 : "");
		break;
	case 2:
		if ((hex = malloc(2 * n + 4))) {
			my_hex_literal(text, n, hex);
			if (strlen(hex) != (n ? 2 * n + 3 : 2))
				abort();
			free(hex);
		}
		break;
	}
	free(text);
	return 0;
}
