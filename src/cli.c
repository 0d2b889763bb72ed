/* cli.c - the option table, the forms and strict parsers for numbers and
 * signals (--help's text is help.c's). Everything here runs before a
 * server is contacted, so a usage error may exit at once (64) without
 * anything to give back. */
#include <ctype.h>
#include <err.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>
#include "cli.h"
#include "clicheck.h"
#include "engine.h"
#include "help.h"
#include "parse.h"
#include "version.h"

/* A usage error in the log's format (--log-format json: a JSON line). The
 * fuzz target defines errx itself (tests/meson.build) to get back
 * control: left as it is then. */
#ifndef errx
#define errx log_exit
#endif

enum {
	OPT_ON_LOST = CHAR_MAX + 1,
	OPT_KILL_AFTER,
	OPT_MAX_HOLD,
	OPT_MIN_HOLD,
	OPT_PREFIX,
	OPT_CONFIG,
	OPT_PASSWORD_FILE,
	OPT_NODE_TIMEOUT,
	OPT_CONNECT_BUDGET,
	OPT_WAIT_REPLICAS,
	OPT_VERBOSE,
	OPT_LIMIT,
	OPT_FAIR,
	OPT_HISTORY,
	OPT_JSON,
	OPT_COUNT,
	OPT_TOKEN,
	OPT_FORCE,
	OPT_EXPORT,
	OPT_NO_FENCE,
	OPT_UNAVAILABLE,
	OPT_TLS_CA,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_INSECURE,
	OPT_FD,
	OPT_LOG_FORMAT,
	OPT_METRICS_DIR,
	OPT_NOTIFY,
	OPT_NOTIFY_PASS,
	OPT_WATCH,
};

/* In the order of --help, the man page and the completions. */
static const struct option longopts[] = {
	{ "key",		required_argument,	NULL, 'k' },
	{ "exclusive",		no_argument,		NULL, 'x' },
	{ "shared",		no_argument,		NULL, 's' },
	{ "limit",		required_argument,	NULL, OPT_LIMIT },
	{ "nonblock",		no_argument,		NULL, 'n' },
	{ "nb",			no_argument,		NULL, 'n' },	/* flock's */
	{ "nonblocking",	no_argument,		NULL, 'n' },	/* flock's */
	{ "wait",		required_argument,	NULL, 'w' },
	{ "timeout",		required_argument,	NULL, 'w' },
	{ "conflict-exit-code",	required_argument,	NULL, 'E' },
	{ "fair",		no_argument,		NULL, OPT_FAIR },
	{ "ttl",		required_argument,	NULL, 't' },
	{ "on-lost",		required_argument,	NULL, OPT_ON_LOST },
	{ "kill-after",		required_argument,	NULL, OPT_KILL_AFTER },
	{ "max-hold",		required_argument,	NULL, OPT_MAX_HOLD },
	{ "min-hold",		required_argument,	NULL, OPT_MIN_HOLD },
	{ "server",		required_argument,	NULL, 'S' },
	{ "prefix",		required_argument,	NULL, OPT_PREFIX },
	{ "config",		required_argument,	NULL, OPT_CONFIG },
	{ "password-file",	required_argument,	NULL, OPT_PASSWORD_FILE },
	{ "tls-ca",		required_argument,	NULL, OPT_TLS_CA },
	{ "tls-cert",		required_argument,	NULL, OPT_TLS_CERT },
	{ "tls-key",		required_argument,	NULL, OPT_TLS_KEY },
	{ "tls-insecure",	no_argument,		NULL, OPT_TLS_INSECURE },
	{ "node-timeout",	required_argument,	NULL, OPT_NODE_TIMEOUT },
	{ "connect-budget",	required_argument,	NULL, OPT_CONNECT_BUDGET },
	{ "wait-replicas",	required_argument,	NULL, OPT_WAIT_REPLICAS },
	{ "history",		required_argument,	NULL, OPT_HISTORY },
	{ "no-fence",		no_argument,		NULL, OPT_NO_FENCE },
	{ "unavailable",	required_argument,	NULL, OPT_UNAVAILABLE },
	{ "command",		required_argument,	NULL, 'c' },
	{ "fd",			required_argument,	NULL, OPT_FD },
	{ "unlock",		no_argument,		NULL, 'u' },
	{ "close",		no_argument,		NULL, 'o' },
	{ "no-fork",		no_argument,		NULL, 'F' },
	{ "json",		no_argument,		NULL, OPT_JSON },
	{ "quiet",		no_argument,		NULL, 'q' },
	{ "count",		required_argument,	NULL, OPT_COUNT },
	{ "token",		required_argument,	NULL, OPT_TOKEN },
	{ "force",		no_argument,		NULL, OPT_FORCE },
	{ "export",		no_argument,		NULL, OPT_EXPORT },
	{ "watch",		no_argument,		NULL, OPT_WATCH },
	{ "metrics-dir",	required_argument,	NULL, OPT_METRICS_DIR },
	{ "notify",		no_argument,		NULL, OPT_NOTIFY },
	{ "notify-pass",	no_argument,		NULL, OPT_NOTIFY_PASS },
	{ "log-format",		required_argument,	NULL, OPT_LOG_FORMAT },
	{ "verbose",		no_argument,		NULL, OPT_VERBOSE },
	{ "help",		no_argument,		NULL, 'h' },
	{ "version",		no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static bool is_stop_or_cont(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU || sig == SIGCONT;
}

static void bad(const char *what, const char *value)
{
	errx(EX_USAGE, "bad %s '%s'", what, value);
}

/* Only digits, and at most one '.' between digits: a number that
 * parse_seconds() refused for its size, not its form. */
static bool is_decimal(const char *s)
{
	size_t n = strspn(s, "0123456789");

	if (s[n] == '.' && isdigit((unsigned char)s[n + 1]))
		n += 1 + strspn(s + n + 1, "0123456789");
	return n > 0 && s[n] == '\0';
}

static int64_t seconds_arg(const char *opt, const char *value, bool zero_ok)
{
	int64_t ms;

	if (parse_seconds(value, MAX_SECONDS_MS, &ms) < 0) {
		if (is_decimal(value))
			errx(EX_USAGE, "bad %s '%s': at most %" PRId64 " seconds (ten years)",
			     opt, value, MAX_SECONDS_MS / 1000);
		bad(opt, value);
	}
	if (ms == 0 && !zero_ok)
		errx(EX_USAGE, "bad %s '%s': must be more than 0", opt, value);
	return ms;
}

static long count_arg(const char *opt, const char *value, long min, long max)
{
	long n;

	if (parse_count(value, min, max, &n) < 0) {
		if (value[0] && value[strspn(value, "0123456789")] == '\0')
			errx(EX_USAGE, "bad %s '%s': %ld to %ld", opt, value, min, max);
		bad(opt, value);
	}
	return n;
}

/* Which options each form takes: a group of options each. */
enum {
	G_COMMON = 1 << 0,	/* servers, --verbose, --help */
	G_MODE = 1 << 1,	/* -x -s --limit */
	G_WAIT = 1 << 2,	/* -n -w -E --fair */
	G_TTL = 1 << 3,		/* -t */
	G_JOB = 1 << 4,		/* --on-lost --kill-after --max-hold --min-hold
				 * --unavailable -c -o -F */
	G_REPLICAS = 1 << 5,	/* --wait-replicas */
	G_HISTORY = 1 << 6,	/* --history N */
	G_OUTPUT = 1 << 7,	/* --json -q */
	G_COUNT = 1 << 8,	/* history's -n COUNT */
	G_TOKEN = 1 << 9,	/* --token */
	G_FORCE = 1 << 10,	/* --force */
	G_EXPORT = 1 << 11,	/* --export */
	G_KEYS = 1 << 12,	/* -k KEY */
	G_WATCH = 1 << 13,	/* status --watch */
};

/* Every form knows every short option, to say which it does not take. */
#define SHORT "k:xesnw:E:t:S:c:uoFqhV"

static const struct form {
	const char *word;
	enum command cmd;
	unsigned groups;
	const char *shortopts;	/* '+': options end at KEY (run: the command's);
				 * '-': options before or after KEYs, in order */
	int min_keys, max_keys;	/* KEY positionals; -1: any number */
} forms[] = {
	{ "run", CMD_RUN, G_COMMON | G_MODE | G_WAIT | G_TTL | G_JOB |
	  G_REPLICAS | G_HISTORY | G_KEYS | G_EXPORT, "+:" SHORT, 1, 1 },
	{ "status", CMD_STATUS, G_COMMON | G_OUTPUT | G_WATCH, "-:" SHORT, 0, -1 },
	{ "history", CMD_HISTORY, G_COMMON | G_OUTPUT | G_COUNT,
	  "-:n:" SHORT, 1, 1 },	/* -n COUNT */
	{ "release", CMD_RELEASE, G_COMMON | G_TOKEN | G_FORCE, "-:" SHORT, 1, 1 },
	{ "acquire", CMD_ACQUIRE, G_COMMON | G_MODE | G_WAIT | G_TTL |
	  G_REPLICAS | G_HISTORY | G_EXPORT, "-:" SHORT, 1, 1 },
	{ "extend", CMD_EXTEND, G_COMMON | G_TTL | G_TOKEN, "-:" SHORT, 1, 1 },
};

static unsigned group_of(int c)
{
	switch (c) {
	case 'x': case 'e': case 's': case OPT_LIMIT:
		return G_MODE;
	case OPT_CONNECT_BUDGET:
	case 'n': case 'w': case 'E': case OPT_FAIR:
		return G_WAIT;
	case 't':
		return G_TTL;
	case OPT_ON_LOST: case OPT_KILL_AFTER: case OPT_MAX_HOLD:
	case OPT_MIN_HOLD: case OPT_UNAVAILABLE:
	case 'c': case 'o': case 'F': case OPT_FD: case 'u':
		return G_JOB;
	case OPT_WAIT_REPLICAS:
		return G_REPLICAS;
	case OPT_HISTORY: case OPT_NO_FENCE:
		return G_HISTORY;
	case OPT_JSON: case 'q':
		return G_OUTPUT;
	case OPT_COUNT:
		return G_COUNT;
	case OPT_TOKEN:
		return G_TOKEN;
	case OPT_FORCE:
		return G_FORCE;
	case OPT_EXPORT:
		return G_EXPORT;
	case 'k':
		return G_KEYS;
	case OPT_METRICS_DIR: case OPT_NOTIFY: case OPT_NOTIFY_PASS:
		return G_JOB;
	case OPT_WATCH:
		return G_WATCH;
	default:
		return G_COMMON;
	}
}

/* A URL's password on the command line is there for anyone's ps(1) to see:
 * the URL is copied for dlock's use, and the argument overwritten with
 * '*' where the password was. (A password file is the better way.) */
static const char *scrubbed(char *arg)
{
	char *copy = strdup(arg);

	if (!copy)
		err(EX_OSERR, "strdup");
	for (char *p = strstr(arg, "://"); p; p = strstr(p, "://")) {
		char *auth = p + 3;
		size_t len = strcspn(auth, "/, \t\n");
		/* the last '@', as url.c takes it: one in the password is
		 * the password's */
		char *at = memrchr(auth, '@', len);
		char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;

		for (char *c = colon ? colon + 1 : at; c && c < at; c++)
			*c = '*';
		p = auth + len;
	}
	return copy;
}

/* Each option's value, checked and stored: a function for each group of
 * --help, which returns whether c is one of its options. */

/* Modes and waiting. */
static bool set_mode(int c, const char *arg, struct options *opts,
		     bool *mode_given, long *limit)
{
	switch (c) {
	case 'x':
	case 'e':
		opts->limit = 0;	/* the last of -x and -s wins, as in flock */
		*mode_given = true;
		break;
	case 's':
		opts->limit = LIMIT_SHARED;
		*mode_given = true;
		break;
	case OPT_LIMIT:
		*limit = count_arg("--limit", arg, 1, 1000000);
		break;
	case OPT_FAIR:
		opts->fair = true;
		break;
	case 'n':
		opts->nonblock = true;
		break;
	case 'w':
		opts->wait_ms = seconds_arg("--wait", arg, true);
		break;
	case 'E':
		opts->conflict_exit = (int)count_arg("--conflict-exit-code", arg, 0, 255);
		break;
	default:
		return false;
	}
	return true;
}

/* Lease. */
static bool set_lease(int c, const char *arg, struct options *opts)
{
	switch (c) {
	case 't':
		opts->cfg.ttl_ms = seconds_arg("--ttl", arg, false);
		if (opts->cfg.ttl_ms < MIN_TTL_MS)
			errx(EX_USAGE, "--ttl %s is too short: at least %.3g seconds (a shorter lease runs out before a busy host renews it)",
			     arg, (double)MIN_TTL_MS / 1000);
		break;
	case OPT_ON_LOST:
		opts->on_lost_signal = parse_signal(arg);
		if (opts->on_lost_signal < 0)
			bad("--on-lost signal", arg);
		/* SIGCONT follows the signal: a stop would be undone at once,
		 * and the job never told. */
		if (is_stop_or_cont(opts->on_lost_signal))
			errx(EX_USAGE, "bad --on-lost signal '%s': it must not stop or continue the job",
			     arg);
		break;
	case OPT_KILL_AFTER:
		opts->kill_after_ms = seconds_arg("--kill-after", arg, true);
		break;
	case OPT_MAX_HOLD:
		opts->max_hold_ms = seconds_arg("--max-hold", arg, false);
		break;
	case OPT_MIN_HOLD:
		if (parse_seconds(arg, MAX_SECONDS_MS, &opts->cfg.min_hold_ms) < 0)
			errx(EX_USAGE, "bad --min-hold '%s': 0 (off) or seconds, up to %" PRId64,
			     arg, MAX_SECONDS_MS / 1000);
		break;
	default:
		return false;
	}
	return true;
}

/* Servers. */
static bool set_servers(int c, const char *arg, struct options *opts)
{
	switch (c) {
	case OPT_PREFIX:
		opts->cfg.prefix = arg;
		break;
	case OPT_CONFIG:
		opts->cfg.config_file = arg;
		break;
	case OPT_PASSWORD_FILE:
		opts->cfg.password_file = arg;
		break;
	case OPT_TLS_CA:
		opts->cfg.tls_ca = arg;
		break;
	case OPT_TLS_CERT:
		opts->cfg.tls_cert = arg;
		break;
	case OPT_TLS_KEY:
		opts->cfg.tls_key = arg;
		break;
	case OPT_TLS_INSECURE:
		opts->cfg.tls_insecure = true;
		break;
	case OPT_NODE_TIMEOUT:
		opts->cfg.node_timeout_ms = seconds_arg("--node-timeout", arg, false);
		break;
	case OPT_CONNECT_BUDGET:
		opts->cfg.connect_budget_ms = seconds_arg("--connect-budget", arg, true);
		break;
	case OPT_WAIT_REPLICAS:
		opts->wait_replicas = (int)count_arg("--wait-replicas", arg, 0, 1000);
		break;
	case OPT_HISTORY:
		opts->cfg.history = count_arg("--history", arg, 0, 1000000);
		break;
	case OPT_NO_FENCE:
		opts->no_fence = true;
		break;
	case OPT_UNAVAILABLE:
		opts->cfg.unavailable = config_unavailable(arg);
		if (opts->cfg.unavailable == UNAVAILABLE_UNSET)
			errx(EX_USAGE, "bad --unavailable '%s': fail or run", arg);
		break;
	default:
		return false;
	}
	return true;
}

/* Command: what runs under the lock. */
static bool set_job(int c, const char *arg, struct options *opts)
{
	switch (c) {
	case 'c':
		opts->shell_cmd = arg;
		break;
	case OPT_FD:
		opts->fd = (int)count_arg("--fd", arg, 0, INT_MAX);
		break;
	case 'u':
		opts->unlock = true;
		break;
	case 'o':
		opts->close = true;
		break;
	case 'F':
		opts->no_fork = true;
		break;
	default:
		return false;
	}
	return true;
}

/* status, history, release, extend, acquire. */
static bool set_subcommand(int c, const char *arg, struct options *opts)
{
	switch (c) {
	case OPT_JSON:
		opts->json = true;
		break;
	case 'q':
		opts->quiet = true;
		break;
	case OPT_COUNT:
		opts->count = count_arg("--count", arg, 1, 1000000);
		break;
	case OPT_TOKEN:
		if (!*arg)
			errx(EX_USAGE, "empty --token");
		opts->token = arg;
		break;
	case OPT_FORCE:
		opts->force = true;
		break;
	case OPT_EXPORT:
		opts->export_vars = true;
		break;
	case OPT_WATCH:
		opts->watch = true;
		break;
	default:
		return false;
	}
	return true;
}

/* For operators. */
static bool set_operator(int c, const char *arg, struct options *opts)
{
	switch (c) {
	case OPT_METRICS_DIR:
		if (!*arg)
			errx(EX_USAGE, "empty --metrics-dir");
		opts->cfg.metrics_dir = arg;
		break;
	case OPT_NOTIFY:
		opts->notify = true;
		break;
	case OPT_NOTIFY_PASS:
		opts->notify = opts->notify_pass = true;
		break;
	case OPT_LOG_FORMAT:
		opts->cfg.log_format = log_format_of(arg);
		if (opts->cfg.log_format < 0)
			errx(EX_USAGE, "bad --log-format '%s': text or json", arg);
		log_set_format((enum log_format)opts->cfg.log_format);
		break;
	default:
		return false;
	}
	return true;
}

static void parse_option(int c, const char *arg, struct options *opts,
			 bool *mode_given, long *limit)
{
	if (set_mode(c, arg, opts, mode_given, limit) || set_lease(c, arg, opts) ||
	    set_servers(c, arg, opts) || set_job(c, arg, opts) ||
	    set_subcommand(c, arg, opts) || set_operator(c, arg, opts))
		return;
	switch (c) {
	case OPT_VERBOSE:
		opts->verbose = opts->cfg.verbose = true;
		break;
	case 'h':
		help_print(stdout);
		exit(EX_OK);
	case 'V':
		printf("dlock %s\n", DLOCK_VERSION);
		exit(EX_OK);
	}
}

/* The long option that word names, as getopt_long() takes it: exactly,
 * or by an unambiguous abbreviation; NULL when none. */
static const struct option *long_option(const char *word)
{
	const char *name = word + 2;
	size_t len = strcspn(name, "=");
	const struct option *found = NULL;

	for (const struct option *o = longopts; o->name; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (o->name[len] == '\0')
			return o;
		if (found && (found->has_arg != o->has_arg || found->val != o->val))
			return NULL;	/* ambiguous: getopt says so later */
		found = o;
	}
	return found;
}

/* Whether the option word takes the next word as its value. */
static bool takes_next(const char *word)
{
	if (word[1] == '-') {
		const struct option *o = long_option(word);

		return o && o->has_arg == required_argument &&
		       !strchr(word, '=');
	}
	for (const char *c = word + 1; *c; c++) {
		const char *p = strchr(SHORT, *c);

		if (!p || *c == ':')
			return false;
		if (p[1] == ':')
			return c[1] == '\0';	/* -w5: the value is in the word */
	}
	return false;
}

bool cli_is_option(const char *word)
{
	if (word[0] != '-' || word[1] == '\0')
		return false;
	if (word[1] == '-')
		return word[2] && long_option(word) != NULL;
	for (const char *c = word + 1; *c; c++) {
		const char *p = strchr(SHORT, *c);

		if (!p || *c == ':')
			return false;
		if (p[1] == ':')
			return true;
	}
	return true;
}

/* The first word that is neither an option nor an option's value decides
 * the form: a subcommand word is that subcommand, whatever options came
 * before it, which are moved after it (dlock -S URL status K is dlock
 * status -S URL K). After "--" comes KEY, whatever its name. Returns the
 * form; help and version are answered here. */
static const struct form *form_of(int argc, char **argv)
{
	int i;
	char *word;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return &forms[0];
		if (argv[i][0] != '-' || argv[i][1] == '\0')
			break;
		if (takes_next(argv[i]))
			i++;
	}
	if (i >= argc)
		return &forms[0];
	word = argv[i];
	if (strcmp(word, "help") == 0 && i + 2 == argc &&
	    strcmp(argv[i + 1], "engines") == 0)
		exit(engine_list(stdout));
	if (strcmp(word, "help") == 0 || strcmp(word, "version") == 0) {
		if (i + 1 < argc)
			errx(EX_USAGE, "%s takes no argument (a lock named '%s': dlock run %s -- COMMAND)",
			     word, word, word);
		if (word[0] == 'h')
			help_print(stdout);
		else
			printf("dlock %s\n", DLOCK_VERSION);
		exit(EX_OK);
	}
	for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
		if (strcmp(word, forms[k].word) != 0)
			continue;
		memmove(argv + 2, argv + 1, (size_t)(i - 1) * sizeof *argv);
		argv[1] = word;
		return &forms[k];
	}
	return &forms[0];
}

/* An option of another form: named as given, long or short. */
static void __attribute__((noreturn)) not_here(const struct form *f, int c, int li)
{
	if (li >= 0)
		errx(EX_USAGE, "--%s does not apply to 'dlock %s'", longopts[li].name,
		     f->word);
	errx(EX_USAGE, "-%c does not apply to 'dlock %s'", c, f->word);
}

/* flock's byte-range options: a key is one lock, with no bytes to lock
 * a range of; taking the whole key instead would exclude holders that
 * flock lets run side by side (an fcntl lock and a flock one do not
 * meet). Refused with the reason, not as unknown. */
static void flock_only(const char *word)
{
	static const char *const ranged[] = { "--fcntl", "--start", "--length" };

	for (size_t i = 0; i < sizeof ranged / sizeof ranged[0]; i++) {
		size_t n = strlen(ranged[i]);

		if (strncmp(word, ranged[i], n) == 0 &&
		    (word[n] == '\0' || word[n] == '='))
			errx(EX_USAGE, "%s: flock's byte-range (fcntl) locks have no keyed equivalent: a KEY is one lock",
			     ranged[i]);
	}
}

/* The checks once every option is in: combinations and positionals. */
static void check(const struct form *f, int n_keys, struct options *opts,
		  bool mode_given, long limit)
{
	clicheck_options(opts, mode_given, limit);
	if (n_keys < f->min_keys)
		errx(EX_USAGE, "missing KEY");
	if (f->max_keys >= 0 && n_keys > f->max_keys && !opts->multi)
		errx(EX_USAGE, "%s: one KEY only", f->word);
	for (int i = 0; i < n_keys; i++)
		if (opts->keys[i][0] == '\0')
			errx(EX_USAGE, "empty KEY");
	clicheck_keys(n_keys, opts);
	opts->key = opts->cfg.key = n_keys > 0 ? opts->keys[0] : NULL;
}

/* The log's format before the options are read, for usage errors found
 * while reading them: DLOCK_LOG_FORMAT, then a --log-format among the
 * options (before KEY, or anywhere before "--" after a subcommand word).
 * A bad value is left for its own usage error, in text. The config
 * file's is known only later (main.c). */
static void early_log_format(int argc, char **argv)
{
	const char *env = getenv("DLOCK_LOG_FORMAT");
	bool subcommand = false;
	int f;

	if (env && (f = log_format_of(env)) >= 0)
		log_set_format((enum log_format)f);
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const struct option *o;
		const char *value = NULL;

		if (argv[i][0] != '-' || argv[i][1] == '\0') {
			for (size_t k = 1; k < sizeof forms / sizeof forms[0]; k++)
				subcommand |= strcmp(argv[i], forms[k].word) == 0;
			if (!subcommand)
				return;		/* KEY: what follows is the command's */
			continue;
		}
		if (argv[i][1] == '-' && (o = long_option(argv[i])) &&
		    o->val == OPT_LOG_FORMAT)
			value = strchr(argv[i], '=') ? strchr(argv[i], '=') + 1 :
				i + 1 < argc ? argv[i + 1] : NULL;
		if (value && (f = log_format_of(value)) >= 0)
			log_set_format((enum log_format)f);
		if (takes_next(argv[i]))
			i++;
	}
}

void cli_parse(int argc, char **argv, struct options *opts)
{
	const struct form *f;
	bool mode_given = false, by_k;
	long limit = 0, fd;
	int c, li = -1, n_keys = 0;

	*opts = (struct options){
		.wait_ms = -1,
		.conflict_exit = 1,
		.on_lost_signal = SIGTERM,
		.kill_after_ms = 5000,
		.max_hold_ms = -1,
		.count = 10,
		.cfg.history = -1,
		.cfg.min_hold_ms = -1,
		.cfg.connect_budget_ms = -1,
		.cfg.log_format = -1,
		.fd = -1,
	};
	early_log_format(argc, argv);
	if (argc < 2 && log_json())
		errx(EX_USAGE, "missing KEY and COMMAND: dlock [options] KEY COMMAND [ARG...]; try 'dlock --help'");
	if (argc < 2) {
		/* as flock(1): what to type, and where to read more */
		fputs("Usage: dlock [options] KEY COMMAND [ARG...]\n"
		      "Try 'dlock --help' for more information.\n", stderr);
		exit(EX_USAGE);
	}
	f = form_of(argc, argv);
	opts->cmd = f->cmd;
	if (f != &forms[0] || strcmp(argv[1], "run") == 0) {
		argv++;
		argc--;
	}
	opts->cfg.servers = calloc((size_t)argc, sizeof *opts->cfg.servers);
	opts->keys = calloc((size_t)argc + 1, sizeof *opts->keys);
	if (!opts->cfg.servers || !opts->keys)
		err(EX_OSERR, "calloc");
	for (;;) {
		li = -1;
		c = getopt_long(argc, argv, f->shortopts, longopts, &li);
		if (c == -1)
			break;
		if (c == 1) {		/* a KEY, between options ('-') */
			opts->keys[n_keys++] = optarg;
			continue;
		}
		if (c == ':')
			errx(EX_USAGE, "option '%s' needs an argument", argv[optind - 1]);
		if (c == '?') {
			flock_only(argv[optind - 1]);
			if (optopt)
				errx(EX_USAGE, "unknown option '-%c'", optopt);
			errx(EX_USAGE, "unknown option '%s'", argv[optind - 1]);
		}
		/* history -n COUNT; --nonblock (also 'n') stays what it is */
		if (c == 'n' && f->cmd == CMD_HISTORY && li < 0)
			c = OPT_COUNT;
		if (!(f->groups & group_of(c)))
			not_here(f, c, li);
		if (c == 'S')
			opts->cfg.servers[opts->cfg.n_servers++] = scrubbed(optarg);
		else if (c == 'k')
			opts->keys[n_keys++] = optarg;
		else
			parse_option(c, optarg, opts, &mode_given, &limit);
	}
	/* -k and --fd name the locks: no KEY positional */
	opts->multi = f->cmd == CMD_RUN && n_keys > 0;
	by_k = f->cmd == CMD_RUN && (n_keys > 0 || opts->fd >= 0);
	if (f->cmd == CMD_RUN) {
		if (optind < argc && !by_k)
			opts->keys[n_keys++] = argv[optind++];
		/* flock's descriptor form: a number alone, and no command */
		if (!by_k && n_keys == 1 && optind == argc && !opts->shell_cmd &&
		    parse_count(opts->keys[0], 0, INT_MAX, &fd) == 0) {
			opts->fd = (int)fd;
			opts->fd_form = true;
			n_keys = 0;
		}
	} else if (optind < argc) {	/* after "--" */
		while (optind < argc)
			opts->keys[n_keys++] = argv[optind++];
	}
	clicheck_fd(opts, n_keys, optind < argc || opts->shell_cmd);
	if (opts->fd >= 0)
		opts->keys[n_keys++] = opts->fd_path;
	check(f, n_keys, opts, mode_given, limit);
	/* -k A -- -c: getopt took the --, after which all is the command */
	if (by_k && strcmp(argv[optind - 1], "--") == 0)
		optind--;
	if (f->cmd == CMD_RUN && !opts->fd_form)
		clicheck_command(argc - optind, argv + optind, opts);
}

void cli_free(struct options *opts)
{
	for (size_t i = 0; i < opts->cfg.n_servers; i++)
		free((char *)opts->cfg.servers[i]);
	free(opts->cfg.servers);
	free(opts->keys);
	free(opts->fd_path);
	opts->fd_path = NULL;
	opts->cfg.servers = NULL;
	opts->cfg.n_servers = 0;
	opts->keys = NULL;
}
