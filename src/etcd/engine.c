/* engine.c - etcd v3 behind the engine interface (src/engine.h): its
 * settings (url.c), its lock operations (lock.c) and its inspection
 * (inspect.c), wired; what it cannot do, and why. */
#include <stdio.h>
#include <stdlib.h>
#include "config.h"
#include "etcd.h"
#include "url.h"

/* ---- settings ------------------------------------------------------------ */

static int parse(const char *const *urls, size_t n, void **servers, char *err,
		 size_t errlen)
{
	struct etcd_url *u;
	char why[256];

	if (n != 1) {
		snprintf(err, errlen, "etcd: one cluster per lock: give its members in one URL, etcd://host:port,host:port,...");
		return -1;
	}
	if (!(u = malloc(sizeof *u))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (etcd_url_parse(urls[0], u, why, sizeof why) < 0) {
		engine_bad_url(urls[0], why, err, errlen);
		free(u);
		return -1;
	}
	*servers = u;
	return 0;
}

static int init(const struct settings *st, struct error *err)
{
	return st->tls ? http_tls_init(err) : 0;
}

static const struct engine_cannot cannot[] = {
	{ CAP_SEVERAL, "several -S: one etcd cluster keeps the lock, its members in one URL" },
	{ CAP_WAIT_REPLICAS, "etcd's writes are on a majority of members already" },
	{ 0, NULL }
};

ENGINE_MODULE_ABI;

const struct engine etcd_engine = {
	.settings = {
		.name = "etcd",
		.flags = CAP_SHARED | CAP_LIMIT | CAP_FAIR | CAP_NO_FORK |
			 CAP_UNAVAILABLE_RUN,
		.cannot = cannot,
		.min_ttl_ms = 1000,
		.parse = parse,
		.free_servers = etcd_free_urls,
		.server_text = etcd_url_text,
		.uses_tls = etcd_uses_tls,
		.init = init,
		.end = http_tls_end,
	},
	.lock = {
		.watch_after_ms = 20,
		.open = etcd_open_lock,
		.close = etcd_close_lock,
		.begin = etcd_begin,
		.try = etcd_try,
		.wait_fds = etcd_wait_fds,
		.wait_events = etcd_wait_events,
		.end_wait = etcd_end_wait,
		.extend = etcd_extend,
		.watch_fds = etcd_watch_fds,
		.watch_events = etcd_watch_events,
		.note_killed = etcd_note_killed,
		.fds = etcd_fds,
		.release = etcd_release,
		.finished = etcd_finished,
	},
	.inspect = {
		.status = etcd_status,
		.list = etcd_list,
		.history = etcd_history,
		.release_token = etcd_release_token,
		.force = etcd_force,
		.extend_token = etcd_extend_token,
	},
};
