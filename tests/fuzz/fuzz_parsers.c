/* fuzz_parsers.c - libFuzzer target for the parsers that take input from
 * users and files: URLs, server lists, config files, seconds, counts and
 * signal names. The first byte picks the parser, the rest is its input.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=true -Dstatic-deps=false \
 *         -Db_sanitize=address,undefined && ninja -C build-fuzz
 *   build-fuzz/tests/fuzz-parsers -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "config.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct url urls[4];
	struct config_file cf;
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
	switch (data[0] % 6) {
	case 0:
		url_parse(text, &urls[0], err, sizeof err);
		break;
	case 1:
		config_parse_servers(text, urls, 4, &n_urls, err, sizeof err);
		break;
	case 2:
		config_parse(text, &cf, err, sizeof err);
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
	}
	free(text);
	return 0;
}
