/* configfile.c - the files settings are read from: the config files
 * (/etc/dlock.conf, then the user's, or --config's), each read without
 * blocking on what is no regular file and parsed line by line (pure,
 * fuzzable), and the password file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include "config.h"
#include "configfile.h"
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
	if (strcmp(name, "connect-budget") == 0)
		return &cf->connect_budget;
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
			engine_free_servers(engine, servers, n);
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
	else if (strcmp(name, "connect-budget") == 0 &&
		 parse_seconds(value, MAX_SECONDS_MS, &ms) < 0)
		snprintf(err, errlen, "bad connect-budget '%.64s' (seconds, 0 or more)", value);
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
int configfile_password(const char *path, char **out, char *err, size_t errlen)
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
	if (one.connect_budget)
		cf->connect_budget = one.connect_budget;
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

int configfile_load(const char *given, struct config_file *cf, char **texts,
		    size_t *n_texts, char *err, size_t errlen)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
	char user_path[4096];

	if (given)
		return load_config(given, true, cf, texts, n_texts, err, errlen);
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
