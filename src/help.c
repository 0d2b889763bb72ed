/* help.c - what dlock --help prints: the forms, the options in the order
 * of the option table (cli.c), the URLs each store takes (from the engine
 * table, engine.c) and the environment. It only prints: cli.c exits. */
#include <stdio.h>
#include "config.h"
#include "engine.h"
#include "help.h"

/* The forms, and what dlock is. */
static void print_forms(FILE *out)
{
	char stores[256];

	fputs(
"Usage:\n"
"  dlock [options] KEY [--] COMMAND [ARG...]\n"
"  dlock [options] KEY -c COMMAND_STRING\n"
"  dlock run [options] KEY [--] COMMAND [ARG...]\n"
"  dlock [options] -k KEY [-k KEY...] [--] COMMAND [ARG...]\n"
"  dlock status [options] [KEY...]\n"
"  dlock history [options] KEY\n"
"  dlock release [options] KEY [--token TOKEN | --force]\n"
"  dlock acquire [options] KEY\n"
"  dlock extend [options] KEY [--token TOKEN]\n"
"  dlock [options] [--export] FD\n"
"                               flock's descriptor form: lock the file FD is\n"
"                               open on until the caller exits or -u FD\n"
"  dlock -u FD\n"
"  dlock [options] --fd N [--] COMMAND [ARG...]\n"
"  dlock help [engines] | version\n"
"Options may come before a subcommand too; the first word that is no\n"
"option names the form (a lock named as a subcommand: dlock run NAME --).\n"
"\n", out);
	engine_stores(stores, sizeof stores);
	fprintf(out, "Run COMMAND while holding the lock KEY, as flock(1) does with a file,\n"
		"but in a store that every host reaches (the server URL names it):\n"
		"%s.\n\n", stores);
}

/* The options, in the option table's order, by group: the lock's. */
static void print_lock_options(FILE *out)
{
	fputs(
"  -k, --key KEY                a lock to take, repeated for several: all are\n"
"                               taken or none (no KEY positional then)\n"
"\n"
"Modes:\n"
"  -x, -e, --exclusive          one holder at a time (the default)\n"
"  -s, --shared                 any number of shared holders, no exclusive one\n"
"      --limit N                a semaphore: at most N holders at once\n"
"\n"
"Waiting:\n"
"  -n, --nonblock, --nb, --nonblocking\n"
"                               fail at once if the lock is held\n"
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
"      --min-hold SECS          keep the lock SECS after acquiring it, also\n"
"                               when COMMAND ends sooner (default 0: off)\n"
"\n"
"Servers:\n"
"  -S, --server URL             a server of the store that keeps the locks\n"
"                               (URLs below)\n"
"      --prefix STRING          lock names in the store begin with STRING\n"
"                               (default 'dlock:')\n"
"      --config FILE            config file (default /etc/dlock.conf and\n"
"                               $XDG_CONFIG_HOME/dlock/config)\n"
"      --password-file FILE     read the servers' password from FILE\n"
"      --tls-ca FILE            TLS: trust the CAs in FILE (default: the\n"
"                               system's)\n"
"      --tls-cert FILE          TLS: a client certificate (mutual TLS)\n"
"      --tls-key FILE           TLS: the client certificate's key\n"
"      --tls-insecure           TLS: check no certificate (unsafe)\n"
"      --node-timeout SECS      deadline for one server's answer (default 1,\n"
"                               or TTL/3 if that is less)\n"
"      --connect-budget SECS    keep trying servers that are down or full\n"
"                               that long before exit 69 (default 10)\n"
"      --wait-replicas N        count the lock once N replicas have it\n"
"      --history N              keep the lock's last N events (0: none)\n"
"      --no-fence               no DLOCK_FENCE, and no write to make one\n"
"      --unavailable fail|run   no server reachable: exit 69 (fail, the\n"
"                               default), or run COMMAND without the lock\n"
"\n", out);
}

/* What runs under the lock, the other forms', the operators'. */
static void print_job_options(FILE *out)
{
	fputs(
"Command:\n"
"  -c, --command STRING         run STRING with $SHELL -c\n"
"      --fd N                   lock the file descriptor N is open on (its\n"
"                               absolute path names the lock); COMMAND follows\n"
"  -u, --unlock                 dlock -u FD: release what dlock FD took\n"
"  -o, --close                  hold the lock until COMMAND exits, not until\n"
"                               every process of its group has (flock's -o)\n"
"  -F, --no-fork                COMMAND replaces dlock (keeps its PID); a\n"
"                               helper process keeps the lease\n"
"\n"
"status, history:\n"
"      --json                   one JSON document\n"
"  -q, --quiet                  print nothing; the exit status tells\n"
"  -n, --count N                history: the last N events (default 10)\n"
"release, extend:\n"
"      --token TOKEN            the holder's token (default DLOCK_TOKEN when\n"
"                               DLOCK_KEY names the lock)\n"
"      --force                  release: break the lock, whoever holds it\n"
"acquire, dlock FD:\n"
"      --export                 print DLOCK_KEY=, DLOCK_TOKEN=, DLOCK_FENCE=\n"
"                               lines for eval (acquire: not the token alone)\n"
"status:\n"
"      --watch                  refresh every second until Ctrl-C: in place on\n"
"                               a terminal, a block per change on a pipe\n"
"\n"
"For operators:\n"
"      --metrics-dir DIR        after the run, DIR/dlock_NAME.prom for\n"
"                               node_exporter's textfile collector\n"
"      --notify                 tell systemd (NOTIFY_SOCKET): READY=1 once the\n"
"                               lock is held and COMMAND started, STATUS=,\n"
"                               WATCHDOG=1 on each renewal, STOPPING=1\n"
"      --notify-pass            with --notify: COMMAND gets a NOTIFY_SOCKET of\n"
"                               dlock's, and its READY=1 is systemd's READY\n"
"      --log-format text|json   dlock's lines on stderr: text (default), or\n"
"                               one JSON object each\n"
"\n"
"      --verbose                say what dlock waits for and why it fails;\n"
"                               flock's lines ('getting lock took', 'executing')\n"
"                               on stdout\n"
"  -h, --help                   show this help\n"
"  -V, --version                show the version\n"
"\n", out);
}

void help_print(FILE *out)
{
	print_forms(out);
	print_lock_options(out);
	print_job_options(out);
	fputs(
"URLs (one store for a lock; default " DEFAULT_SERVER "):\n",
	      out);
	engine_usage(out, 2, 15);
	fputs(
"Environment: DLOCK_SERVERS, DLOCK_PASSWORD, DLOCK_PREFIX, DLOCK_METRICS_DIR,\n"
"DLOCK_LOG_FORMAT.\n"
"The command gets DLOCK_KEY, DLOCK_KEYS, DLOCK_TOKEN, DLOCK_FENCE, DLOCK_JOB.\n"
"See dlock(1).\n", out);
}
