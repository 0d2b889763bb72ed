/* config.c - settings in order of precedence: command line, environment,
 * config file, default; and the config file parser (pure, fuzzable). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include "caps.h"
#include "config.h"
#include "log.h"
#include "parse.h"

#define MAX_FILE_BYTES (64 * 1024)

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

static char **config_slot(struct config_file *cf, const char *name)
{
	if (strcmp(name, "servers") == 0)
		return &cf->servers;
	if (strcmp(name, "prefix") == 0)
		return &cf->prefix;
	if (strcmp(name, "ttl") == 0)
		return &cf->ttl;
	if (strcmp(name, "password-file") == 0)
		return &cf->password_file;
	if (strcmp(name, "node-timeout") == 0)
		return &cf->node_timeout;
	if (strcmp(name, "history") == 0)
		return &cf->history;
	if (strcmp(name, "min-hold") == 0)
		return &cf->min_hold;
	if (strcmp(name, "unavailable") == 0)
		return &cf->unavailable;
	if (strcmp(name, "tls-ca") == 0)
		return &cf->tls_ca;
	if (strcmp(name, "tls-cert") == 0)
		return &cf->tls_cert;
	if (strcmp(name, "tls-key") == 0)
		return &cf->tls_key;
	if (strcmp(name, "tls-insecure") == 0)
		return &cf->tls_insecure;
	if (strcmp(name, "metrics-dir") == 0)
		return &cf->metrics_dir;
	if (strcmp(name, "log-format") == 0)
		return &cf->log_format;
	return NULL;
}

/* The servers a file names: split, each URL's scheme known, and parsed
 * when its engine is built in (Redis); a module's engine (PostgreSQL...)
 * is not loaded for this, and parses its URLs when they are used. */
static int check_servers(const char *list, char *err, size_t errlen)
{
	char *urls[MAX_SERVERS];
	size_t n = 0;
	bool built_in = true;
	int r = config_split_servers(list, urls, MAX_SERVERS, &n, err, errlen);

	for (size_t i = 0; r == 0 && i < n; i++) {
		char why[512];

		if (!engine_known(urls[i], &built_in, why, sizeof why)) {
			engine_bad_url(urls[i], why, err, errlen);
			r = -1;
		}
	}
	if (r == 0 && built_in) {
		const struct engine *engine;
		void *servers;

		r = config_parse_servers(urls, n, &engine, &servers, err, errlen);
		if (r == 0)
			engine->settings.free_servers(servers, n);
	}
	while (n > 0)
		free(urls[--n]);
	return r;
}

/* A value's form, checked where the file says it, so that the error can
 * name the line: the settings that take a number or a word. Whether the
 * value fits the others (min-hold within ttl) is for resolve(). */
static int check_value(const char *name, const char *value, char *err,
		       size_t errlen)
{
	int64_t ms;
	long n;

	if (strcmp(name, "ttl") == 0 &&
	    (parse_seconds(value, MAX_SECONDS_MS, &ms) < 0 || ms < MIN_TTL_MS))
		snprintf(err, errlen, "bad ttl '%.64s' (seconds, at least %.3g)", value,
			 (double)MIN_TTL_MS / 1000);
	else if (strcmp(name, "node-timeout") == 0 &&
		 (parse_seconds(value, MAX_SECONDS_MS, &ms) < 0 || ms == 0))
		snprintf(err, errlen, "bad node-timeout '%.64s' (seconds, more than 0)", value);
	else if (strcmp(name, "history") == 0 &&
		 parse_count(value, 0, MAX_HISTORY, &n) < 0)
		snprintf(err, errlen, "bad history '%.64s' (0 to %d)", value, MAX_HISTORY);
	else if (strcmp(name, "min-hold") == 0 &&
		 parse_seconds(value, MAX_SECONDS_MS, &ms) < 0)
		snprintf(err, errlen, "bad min-hold '%.64s': 0 (off) or seconds, up to %lld",
			 value, (long long)(MAX_SECONDS_MS / 1000));
	else if (strcmp(name, "unavailable") == 0 &&
		 config_unavailable(value) == UNAVAILABLE_UNSET)
		snprintf(err, errlen, "bad unavailable '%.64s': fail or run", value);
	else if (strcmp(name, "tls-insecure") == 0 && strcmp(value, "yes") != 0 &&
		 strcmp(value, "no") != 0)
		snprintf(err, errlen, "bad tls-insecure '%.64s' (yes or no)", value);
	else if (strcmp(name, "log-format") == 0 && log_format_of(value) < 0)
		snprintf(err, errlen, "bad log-format '%.64s' (text or json)", value);
	else if (strcmp(name, "servers") == 0)
		return check_servers(value, err, errlen);
	else
		return 0;
	return -1;
}

/* A '#' after blank space in a value: a comment the writer meant to end
 * the line with. It is not one (a '#' may be part of a password or a
 * path), and taking it as part of the value would leave a setting that
 * is not what was written: refused. */
static bool trailing_comment(const char *value)
{
	for (const char *p = strchr(value, '#'); p; p = strchr(p + 1, '#'))
		if (p > value && (p[-1] == ' ' || p[-1] == '\t'))
			return true;
	return false;
}

int config_parse(char *text, size_t len, struct config_file *cf, char *err,
		 size_t errlen)
{
	char *line = text, *next, *nul = memchr(text, '\0', len), why[200];
	struct config_file seen = { 0 };
	int lineno = 1;

	*cf = (struct config_file){ 0 };
	/* A NUL would end the line early, and what follows it would be
	 * silently left out: no config file holds one. */
	if (nul) {
		for (char *p = text; p < nul; p++)
			lineno += *p == '\n';
		snprintf(err, errlen, "%d: a NUL byte (not a text file)", lineno);
		return -1;
	}
	text[len] = '\0';
	for (lineno = 1; line; line = next, lineno++) {
		char *eq, *name, *value, **slot;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line = trim(line);
		if (*line == '\0' || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(err, errlen, "%d: expected 'name = value'", lineno);
			return -1;
		}
		*eq = '\0';
		name = trim(line);
		value = trim(eq + 1);
		slot = config_slot(cf, name);
		if (!slot) {
			snprintf(err, errlen, "%d: unknown key '%.64s'", lineno, name);
			return -1;
		}
		if (*config_slot(&seen, name)) {
			snprintf(err, errlen, "%d: duplicate key '%s'", lineno, name);
			return -1;
		}
		/* A setting left empty (a template's blank, a secret that was
		 * not filled in) must not mean the default; an empty prefix is
		 * a prefix. */
		if (*value == '\0' && strcmp(name, "prefix") != 0) {
			snprintf(err, errlen, "%d: empty %s (remove the line for the default)",
				 lineno, name);
			return -1;
		}
		if (trailing_comment(value)) {
			snprintf(err, errlen, "%d: '#' after the value of %s: a comment takes a line of its own",
				 lineno, name);
			return -1;
		}
		if (check_value(name, value, why, sizeof why) < 0) {
			snprintf(err, errlen, "%d: %s", lineno, why);
			return -1;
		}
		*config_slot(&seen, name) = value;
		*slot = value;
	}
	return 0;
}

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
	if (e->settings.parse((const char *const *)urls, n, servers, err, errlen) < 0)
		return -1;
	*engine = e;
	return 0;
}

/* What a config path names when it is no regular file: a directory, a
 * FIFO (whose open would wait for a writer, and its read for ever), a
 * device, or a file of /proc or /sys (regular in name only: /proc/kmsg
 * blocks, others change as they are read). NULL for a regular file. */
static const char *not_regular(int fd, const struct stat *sb)
{
	struct statfs fs;

	if (S_ISDIR(sb->st_mode))
		return "a directory";
	if (S_ISFIFO(sb->st_mode))
		return "a FIFO";
	if (S_ISSOCK(sb->st_mode))
		return "a socket";
	if (S_ISCHR(sb->st_mode) || S_ISBLK(sb->st_mode))
		return "a device";
	if (!S_ISREG(sb->st_mode))
		return "not a regular file";
	if (fstatfs(fd, &fs) == 0 &&
	    (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
		return fs.f_type == PROC_SUPER_MAGIC ? "a file of /proc" : "a file of /sys";
	return NULL;
}

/* Reads a whole small file, a regular one: non-blocking open, so that a
 * FIFO is refused at once, not waited on. Returns a malloc'd buffer (one
 * byte more than *len, for config_parse) or NULL, with the reason in why. */
static char *read_file(const char *path, size_t *len, const char **why)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat sb;
	char *buf = NULL;
	ssize_t n;

	*why = NULL;
	*len = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) < 0)
		goto fail;
	if ((*why = not_regular(fd, &sb)) != NULL)
		goto fail;
	buf = malloc(MAX_FILE_BYTES + 1);
	if (!buf)
		goto fail;
	while (*len <= MAX_FILE_BYTES &&
	       (n = read(fd, buf + *len, MAX_FILE_BYTES + 1 - *len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		*len += (size_t)n;
	}
	if (*len > MAX_FILE_BYTES) {
		errno = EFBIG;
		goto fail;
	}
	close(fd);
	return buf;
fail:
	n = errno;
	close(fd);
	free(buf);
	errno = (int)n;
	return NULL;
}

/* One line; one trailing newline is ignored. A file that group or others
 * can read gets a warning worded as ssh's for a key file, on every run (so
 * cron mails it) but not an error: the password still works, and refusing
 * it would stop every job at once. fstat() on the file that is read, not a
 * stat() of its name beside it, so the file checked is the file read. */
static int read_password(const char *path, char **out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *pw = NULL, why[128];
	struct stat sb;
	size_t len = 0;

	if (!f || fstat(fileno(f), &sb) < 0 || !(pw = malloc(MAX_FILE_BYTES + 1)))
		goto fail;
	errno = 0;
	len = fread(pw, 1, MAX_FILE_BYTES + 1, f);
	if (ferror(f) || len > MAX_FILE_BYTES) {
		if (!ferror(f))
			errno = EFBIG;
		else if (!errno)
			errno = EIO;
		goto fail;
	}
	fclose(f);
	pw[len] = '\0';
	len = strlen(pw);
	if (len > 0 && pw[len - 1] == '\n')
		pw[--len] = '\0';
	if (len == 0 || strchr(pw, '\n')) {
		snprintf(err, errlen, "%s: %s", path,
			 len ? "more than one line" : "empty password");
		explicit_bzero(pw, len);
		free(pw);
		return -1;
	}
	if (sb.st_mode & (S_IRGRP | S_IROTH))
		log_line(NULL, "warning: permissions 0%03o for '%s' are too open: group or others can read the password",
			 (unsigned)(sb.st_mode & 0777), path);
	*out = pw;
	return 0;
fail:
	snprintf(why, sizeof why, "%s", strerror(errno));
	log_lower_first(why);
	snprintf(err, errlen, "%s: %s", path, why);
	if (f)
		fclose(f);
	if (pw) {
		explicit_bzero(pw, len);
		free(pw);
	}
	return -1;
}

/* One config file; later files override earlier ones key by key. */
static int load_config(const char *path, bool must_exist, struct config_file *cf,
		       char **texts, size_t *n_texts, char *err, size_t errlen)
{
	struct config_file one;
	char why[256];
	const char *what;
	size_t len;
	char *text = read_file(path, &len, &what);

	if (!text) {
		if (!must_exist && !what && errno == ENOENT)
			return 0;
		if (what)
			snprintf(err, errlen, "%s: %s, not a config file", path, what);
		else
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	texts[(*n_texts)++] = text;
	if (config_parse(text, len, &one, why, sizeof why) < 0) {
		snprintf(err, errlen, "%s:%s", path, why);
		return -1;
	}
	if (one.servers) {
		cf->servers = one.servers;
		snprintf(cf->servers_from, sizeof cf->servers_from, "%s", path);
	}
	if (one.prefix)
		cf->prefix = one.prefix;
	if (one.ttl)
		cf->ttl = one.ttl;
	if (one.password_file)
		cf->password_file = one.password_file;
	if (one.node_timeout)
		cf->node_timeout = one.node_timeout;
	if (one.history)
		cf->history = one.history;
	if (one.min_hold)
		cf->min_hold = one.min_hold;
	if (one.unavailable)
		cf->unavailable = one.unavailable;
	if (one.tls_ca)
		cf->tls_ca = one.tls_ca;
	if (one.tls_cert)
		cf->tls_cert = one.tls_cert;
	if (one.tls_key)
		cf->tls_key = one.tls_key;
	if (one.tls_insecure)
		cf->tls_insecure = one.tls_insecure;
	if (one.metrics_dir)
		cf->metrics_dir = one.metrics_dir;
	if (one.log_format)
		cf->log_format = one.log_format;
	return 0;
}

static int load_configs(const struct config_flags *fl, struct config_file *cf,
			char **texts, size_t *n_texts, char *err, size_t errlen)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char user_path[4096];

	if (fl->config_file)
		return load_config(fl->config_file, true, cf, texts, n_texts,
				   err, errlen);
	if (load_config("/etc/dlock.conf", false, cf, texts, n_texts, err,
			errlen) < 0)
		return -1;
	if (xdg && *xdg)
		snprintf(user_path, sizeof user_path, "%s/dlock/config", xdg);
	else if (home && *home)
		snprintf(user_path, sizeof user_path, "%s/.config/dlock/config", home);
	else
		return 0;
	return load_config(user_path, false, cf, texts, n_texts, err, errlen);
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

	st->tls = st->engine->settings.uses_tls &&
		  st->engine->settings.uses_tls(st->servers, st->n_servers);
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
	if (resolve_tls(fl, cf, st, err, errlen) < 0 ||
	    resolve_ops(fl, cf, st, err, errlen) < 0)
		return -1;

	if (fl->password_file)
		return read_password(fl->password_file, &st->password, err, errlen);
	if (env_password && *env_password) {
		st->password = strdup(env_password);
		return st->password ? 0 : -1;
	}
	if (cf->password_file)
		return read_password(cf->password_file, &st->password, err, errlen);
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
	r = load_configs(fl, &cf, texts, &n_texts, err, errlen);
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
						st->engine->settings.server_text(st->servers, i));
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
		st->engine->settings.free_servers(st->servers, st->n_servers);
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
