/* cli.c - the option table, usage() and strict parsers for numbers and
 * signals. Everything here runs before a server is contacted, so a usage
 * error may exit at once (64) without anything to give back. */
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
#include "cli.h"
#include "version.h"


enum {
	OPT_ON_LOST = CHAR_MAX + 1,
	OPT_KILL_AFTER,
	OPT_MAX_HOLD,
	OPT_PREFIX,
	OPT_CONFIG,
	OPT_PASSWORD_FILE,
	OPT_NODE_TIMEOUT,
	OPT_WAIT_REPLICAS,
	OPT_VERBOSE,
	OPT_LIMIT,
	OPT_FAIR,
};

/* In the order of --help, the man page and the completions. */
static const struct option longopts[] = {
	{ "exclusive",		no_argument,		NULL, 'x' },
	{ "shared",		no_argument,		NULL, 's' },
	{ "limit",		required_argument,	NULL, OPT_LIMIT },
	{ "nonblock",		no_argument,		NULL, 'n' },
	{ "wait",		required_argument,	NULL, 'w' },
	{ "timeout",		required_argument,	NULL, 'w' },
	{ "conflict-exit-code",	required_argument,	NULL, 'E' },
	{ "fair",		no_argument,		NULL, OPT_FAIR },
	{ "ttl",		required_argument,	NULL, 't' },
	{ "on-lost",		required_argument,	NULL, OPT_ON_LOST },
	{ "kill-after",		required_argument,	NULL, OPT_KILL_AFTER },
	{ "max-hold",		required_argument,	NULL, OPT_MAX_HOLD },
	{ "server",		required_argument,	NULL, 'S' },
	{ "prefix",		required_argument,	NULL, OPT_PREFIX },
	{ "config",		required_argument,	NULL, OPT_CONFIG },
	{ "password-file",	required_argument,	NULL, OPT_PASSWORD_FILE },
	{ "node-timeout",	required_argument,	NULL, OPT_NODE_TIMEOUT },
	{ "wait-replicas",	required_argument,	NULL, OPT_WAIT_REPLICAS },
	{ "command",		required_argument,	NULL, 'c' },
	{ "close",		no_argument,		NULL, 'o' },
	{ "verbose",		no_argument,		NULL, OPT_VERBOSE },
	{ "help",		no_argument,		NULL, 'h' },
	{ "version",		no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static void usage(void)
{
	fputs(
"Usage:\n"
"  dlock [options] KEY [--] COMMAND [ARG...]\n"
"  dlock [options] KEY -c COMMAND_STRING\n"
"  dlock run [options] KEY [--] COMMAND [ARG...]\n"
"\n"
"Run COMMAND while holding the lock KEY in Redis, as flock(1) does with a file.\n"
"\n"
"Modes:\n"
"  -x, -e, --exclusive          one holder at a time (the default)\n"
"  -s, --shared                 any number of shared holders, no exclusive one\n"
"      --limit N                a semaphore: at most N holders at once\n"
"\n"
"Waiting:\n"
"  -n, --nonblock               fail at once if the lock is held\n"
"  -w, --wait, --timeout SECS   wait at most SECS seconds (0 is -n)\n"
"  -E, --conflict-exit-code N   exit status when -n/-w gives up (default 1)\n"
"      --fair                   waiters get the lock in arrival order\n"
"\n"
"Lease:\n"
"  -t, --ttl SECS               lease time, renewed every TTL/3 (default 30)\n"
"      --on-lost SIGNAL         sent to the command if the lease is lost\n"
"                               (default TERM; 'ignore' sends none)\n"
"      --kill-after SECS        then SIGKILL after SECS (default 5)\n"
"      --max-hold SECS          stop renewing after SECS: the command is hung\n"
"\n"
"Servers:\n"
"  -S, --server URL             a Redis server; repeat for RedLock over masters\n"
"      --prefix STRING          Redis key prefix (default 'dlock:')\n"
"      --config FILE            config file (default /etc/dlock.conf and\n"
"                               $XDG_CONFIG_HOME/dlock/config)\n"
"      --password-file FILE     read the Redis password from FILE\n"
"      --node-timeout SECS      deadline for one server's answer (default 1,\n"
"                               or TTL/3 if that is less)\n"
"      --wait-replicas N        count the lock once N replicas have it\n"
"\n"
"Command:\n"
"  -c, --command STRING         run STRING with $SHELL -c\n"
"  -o, --close                  hold the lock until COMMAND exits, not until\n"
"                               every process of its group has (flock's -o)\n"
"\n"
"      --verbose                say what dlock waits for and why it fails\n"
"  -h, --help                   show this help\n"
"  -V, --version                show the version\n"
"\n"
"URLs: redis://[[user]:password@]host[:port][/db], unix:/path[?db=N],\n"
"      redis-sentinel://host:port[,host:port...]/MASTER\n"
"Environment: DLOCK_SERVERS, DLOCK_PASSWORD, DLOCK_PREFIX.\n"
"See dlock(1).\n", stdout);
	exit(EX_OK);
}

int parse_seconds(const char *s, int64_t max_ms, int64_t *out_ms)
{
	const char *p = s;
	int64_t ms = 0;
	int n_digits = 0;

	for (; isdigit((unsigned char)*p); p++, n_digits++) {
		ms = ms * 10 + (*p - '0');
		if (ms > max_ms / 1000 + 1)
			return -1;
	}
	ms *= 1000;
	if (*p == '.') {
		int64_t scale = 100;
		bool round_up = false;

		p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		for (; isdigit((unsigned char)*p); p++, n_digits++) {
			if (scale > 0)
				ms += (*p - '0') * scale;
			else if (*p != '0')
				round_up = true;
			scale /= 10;
		}
		ms += round_up;
	}
	if (n_digits == 0 || *p != '\0' || ms > max_ms)
		return -1;
	*out_ms = ms;
	return 0;
}

int parse_count(const char *s, long min, long max, long *out)
{
	long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > max)
			return -1;
	}
	if (*p != '\0' || v < min)
		return -1;
	*out = v;
	return 0;
}

int parse_signal(const char *s)
{
	long n;

	if (strcmp(s, "ignore") == 0)
		return ON_LOST_IGNORE;
	if (parse_count(s, 1, NSIG - 1, &n) == 0)
		return (int)n;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *name = sigabbrev_np(sig);

		if (name && strcasecmp(s, name) == 0)
			return sig;
	}
	return -1;
}

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

static const char *const reserved_words[] = {
	"status", "release", "acquire", "extend", NULL
};

/* What follows KEY: [--] COMMAND [ARG...], or -c STRING. */
static void parse_command_part(int argc, char **argv, struct options *opts)
{
	if (argc > 0 && strcmp(argv[0], "--") == 0) {
		argc--;
		argv++;
	} else if (argc > 0 && (strcmp(argv[0], "-c") == 0 ||
				strcmp(argv[0], "--command") == 0)) {
		if (opts->shell_cmd)
			errx(EX_USAGE, "-c given twice");
		if (argc != 2)
			errx(EX_USAGE, "%s takes exactly one argument", argv[0]);
		opts->shell_cmd = argv[1];
		return;
	} else if (argc > 0 && strncmp(argv[0], "--command=", 10) == 0) {
		if (opts->shell_cmd || argc != 1)
			errx(EX_USAGE, "--command takes exactly one argument");
		opts->shell_cmd = argv[0] + 10;
		return;
	}
	if (opts->shell_cmd) {
		if (argc > 0)
			errx(EX_USAGE, "-c takes exactly one argument");
		return;
	}
	if (argc == 0)
		errx(EX_USAGE, "%s: missing COMMAND", opts->key);
	opts->argv = argv;
}

void cli_parse(int argc, char **argv, struct options *opts)
{
	bool mode_given = false;
	long limit = 0;
	int c;

	*opts = (struct options){
		.wait_ms = -1,
		.conflict_exit = 1,
		.on_lost_signal = SIGTERM,
		.kill_after_ms = 5000,
		.max_hold_ms = -1,
	};
	if (argc < 2) {
		/* as flock(1): what to type, and where to read more */
		fputs("Usage: dlock [options] KEY COMMAND [ARG...]\n"
		      "Try 'dlock --help' for more information.\n", stderr);
		exit(EX_USAGE);
	}
	if (argc > 1) {
		for (const char *const *w = reserved_words; *w; w++)
			if (strcmp(argv[1], *w) == 0)
				errx(EX_USAGE, "%s: not implemented yet", *w);
		if (strcmp(argv[1], "run") == 0) {
			argv++;
			argc--;
		}
	}
	opts->servers = calloc((size_t)argc, sizeof *opts->servers);
	if (!opts->servers)
		err(EX_OSERR, "calloc");

	while ((c = getopt_long(argc, argv, "+:xesnw:E:t:S:c:ohV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'x':
		case 'e':
			opts->limit = 0;	/* the last of -x and -s wins, as in flock */
			mode_given = true;
			break;
		case 's':
			opts->limit = LIMIT_SHARED;
			mode_given = true;
			break;
		case OPT_LIMIT:
			limit = count_arg("--limit", optarg, 1, 1000000);
			break;
		case OPT_FAIR:
			opts->fair = true;
			break;
		case 'n':
			opts->nonblock = true;
			break;
		case 'w':
			opts->wait_ms = seconds_arg("--wait", optarg, true);
			break;
		case 'E':
			opts->conflict_exit = (int)count_arg("--conflict-exit-code",
							     optarg, 0, 255);
			break;
		case 't':
			opts->ttl_ms = seconds_arg("--ttl", optarg, false);
			if (opts->ttl_ms < MIN_TTL_MS)
				errx(EX_USAGE, "--ttl must be at least 0.01 seconds");
			opts->ttl_given = true;
			break;
		case OPT_ON_LOST:
			opts->on_lost_signal = parse_signal(optarg);
			if (opts->on_lost_signal < 0)
				bad("--on-lost signal", optarg);
			/* SIGCONT follows the signal: a stop would be undone
			 * at once, and the job never told. */
			if (is_stop_or_cont(opts->on_lost_signal))
				errx(EX_USAGE, "bad --on-lost signal '%s': it must not stop or continue the job",
				     optarg);
			break;
		case OPT_KILL_AFTER:
			opts->kill_after_ms = seconds_arg("--kill-after", optarg, true);
			break;
		case OPT_MAX_HOLD:
			opts->max_hold_ms = seconds_arg("--max-hold", optarg, false);
			break;
		case 'S':
			opts->servers[opts->n_servers++] = optarg;
			break;
		case OPT_PREFIX:
			opts->prefix = optarg;
			break;
		case OPT_CONFIG:
			opts->config_file = optarg;
			break;
		case OPT_PASSWORD_FILE:
			opts->password_file = optarg;
			break;
		case OPT_NODE_TIMEOUT:
			opts->node_timeout_ms = seconds_arg("--node-timeout", optarg, false);
			opts->node_timeout_given = true;
			break;
		case OPT_WAIT_REPLICAS:
			opts->wait_replicas = (int)count_arg("--wait-replicas",
							     optarg, 0, 1000);
			break;
		case 'c':
			opts->shell_cmd = optarg;
			break;
		case 'o':
			opts->close = true;
			break;
		case OPT_VERBOSE:
			opts->verbose = true;
			break;
		case 'h':
			usage();
			break;
		case 'V':
			printf("dlock %s\n", DLOCK_VERSION);
			exit(EX_OK);
		case ':':
			errx(EX_USAGE, "option '%s' needs an argument", argv[optind - 1]);
		default:
			if (optopt)
				errx(EX_USAGE, "unknown option '-%c'", optopt);
			errx(EX_USAGE, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (limit) {
		if (mode_given)
			errx(EX_USAGE, "--limit excludes --shared and --exclusive");
		opts->limit = limit;
	}
	if (opts->wait_ms == 0)
		opts->nonblock = true;
	if (optind >= argc)
		errx(EX_USAGE, "missing KEY");
	opts->key = argv[optind++];
	if (opts->key[0] == '\0')
		errx(EX_USAGE, "empty KEY");
	parse_command_part(argc - optind, argv + optind, opts);
}
