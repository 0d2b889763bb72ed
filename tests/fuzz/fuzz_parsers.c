/* fuzz_parsers.c - libFuzzer target for the parsers that take input from
 * users, files and servers' strings: URLs, server lists, config files,
 * seconds, counts, signal names, the holder info a script keeps (as
 * status reads it, and as the wait line does), a script's error as
 * Redis words it, and a URL's text for messages (url_mask: no byte of a
 * password in it). The first byte picks the parser, the rest is its
 * input. See tests/fuzz/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "config.h"
#include "configfile.h"
#include "conn.h"
#include "scripts.h"
#include "show.h"
#include "url.h"
#include "urlpart.h"
#include "waitline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* url_mask on the input, into a buffer of each size up to the whole: the
 * same length every time, terminated, no byte past the buffer (ASan). */
static void mask_any(const char *url)
{
	size_t len = url_mask(url, NULL, 0);

	for (size_t n = 1; n <= len + 1; n += n < 8 ? 1 : n / 2) {
		char *out = malloc(n);

		if (!out)
			return;
		if (url_mask(url, out, n) != len || strlen(out) != (n - 1 < len ? n - 1 : len))
			abort();
		free(out);
	}
}

/* A URL built from the input's parts (split at 0x01): a user, a password
 * of bytes 0x80-0xff, the rest of the authority and path (any printable
 * byte: '@', '/', '?', '&' move where the user info ends), a parameter
 * name (password, sslpassword, pass%77ord, or printable bytes), its
 * value (bytes 0x80-0xff when the name is a password's), more. Only a
 * password has bytes above 0x7f: none may survive the masking. */
static void mask_built(const char *text)
{
	static const char *const names[] = { "password", "sslpassword", "pass%77ord", "PASSWORD" };
	const char *part[6] = { "", "", "", "", "", "" };
	char *copy = strdup(text), *url, *p, *o;
	size_t n = 0, len;
	int name = -1;

	if (!copy)
		return;
	for (p = copy, part[n++] = p; *p && n < 6; p++)
		if (*p == '\x01') {
			*p = '\0';
			part[n++] = p + 1;
		}
	if (part[3][0])
		name = (unsigned char)part[3][0] % 5;	/* 4: printable bytes */
	len = strlen(text) + 32;
	url = malloc(len);
	if (!url) {
		free(copy);
		return;
	}
	o = url + sprintf(url, "postgres://");
	for (p = (char *)part[0]; *p; p++)	/* the user: no ':', '@', '/' */
		*o++ = strchr(":@/", 32 + (unsigned char)*p % 95) ? 'u' : (char)(32 + (unsigned char)*p % 95);
	*o++ = ':';
	for (p = (char *)part[1]; *p; p++)
		*o++ = (char)(0x80 | (unsigned char)*p);
	*o++ = '@';
	for (p = (char *)part[2]; *p; p++)
		*o++ = (char)(32 + (unsigned char)*p % 95);
	if (name >= 0) {
		*o++ = '?';
		if (name < 4)
			o += sprintf(o, "%s", names[name]);
		for (p = (char *)part[3] + 1; name == 4 && *p; p++)	/* no '=', '&' */
			*o++ = strchr("=&", 32 + (unsigned char)*p % 95) ? 'n' : (char)(32 + (unsigned char)*p % 95);
		*o++ = '=';
		for (p = (char *)part[4]; *p; p++)
			*o++ = (char)(name < 4 ? 0x80 | (unsigned char)*p : 32 + (unsigned char)*p % 95);
		*o++ = '&';
		for (p = (char *)part[5]; *p; p++)
			*o++ = (char)(32 + (unsigned char)*p % 95);
	}
	*o = '\0';
	mask_any(url);
	len = url_mask(url, NULL, 0);
	p = malloc(len + 1);
	if (p) {
		url_mask(url, p, len + 1);
		for (o = p; *o; o++)
			if ((unsigned char)*o >= 0x80)
				abort();	/* a password's byte */
		free(p);
	}
	free(url);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct url urls[4];
	struct config_file cf;
	struct show_info hi;
	char err[512], *text;
	size_t n_urls;
	int64_t ms;
	long n;

	if (size == 0)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 11) {
	case 0:
		url_parse(text, &urls[0], err, sizeof err);
		break;
	case 1: {	/* a server list, split and parsed by its engine */
		char *list[8];
		const struct engine *engine;
		void *servers;

		n_urls = 0;
		if (config_split_servers(text, list, 8, &n_urls, err, sizeof err) == 0 &&
		    config_parse_servers(list, n_urls, &engine, &servers, err,
					 sizeof err) == 0)
			engine_free_servers(engine, servers, n_urls);
		while (n_urls > 0)
			free(list[--n_urls]);
		break;
	}
	case 2:
		config_parse(text, size - 1, &cf, err, sizeof err);	/* NULs too */
		break;
	case 3:
		parse_seconds(text, INT64_MAX / 2, &ms);
		break;
	case 4:
		parse_count(text, 0, 1000000, &n);
		break;
	case 5:
		parse_signal(text);
		break;
	case 6:	/* holder info: any bytes, NULs too */
		if (show_info_parse((const char *)data + 1, size - 1, &hi) == 0)
			show_info_free(&hi);
		break;
	case 7:
		node_script_error(text, &script_acquire, err, sizeof err);
		break;
	case 8:	/* a refusal's holder info, as the wait line shows it */
		waitline_describe(text, err, sizeof err);
		break;
	case 9:	/* any URL's text for messages */
		mask_any(text);
		break;
	case 10:	/* a URL with passwords: none of their bytes left */
		mask_built(text);
		break;
	}
	free(text);
	return 0;
}
