/* engine.c - ZooKeeper behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include <stdio.h>
#include <stdlib.h>
#include "zk.h"

/* ---- settings ----------------------------------------------------------- */

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	struct zk_url *u = malloc(sizeof *u);
	char why[256];

	if (!u) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (zk_url_parse(urls[0], u, why, sizeof why) < 0) {
		engine_bad_url(urls[0], why, err, errlen);
		free(u);
		return -1;
	}
	*servers = u;
	return 0;
}

static void free_servers(void *servers, size_t n)
{
	free(servers);
}

static const char *server_text(const void *servers, size_t i)
{
	return ((const struct zk_url *)servers)->text;
}

static bool uses_tls(const void *servers, size_t n)
{
	return false;
}

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "one zk:// URL names the whole ensemble (zk://a:2181,b:2181,c:2181)" },
	{ CAP_WAIT_REPLICAS, "a quorum of the ensemble commits every write already" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine zookeeper_engine = {
	.settings = {
		.name = "ZooKeeper",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN,
		.cannot = cannot,
		.min_ttl_ms = 1,
		.parse = parse,
		.free_servers = free_servers,
		.server_text = server_text,
		.uses_tls = uses_tls,
	},
	.lock = {
		.open = zk_open,
		.close = zk_close,
		.begin = zk_begin,
		.try = zk_try,
		.wait_fds = zk_wait_fds,
		.wait_events = zk_wait_events,
		.end_wait = zk_end_wait,
		.extend = zk_extend,
		.watch_fds = zk_watch_fds,
		.watch_events = zk_watch_events,
		.note_killed = zk_note_killed,
		.fds = zk_fds,
		.release = zk_release,
		.finished = zk_finished,
	},
	.inspect = {
		.status = zk_status,
		.list = zk_list,
		.history = zk_history,
		.release_token = zk_release_token,
		.force = zk_force,
		.extend_token = zk_extend_token,
	},
};
