/* observe.c - a run as operators see it (observe.h): one place that knows
 * which of --log-format json --verbose, --notify and --metrics-dir to tell
 * of each step, so that run.c stays a list of steps. */
#include <stdio.h>
#include <string.h>
#include "clock.h"
#include "log.h"
#include "notify.h"
#include "observe.h"

void observe_init(struct observe *ob, const struct options *opts,
		  const struct settings *st, const char *const *names)
{
	size_t n = 0;

	*ob = (struct observe){
		.key = opts->key,
		.names = names,
		.metrics_dir = st->metrics_dir,
		.engine = st->engine->settings.name,
		.events = opts->verbose && log_json(),
		.start_ms = clock_now_ms(),
		.acquired_ms = -1,
	};
	for (size_t i = 0; names[i] && n < sizeof ob->names_text; i++)
		n += (size_t)snprintf(ob->names_text + n, sizeof ob->names_text - n,
				      "%s%s", i ? ", " : "", names[i]);
}

void observe_acquired(struct observe *ob, const char *fence)
{
	ob->acquired_ms = clock_now_ms();
	notify_holding(ob->names_text, fence);
	if (!ob->events)
		return;
	log_event(LOG_INFO, ob->key, "acquired",
		  (struct log_field[]){ { "waited_ms", NULL, ob->acquired_ms - ob->start_ms },
					{ "fence", fence && *fence ? fence : NULL, -1 } },
		  fence && *fence ? 2 : 1, "acquired %s after %.3fs%s%s",
		  ob->names_text, (double)(ob->acquired_ms - ob->start_ms) / 1000,
		  fence && *fence ? ", fence " : "", fence ? fence : "");
}

/* The lease's hook, on the supervisor's thread after each round. */
static void on_round(void *arg, enum extend_result r, bool noticed,
		     const struct error *err)
{
	struct observe *ob = arg;

	if (r == EXTEND_OK)
		ob->renewals++;
	else if (r == EXTEND_FAILED)
		ob->failures++;
	ob->broken = r == EXTEND_LOST && noticed;
	notify_renewed(r == EXTEND_OK);
	if (!ob->events)
		return;
	if (r == EXTEND_OK)
		log_event(LOG_INFO, ob->key, "renewed",
			  (struct log_field[]){ { "renewals", NULL, ob->renewals } },
			  1, "lease renewed");
	else if (r == EXTEND_FAILED)
		log_event(LOG_WARNING, ob->key, "renew_failed",
			  (struct log_field[]){ { "failures", NULL, ob->failures } },
			  1, "renewal failed: %s", err->msg);
}

void observe_lease(struct observe *ob, struct lease *ls)
{
	ls->on_round = on_round;
	ls->on_round_arg = ob;
}

void observe_started(struct observe *ob)
{
	notify_started();
}

void observe_stopping(struct observe *ob, bool lost)
{
	if (ob->acquired_ms >= 0)
		ob->held_ms = clock_now_ms() - ob->acquired_ms;
	notify_stopping(ob->names_text, lost);
}

void observe_end(struct observe *ob, enum run_outcome outcome, int exit_status)
{
	struct run_report r = {
		.outcome = outcome,
		.exit_status = exit_status,
		.waited_ms = (ob->acquired_ms >= 0 ? ob->acquired_ms : clock_now_ms()) -
			     ob->start_ms,
		.held_ms = ob->held_ms,
		.renewals = ob->renewals,
		.renewal_failures = ob->failures,
	};
	char why[512];

	if (ob->events && ob->acquired_ms >= 0)
		log_event(LOG_INFO, ob->key, "released",
			  (struct log_field[]){ { "held_ms", NULL, ob->held_ms },
						{ "exit_status", NULL, exit_status } },
			  exit_status >= 0 ? 2 : 1, "released %s after %.3fs",
			  ob->names_text, (double)ob->held_ms / 1000);
	if (!ob->metrics_dir)
		return;
	r.end_wall_ms = clock_wall_ms();
	if (outcome == RUN_BROKEN || outcome == RUN_LOST)
		r.outcome = ob->broken ? RUN_BROKEN : RUN_LOST;
	for (size_t i = 0; ob->names[i]; i++)
		if (metrics_write(ob->metrics_dir, ob->names[i], ob->engine, &r,
				  why, sizeof why) < 0)
			log_line(ob->names[i], "warning: --metrics-dir: %s", why);
}
