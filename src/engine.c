/* engine.c - the engines built in, and what the core needs of all of them:
 * finding a URL's engine, freeing what the inspection commands got. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"

extern const struct engine redis_engine;
#ifdef HAVE_POSTGRES
extern const struct engine postgres_engine;
#endif
#ifdef HAVE_MYSQL
extern const struct engine mysql_engine;
#endif
#ifdef HAVE_ZOOKEEPER
extern const struct engine zookeeper_engine;
#endif
#ifdef HAVE_ETCD
extern const struct engine etcd_engine;
#endif

const struct engine *const engines[] = {
	&redis_engine,
#ifdef HAVE_POSTGRES
	&postgres_engine,
#endif
#ifdef HAVE_MYSQL
	&mysql_engine,
#endif
#ifdef HAVE_ZOOKEEPER
	&zookeeper_engine,
#endif
#ifdef HAVE_ETCD
	&etcd_engine,
#endif
	NULL,
};

const struct engine *engine_of(const char *url)
{
	for (const struct engine *const *e = engines; *e; e++)
		if ((*e)->claims(url))
			return *e;
	return NULL;
}

void engine_bad_url(const char *url, const char *why, char *err, size_t errlen)
{
	/* Never echo what may hold a password. */
	if (strchr(url, '@') || strstr(url, "password"))
		snprintf(err, errlen, "bad server URL: %s", why);
	else
		snprintf(err, errlen, "bad server URL '%s': %s", url, why);
}

void status_lock_free(struct status_lock *s)
{
	for (size_t i = 0; i < s->n_holders; i++) {
		free(s->holders[i].token);
		free(s->holders[i].info);
		free(s->holders[i].note);
	}
	for (size_t i = 0; i < s->n_waiters; i++) {
		free(s->waiters[i].token);
		free(s->waiters[i].info);
	}
	for (size_t i = 0; i < s->n_servers; i++) {
		free(s->servers[i].url);
		free(s->servers[i].says);
		for (size_t k = 0; k < s->servers[i].n_tokens; k++)
			free(s->servers[i].tokens[k]);
		free(s->servers[i].tokens);
	}
	free(s->holders);
	free(s->waiters);
	free(s->servers);
	free(s->name);
	free(s->key);
}

void history_report_free(struct history_report *h)
{
	for (size_t i = 0; i < h->n_events; i++) {
		free(h->events[i].id);
		free(h->events[i].token);
		free(h->events[i].holder);
		free(h->events[i].by);
	}
	free(h->events);
}

void broken_free(struct broken_holder *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(b[i].token);
		free(b[i].info);
	}
	free(b);
}
