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
#include <sysexits.h>
#include <unistd.h>
#include <bsd/stdlib.h>
#include <sys/random.h>
#include "caps.h"
#include "engine.h"

extern const struct engine redis_engine;

/* A URL scheme an engine claims, and how far such a URL reaches in a
 * list of servers. */
struct scheme {
	const char *prefix;
	enum engine_hosts hosts;
	bool listed;		/* in --help and messages; false: claimed
				 * only for its engine to refuse it with
				 * the reason (zks://) */
};

/* An engine as the core knows it without loading it: its name, the
 * schemes it claims and what --help says of its URLs. No file above the
 * engines names one. */
struct slot {
	const char *name;		/* for messages */
	const char *title;		/* --help's name for the store */
	const struct scheme *schemes;	/* the URL schemes it claims */
	const char *const *usage;	/* --help's URL lines */
	const char *tls;		/* the URLs that ask for TLS, for
					 * messages; NULL: none */
	const char *module;		/* NULL: built in */
	const char *symbol;		/* its struct engine */
	const struct engine *engine;	/* built in, or once loaded */
};

#define END_SCHEMES { NULL, HOSTS_ONE, false }

static const struct scheme redis_schemes[] = {
	{ "redis://", HOSTS_ONE, true },
	{ "rediss://", HOSTS_ONE, true },
	{ "unix:", HOSTS_ONE, true },
	{ "redis-sentinel://", HOSTS_BEFORE_PATH, true },
	{ "rediss-sentinel://", HOSTS_BEFORE_PATH, true },
	{ "redis+cluster://", HOSTS_SEVERAL, true },
	{ "rediss+cluster://", HOSTS_SEVERAL, true },
	END_SCHEMES
};
static const struct scheme postgres_schemes[] = {	/* libpq's host lists */
	{ "postgres://", HOSTS_SEVERAL, true },
	{ "postgresql://", HOSTS_SEVERAL, true },
	END_SCHEMES
};
static const struct scheme mysql_schemes[] = {
	{ "mysql://", HOSTS_ONE, true },
	{ "mariadb://", HOSTS_ONE, true },
	END_SCHEMES
};
static const struct scheme zookeeper_schemes[] = {
	{ "zk://", HOSTS_SEVERAL, true },
	{ "zks://", HOSTS_SEVERAL, false },
	END_SCHEMES
};
static const struct scheme etcd_schemes[] = {
	{ "etcd://", HOSTS_SEVERAL, true },
	{ "etcds://", HOSTS_SEVERAL, true },
	END_SCHEMES
};

/* --help's lines, after the store's title: 62 columns at most. */
static const char *const redis_usage[] = {
	"redis://[[user]:password@]host[:port][/db], unix:/path[?db=N]",
	"redis-sentinel://host:port[,host:port...]/MASTER",
	"redis+cluster://host:port[,host:port...] (a Cluster's nodes)",
	"rediss://, rediss-sentinel://, rediss+cluster:// for TLS",
	"several -S: RedLock over independent masters",
	NULL
};
static const char *const postgres_usage[] = {
	"postgres://[user[:password]@]host[:port][/database][?...]",
	"postgresql://..., libpq's URI (sslmode, .pgpass work)",
	NULL
};
static const char *const mysql_usage[] = {
	"mysql://[user[:password]@]host[:port][/database][?...]",
	"mariadb://... (socket=PATH, tls=...)",
	NULL
};
static const char *const zookeeper_usage[] = {
	"zk://[user[:password]@]host[:port][,host[:port]...][/chroot]",
	NULL
};
static const char *const etcd_usage[] = {
	"etcd://[user[:password]@]host[:port][,host[:port]...]",
	"etcds://... for TLS",
	NULL
};

static struct slot slots[] = {
	{ "Redis", "Redis", redis_schemes, redis_usage,
	  "rediss://, rediss-sentinel://", NULL, NULL, &redis_engine },
	{ "PostgreSQL", "PostgreSQL", postgres_schemes, postgres_usage,
	  "postgres://...?sslmode=require", "dlock-postgres.so",
	  "postgres_engine", NULL },
	{ "MySQL", "MySQL/MariaDB", mysql_schemes, mysql_usage, "mysql://...?tls=",
	  "dlock-mysql.so", "mysql_engine", NULL },
	{ "ZooKeeper", "ZooKeeper", zookeeper_schemes, zookeeper_usage, NULL,
	  "dlock-zookeeper.so", "zookeeper_engine", NULL },
	{ "etcd", "etcd", etcd_schemes, etcd_usage, "etcds://", "dlock-etcd.so",
	  "etcd_engine", NULL },
};

#define N_SLOTS (sizeof slots / sizeof slots[0])

/* The scheme of url's, or NULL. */
static const struct scheme *scheme_of(const char *url, struct slot **slot)
{
	for (size_t i = 0; i < N_SLOTS; i++)
		for (const struct scheme *c = slots[i].schemes; c->prefix; c++)
			if (strncmp(url, c->prefix, strlen(c->prefix)) == 0) {
				*slot = &slots[i];
				return c;
			}
	return NULL;
}

/* Opens the module beside the executable, else in DLOCK_ENGINE_DIR; path
 * says which it tried last. */
static void *open_module(const char *module, char *path, size_t pathlen,
			 char *why, size_t whylen)
{
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	void *h;

	if (len > 0) {
		char *slash;

		exe[len] = '\0';
		if ((slash = strrchr(exe, '/'))) {
			*slash = '\0';
			snprintf(path, pathlen, "%s/%s", exe, module);
			if (access(path, F_OK) == 0) {
				if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
					return h;
				snprintf(why, whylen, "%s", dlerror());
				return NULL;
			}
		}
	}
	snprintf(path, pathlen, "%s/%s", DLOCK_ENGINE_DIR, module);
	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
		return h;
	snprintf(why, whylen, "%s", dlerror());
	return NULL;
}

enum load_result {
	LOADED,
	ABSENT,			/* no module, or a library of its missing */
	STALE,			/* a module of another engine ABI */
	FAULTY,			/* a declaration that does not hold together */
};

/* Whether the module h, found at path, was built for this dlock's engine
 * ABI (engine.h), before anything in it is used. */
static enum load_result check_abi(void *h, const char *path, char *err,
				  size_t errlen)
{
	const unsigned *abi = dlsym(h, ENGINE_ABI_SYMBOL);

	if (abi && *abi == ENGINE_ABI)
		return LOADED;
	if (abi)
		snprintf(err, errlen, "%s is a module of engine ABI %u, this dlock's is %u: a module of another build (install this dlock's)",
			 path, *abi, ENGINE_ABI);
	else
		snprintf(err, errlen, "%s has no engine ABI number (a module older than ABI 1), this dlock's is %u: a module of another build (install this dlock's)",
			 path, ENGINE_ABI);
	return STALE;
}

/* Whether e, its slot's, is what the slot says and holds together. */
static enum load_result check_engine(const struct slot *s, const struct engine *e,
				     const char *path, char *err, size_t errlen)
{
	char why[256];

	if (strcmp(e->settings.name, s->name) != 0)
		snprintf(why, sizeof why, "its engine is named '%s', not '%s'",
			 e->settings.name, s->name);
	else if (caps_check(e, why, sizeof why) == 0)
		return LOADED;
	snprintf(err, errlen, "%s: a faulty engine declaration: %s", path, why);
	return FAULTY;
}

static enum load_result load(struct slot *s, char *err, size_t errlen)
{
	char why[PATH_MAX + 256], path[PATH_MAX + 64];
	const struct engine *e;
	enum load_result r;
	void *h;

	if (s->engine)
		return LOADED;
	if (!(h = open_module(s->module, path, sizeof path, why, sizeof why))) {
		snprintf(err, errlen, "%s needs dlock's %s engine, which is not installed here (%s)",
			 s->schemes[0].prefix, s->name, why);
		return ABSENT;
	}
	/* Never closed: its code runs until dlock exits. */
	if ((r = check_abi(h, path, err, errlen)) != LOADED)
		return r;
	if (!(e = dlsym(h, s->symbol))) {
		snprintf(err, errlen, "%s: no %s in it: a module of another dlock version?",
			 path, s->symbol);
		return STALE;
	}
	if ((r = check_engine(s, e, path, err, errlen)) != LOADED)
		return r;
	s->engine = e;
	return LOADED;
}

const struct engine *engine_of(const char *url, char *err, size_t errlen)
{
	char want[1024] = "";
	struct slot *s;

	if (scheme_of(url, &s))
		return load(s, err, errlen) == LOADED ? s->engine : NULL;
	for (size_t i = 0; i < N_SLOTS; i++)
		for (const struct scheme *c = slots[i].schemes; c->prefix; c++) {
			if (!c->listed)
				continue;
			strncat(want, !want[0] ? "" : c == slots[i].schemes ? "; " : ", ",
				sizeof want - strlen(want) - 1);
			strncat(want, c->prefix, sizeof want - strlen(want) - 1);
		}
	snprintf(err, errlen, "unknown scheme (want %s)", want);
	return NULL;
}

bool engine_known(const char *url, bool *built_in, char *why, size_t whylen)
{
	struct slot *s;

	if (scheme_of(url, &s)) {
		*built_in &= s->engine != NULL;
		return true;
	}
	return engine_of(url, why, whylen) != NULL;	/* the reason */
}

bool engine_claims(const char *url)
{
	struct slot *s;

	return scheme_of(url, &s) != NULL;
}

enum engine_hosts engine_hosts_of(const char *url)
{
	struct slot *s;
	const struct scheme *c = scheme_of(url, &s);

	return c ? c->hosts : HOSTS_ONE;
}

size_t engine_stores(char *out, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < N_SLOTS; i++)
		n += (size_t)snprintf(out + (n < len ? n : len), n < len ? len - n : 0,
				      "%s%s", i == 0 ? "" : i + 1 < N_SLOTS ? ", " : " or ",
				      slots[i].title);
	return n;
}

size_t engine_tls_urls(char *out, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < N_SLOTS; i++)
		if (slots[i].tls)
			n += (size_t)snprintf(out + (n < len ? n : len),
					      n < len ? len - n : 0, "%s%s",
					      n ? ", " : "", slots[i].tls);
	return n;
}

void engine_usage(FILE *out, int indent, int title_width)
{
	for (size_t i = 0; i < N_SLOTS; i++)
		for (const char *const *line = slots[i].usage; *line; line++)
			fprintf(out, "%*s%-*s%s\n", indent, "", title_width,
				line == slots[i].usage ? slots[i].title : "", *line);
}

/* One engine's heading: "PostgreSQL (dlock-postgres.so): postgres://, ...". */
static void print_heading(FILE *out, const struct slot *s)
{
	fprintf(out, "%s (%s):", s->title, s->module ? s->module : "built in");
	for (const struct scheme *c = s->schemes; c->prefix; c++)
		if (c->listed)
			fprintf(out, "%s %s", c == s->schemes ? "" : ",", c->prefix);
	fputc('\n', out);
}

int engine_list(FILE *out)
{
	int status = EX_OK;

	for (size_t i = 0; i < N_SLOTS; i++) {
		struct slot *s = &slots[i];
		char err[PATH_MAX + 512];

		print_heading(out, s);
		switch (load(s, err, sizeof err)) {
		case LOADED:
			/* a module was checked as it loaded, the built-in one
			 * is here */
			if (!s->module &&
			    check_engine(s, s->engine, "dlock", err, sizeof err) != LOADED)
				break;
			caps_print(out, s->engine);
			continue;
		case ABSENT:
			fprintf(out, "  %s\n", err);
			continue;
		case STALE:
			if (status == EX_OK)
				status = EX_USAGE;
			fprintf(out, "  refused: %s\n", err);
			continue;
		case FAULTY:
			break;
		}
		status = EX_SOFTWARE;
		fprintf(out, "  refused: %s\n", err);
	}
	return status;
}

void engine_bad_url(const char *url, const char *why, char *err, size_t errlen)
{
	/* Never echo what may hold a password. */
	if (strchr(url, '@') || strstr(url, "password"))
		snprintf(err, errlen, "bad server URL: %s", why);
	else
		snprintf(err, errlen, "bad server URL '%s': %s", url, why);
}

/* Server i of the array, url_size bytes each. */
static void *server_at(const struct engine *e, const void *servers, size_t i)
{
	return (char *)servers + i * e->settings.url_size;
}

int engine_parse_servers(const struct engine *e, const char *const *urls,
			 size_t n, void **servers, char *err, size_t errlen)
{
	void *all = calloc(n, e->settings.url_size);
	char why[300];

	if (!all) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (e->settings.parse_url(urls[i], server_at(e, all, i), why,
					  sizeof why) < 0) {
			engine_bad_url(urls[i], why, err, errlen);
			engine_free_servers(e, all, n);
			return -1;
		}
	*servers = all;
	return 0;
}

/* All n of them, zeroed ones too: a failed parse frees what it got. */
void engine_free_servers(const struct engine *e, void *servers, size_t n)
{
	for (size_t i = 0; servers && e->settings.free_url && i < n; i++)
		e->settings.free_url(server_at(e, servers, i));
	free(servers);
}

const char *engine_server_text(const struct engine *e, const void *servers,
			       size_t i)
{
	return e->settings.url_text(server_at(e, servers, i));
}

bool engine_uses_tls(const struct engine *e, const void *servers, size_t n)
{
	for (size_t i = 0; e->settings.url_tls && i < n; i++)
		if (e->settings.url_tls(server_at(e, servers, i)))
			return true;
	return false;
}

void *engine_open_state(struct lock *lk, size_t size, struct error *err)
{
	if (!(lk->e = calloc(1, size)))
		error_set(err, EX_OSERR, "out of memory");
	return lk->e;
}

void engine_close_state(struct lock *lk)
{
	free(lk->e);
	lk->e = NULL;
	lk->key = NULL;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t engine_sort_names(char **names, size_t n)
{
	size_t kept = 0;

	if (n > 1)
		qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		if (kept > 0 && strcmp(names[kept - 1], names[i]) == 0)
			free(names[i]);
		else
			names[kept++] = names[i];
	}
	return kept;
}

/* getrandom() at once: libbsd's arc4random_buf() sets up its generator on
 * its first call (two mappings, a ChaCha key, a fork handler), 17 us of
 * a `dlock K true` here, against 1 us. It is the fallback where
 * getrandom() fails (ENOSYS under an old seccomp policy). */
void engine_random_hex(char *out, size_t n_bytes)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char raw[32];

	if (n_bytes > sizeof raw)
		n_bytes = sizeof raw;
	if (getrandom(raw, n_bytes, 0) != (ssize_t)n_bytes)
		arc4random_buf(raw, n_bytes);
	for (size_t i = 0; i < n_bytes; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * n_bytes] = '\0';
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

bool engine_history_trim_due(long history, long long number)
{
	long step = history / 8;

	return step <= 2 || number < 0 || number % step < 2;
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
