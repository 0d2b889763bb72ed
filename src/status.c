/* status.c - dlock status: for each lock, free or held, its mode, each
 * holder (host, pid, user, command, since, lease left, fence), the waiters
 * in queue order, and with several servers what each says; as a table, or
 * as one JSON document. The engine fetches (engine.h: status, list); this
 * prints, whatever the engine. With no KEY, every lock under the prefix. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "caps.h"
#include "clock.h"
#include "commands.h"
#include "lock.h"
#include "show.h"

static const char *const state_names[] = { "held", "free", "other", "split", "unknown" };

struct status {
	const struct lock_params *p;
	const struct command_args *a;
	struct status_lock *locks;
	size_t n_locks;
	size_t n_servers;	/* several: RedLock, each server's words */
	bool listing;		/* no KEY given */
	int64_t wall_ms;
	FILE *out;		/* stdout; with --watch, the next screen */
};

static size_t majority(size_t n)
{
	return n / 2 + 1;
}

/* ---- words ------------------------------------------------------------ */

static const char *mode_of(const struct status_lock *m, char *buf, size_t len)
{
	if (m->state != ST_HELD && m->state != ST_SPLIT)
		return NULL;
	if (strcmp(m->mode, "s") == 0)
		return "shared";
	if (m->mode[0]) {
		snprintf(buf, len, "limit %s", m->mode);
		return buf;
	}
	if (m->n_holders == 0)
		return NULL;
	return m->holders[0].info ? "exclusive" : "foreign";
}

/* When the holder's command finished (--min-hold keeps the lock), by its
 * clock; -1 while it runs, or for a foreign holder. */
static int64_t finished_ms(const struct status_holder *h)
{
	struct show_info hi;
	int64_t ms;

	if (!h->info || show_info_parse(h->info, h->info_len, &hi) < 0)
		return -1;
	ms = hi.finished_ms;
	show_info_free(&hi);
	return ms;
}

/* Held, and every holder's command has finished: --min-hold keeps it. */
static bool all_finished(const struct status_lock *m)
{
	if (m->state != ST_HELD || m->n_holders == 0)
		return false;
	for (size_t i = 0; i < m->n_holders; i++)
		if (finished_ms(&m->holders[i]) < 0)
			return false;
	return true;
}

/* ---- text ------------------------------------------------------------- */

/* cmd + " (finished 2.0s ago)" */
static void finished(int64_t then_ms, int64_t now_ms, char *cmd, size_t len)
{
	char ago[32];
	size_t used = strlen(cmd);

	show_ago(then_ms, now_ms, ago, sizeof ago);
	if (used < len)
		snprintf(cmd + used, len - used, " (finished %s)", ago);
}

static void print_holders(const struct status *s, const struct status_lock *m)
{
	bool limit = m->mode[0] && strcmp(m->mode, "s") != 0;
	bool several = s->n_servers > 1;
	struct table t;
	const char *head[] = { "HOST", "PID", "USER", "SINCE", "TTL", "FENCE",
			       limit ? "SLOT" : NULL, several ? "SERVERS" : NULL,
			       "COMMAND" };
	const char *row[9];
	size_t n_cols = 0;

	table_init(&t, 7 + limit + several, "  ");
	for (size_t c = 0; c < 9; c++)
		if (head[c])
			row[n_cols++] = head[c];
	table_add(&t, row);
	for (size_t i = 0; i < m->n_holders; i++) {
		const struct status_holder *mh = &m->holders[i];
		struct show_info hi;
		char host[128], pid[24], user[64], since[32], ttl[32], fence[24];
		char slot[24], servers[32], cmd[512], value[256];

		if (mh->left_ms == -2)
			strcpy(ttl, "-");
		else
			show_ttl(mh->left_ms, ttl, sizeof ttl);
		snprintf(servers, sizeof servers, "%zu/%zu", mh->n_servers, s->n_servers);
		snprintf(slot, sizeof slot, "%ld", mh->slot);
		if (!mh->info || show_info_parse(mh->info, mh->info_len, &hi) < 0) {
			show_text(mh->token, mh->token_len, value, sizeof value);
			snprintf(cmd, sizeof cmd, "(another client: value '%s')", value);
			row[0] = "-", row[1] = "-", row[2] = "-", row[3] = "-";
			row[4] = ttl, row[5] = "-";
		} else {
			show_text(hi.host, strlen(hi.host), host, sizeof host);
			show_text(hi.user, strlen(hi.user), user, sizeof user);
			show_text(hi.command, hi.command_len, cmd, sizeof cmd);
			if (hi.finished_ms >= 0)
				finished(hi.finished_ms, s->wall_ms, cmd, sizeof cmd);
			if (mh->note && strlen(cmd) + 1 < sizeof cmd)
				snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd),
					 " [%s]", mh->note);
			snprintf(pid, sizeof pid, "%lld", hi.pid);
			show_ago(hi.since_ms, s->wall_ms, since, sizeof since);
			snprintf(fence, sizeof fence, "%lld", mh->fence);
			row[0] = host, row[1] = pid, row[2] = user, row[3] = since;
			row[4] = ttl, row[5] = mh->fence >= 0 ? fence : "-";
			show_info_free(&hi);
		}
		n_cols = 6;
		if (limit)
			row[n_cols++] = mh->slot >= 0 ? slot : "-";
		if (several)
			row[n_cols++] = servers;
		row[n_cols] = cmd;
		table_add(&t, row);
	}
	table_print(&t, s->out);
	table_free(&t);
}

static void print_waiters(const struct status *s, const struct status_lock *m)
{
	struct table t;
	const char *head[] = { "POS", "HOST", "PID", "USER", "SINCE", "COMMAND" };

	fprintf(s->out, "  %s:\n", caps_has(s->p->engine, CAP_SEVERAL) ?
	       "waiting in the --fair queue, in its order" : "waiting, in queue order");
	table_init(&t, 6, "  ");
	table_add(&t, head);
	for (size_t i = 0; i < m->n_waiters; i++) {
		const struct status_waiter *w = &m->waiters[i];
		struct show_info hi;
		char pos[24], host[128], pid[24], user[64], since[32], cmd[512];
		const char *row[] = { pos, "-", "-", "-", "-", "(no holder info)" };

		snprintf(pos, sizeof pos, "%zu", i + 1);
		if (w->info && show_info_parse(w->info, w->info_len, &hi) == 0) {
			show_text(hi.host, strlen(hi.host), host, sizeof host);
			show_text(hi.user, strlen(hi.user), user, sizeof user);
			show_text(hi.command, hi.command_len, cmd, sizeof cmd);
			snprintf(pid, sizeof pid, "%lld", hi.pid);
			show_ago(hi.since_ms, s->wall_ms, since, sizeof since);
			row[1] = host, row[2] = pid, row[3] = user, row[4] = since;
			row[5] = cmd;
			show_info_free(&hi);
		}
		table_add(&t, row);
	}
	table_print(&t, s->out);
	table_free(&t);
}

static void print_servers(const struct status *s, const struct status_lock *m)
{
	struct table t;
	const char *head[] = { "SERVER", "SAYS" };

	table_init(&t, 2, "  ");
	table_add(&t, head);
	for (size_t k = 0; k < m->n_servers; k++) {
		const char *row[] = { m->servers[k].url, m->servers[k].says };

		table_add(&t, row);
	}
	table_print(&t, s->out);
	table_free(&t);
}

/* "nightly: held, exclusive, fencing counter 42; 3 of 3 servers agree" */
static void print_block(const struct status *s, const struct status_lock *m)
{
	char name[300], buf[32], ttl[32];
	const char *mode = mode_of(m, buf, sizeof buf);

	show_text(m->name, strlen(m->name), name, sizeof name);
	fprintf(s->out, "%s: %s", name, m->state == ST_OTHER ? "not a lock" :
	       m->state == ST_SPLIT ? "no majority" :
	       m->state == ST_UNKNOWN ? "unknown" : state_names[m->state]);
	if (all_finished(m))
		fprintf(s->out, ", command finished");
	if (m->state == ST_OTHER) {
		show_ttl(m->ttl_ms, ttl, sizeof ttl);
		fprintf(s->out, " (a %s, %s): left alone", m->type, ttl);
	}
	if (mode)
		fprintf(s->out, ", %s", mode);
	if (m->state == ST_HELD && m->n_holders > 1 && m->mode[0])
		fprintf(s->out, ", %zu holders", m->n_holders);
	if (m->state == ST_HELD && m->ttl_ms == -1)
		fprintf(s->out, ", never expires (no TTL)");
	if (m->n_waiting > 0)
		fprintf(s->out, ", %lld waiting", m->n_waiting);
	if (m->n_waiters > 0 && caps_has(s->p->engine, CAP_SEVERAL))
		fprintf(s->out, " (%zu in the --fair queue)", m->n_waiters);
	if (m->fence >= 0)
		fprintf(s->out, ", fencing counter %lld", m->fence);
	if (s->n_servers > 1)
		fprintf(s->out, "; %zu of %zu servers agree%s", m->n_agree, s->n_servers,
		       m->n_agree >= majority(s->n_servers) ? "" : ": no majority");
	fputc('\n', s->out);
	if (m->n_holders > 0 && m->state != ST_OTHER)
		print_holders(s, m);
	if (m->n_waiters > 0)
		print_waiters(s, m);
	if (s->n_servers > 1)
		print_servers(s, m);
}

/* With no KEY: one line a lock. */
static void print_list(const struct status *s)
{
	bool several = s->n_servers > 1;
	struct table t;
	const char *head[] = { "LOCK", "STATE", "MODE", "HOLDERS", "TTL", "SINCE",
			       several ? "AGREE" : "HOLDER", "HOLDER" };

	table_init(&t, 7 + several, NULL);
	table_add(&t, head);
	for (size_t e = 0; e < s->n_locks; e++) {
		const struct status_lock *m = &s->locks[e];
		char name[300], buf[32], n_holders[24], ttl[32], since[32] = "-";
		char holder[400] = "-", agree[32];
		const char *mode = mode_of(m, buf, sizeof buf);
		const char *row[8];
		int64_t first_since = -1;
		size_t c = 0;

		show_text(m->name, strlen(m->name), name, sizeof name);
		for (size_t i = 0; i < m->n_holders; i++) {
			struct show_info hi;

			if (m->holders[i].info &&
			    show_info_parse(m->holders[i].info,
					    m->holders[i].info_len, &hi) == 0) {
				if (first_since < 0 || hi.since_ms < first_since)
					first_since = hi.since_ms;
				show_info_free(&hi);
			}
		}
		if (m->n_holders > 0 && m->state != ST_OTHER) {
			show_who(m->holders[0].token, m->holders[0].token_len,
				 m->holders[0].info, m->holders[0].info_len, holder,
				 sizeof holder);
			if (m->n_holders > 1)
				snprintf(holder + strlen(holder), sizeof holder - strlen(holder),
					 " and %zu more", m->n_holders - 1);
		} else if (m->state == ST_OTHER) {
			snprintf(holder, sizeof holder, "a %s: not a lock", m->type);
		}
		if (first_since >= 0)
			show_ago(first_since, s->wall_ms, since, sizeof since);
		/* the lock key's: a shared lock's longest lease */
		if ((m->state == ST_HELD || m->state == ST_OTHER) && m->ttl_ms > -2)
			show_ttl(m->ttl_ms, ttl, sizeof ttl);
		else
			strcpy(ttl, "-");
		snprintf(n_holders, sizeof n_holders, "%zu", m->n_holders);
		snprintf(agree, sizeof agree, "%zu/%zu", m->n_agree, s->n_servers);
		row[c++] = name;
		row[c++] = m->state == ST_OTHER ? m->type : state_names[m->state];
		row[c++] = mode;
		row[c++] = m->state == ST_OTHER ? NULL : n_holders;
		row[c++] = ttl;
		row[c++] = since;
		if (several)
			row[c++] = agree;
		row[c++] = holder;
		table_add(&t, row);
	}
	table_print(&t, s->out);
	table_free(&t);
}

/* ---- JSON -------------------------------------------------------------- */

/* "holders": each holder, with its holder info. */
static void json_holders(struct json *j, const struct status_lock *m)
{
	json_open_field(j, "holders", '[');
	for (size_t i = 0; m->state != ST_OTHER && i < m->n_holders; i++) {
		const struct status_holder *mh = &m->holders[i];

		json_open(j, '{');
		json_field_str(j, "token", mh->token, mh->token_len);
		json_field_bool(j, "foreign", !mh->info);
		json_info(j, mh->info, mh->info_len);
		json_field_int_or_null(j, "finished_ms", finished_ms(mh));
		json_field_int_or_null(j, "ttl_ms", mh->left_ms);
		json_field_int_or_null(j, "fence", mh->fence);
		json_field_int_or_null(j, "slot", mh->slot);
		json_field_int(j, "servers", (long long)mh->n_servers);
		json_close(j, '}');
	}
	json_close(j, ']');
}

/* "fair_queue": the --fair queue in its order. */
static void json_waiters(struct json *j, const struct status_lock *m)
{
	json_open_field(j, "fair_queue", '[');
	for (size_t i = 0; i < m->n_waiters; i++) {
		json_open(j, '{');
		json_field_int(j, "position", (long long)i + 1);
		json_field_str(j, "token", m->waiters[i].token,
			       m->waiters[i].token_len);
		json_field_int_or_null(j, "ticket", m->waiters[i].ticket);
		json_info(j, m->waiters[i].info, m->waiters[i].info_len);
		json_close(j, '}');
	}
	json_close(j, ']');
}

/* "servers": what each server says, with several. */
static void json_servers(struct json *j, const struct status_lock *m)
{
	json_open_field(j, "servers", '[');
	for (size_t k = 0; k < m->n_servers; k++) {
		const struct status_server *v = &m->servers[k];

		json_open(j, '{');
		json_field_cstr(j, "url", v->url);
		json_field_cstr(j, "says", v->kind);
		json_field_cstr(j, "error", v->failed ? v->says : NULL);
		json_field_cstr(j, "type", v->failed ? NULL : v->type);
		json_field_int_or_null(j, "ttl_ms",
				       v->failed || v->ttl_ms < 0 ? -1 : v->ttl_ms);
		json_field_int_or_null(j, "fence", v->fence);
		json_open_field(j, "holders", '[');
		for (size_t i = 0; i < v->n_tokens; i++)
			json_cstr(j, v->tokens[i]);
		json_close(j, ']');
		json_close(j, '}');
	}
	json_close(j, ']');
}

static void json_lock(struct json *j, const struct status *s,
		      const struct status_lock *m)
{
	char buf[32];
	const char *mode = mode_of(m, buf, sizeof buf);
	bool limit = mode && strncmp(mode, "limit", 5) == 0;
	bool unheld = m->state == ST_UNKNOWN || m->state == ST_FREE;

	json_open(j, '{');
	json_field_cstr(j, "name", m->name);
	json_field_cstr(j, "key", m->key);
	json_field_cstr(j, "state", state_names[m->state]);
	json_field_bool(j, "command_finished", all_finished(m));
	json_field_cstr(j, "type",
			m->state == ST_UNKNOWN || !m->type[0] ? NULL : m->type);
	json_field_cstr(j, "mode", limit ? "limit" : mode);
	json_field_int_or_null(j, "limit", limit ? atol(m->mode) : -1);
	json_field_int_or_null(j, "ttl_ms", unheld ? -1 : m->ttl_ms);
	json_field_bool(j, "expires", unheld || m->ttl_ms != -1);
	json_field_int_or_null(j, "fence", m->fence);
	json_field_int(j, "servers_agreeing", (long long)m->n_agree);
	json_field_bool(j, "majority_agrees", m->n_agree >= majority(s->n_servers));
	json_holders(j, m);
	json_field_int(j, "waiting", m->n_waiting);
	json_field_int(j, "writers_waiting", m->n_writers);
	json_waiters(j, m);
	json_servers(j, m);
	json_close(j, '}');
}

static void print_json(const struct status *s)
{
	struct json j;

	json_init(&j, s->out);
	json_open(&j, '{');
	json_field_cstr(&j, "prefix", s->p->prefix);
	json_field_int(&j, "majority", (long long)majority(s->n_servers));
	json_field_cstr(&j, "engine", s->p->engine->settings.name);
	json_open_field(&j, "locks", '[');
	for (size_t e = 0; e < s->n_locks; e++)
		json_lock(&j, s, &s->locks[e]);
	json_close(&j, ']');
	json_close(&j, '}');
}

/* ---- the command ------------------------------------------------------ */

/* 0 held, 1 free or no majority, 70 not a lock, 69/77 unknown. */
static int exit_of(const struct status_lock *m)
{
	switch (m->state) {
	case ST_HELD:
		return EX_OK;
	case ST_FREE:
	case ST_SPLIT:
		return 1;
	case ST_OTHER:
		return EX_SOFTWARE;
	case ST_UNKNOWN:
		break;
	}
	return m->err.exit ? m->err.exit : EX_UNAVAILABLE;
}

static int rank(int status)
{
	return status == EX_NOPERM ? 5 : status == EX_UNAVAILABLE ? 4 :
	       status == EX_SOFTWARE ? 3 : status == 1 ? 2 : status ? 1 : 0;
}

/* The names to show: those given, or every lock the engine lists. */
static int names_of(struct status *s, struct lock *lk, struct error *err)
{
	const struct command_args *a = s->a;
	char **names = NULL;
	size_t n = a->n_keys;

	if (s->listing) {
		if (!lk->eng->inspect.list) {
			error_set(err, EX_USAGE, "%s cannot list its locks: name them (dlock status KEY...)",
				  lk->eng->settings.name);
			return -1;
		}
		if (lk->eng->inspect.list(lk, &names, &n, err) < 0)
			return -1;
	}
	s->locks = calloc(n ? n : 1, sizeof *s->locks);
	for (size_t i = 0; s->locks && i < n; i++) {
		s->locks[i].name = names ? names[i] : strdup(a->keys[i]);
		s->locks[i].fence = -1;
		s->n_locks++;
		if (!s->locks[i].name)
			break;
	}
	free(names);
	if (!s->locks || s->n_locks < n) {
		error_set(err, EX_OSERR, "out of memory");
		return -1;
	}
	return 0;
}

/* A lock's error: a line on stderr; with --watch, a line of the screen
 * (stderr would scroll it away, or repeat it every second). */
static void say_error(const struct status *s, const char *name,
		      const struct error *err)
{
	if (s->a->watch)
		fprintf(s->out, "dlock: %s%s%s\n", name ? name : "", name ? ": " : "",
			err->msg);
	else
		log_error(name, err);
}

/* One look at the locks: asks the servers, prints to s->out. Returns
 * the exit status. */
static int look(struct status *s, struct lock *lk)
{
	const struct command_args *a = s->a;
	struct error err = { 0 };
	int status = EX_OK;

	if (names_of(s, lk, &err) < 0 ||
	    (s->n_locks > 0 && lk->eng->inspect.status(lk, s->locks, s->n_locks, &err) < 0)) {
		say_error(s, s->listing ? NULL : s->p->name, &err);
		return err.exit;
	}
	s->wall_ms = clock_wall_ms();
	for (size_t e = 0; e < s->n_locks; e++) {
		const struct status_lock *m = &s->locks[e];
		int one = exit_of(m);

		if (m->state == ST_UNKNOWN && m->err.exit)
			say_error(s, m->name, &m->err);
		/* listing: what is there; only unreachable servers fail it */
		if (s->listing && one != EX_UNAVAILABLE && one != EX_NOPERM)
			one = EX_OK;
		if (rank(one) > rank(status))
			status = one;
	}
	if (a->quiet)
		;
	else if (a->json)
		print_json(s);
	else if (s->listing)
		print_list(s);
	else
		for (size_t e = 0; e < s->n_locks; e++)
			print_block(s, &s->locks[e]);
	return status;
}

static void forget(struct status *s)
{
	for (size_t e = 0; e < s->n_locks; e++)
		status_lock_free(&s->locks[e]);
	free(s->locks);
	s->locks = NULL;
	s->n_locks = 0;
}

/* What --watch on a pipe compares: what a look found, without the times
 * that change every second (since, TTL left). */
static void fingerprint(const struct status *s, FILE *f)
{
	for (size_t e = 0; e < s->n_locks; e++) {
		const struct status_lock *m = &s->locks[e];

		fprintf(f, "%s\t%d\t%s\t%lld\t%lld\t%lld\t%zu\t%s\n", m->name,
			(int)m->state, m->mode, m->fence, m->n_waiting,
			m->n_writers, m->n_agree, m->err.msg);
		for (size_t i = 0; i < m->n_holders; i++) {
			fwrite(m->holders[i].token, 1, m->holders[i].token_len, f);
			fputc('\n', f);
		}
		for (size_t i = 0; i < m->n_waiters; i++) {
			fwrite(m->waiters[i].token, 1, m->waiters[i].token_len, f);
			fputc('\n', f);
		}
	}
}

/* The screen, redrawn from the top: each line cleared to its end, at most
 * the terminal's rows (autowrap off: a long line is cut, not wrapped), the
 * rest of the screen cleared. */
static void draw(const char *text, size_t len)
{
	struct winsize ws = { 0 };
	size_t rows = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row ?
		      ws.ws_row : 24;
	char *frame = NULL;
	size_t n = 0, row = 0;
	FILE *f = open_memstream(&frame, &n);

	if (!f)
		return;
	fputs("\033[?7l\033[H", f);
	for (size_t at = 0; at < len && row < rows; row++) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t k = nl ? (size_t)(nl - (text + at)) : len - at;

		fwrite(text + at, 1, k, f);
		fputs(row + 1 < rows ? "\033[K\n" : "\033[K", f);
		at += k + 1;
	}
	fputs("\033[J\033[?7h", f);
	fclose(f);
	fwrite(frame, 1, n, stdout);
	free(frame);
}

/* --watch: a look every second until a signal (Ctrl-C) ends it, which is
 * its normal end (0, as watch(1)). On a terminal the screen is redrawn in
 * place, headed by what is watched and when; elsewhere a block is printed
 * when what it shows changed (the times aside), headed by the time, and
 * with --json one document a change, a line each. */
static int watch(struct status *s, struct lock *lk)
{
	const struct command_args *a = s->a;
	bool tty = isatty(STDOUT_FILENO);
	char *last = NULL;
	size_t last_len = 0;
	int status = EX_OK;

	if (tty)
		fputs("\033[H\033[2J\033[?25l", stdout);
	for (;;) {
		char *text = NULL, *print = NULL, *fp = NULL, when[64];
		size_t len = 0, print_len = 0, fp_len = 0;
		int64_t start_ms = clock_now_ms(), left_ms;
		time_t now = time(NULL);
		struct pollfd pfd = { a->sig->fd, POLLIN, 0 };
		FILE *f = open_memstream(&text, &len), *g;

		if (!f) {
			status = EX_OSERR;
			break;
		}
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S %z", localtime(&now));
		s->out = f;
		look(s, lk);
		fclose(f);
		g = open_memstream(&fp, &fp_len);
		if (g) {
			fingerprint(s, g);
			if (s->n_locks == 0)	/* an error alone, or nothing */
				fputs(text, g);
			fclose(g);
		}
		forget(s);
		if (tty) {
			g = open_memstream(&print, &print_len);
			if (g) {
				fprintf(g, "Every 1s: dlock status%s%s  %s\n\n",
					a->n_keys ? " " : "", a->n_keys ? a->keys[0] : "",
					when);
				fwrite(text, 1, len, g);
				fclose(g);
				draw(print, print_len);
				free(print);
			}
		} else if (!last || !fp || fp_len != last_len ||
			   memcmp(fp, last, fp_len) != 0) {
			if (!a->json)
				printf("%s\n", when);
			fwrite(text, 1, len, stdout);
			if (!a->json)
				putchar('\n');
		}
		free(text);
		free(last);
		last = fp;
		last_len = fp_len;
		if (fflush(stdout) != 0) {
			status = EX_IOERR;
			break;
		}
		/* a look that took a second or more (a server that does not
		 * answer) still lets a signal end the watch; not a SIGCHLD (a
		 * child inherited across exec, reaped) nor a SIGURG, which
		 * signals_next() gives as one */
		left_ms = start_ms + 1000 - clock_now_ms();
		if (poll(&pfd, 1, left_ms > 0 ? (int)left_ms : 0) > 0 &&
		    signals_interrupt(a->sig) > 0)
			break;
	}
	free(last);
	if (tty) {
		/* the cursor back, and a line of its own for the terminal's ^C */
		fputs("\033[?25h\n", stdout);
		fflush(stdout);
	}
	return status;
}

int status_main(const struct lock_params *base, const struct command_args *a)
{
	struct lock_params p = *base;
	struct status s = {
		.p = &p, .a = a, .listing = a->n_keys == 0,
		.n_servers = base->n_servers, .out = stdout,
	};
	struct lock lk;
	struct error err = { 0 };
	int status;

	p.name = a->n_keys ? a->keys[0] : "";
	if (lock_init(&lk, &p, &err) < 0) {
		log_error(s.listing ? NULL : base->name, &err);
		status = err.exit;
	} else if (a->watch) {
		status = watch(&s, &lk);
	} else {
		status = look(&s, &lk);
		if (fflush(stdout) != 0 && status == EX_OK)
			status = EX_IOERR;
	}
	forget(&s);
	lock_free(&lk);
	return status;
}
