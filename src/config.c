/* config.c - settings in order of precedence: command line, environment,
 * config file (configfile.c reads it), default; the server list among
 * them, split into URLs and parsed by their engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "caps.h"
#include "config.h"
#include "configfile.h"
#include "log.h"
#include "parse.h"

/* Whether a URL starts at p: a scheme (letters, digits, '+', '-', '.')
 * and "://", or one an engine claims (unix:). */
static bool starts_url(const char *p)
{
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789+-.");

	if (n > 0 && strncmp(p + n, "://", 3) == 0)
		return true;
	return engine_claims(p);
}

/* The length of the URL that starts at p. A comma or blank ends it, but
 * for the commas of a URL that names several hosts (its engine says which,
 * by its scheme): up to its '/' for a sentinel URL,
 * "redis-sentinel://h1:26379,h2:26379/mymaster,unix:/x" being two URLs;
 * up to a comma followed by another URL for the others,
 * "redis+cluster://h1:7000,h2:7000,redis://h3" being two URLs. */
static size_t url_length(const char *p, const char *seps)
{
	size_t len = 0;

	switch (engine_hosts_of(p)) {
	case HOSTS_SEVERAL:
		for (;;) {
			len += strcspn(p + len, seps);
			if (p[len] != ',' || !p[len + 1] ||
			    (p[len + 1] != ',' && strchr(seps, p[len + 1])) ||
			    starts_url(p + len + 1))
				return len;
			len++;
		}
	case HOSTS_BEFORE_PATH:
		len = (size_t)(strstr(p, "://") - p) + 3;
		len += strcspn(p + len, "/ \t\n");
		if (p[len] != '/')
			return len;	/* no path: the engine's parse says so */
		break;
	case HOSTS_ONE:
		break;
	}
	return len + strcspn(p + len, seps);
}

int config_split_servers(const char *list, char **urls, size_t max,
			 size_t *n_urls, char *err, size_t errlen)
{
	const char *seps = ", \t\n";
	const char *p = list;
	size_t n_before = *n_urls;

	while (*(p += strspn(p, seps))) {
		size_t len = url_length(p, seps);

		if (*n_urls == max) {
			snprintf(err, errlen, "too many servers (at most %d)", MAX_SERVERS);
			return -1;
		}
		if (len >= 1024) {
			snprintf(err, errlen, "server URL too long");
			return -1;
		}
		if (!(urls[*n_urls] = strndup(p, len))) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		(*n_urls)++;
		p += len;
	}
	if (*n_urls == n_before) {
		snprintf(err, errlen, "empty server list");
		return -1;
	}
	return 0;
}

int config_parse_servers(char *const *urls, size_t n,
			 const struct engine **engine, void **servers,
			 char *err, size_t errlen)
{
	const struct engine *e = NULL;
	char why[512];

	for (size_t i = 0; i < n; i++) {
		const struct engine *this = engine_of(urls[i], why, sizeof why);

		if (!this) {
			engine_bad_url(urls[i], why, err, errlen);
			return -1;
		}
		if (e && this != e) {
			snprintf(err, errlen, "one engine per lock: %s and %s servers cannot be mixed",
				 e->settings.name, this->settings.name);
			return -1;
		}
		e = this;
	}
	if (!e) {
		snprintf(err, errlen, "empty server list");
		return -1;
	}
	if (n > 1 && !caps_has(e, CAP_SEVERAL)) {
		snprintf(err, errlen, "%s takes one server URL (%zu given): name every host in that URL",
			 e->settings.name, n);
		return -1;
	}
	/* the engine's reason names the URL where that is safe */
	if (engine_parse_servers(e, (const char *const *)urls, n, servers, err,
				 errlen) < 0)
		return -1;
	*engine = e;
	return 0;
}

enum unavailable config_unavailable(const char *s)
{
	if (strcmp(s, "fail") == 0)
		return UNAVAILABLE_FAIL;
	if (strcmp(s, "run") == 0)
		return UNAVAILABLE_RUN;
	return UNAVAILABLE_UNSET;
}

/* min-hold and unavailable: only a job uses them, but a bad value is an
 * error in every form, as a bad ttl is. */
static int resolve_job(const struct config_flags *fl, const struct config_file *cf,
		       struct settings *st, char *err, size_t errlen)
{
	enum unavailable u = fl->unavailable;

	st->min_hold_ms = fl->min_hold_ms >= 0 ? fl->min_hold_ms : 0;
	if (fl->min_hold_ms < 0 && cf->min_hold &&
	    parse_seconds(cf->min_hold, MAX_SECONDS_MS, &st->min_hold_ms) < 0) {
		snprintf(err, errlen, "config: bad min-hold '%s': 0 (off) or seconds, up to %lld",
			 cf->min_hold, (long long)(MAX_SECONDS_MS / 1000));
		return -1;
	}
	if (u == UNAVAILABLE_UNSET && cf->unavailable &&
	    (u = config_unavailable(cf->unavailable)) == UNAVAILABLE_UNSET) {
		snprintf(err, errlen, "config: bad unavailable '%s': fail or run",
			 cf->unavailable);
		return -1;
	}
	st->unavailable_run = u == UNAVAILABLE_RUN;
	return 0;
}

/* Appends the URLs of list to urls. */
static int add_servers(char **urls, size_t *n_urls, char *from_out,
		       const char *list, const char *from, char *err,
		       size_t errlen)
{
	char why[512];

	snprintf(from_out, 256, "%s", from);
	if (list[strspn(list, ", \t\n")] == '\0') {
		snprintf(err, errlen, "%s is empty: name a server%s", from,
			 strcmp(from, "DLOCK_SERVERS") == 0 ?
			 ", or unset it for the default" : "");
		return -1;
	}
	if (config_split_servers(list, urls, MAX_SERVERS, n_urls, why,
				 sizeof why) < 0) {
		snprintf(err, errlen, "%s: %s", from, why);
		return -1;
	}
	return 0;
}

/* The server list, from the first place that names one, parsed by its
 * engine. */
static int resolve_servers(const struct config_flags *fl,
			   const struct config_file *cf, struct settings *st,
			   char *err, size_t errlen)
{
	const char *env_servers = getenv("DLOCK_SERVERS");
	char *urls[MAX_SERVERS], why[512];
	size_t n = 0;
	int r = 0;

	if (fl->n_servers > 0) {
		/* Each -S may itself be a list, as DLOCK_SERVERS is. */
		for (size_t i = 0; i < fl->n_servers && r == 0; i++)
			r = add_servers(urls, &n, st->servers_from, fl->servers[i],
					"--server", err, errlen);
	} else if (env_servers) {
		/* Set but empty, as a CI job gets it when a secret is missing:
		 * not the default, where each host may have a Redis of its
		 * own and would hold "the" lock alone. */
		r = add_servers(urls, &n, st->servers_from, env_servers,
				"DLOCK_SERVERS", err, errlen);
	} else if (cf->servers) {
		r = add_servers(urls, &n, st->servers_from, cf->servers,
				cf->servers_from, err, errlen);
	} else {
		r = add_servers(urls, &n, st->servers_from, DEFAULT_SERVER,
				"the default", err, errlen);
	}
	if (r == 0 && config_parse_servers(urls, n, &st->engine, &st->servers,
					   why, sizeof why) < 0) {
		snprintf(err, errlen, "%s: %s", st->servers_from, why);
		r = -1;
	}
	if (r == 0 && (st->server_texts = calloc(n + 1, sizeof *urls))) {
		memcpy(st->server_texts, urls, n * sizeof *urls);
		st->n_servers = n;
		return 0;
	}
	if (r == 0)
		snprintf(err, errlen, "out of memory");
	while (n > 0)
		free(urls[--n]);
	return -1;
}

static int copy(const char *s, char **out, char *err, size_t errlen)
{
	if (s && !(*out = strdup(s))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* --connect-budget, else the config file's connect-budget, else the
 * default. */
static int resolve_connect_budget(const struct config_flags *fl,
				  const struct config_file *cf, struct settings *st,
				  char *err, size_t errlen)
{
	st->connect_budget_ms = fl->connect_budget_ms;
	if (fl->connect_budget_ms >= 0)
		return 0;
	st->connect_budget_ms = DEFAULT_CONNECT_BUDGET_MS;
	if (cf->connect_budget &&
	    parse_seconds(cf->connect_budget, MAX_SECONDS_MS, &st->connect_budget_ms) < 0) {
		snprintf(err, errlen, "config: bad connect-budget '%s'", cf->connect_budget);
		return -1;
	}
	return 0;
}

/* The TLS settings, flags before the config file. A --tls-* flag with no
 * rediss:// server is an error: who names a CA expects TLS, and a plain
 * connection would send the password in clear. The config file's serve
 * the rediss:// servers there are, and none when there are none: it is
 * the site's, for every run, some of them on a plain local Redis. */
static int resolve_tls(const struct config_flags *fl, const struct config_file *cf,
		       struct settings *st, char *err, size_t errlen)
{
	struct tls_options *o = &st->tls_opts;
	const char *flag = fl->tls_ca ? "--tls-ca" : fl->tls_cert ? "--tls-cert" :
			   fl->tls_key ? "--tls-key" :
			   fl->tls_insecure ? "--tls-insecure" : NULL;
	const char *cert = fl->tls_cert ? fl->tls_cert : cf->tls_cert;
	const char *key = fl->tls_key ? fl->tls_key : cf->tls_key;
	const char *insecure = cf->tls_insecure;

	st->tls = engine_uses_tls(st->engine, st->servers, st->n_servers);
	if (flag && !st->tls) {
		char tls_urls[256];

		engine_tls_urls(tls_urls, sizeof tls_urls);
		snprintf(err, errlen, "%s: no server asks for TLS (%s; servers from %s)",
			 flag, tls_urls, st->servers_from);
		return -1;
	}
	if (insecure && strcmp(insecure, "yes") != 0 && strcmp(insecure, "no") != 0) {
		snprintf(err, errlen, "config: bad tls-insecure '%s' (yes or no)", insecure);
		return -1;
	}
	if (!cert != !key) {
		snprintf(err, errlen, cert ? "--tls-cert needs --tls-key (the client certificate's key)" :
			 "--tls-key needs --tls-cert (the client certificate)");
		return -1;
	}
	o->insecure = fl->tls_insecure || (insecure && strcmp(insecure, "yes") == 0);
	return copy(fl->tls_ca ? fl->tls_ca : cf->tls_ca, &o->ca, err, errlen) < 0 ||
	       copy(cert, &o->cert, err, errlen) < 0 ||
	       copy(key, &o->key, err, errlen) < 0 ? -1 : 0;
}

/* For operators: --metrics-dir and --log-format, flags before the
 * environment (an empty DLOCK_METRICS_DIR is none) before the file. */
static int resolve_ops(const struct config_flags *fl, const struct config_file *cf,
		       struct settings *st, char *err, size_t errlen)
{
	const char *env_dir = getenv("DLOCK_METRICS_DIR");
	const char *env_format = getenv("DLOCK_LOG_FORMAT");
	const char *dir = fl->metrics_dir ? fl->metrics_dir :
			  env_dir ? env_dir : cf->metrics_dir;
	int f = fl->log_format;

	if (f < 0 && env_format && (f = log_format_of(env_format)) < 0) {
		snprintf(err, errlen, "bad DLOCK_LOG_FORMAT '%.64s' (text or json)",
			 env_format);
		return -1;
	}
	if (f < 0)
		f = cf->log_format ? log_format_of(cf->log_format) : LOG_TEXT;
	st->log_format = (enum log_format)f;
	return dir && *dir ? copy(dir, &st->metrics_dir, err, errlen) : 0;
}

static int resolve(const struct config_flags *fl, const struct config_file *cf,
		   struct settings *st, char *err, size_t errlen)
{
	const char *env_prefix = getenv("DLOCK_PREFIX");
	const char *env_password = getenv("DLOCK_PASSWORD");

	if (resolve_servers(fl, cf, st, err, errlen) < 0)
		return -1;

	st->prefix = strdup(fl->prefix ? fl->prefix : env_prefix ? env_prefix :
			    cf->prefix ? cf->prefix : DEFAULT_PREFIX);
	if (!st->prefix) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}

	st->history = fl->history >= 0 ? fl->history : DEFAULT_HISTORY;
	if (fl->history < 0 && cf->history &&
	    parse_count(cf->history, 0, MAX_HISTORY, &st->history) < 0) {
		snprintf(err, errlen, "config: bad history '%s' (0 to %d)",
			 cf->history, MAX_HISTORY);
		return -1;
	}
	if (resolve_job(fl, cf, st, err, errlen) < 0)
		return -1;
	st->ttl_ms = fl->ttl_ms;
	if (!fl->ttl_ms && cf->ttl) {
		if (parse_seconds(cf->ttl, MAX_SECONDS_MS, &st->ttl_ms) < 0 ||
		    st->ttl_ms < MIN_TTL_MS) {
			snprintf(err, errlen, "config: bad ttl '%s'", cf->ttl);
			return -1;
		}
	} else if (!fl->ttl_ms) {
		st->ttl_ms = DEFAULT_TTL_MS;
	}
	st->node_timeout_ms = fl->node_timeout_ms;
	if (!fl->node_timeout_ms && cf->node_timeout) {
		if (parse_seconds(cf->node_timeout, MAX_SECONDS_MS,
				  &st->node_timeout_ms) < 0 ||
		    st->node_timeout_ms == 0) {
			snprintf(err, errlen, "config: bad node-timeout '%s'",
				 cf->node_timeout);
			return -1;
		}
	} else if (!fl->node_timeout_ms) {
		/* A stalled server must not eat the whole lease. */
		st->node_timeout_ms = st->ttl_ms / 3 < DEFAULT_NODE_TIMEOUT_MS ?
				      st->ttl_ms / 3 : DEFAULT_NODE_TIMEOUT_MS;
	}
	if (st->node_timeout_ms >= st->ttl_ms) {
		snprintf(err, errlen, "--node-timeout must be shorter than --ttl");
		return -1;
	}
	if (resolve_connect_budget(fl, cf, st, err, errlen) < 0 ||
	    resolve_tls(fl, cf, st, err, errlen) < 0 ||
	    resolve_ops(fl, cf, st, err, errlen) < 0)
		return -1;

	if (fl->password_file)
		return configfile_password(fl->password_file, &st->password, err, errlen);
	if (env_password && *env_password) {
		st->password = strdup(env_password);
		return st->password ? 0 : -1;
	}
	if (cf->password_file)
		return configfile_password(cf->password_file, &st->password, err, errlen);
	return 0;
}

int config_resolve(const struct config_flags *fl, struct settings *st, char *err,
		   size_t errlen)
{
	struct config_file cf = { 0 };
	char *texts[2];
	size_t n_texts = 0;
	int r;

	/* malloc, not calloc: url_parse() fills each one it uses, and zeroing
	 * MAX_SERVERS of them is a tenth of dlock's start-up. */
	*st = (struct settings){ 0 };
	r = configfile_load(fl->config_file, &cf, texts, &n_texts, err, errlen);
	if (r == 0)
		r = resolve(fl, &cf, st, err, errlen);
	while (n_texts > 0)
		free(texts[--n_texts]);
	return r;
}

void config_report(const struct config_flags *fl, const struct settings *st)
{
	/* Where -S named them, the command line says so already. */
	if (fl->verbose && fl->n_servers == 0) {
		char list[1024];
		size_t len = 0;

		list[0] = '\0';
		for (size_t i = 0; i < st->n_servers && len < sizeof list; i++)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
						i ? ", " : "",
						engine_server_text(st->engine, st->servers, i));
		log_event(LOG_INFO, fl->key, "servers", NULL, 0, "servers from %s: %s",
			  st->servers_from, list);
	}
	/* Cron mails what a job prints: a setting that works is no news
	 * there, only to someone at a terminal. */
	if (st->n_servers > 1 && st->n_servers % 2 == 0 &&
	    (fl->verbose || isatty(STDERR_FILENO)))
		log_line(fl->key, "warning: %zu servers: an even number tolerates no more failures than %zu",
			 st->n_servers, st->n_servers - 1);
}

void config_free(struct settings *st)
{
	if (st->engine && st->servers)
		engine_free_servers(st->engine, st->servers, st->n_servers);
	for (size_t i = 0; st->server_texts && i < st->n_servers; i++)
		free(st->server_texts[i]);
	free(st->server_texts);
	free(st->prefix);
	free(st->tls_opts.ca);
	free(st->tls_opts.cert);
	free(st->tls_opts.key);
	free(st->metrics_dir);
	if (st->password) {
		explicit_bzero(st->password, strlen(st->password));
		free(st->password);
	}
}
