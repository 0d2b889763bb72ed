/* main.c - dlock: flock(1) for distributed hosts.
 *
 * Parse, resolve the settings, refuse what the engine cannot do, and hand
 * over to the form: a job (run.c), the descriptor form (keeper.c), dlock
 * -u, or status, history, release, acquire, extend. Errors travel up to
 * here, where one line is printed and the exit code chosen. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>
#include "caps.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "keeper.h"
#include "log.h"
#include "notify.h"
#include "run.h"
#include "signals.h"
#include "watchdog.h"

/* The lock layer's view of the command line and the settings. */
static void lock_params_of(const struct options *opts, const struct settings *st,
			   const char *command, struct lock_params *p)
{
	_Static_assert(LIMIT_SHARED == LOCK_SHARED, "one value for -s");
	*p = (struct lock_params){
		.name = opts->key,
		.prefix = st->prefix,
		.engine = st->engine,
		.servers = st->servers,
		.n_servers = st->n_servers,
		.server_texts = st->server_texts,
		.password = st->password,
		.tls = &st->tls_opts,
		.ttl_ms = st->ttl_ms,
		.node_timeout_ms = st->node_timeout_ms,
		.connect_budget_ms = st->connect_budget_ms,
		.limit = opts->limit,
		.fair = opts->fair,
		.waits = !opts->nonblock,
		.wait_replicas = opts->wait_replicas,
		.command = command,
		.history = st->history,
		.min_hold_ms = st->min_hold_ms,
		.no_fence = opts->no_fence,
		.verbose = opts->verbose,
	};
}

/* A lease the minimum hold could not fit in: the lease is never
 * lengthened at the end. Before anything is contacted. */
static int min_hold_fits(const struct settings *st)
{
	if (st->min_hold_ms <= st->ttl_ms)
		return 0;
	log_event(LOG_ERROR, NULL, "usage", NULL, 0, "--min-hold %.15g is longer than the lease (--ttl %.15g): give --ttl %.15g or more",
		(double)st->min_hold_ms / 1000, (double)st->ttl_ms / 1000,
		(double)st->min_hold_ms / 1000);
	return -1;
}

/* The forms that take a lock for a job: dlock [options] KEY COMMAND and
 * -k (run.c), and the descriptor form, dlock [options] FD, where a keeper
 * holds the lock for our caller (keeper.c). There, a config file's
 * "unavailable = run" means fail: there is no command to run without the
 * lock, and the caller must not go on as if it had it. */
static int run_form(struct options *opts, struct settings *st,
		    const struct signals *sig, int *die_by)
{
	struct lock_params base;

	if (min_hold_fits(st) < 0)
		return EX_USAGE;
	lock_params_of(opts, st, "", &base);
	if (opts->fd_form)
		return keeper_lock(opts, st, &base, sig);
	return run_main(opts, st, &base, sig, die_by);
}

/* status, history, release, acquire, extend */
static int run_command(const struct options *opts, const struct settings *st,
		       const struct signals *sig)
{
	static int (*const mains[])(const struct lock_params *,
				    const struct command_args *) = {
		[CMD_STATUS] = status_main,
		[CMD_HISTORY] = history_main,
		[CMD_RELEASE] = release_main,
		[CMD_ACQUIRE] = acquire_main,
		[CMD_EXTEND] = extend_main,
	};
	struct command_args a = {
		.keys = opts->keys,
		.json = opts->json,
		.quiet = opts->quiet,
		.count = opts->count,
		.token = opts->token,
		.force = opts->force,
		.export_vars = opts->export_vars,
		.wait_ms = opts->nonblock ? 0 : opts->wait_ms,
		.conflict_exit = opts->conflict_exit,
		.history = st->history,
		.watch = opts->watch,
		.sig = sig,
	};
	struct lock_params base;

	while (opts->keys[a.n_keys])
		a.n_keys++;
	lock_params_of(opts, st, opts->cmd == CMD_ACQUIRE ? "(dlock acquire)" : "",
		       &base);
	return mains[opts->cmd](&base, &a);
}

/* What the engine cannot honour is a usage error, before anything is
 * contacted: "ZooKeeper cannot -F: ...". One line, 64. */
static int refuse_unsupported(const struct options *opts,
			      const struct settings *st)
{
	const struct { bool asked; unsigned cap; const char *option; } wants[] = {
		{ opts->limit == LIMIT_SHARED, CAP_SHARED, "-s (shared locks)" },
		{ opts->limit > 0, CAP_LIMIT, "--limit" },
		{ opts->fair, CAP_FAIR, "--fair" },
		{ opts->wait_replicas > 0, CAP_WAIT_REPLICAS, "--wait-replicas" },
		{ opts->cmd == CMD_RUN && opts->no_fork, CAP_NO_FORK, "-F" },
		{ opts->cmd == CMD_RUN && st->unavailable_run, CAP_UNAVAILABLE_RUN,
		  "--unavailable run" },
		{ opts->cmd == CMD_ACQUIRE, CAP_STEPS, "dlock acquire" },
		{ opts->cmd == CMD_EXTEND, CAP_STEPS, "dlock extend" },
		{ opts->cmd == CMD_RELEASE && !opts->force, CAP_STEPS,
		  "dlock release --token" },
		{ opts->cmd == CMD_RELEASE && opts->force, CAP_FORCE,
		  "dlock release --force" },
		{ opts->cmd == CMD_HISTORY, CAP_HISTORY, "dlock history" },
		{ opts->cmd == CMD_STATUS && !opts->keys[0], CAP_LIST,
		  "dlock status without KEY" },
	};
	const struct engine *e = st->engine;

	if (st->ttl_ms < e->settings.min_ttl_ms) {
		log_line(NULL, "%s cannot keep a --ttl below %.3g s (its timeouts count in whole seconds)",
			 e->settings.name, (double)e->settings.min_ttl_ms / 1000);
		return -1;
	}
	for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
		const char *why;

		if (!wants[i].asked || caps_has(e, wants[i].cap))
			continue;
		why = caps_why(e, wants[i].cap);
		log_event(LOG_ERROR, NULL, "usage", NULL, 0, "%s cannot %s%s%s",
			  e->settings.name, wants[i].option,
			  why ? ": " : "", why ? why : "");
		return -1;
	}
	return 0;
}

/* Closed standard descriptors would be taken by the first socket, and a
 * line meant for stderr would go to a server. /dev/null takes their place,
 * opened the other way round, so that a read or write still fails as on
 * the closed descriptor: a token printed to a closed stdout (dlock acquire
 * K >&-) must not pass for printed, and the lock be kept for nobody. */
static void open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY) != fd)
			_exit(EX_OSERR);
}

/* --export's output is for eval: a dlock that failed printed no
 * variables, and eval "$(dlock --export -n 9)" of nothing would go on to
 * the work without the lock. So a failure prints "exit N" for the eval
 * (flock's `dlock -n 9 || exit 1`), whatever ended dlock: a usage error
 * in cli.c (errx), a lock held, a server down. Only in the process that
 * armed it: a forked child's exit() runs on_exit handlers too. */
static pid_t export_guard_pid;

static void export_guard(int status, void *arg)
{
	if (status != 0 && export_guard_pid == getpid())
		printf("exit %d\n", status);
}

static void arm_export_guard(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--export") == 0) {
			export_guard_pid = getpid();
			on_exit(export_guard, NULL);
			return;
		}
}

int main(int argc, char **argv)
{
	struct options opts;
	struct settings st;
	struct signals sig;
	struct error err;
	char why[1024];
	int status, die_by = 0;

	if (argc == 1 && strcmp(argv[0], "dlock watchdog") == 0)
		return watchdog_main();
	open_std_fds();
	arm_export_guard(argc, argv);
	cli_parse(argc, argv, &opts);
	if (!opts.export_vars)	/* "--export" was the command's own word */
		export_guard_pid = 0;
	/* Until the settings are known, the format the command line or
	 * DLOCK_LOG_FORMAT named (cli.c): a broken config file's is not. */
	if (config_resolve(&opts.cfg, &st, why, sizeof why) < 0) {
		log_event(LOG_ERROR, NULL, "usage", NULL, 0, "%s", why);
		config_free(&st);
		cli_free(&opts);
		return EX_USAGE;
	}
	log_set_format(st.log_format);
	if (opts.notify && opts.cmd == CMD_RUN &&
	    notify_init(opts.notify_pass, opts.key, st.ttl_ms, st.node_timeout_ms,
			&err) < 0) {
		log_error(opts.key, &err);
		config_free(&st);
		cli_free(&opts);
		return err.exit;
	}
	/* What the engine loads (OpenSSL only for rediss://: loading it is
	 * not a plain run's cost), on this thread, before any other. */
	if (st.engine->settings.init && st.engine->settings.init(&st, &err) < 0) {
		log_error(opts.key, &err);
		config_free(&st);
		cli_free(&opts);
		return err.exit;
	}
	if (signals_init(&sig) < 0) {
		log_line(opts.key, "signal set-up: %s", strerror(errno));
		config_free(&st);
		cli_free(&opts);
		return EX_OSERR;
	}
	if (refuse_unsupported(&opts, &st) < 0)
		status = EX_USAGE;
	else if (opts.cmd == CMD_RUN && opts.unlock)
		status = keeper_unlock(&opts, &st);
	else if (opts.cmd == CMD_RUN)
		status = run_form(&opts, &st, &sig, &die_by);
	else
		status = run_command(&opts, &st, &sig);
	close(sig.fd);
	notify_end();
	if (st.engine->settings.end)
		st.engine->settings.end();
	config_free(&st);
	cli_free(&opts);
	if (die_by) {
		/* dies by the signal: no on_exit handler runs */
		export_guard(128 + die_by, NULL);
		fflush(stdout);
		signals_die(die_by);
	}
	return status;
}
