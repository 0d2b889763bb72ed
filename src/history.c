/* history.c - dlock history: a lock's last events, newest first
 * (acquired, released with the job's exit status and hold time, lease
 * lost, broken by force), with host, pid, user, command and fence, as a
 * table or one JSON document. The engine fetches them (engine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "commands.h"
#include "lock.h"
#include "show.h"

/* In the order of enum history_kind. */
static const char *const kinds[] = {
	"acquired", "broken", "released", "lost", "killed",
};

/* "root@web1 pid 77", from a holder info. */
static void by_text(const char *by, size_t by_len, char *out, size_t len)
{
	struct show_info hi;
	char host[128], user[64];

	if (!by || show_info_parse(by, by_len, &hi) < 0) {
		snprintf(out, len, "-");
		return;
	}
	show_text(hi.host, strlen(hi.host), host, sizeof host);
	show_text(hi.user, strlen(hi.user), user, sizeof user);
	snprintf(out, len, "%s@%s pid %lld", user, host, hi.pid);
	show_info_free(&hi);
}

static void print_text(const struct history_report *h, const char *name)
{
	bool several = h->n_servers > 1, any_by = false;
	size_t n = h->n_events;
	int64_t now_ms = clock_wall_ms();
	struct table t;
	const char *head[] = { "WHEN", "EVENT", "HOST", "PID", "USER", "FENCE",
			       "EXIT", "HELD", "BY", "SERVERS", "COMMAND" };
	const char *row[11];
	size_t c = 0;

	if (n == 0) {
		char shown[300];

		show_text(name, strlen(name), shown, sizeof shown);
		printf("%s: no events\n", shown);
		return;
	}
	for (size_t i = 0; i < n; i++)
		any_by |= h->events[i].by != NULL;
	for (size_t k = 0; k < 11; k++)
		if ((k != 8 || any_by) && (k != 9 || several))
			row[c++] = head[k];
	table_init(&t, c, NULL);
	table_add(&t, row);
	for (size_t i = 0; i < n; i++) {
		const struct history_event *ev = &h->events[i];
		struct show_info hi;
		char when[32], host[128] = "-", pid[24] = "-", user[64] = "-";
		char fence[24] = "-", exit[24] = "-", held[32] = "-", by[256];
		char servers[32], cmd[512] = "-";
		bool info = ev->holder && show_info_parse(ev->holder, ev->holder_len,
							  &hi) == 0;

		show_ago(ev->time_ms, now_ms, when, sizeof when);
		if (info) {
			show_text(hi.host, strlen(hi.host), host, sizeof host);
			show_text(hi.user, strlen(hi.user), user, sizeof user);
			show_text(hi.command, hi.command_len, cmd, sizeof cmd);
			snprintf(pid, sizeof pid, "%lld", hi.pid);
			show_info_free(&hi);
		} else {
			char value[256];

			show_text(ev->token, ev->token_len, value, sizeof value);
			snprintf(cmd, sizeof cmd, "(another client: value '%s')", value);
		}
		if (ev->fence >= 0)
			snprintf(fence, sizeof fence, "%lld", ev->fence);
		if (ev->exit >= 0)
			snprintf(exit, sizeof exit, "%lld", ev->exit);
		if (ev->held_ms >= 0)
			show_duration(ev->held_ms, held, sizeof held);
		by_text(ev->by, ev->by_len, by, sizeof by);
		snprintf(servers, sizeof servers, "%zu/%zu", ev->n_servers, h->n_servers);
		c = 0;
		row[c++] = when;
		row[c++] = kinds[ev->kind];
		row[c++] = host;
		row[c++] = pid;
		row[c++] = user;
		row[c++] = fence;
		row[c++] = exit;
		row[c++] = held;
		if (any_by)
			row[c++] = by;
		if (several)
			row[c++] = servers;
		row[c++] = cmd;
		table_add(&t, row);
	}
	table_print(&t, stdout);
	table_free(&t);
}

static void print_json(const struct history_report *h, const char *name,
		       const char *key)
{
	struct json j;

	json_init(&j, stdout);
	json_open(&j, '{');
	json_field_cstr(&j, "name", name);
	json_field_cstr(&j, "key", key);
	json_field_int(&j, "servers", (long long)h->n_servers);
	json_field_int(&j, "servers_answered", (long long)h->n_ok);
	json_open_field(&j, "events", '[');
	for (size_t i = 0; i < h->n_events; i++) {
		const struct history_event *ev = &h->events[i];

		json_open(&j, '{');
		json_field_int(&j, "time_ms", ev->time_ms);
		json_field_cstr(&j, "id", ev->id);
		json_field_cstr(&j, "event", kinds[ev->kind]);
		json_field_str(&j, "token", ev->token, ev->token_len);
		json_info(&j, ev->holder, ev->holder_len);
		json_field_int_or_null(&j, "fence", ev->fence);
		json_field_int_or_null(&j, "exit", ev->exit);
		json_field_int_or_null(&j, "held_ms", ev->held_ms);
		json_key(&j, "by");
		if (ev->by) {
			json_open(&j, '{');
			json_info(&j, ev->by, ev->by_len);
			json_close(&j, '}');
		} else {
			json_null(&j);
		}
		json_field_int(&j, "servers", (long long)ev->n_servers);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_close(&j, '}');
}

int history_main(const struct lock_params *base, const struct command_args *a)
{
	struct history_report h = { 0 };
	struct lock lk;
	struct error err = { 0 };
	int status = EX_OK;

	if (lock_init(&lk, base, &err) < 0 ||
	    lk.eng->inspect.history(&lk, a->count, &h, &err) < 0) {
		log_error(base->name, &err);
		status = err.exit;
		goto out;
	}
	/* A store may keep more than the lock's history (Redis trims its
	 * stream by whole nodes, XADD MAXLEN ~): no more than that is shown. */
	while (base->history > 0 && h.n_events > (size_t)base->history) {
		struct history_event *ev = &h.events[--h.n_events];

		free(ev->id);
		free(ev->token);
		free(ev->holder);
		free(ev->by);
	}
	if (a->quiet)
		;
	else if (a->json)
		print_json(&h, base->name, lk.key);
	else
		print_text(&h, base->name);
	if (fflush(stdout) != 0)
		status = EX_IOERR;
out:
	history_report_free(&h);
	lock_free(&lk);
	return status;
}
