/* fuzz_parsers.c - libFuzzer target for the parsers that take input from
 * users, files and servers' strings: URLs, server lists, config files,
 * seconds, counts, signal names, the holder info a script keeps (as
 * status reads it, and as the wait line does), and a script's error as
 * Redis words it. The first byte picks the parser, the
 * rest is its input. See tests/fuzz/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "config.h"
#include "node.h"
#include "scripts.h"
#include "show.h"
#include "url.h"
#include "waitline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	switch (data[0] % 9) {
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
			engine->settings.free_servers(servers, n_urls);
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
	}
	free(text);
	return 0;
}
