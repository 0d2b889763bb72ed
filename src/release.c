/* release.c - dlock release: one holder by its token, or the lock broken
 * whoever holds it (--force), saying whose it was. Either way a dlock that
 * runs a job under that lock is told promptly (the engine's watch: see
 * lease.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "commands.h"
#include "lock.h"
#include "show.h"

/* ", 3.2s left", ", no TTL", or nothing where the store does not tell
 * (-2: a PostgreSQL session, a ZooKeeper node not ours): no "0.0s". */
static void lease_left(int64_t ms, char *out, size_t len)
{
	char d[32];

	if (ms == -2) {
		out[0] = '\0';
	} else if (ms < 0) {
		snprintf(out, len, ", no TTL");
	} else {
		show_duration(ms, d, sizeof d);
		snprintf(out, len, ", %s left", d);
	}
}

static void print_broken(const struct lock *lk, const struct broken_holder *b)
{
	struct show_info hi;
	char value[80], host[128], user[64], cmd[300], since[32], left[48];
	char servers[48] = "";

	if (lk->p->n_servers > 1)
		snprintf(servers, sizeof servers, " (on %zu of %zu servers)",
			 b->n_servers, lk->p->n_servers);
	if (b->info && show_info_parse(b->info, b->info_len, &hi) == 0) {
		show_text(hi.host, strlen(hi.host), host, sizeof host);
		show_text(hi.user, strlen(hi.user), user, sizeof user);
		show_text(hi.command, hi.command_len, cmd, sizeof cmd);
		show_ago(hi.since_ms, clock_wall_ms(), since, sizeof since);
		printf("broken: %s@%s pid %lld (%s), acquired %s", user, host, hi.pid,
		       cmd, since);
		if (hi.fence >= 0)
			printf(", fence %lld", hi.fence);
		else if (b->fence > 0)
			printf(", fence %lld", b->fence);
		show_text(b->token, b->token_len, value, sizeof value);
		printf(", token %s%s\n", value, servers);
		show_info_free(&hi);
		return;
	}
	show_text(b->token, b->token_len, value, sizeof value);
	lease_left(b->left_ms, left, sizeof left);
	printf("broken: another client's lock, value '%s'%s%s\n", value, left,
	       servers);
}

/* A "broken:" line only for a break that happened: whatever an engine
 * hands back with a failure (a KILL refused, too few servers) is no
 * holder broken, and the one error line says why. */
static int force(struct lock *lk)
{
	struct broken_holder *b = NULL;
	struct error err = { 0 };
	size_t n = 0;
	int status = lk->eng->inspect.force(lk, &b, &n, &err);

	for (size_t j = 0; status == EX_OK && j < n; j++)
		print_broken(lk, &b[j]);
	fflush(stdout);
	broken_free(b, n);
	if (status == 1)
		log_line(lk->p->name, "not held");
	else if (status != EX_OK && err.exit)
		log_error(lk->p->name, &err);
	return status;
}

/* The holder's token: --token, else DLOCK_TOKEN when DLOCK_KEY is this
 * lock's key (as a job, or `eval "$(dlock acquire --export KEY)"`, has
 * them). */
static const char *token_of(const struct lock *lk, const struct command_args *a)
{
	const char *env_key = getenv("DLOCK_KEY");
	const char *env_token = getenv("DLOCK_TOKEN");

	if (a->token)
		return a->token;
	if (env_key && env_token && *env_token && strcmp(env_key, lk->key) == 0)
		return env_token;
	return NULL;
}

int command_by_token(struct lock *lk, const struct lock_params *base,
		     const struct command_args *a, const char **token,
		     const char *give, const char *hint)
{
	struct error err = { 0 };

	if (lock_init(lk, base, &err) < 0) {
		log_error(base->name, &err);
		return err.exit;
	}
	if (token && !(*token = token_of(lk, a))) {
		log_line(base->name, "no token: give %s, or DLOCK_KEY=%s and DLOCK_TOKEN%s",
			 give, lk->key, hint);
		return EX_USAGE;
	}
	return 0;
}

int release_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock lk;
	struct error err = { 0 };
	const char *token = NULL;
	int status = command_by_token(&lk, base, a, a->force ? NULL : &token,
				      "--token or --force", "");

	if (status != 0)
		goto out;
	if (a->force) {
		status = force(&lk);
		goto out;
	}
	status = lk.eng->inspect.release_token(&lk, token, &err);
	if (status == 1 && !err.msg[0]) {
		char shown[80];

		show_text(token, strlen(token), shown, sizeof shown);
		error_set(&err, 1, "not held by token %s", shown);
	}
	if (status != EX_OK)
		log_error(base->name, &err);
out:
	lock_free(&lk);
	return status;
}
