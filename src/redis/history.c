/* history.c - Redis: a lock's last events, newest first, from the stream
 * the lock's scripts write (see release.lua); with several servers, merged
 * from those that answer, each event once. The core prints them
 * (src/history.c). */
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include "fanout.h"
#include "rcommands.h"
#include "rlock.h"

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
	struct rlock *rl;
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

	for (size_t k = 0; k < h->rl->n_nodes; k++)
		if (h->rl->nodes[k].state == NODE_DONE)
			cap += h->rl->nodes[k].replies[0]->elements;
	h->events = calloc(cap ? cap : 1, sizeof *h->events);
	if (!h->events)
		return -1;
	for (size_t k = 0; k < h->rl->n_nodes; k++) {
		const redisReply *r = h->rl->nodes[k].replies[0];

		for (size_t i = 0; h->rl->nodes[k].state == NODE_DONE && i < r->elements; i++) {
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

static int dup_reply(const redisReply *r, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!r)
		return 0;
	if (!(*out = malloc(r->len + 1)))
		return -1;
	memcpy(*out, r->str, r->len);
	(*out)[r->len] = '\0';
	*len = r->len;
	return 0;
}

/* The events as the core prints them. */
static int publish(const struct history *h, long count, struct history_report *out)
{
	size_t n = h->n_events < (size_t)count ? h->n_events : (size_t)count;

	out->events = calloc(n ? n : 1, sizeof *out->events);
	if (!out->events)
		return -1;
	for (size_t i = 0; i < n; i++, out->n_events++) {
		const struct event *ev = &h->events[i];
		struct history_event *o = &out->events[i];

		*o = (struct history_event){
			.kind = (enum history_kind)ev->kind,
			.time_ms = ev->time_ms,
			.id = strdup(ev->id),
			.fence = number_of(ev->fence),
			.exit = number_of(ev->exit),
			.held_ms = number_of(ev->held_ms),
			.n_servers = ev->n_servers,
		};
		if (!o->id || dup_reply(ev->token, &o->token, &o->token_len) < 0 ||
		    dup_reply(ev->holder, &o->holder, &o->holder_len) < 0 ||
		    dup_reply(ev->by, &o->by, &o->by_len) < 0)
			return -1;
			}
	return 0;
}

int redis_history(struct lock *lk, long count, struct history_report *out,
		  struct error *err)
{
	struct history h = { .rl = redis_rlock(lk) };
	struct rlock *rl = h.rl;
	char count_arg[24];
	const char *argv[] = { "XREVRANGE", rl->history_key, "+", "-", "COUNT",
			       count_arg };
	struct cmd cmd = { NULL, 6, argv, NULL };
	int r = -1;

	snprintf(count_arg, sizeof count_arg, "%ld", count);
	out->n_servers = rl->n_nodes;
	out->n_ok = fanout_round(rl->nodes, rl->n_nodes, &cmd, 1, lk->p->node_timeout_ms);
	if (out->n_ok == 0) {
		*err = *fanout_worst_error(rl->nodes, rl->n_nodes);
		return -1;
	}
	/* merged from those that answered; the others are named */
	for (size_t k = 0; k < rl->n_nodes; k++)
		if (rl->nodes[k].state == NODE_FAILED)
			log_error(lk->p->name, &rl->nodes[k].err);
	for (size_t k = 0; k < rl->n_nodes; k++)
		if (rl->nodes[k].state == NODE_DONE &&
		    rl->nodes[k].replies[0]->type != REDIS_REPLY_ARRAY) {
			error_set(err, EX_SOFTWARE, "%s: unexpected reply to XREVRANGE",
				  rl->nodes[k].url->text);
			return -1;
		}
	if (collect(&h) == 0 && publish(&h, count, out) == 0)
		r = 0;
	else
		error_set(err, EX_OSERR, "out of memory");
	free(h.events);
	fanout_end(rl->nodes, rl->n_nodes);
	return r;
}
