/* engine.c - the engines, and what the core needs of all of them: finding
 * a URL's engine, freeing what the inspection commands got.
 *
 * Redis is built in. The others are modules (dlock-postgres.so, ...)
 * loaded with dlopen() when a URL names them: linking libpq, libmariadb,
 * libzookeeper-mt or libcurl into dlock itself would cost every run the
 * loading of them and theirs (libpq alone, with its Kerberos, LDAP and
 * OpenSSL, takes longer to map than a whole `dlock K true` on Redis). A
 * module is looked for beside the dlock executable (a build tree), then
 * in DLOCK_ENGINE_DIR (the install's); it calls back into dlock for the
 * core's helpers (error_set, log_line, show_*, clock_*), which the
 * executable exports. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine.h"

extern const struct engine redis_engine;

struct slot {
	const char *name;		/* for messages */
	const char *const *prefixes;	/* the URL schemes it claims */
	const char *schemes;		/* the same, for messages */
	const char *module;		/* NULL: built in */
	const char *symbol;		/* its struct engine */
	const struct engine *engine;	/* built in, or once loaded */
};

static const char *const redis_prefixes[] = {
	"redis://", "rediss://", "unix:", "redis-sentinel://",
	"rediss-sentinel://", "redis+cluster://", "rediss+cluster://", NULL
};
static const char *const postgres_prefixes[] = {
	"postgres://", "postgresql://", NULL
};
static const char *const mysql_prefixes[] = { "mysql://", "mariadb://", NULL };
static const char *const zookeeper_prefixes[] = { "zk://", "zks://", NULL };
static const char *const etcd_prefixes[] = { "etcd://", "etcds://", NULL };

/* The engines' own files read their slot's names here, too: one list. */
static struct slot slots[] = {
	{ "Redis", redis_prefixes,
	  "redis://, rediss://, unix:, redis-sentinel://, rediss-sentinel://, redis+cluster://, rediss+cluster://",
	  NULL, NULL, &redis_engine },
	{ "PostgreSQL", postgres_prefixes, "postgres://, postgresql://",
	  "dlock-postgres.so", "postgres_engine", NULL },
	{ "MySQL", mysql_prefixes, "mysql://, mariadb://",
	  "dlock-mysql.so", "mysql_engine", NULL },
	{ "ZooKeeper", zookeeper_prefixes, "zk://",
	  "dlock-zookeeper.so", "zookeeper_engine", NULL },
	{ "etcd", etcd_prefixes, "etcd://, etcds://",
	  "dlock-etcd.so", "etcd_engine", NULL },
};

#define N_SLOTS (sizeof slots / sizeof slots[0])

static bool claims(const struct slot *s, const char *url)
{
	for (const char *const *p = s->prefixes; *p; p++)
		if (strncmp(url, *p, strlen(*p)) == 0)
			return true;
	return false;
}

/* Opens the module beside the executable, else in DLOCK_ENGINE_DIR. */
static void *open_module(const char *module, char *why, size_t whylen)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	void *h;

	if (len > 0) {
		char *slash;

		exe[len] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			snprintf(path, sizeof path, "%s/%s", exe, module);
			if (access(path, F_OK) == 0) {
				if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
					return h;
				snprintf(why, whylen, "%s", dlerror());
				return NULL;
			}
		}
	}
	snprintf(path, sizeof path, "%s/%s", DLOCK_ENGINE_DIR, module);
	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		return h;
	snprintf(why, whylen, "%s", dlerror());
	return NULL;
}

static const struct engine *load(struct slot *s, char *err, size_t errlen)
{
	char why[PATH_MAX + 256];
	void *h;

	if (s->engine)
		return s->engine;
	if (!(h = open_module(s->module, why, sizeof why))) {
		snprintf(err, errlen, "%s needs dlock's %s engine, which is not installed here (%s)",
			 s->prefixes[0], s->name, why);
		return NULL;
	}
	/* Never closed: its code runs until dlock exits. */
	if (!(s->engine = dlsym(h, s->symbol))) {
		snprintf(err, errlen, "%s: no %s in it: a module of another dlock version?",
			 s->module, s->symbol);
		return NULL;
	}
	return s->engine;
}

const struct engine *engine_of(const char *url, char *err, size_t errlen)
{
	char want[1024] = "";

	for (size_t i = 0; i < N_SLOTS; i++)
		if (claims(&slots[i], url))
			return load(&slots[i], err, errlen);
	for (size_t i = 0; i < N_SLOTS; i++) {
		strncat(want, i ? "; " : "", sizeof want - strlen(want) - 1);
		strncat(want, slots[i].schemes, sizeof want - strlen(want) - 1);
	}
	snprintf(err, errlen, "unknown scheme (want %s)", want);
	return NULL;
}

bool engine_known(const char *url, bool *built_in, char *why, size_t whylen)
{
	for (size_t i = 0; i < N_SLOTS; i++)
		if (claims(&slots[i], url)) {
			*built_in &= slots[i].engine != NULL;
			return true;
		}
	return engine_of(url, why, whylen) != NULL;	/* the reason */
}

void engine_bad_url(const char *url, const char *why, char *err, size_t errlen)
{
	/* Never echo what may hold a password. */
	if (strchr(url, '@') || strstr(url, "password"))
		snprintf(err, errlen, "bad server URL: %s", why);
	else
		snprintf(err, errlen, "bad server URL '%s': %s", url, why);
}

char *engine_dup(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

void status_lock_free(struct status_lock *s)
{
	for (size_t i = 0; i < s->n_holders; i++) {
		free(s->holders[i].token);
		free(s->holders[i].info);
		free(s->holders[i].note);
	}
	for (size_t i = 0; i < s->n_waiters; i++) {
		free(s->waiters[i].token);
		free(s->waiters[i].info);
	}
	for (size_t i = 0; i < s->n_servers; i++) {
		free(s->servers[i].url);
		free(s->servers[i].says);
		for (size_t k = 0; k < s->servers[i].n_tokens; k++)
			free(s->servers[i].tokens[k]);
		free(s->servers[i].tokens);
	}
	free(s->holders);
	free(s->waiters);
	free(s->servers);
	free(s->name);
	free(s->key);
}

void history_report_free(struct history_report *h)
{
	for (size_t i = 0; i < h->n_events; i++) {
		free(h->events[i].id);
		free(h->events[i].token);
		free(h->events[i].holder);
		free(h->events[i].by);
	}
	free(h->events);
}

void broken_free(struct broken_holder *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(b[i].token);
		free(b[i].info);
	}
	free(b);
}
