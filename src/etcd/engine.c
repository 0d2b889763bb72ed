/* engine.c - etcd: not written yet (a placeholder the build can link). */
#include <stdio.h>
#include "engine.h"

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	snprintf(err, errlen, "the etcd engine is not written yet");
	return -1;
}

const struct engine etcd_engine = {
	.name = "etcd",
	.parse = parse,
};
