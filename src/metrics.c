/* metrics.c - --metrics-dir: DIR/dlock_NAME.prom in Prometheus's text
 * exposition format (version 0.0.4), written at the end of each run for
 * node_exporter's textfile collector, which reads every *.prom file of
 * its directory at each scrape. So the file is never seen half-written:
 * it is written under a name the collector skips (".dlock_NAME.prom.XXXXXX")
 * in the same directory, then renamed over the old one, which rename(2)
 * does atomically. Each run writes gauges of its own; only the last
 * success's time is carried over from the file before, so that "no
 * success for a day" is one alert. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "log.h"
#include "metrics.h"

static const char *const outcomes[] = {
	[RUN_ACQUIRED] = "acquired", [RUN_CONFLICT] = "conflict",
	[RUN_UNAVAILABLE] = "unavailable", [RUN_LOST] = "lost",
	[RUN_BROKEN] = "broken", [RUN_FAILED] = "failed",
	[RUN_INTERRUPTED] = "interrupted",
};

/* ".dlock_" + name + ".prom.XXXXXX" within NAME_MAX */
#define NAME_ROOM (NAME_MAX - 20)

void metrics_file_name(const char *name, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char esc[3 * NAME_MAX];
	size_t n = 0;
	uint64_t h = 14695981039346656037ULL;	/* FNV-1a, 64 bits */
	bool cut = false;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		h = (h ^ *p) * 1099511628211ULL;
		if (n + 3 >= sizeof esc) {
			cut = true;
			continue;
		}
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '-') {
			esc[n++] = (char)*p;
		} else {
			esc[n++] = '_';
			esc[n++] = hex[*p >> 4];
			esc[n++] = hex[*p & 15];
		}
	}
	esc[n] = '\0';
	/* "_h" cannot come out of the escaping: '_' is followed by hex */
	if (cut || n > NAME_ROOM)
		snprintf(esc + NAME_ROOM - 19, sizeof esc - (NAME_ROOM - 19),
			 "_h%016llx", (unsigned long long)h);
	snprintf(out, len, "dlock_%s.prom", esc);
}

/* A label value: '\\', '"' and newline escaped; bytes that are not valid
 * UTF-8 (the format is UTF-8) as U+FFFD. */
static void label(FILE *f, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	while (*u) {
		size_t k = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 :
			   (*u & 0xf0) == 0xe0 ? 3 : (*u & 0xf8) == 0xf0 ? 4 : 0;
		size_t i = 1;

		while (i < k && (u[i] & 0xc0) == 0x80)
			i++;
		if (k == 0 || i < k || (k == 2 && *u < 0xc2)) {
			fputs("\xef\xbf\xbd", f);
			u++;
			continue;
		}
		if (*u == '\\' || *u == '"')
			fprintf(f, "\\%c", *u);
		else if (*u == '\n')
			fputs("\\n", f);
		else
			fwrite(u, 1, k, f);
		u += k;
	}
}

struct writer {
	FILE *f;
	const char *name, *engine;
};

static void head(struct writer *w, const char *metric, const char *help)
{
	fprintf(w->f, "# HELP %s %s\n# TYPE %s gauge\n", metric, help, metric);
}

static void sample(struct writer *w, const char *metric, const char *extra,
		   double value)
{
	fprintf(w->f, "%s{lock=\"", metric);
	label(w->f, w->name);
	/* seconds to the millisecond; counts as integers */
	fprintf(w->f, "\",engine=\"%s\"%s} %.*f\n", w->engine, extra,
		value == (double)(long long)value ? 0 : 3, value);
}

/* The last success's time in the file this run replaces; 0 when none. */
static double last_success(const char *path)
{
	static const char metric[] = "dlock_last_success_timestamp_seconds{";
	FILE *f = fopen(path, "re");
	char line[4096];
	double t = 0;

	while (f && fgets(line, sizeof line, f)) {
		char *sp = strrchr(line, ' '), *end;
		double v;

		if (strncmp(line, metric, sizeof metric - 1) != 0 || !sp)
			continue;
		v = strtod(sp + 1, &end);
		if (end != sp + 1 && (*end == '\n' || *end == '\0') && v > 0)
			t = v;
	}
	if (f)
		fclose(f);
	return t;
}

static void write_all(struct writer *w, const struct run_report *r,
		      double success)
{
	double now = (double)r->end_wall_ms / 1000;

	head(w, "dlock_last_run_timestamp_seconds",
	     "When the last run on this lock ended, in Unix time.");
	sample(w, "dlock_last_run_timestamp_seconds", "", now);
	head(w, "dlock_last_success_timestamp_seconds",
	     "When a run last held the lock to the end and its command exited 0 (0: never).");
	sample(w, "dlock_last_success_timestamp_seconds", "", success);
	head(w, "dlock_last_outcome",
	     "How the last run ended: 1 for its outcome, 0 for the others.");
	for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++) {
		char extra[48];

		snprintf(extra, sizeof extra, ",outcome=\"%s\"", outcomes[i]);
		sample(w, "dlock_last_outcome", extra, r->outcome == i);
	}
	if (r->exit_status >= 0) {
		head(w, "dlock_last_exit_status",
		     "dlock's exit status at the end of the last run (the command's when it ran).");
		sample(w, "dlock_last_exit_status", "", r->exit_status);
	}
	head(w, "dlock_last_wait_seconds",
	     "How long the last run waited for the lock.");
	sample(w, "dlock_last_wait_seconds", "", (double)r->waited_ms / 1000);
	head(w, "dlock_last_held_seconds",
	     "How long the last run held the lock (0 when it did not get it).");
	sample(w, "dlock_last_held_seconds", "", (double)r->held_ms / 1000);
	head(w, "dlock_last_renewals",
	     "Renewals of the lease that succeeded during the last run.");
	sample(w, "dlock_last_renewals", "", (double)r->renewals);
	head(w, "dlock_last_renewal_failures",
	     "Renewal rounds that failed during the last run (each retried until the lease ran out).");
	sample(w, "dlock_last_renewal_failures", "", (double)r->renewal_failures);
}

int metrics_write(const char *dir, const char *name, const char *engine,
		  const struct run_report *r, char *why, size_t whylen)
{
	char file[NAME_MAX + 1], path[PATH_MAX], tmp[PATH_MAX], eng[32];
	struct writer w = { .name = name, .engine = eng };
	size_t n = 0;
	double success;
	int fd;

	metrics_file_name(name, file, sizeof file);
	for (const char *c = engine; *c && n + 1 < sizeof eng; c++)
		if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9'))
			eng[n++] = *c;
		else if (*c >= 'A' && *c <= 'Z')
			eng[n++] = (char)(*c - 'A' + 'a');
	eng[n] = '\0';
	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path ||
	    (size_t)snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, file) >= sizeof tmp) {
		snprintf(why, whylen, "%s: path too long", dir);
		return -1;
	}
	success = r->outcome == RUN_ACQUIRED && r->exit_status <= 0 ?
		  (double)r->end_wall_ms / 1000 : last_success(path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		log_lower_first(why + strlen(dir) + 2);
		return -1;
	}
	/* node_exporter runs as a user of its own */
	if (fchmod(fd, 0644) < 0 || !(w.f = fdopen(fd, "w"))) {
		snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	write_all(&w, r, success);
	if (fflush(w.f) != 0 || ferror(w.f)) {
		snprintf(why, whylen, "%s: %s", tmp, strerror(errno ? errno : EIO));
		fclose(w.f);
		unlink(tmp);
		return -1;
	}
	if (fclose(w.f) != 0 || rename(tmp, path) < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
