/* cli.h - the command line: the option table and the forms (help.h: --help) */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "parse.h"

#define ON_LOST_IGNORE PARSE_SIGNAL_IGNORE	/* no signal, exit 75 later */
#define LIMIT_SHARED (-1)	/* -s in options.limit */

enum command { CMD_RUN, CMD_STATUS, CMD_HISTORY, CMD_RELEASE, CMD_ACQUIRE,
	       CMD_EXTEND };

struct options {
	enum command cmd;	/* the form: dlock [run], status, history, ... */
	const char *key;	/* the lock name as given (KEY), or NULL */
	const char **keys;	/* every KEY given (status takes several) */
	bool multi;		/* -k, twice or more: keys are all the locks
				 * of the command, taken all or none */
	char **argv;		/* the command to run, NULL-terminated */
	const char *shell_cmd;	/* -c STRING */

	long limit;		/* 0 exclusive, LIMIT_SHARED for -s, else --limit N */
	bool fair;		/* --fair: waiters get the lock in arrival order */
	bool nonblock;		/* -n, or -w 0 */
	int64_t wait_ms;	/* -w; -1: wait for ever */
	int conflict_exit;	/* -E, default 1 */
	int on_lost_signal;	/* --on-lost, default SIGTERM; 0 = ignore */
	int64_t kill_after_ms;	/* --kill-after, default 5 s */
	int64_t max_hold_ms;	/* --max-hold; -1: no limit */
	int wait_replicas;	/* --wait-replicas N; 0: off */
	bool close;		/* -o: the lock lasts until the command exits,
				 * not its whole process group */
	bool no_fork;		/* -F: the command replaces dlock */
	bool no_fence;		/* --no-fence: no DLOCK_FENCE */
	int fd;			/* --fd N, or the descriptor form's FD; -1 */
	bool fd_form;		/* dlock [options] FD: no command, a keeper
				 * holds the lock for our caller */
	bool unlock;		/* -u FD: the keeper gives the lock back */
	char *fd_path;		/* what fd is open on: the lock's name */
	bool verbose;
	/* status, history, release, acquire, extend */
	bool json, quiet;	/* --json, -q */
	long count;		/* history -n COUNT, default 10 */
	const char *token;	/* --token */
	bool force;		/* release --force */
	bool export_vars;	/* acquire --export, dlock --export FD */
	bool watch;		/* status --watch */
	bool notify;		/* --notify: tell systemd (notify.c) */
	bool notify_pass;	/* --notify-pass: and the command may too */
	/* Raw settings, resolved by config.c: flags > environment > file. */
	struct config_flags cfg;
};

/* Parses argv into opts; on a usage error prints one line and exits 64.
 * Passwords in -S URLs are overwritten in argv (ps shows no secret). */
void cli_parse(int argc, char **argv, struct options *opts);
/* Whether word is one of dlock's own options (as a command after KEY, a
 * misplaced one: "options go before KEY"). */
bool cli_is_option(const char *word);
/* Frees what cli_parse() allocated: the KEY list and the -S copies. */
void cli_free(struct options *opts);
