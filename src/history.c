/* history.c - dlock history: a lock's last events, newest first, from the
 * stream the lock's scripts write (see script_release); with several
 * servers, merged from those that answer, each event once. */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "clock.h"
#include "commands.h"
#include "fanout.h"
#include "show.h"

/* Oldest first when two events share a millisecond. */
static const char *const kinds[] = {
	"acquired", "broken", "released", "lost", "killed",
};

struct event {
	int kind;		/* index in kinds */
	int64_t time_ms;	/* the stream ID's: the server's clock */
	long long seq;
	const redisReply *token, *holder, *fence, *exit, *held_ms, *by;
	const char *id;
	size_t n_servers;
};

struct history {
	struct lock lk;
	struct event *events;
	size_t n_events;
};

static const redisReply *field(const redisReply *fields, const char *name)
{
	for (size_t i = 0; i + 1 < fields->elements; i += 2) {
		const redisReply *k = fields->element[i];

		if (k->type == REDIS_REPLY_STRING && k->len == strlen(name) &&
		    memcmp(k->str, name, k->len) == 0 &&
		    fields->element[i + 1]->type == REDIS_REPLY_STRING)
			return fields->element[i + 1];
	}
	return NULL;
}

/* Up to 18 decimal digits at *s, no sign: a stream ID's part as dlock's
 * scripts make them (XADD '*': ms of the server's clock). Advances *s. */
static int id_part(const char **s, long long *out)
{
	size_t n = strspn(*s, "0123456789");
	long long v = 0;

	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + ((*s)[i] - '0');
	*s += n;
	*out = v;
	return 0;
}

/* An XREVRANGE entry: {id, {field, value, ...}}; 0, or -1 when it is none
 * of ours. The ID is "MS-SEQ", strictly: sscanf("%lld") took a sign and
 * saturated, and "-9999...-0" made the time of the event LLONG_MIN, which
 * "N s ago" overflowed on. */
static int parse_event(const redisReply *e, struct event *ev)
{
	const redisReply *fields, *kind;
	const char *id;
	long long ms, seq;

	if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING ||
	    e->element[1]->type != REDIS_REPLY_ARRAY)
		return -1;
	id = e->element[0]->str;
	if (id_part(&id, &ms) < 0 || *id++ != '-' || id_part(&id, &seq) < 0 ||
	    *id != '\0')
		return -1;
	fields = e->element[1];
	*ev = (struct event){
		.kind = -1,
		.time_ms = ms,
		.seq = seq,
		.id = e->element[0]->str,
		.token = field(fields, "token"),
		.holder = field(fields, "holder"),
		.fence = field(fields, "fence"),
		.exit = field(fields, "exit"),
		.held_ms = field(fields, "held_ms"),
		.by = field(fields, "by"),
		.n_servers = 1,
	};
	kind = field(fields, "event");
	for (int k = 0; kind && k < (int)(sizeof kinds / sizeof *kinds); k++)
		if (kind->len == strlen(kinds[k]) && memcmp(kind->str, kinds[k], kind->len) == 0)
			ev->kind = k;
	return ev->kind < 0 || !ev->token ? -1 : 0;
}

static bool same_reply(const redisReply *a, const redisReply *b)
{
	return a && b && a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

/* Newest first. */
static int newest_first(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->time_ms != y->time_ms)
		return x->time_ms < y->time_ms ? 1 : -1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? 1 : -1;
	return (x->seq < y->seq) - (x->seq > y->seq);
}

/* Every server's events, each event once: one token has one event of
 * each kind, seen on every server that took part; it keeps the earliest
 * time any of them gave. */
static int collect(struct history *h)
{
	size_t cap = 0;

	for (size_t k = 0; k < h->lk.n_nodes; k++)
		if (h->lk.nodes[k].state == NODE_DONE)
			cap += h->lk.nodes[k].replies[0]->elements;
	h->events = calloc(cap ? cap : 1, sizeof *h->events);
	if (!h->events)
		return -1;
	for (size_t k = 0; k < h->lk.n_nodes; k++) {
		const redisReply *r = h->lk.nodes[k].replies[0];

		for (size_t i = 0; h->lk.nodes[k].state == NODE_DONE && i < r->elements; i++) {
			struct event ev;
			size_t j;

			if (parse_event(r->element[i], &ev) < 0)
				continue;
			for (j = 0; j < h->n_events; j++)
				if (h->events[j].kind == ev.kind &&
				    same_reply(h->events[j].token, ev.token))
					break;
			if (j == h->n_events) {
				h->events[h->n_events++] = ev;
				continue;
			}
			h->events[j].n_servers++;
			if (ev.time_ms < h->events[j].time_ms) {
				ev.n_servers = h->events[j].n_servers;
				h->events[j] = ev;
			}
		}
	}
	if (h->n_events > 1)
		qsort(h->events, h->n_events, sizeof *h->events, newest_first);
	return 0;
}

static long long number_of(const redisReply *r)
{
	char *end;
	long long v;

	if (!r || r->len == 0)
		return -1;
	v = strtoll(r->str, &end, 10);
	return *end == '\0' && v >= 0 ? v : -1;
}

/* "root@web1 pid 77", from a holder info. */
static void by_text(const redisReply *by, char *out, size_t len)
{
	struct show_info hi;
	char host[128], user[64];

	if (!by || show_info_parse(by->str, by->len, &hi) < 0) {
		snprintf(out, len, "-");
		return;
	}
	show_text(hi.host, strlen(hi.host), host, sizeof host);
	show_text(hi.user, strlen(hi.user), user, sizeof user);
	snprintf(out, len, "%s@%s pid %lld", user, host, hi.pid);
	show_info_free(&hi);
}

static void print_text(const struct history *h, const char *name, size_t n)
{
	bool several = h->lk.n_nodes > 1, any_by = false;
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
		const struct event *ev = &h->events[i];
		struct show_info hi;
		char when[32], host[128] = "-", pid[24] = "-", user[64] = "-";
		char fence[24] = "-", exit[24] = "-", held[32] = "-", by[256];
		char servers[32], cmd[512] = "-";
		bool info = ev->holder && show_info_parse(ev->holder->str, ev->holder->len,
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

			show_text(ev->token->str, ev->token->len, value, sizeof value);
			snprintf(cmd, sizeof cmd, "(another client: value '%s')", value);
		}
		if (number_of(ev->fence) >= 0)
			snprintf(fence, sizeof fence, "%lld", number_of(ev->fence));
		if (number_of(ev->exit) >= 0)
			snprintf(exit, sizeof exit, "%lld", number_of(ev->exit));
		if (number_of(ev->held_ms) >= 0)
			show_duration(number_of(ev->held_ms), held, sizeof held);
		by_text(ev->by, by, sizeof by);
		snprintf(servers, sizeof servers, "%zu/%zu", ev->n_servers, h->lk.n_nodes);
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

static void json_holder(struct json *j, const redisReply *info)
{
	struct show_info hi;
	bool ok = info && show_info_parse(info->str, info->len, &hi) == 0;

	json_key(j, "host");
	ok ? json_cstr(j, hi.host) : json_null(j);
	json_key(j, "pid");
	json_int_or_null(j, ok ? hi.pid : -1);
	json_key(j, "user");
	ok ? json_cstr(j, hi.user) : json_null(j);
	json_key(j, "command");
	ok ? json_str(j, hi.command, hi.command_len) : json_null(j);
	json_key(j, "since_ms");
	json_int_or_null(j, ok ? hi.since_ms : -1);
	if (ok)
		show_info_free(&hi);
}

static void print_json(const struct history *h, const char *name, size_t n,
		       size_t n_ok)
{
	struct json j;

	json_init(&j, stdout);
	json_open(&j, '{');
	json_key(&j, "name");
	json_cstr(&j, name);
	json_key(&j, "key");
	json_cstr(&j, h->lk.key);
	json_key(&j, "servers");
	json_int(&j, (long long)h->lk.n_nodes);
	json_key(&j, "servers_answered");
	json_int(&j, (long long)n_ok);
	json_key(&j, "events");
	json_open(&j, '[');
	for (size_t i = 0; i < n; i++) {
		const struct event *ev = &h->events[i];

		json_open(&j, '{');
		json_key(&j, "time_ms");
		json_int(&j, ev->time_ms);
		json_key(&j, "id");
		json_cstr(&j, ev->id);
		json_key(&j, "event");
		json_cstr(&j, kinds[ev->kind]);
		json_key(&j, "token");
		json_str(&j, ev->token->str, ev->token->len);
		json_holder(&j, ev->holder);
		json_key(&j, "fence");
		json_int_or_null(&j, number_of(ev->fence));
		json_key(&j, "exit");
		json_int_or_null(&j, number_of(ev->exit));
		json_key(&j, "held_ms");
		json_int_or_null(&j, number_of(ev->held_ms));
		json_key(&j, "by");
		if (ev->by) {
			json_open(&j, '{');
			json_holder(&j, ev->by);
			json_close(&j, '}');
		} else {
			json_null(&j);
		}
		json_key(&j, "servers");
		json_int(&j, (long long)ev->n_servers);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_close(&j, '}');
}

int history_main(const struct lock_params *base, const struct command_args *a)
{
	struct history h = { 0 };
	struct error err = { 0 };
	char count[24];
	const char *argv[] = { "XREVRANGE", NULL, "+", "-", "COUNT", count };
	struct cmd cmd = { NULL, 6, argv, NULL };
	size_t n_ok, n;
	int status = EX_OK;

	if (lock_init(&h.lk, base, &err) < 0) {
		log_error(base->name, &err);
		status = err.exit;
		goto out;
	}
	argv[1] = h.lk.history_key;
	snprintf(count, sizeof count, "%ld", a->count);
	n_ok = fanout_round(h.lk.nodes, h.lk.n_nodes, &cmd, 1, base->node_timeout_ms);
	if (n_ok == 0) {
		err = *fanout_worst_error(h.lk.nodes, h.lk.n_nodes);
		log_error(base->name, &err);
		status = err.exit;
		goto out;
	}
	/* merged from those that answered; the others are named */
	for (size_t k = 0; k < h.lk.n_nodes; k++)
		if (h.lk.nodes[k].state == NODE_FAILED)
			log_error(base->name, &h.lk.nodes[k].err);
	for (size_t k = 0; k < h.lk.n_nodes; k++)
		if (h.lk.nodes[k].state == NODE_DONE &&
		    h.lk.nodes[k].replies[0]->type != REDIS_REPLY_ARRAY) {
			log_line(base->name, "%s: unexpected reply to XREVRANGE",
				 h.lk.nodes[k].url->text);
			status = EX_SOFTWARE;
			goto out;
		}
	if (collect(&h) < 0) {
		log_line(base->name, "out of memory");
		status = EX_OSERR;
		goto out;
	}
	/* The stream is trimmed by whole nodes (XADD MAXLEN ~), so it may
	 * hold more than the lock keeps: no more than that is shown. */
	n = h.n_events < (size_t)a->count ? h.n_events : (size_t)a->count;
	if (base->history > 0 && n > (size_t)base->history)
		n = (size_t)base->history;
	if (a->quiet)
		;
	else if (a->json)
		print_json(&h, base->name, n, n_ok);
	else
		print_text(&h, base->name, n);
	if (fflush(stdout) != 0)
		status = EX_IOERR;
out:
	free(h.events);
	lock_free(&h.lk);
	return status;
}
