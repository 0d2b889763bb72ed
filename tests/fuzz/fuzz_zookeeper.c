/* fuzz_zookeeper.c - libFuzzer target for the ZooKeeper engine's parsers:
 * zk:// URLs, znode paths, and a lock's children as contenders (names
 * from the server: anyone may create a child) with who holds and whom
 * each waits for, the history's event names, and a holder's node data
 * (zk_node_info()). The first byte picks the parser, the rest is its
 * input; children are separated by '\n'. See tests/fuzz/README.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "names.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct zk_contender c[64];
	struct zk_url u;
	char why[256], prefix[128], *text;
	size_t n = 0;

	if (size == 0)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		if (zk_url_parse(text, &u, why, sizeof why) == 0 &&
		    (strlen(u.text) >= sizeof u.text ||
		     (u.chroot[0] && zk_path_invalid(u.chroot))))
			abort();	/* every chroot parsed is a path */
		break;
	case 1:
		zk_path_invalid(text[0] == '/' ? text : "/");
		zk_path_invalid(text);
		break;
	case 2:
		for (char *name = strtok(text, "\n"); name && n < 64; name = strtok(NULL, "\n")) {
			long long seq;
			char again[16];

			if (zk_event_seq(name, &seq) == 0 &&
			    (snprintf(again, sizeof again, "e-%010lld", seq) != 12 ||
			     strcmp(again, name) != 0))
				abort();	/* an event's name is "e-" and its number */
			if (zk_contender_parse(name, &c[n]) == 0)
				n++;
		}
		zk_contenders_sort(c, n);
		for (size_t i = 0; i < n; i++) {
			long w = zk_waits_for(c, n, i);

			if (w >= (long)i || (zk_holds(c, n, i) && w >= 0 && c[i].shared &&
					      !c[w].shared && w < (long)i))
				abort();	/* waits for one after it; holds past a writer */
			if (zk_holds(c, n, i) &&
			    zk_contender_mode(&c[i]) != zk_contender_mode(&c[0]))
				abort();	/* holders of two modes at once */
			if (c[i].ours)
				zk_name_prefix(c[i].name + 1, c[i].limit, c[i].timeout_ms,
					       prefix, sizeof prefix);
		}
		break;
	case 3: {
		/* a holder's node data, the raw bytes (anyone may set them) */
		long long t;
		size_t info = zk_node_info((const char *)data + 1, (int)(size - 1), &t);

		if (info > size - 1 || (info < size - 1 && data[1 + info] != '\0') || t < -1)
			abort();
		break;
	}
	}
	free(text);
	return 0;
}
