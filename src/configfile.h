/* configfile.h - the config files and the password file (configfile.c) */
#pragma once
#include <stddef.h>

/* What one config file says; strings point into the file's text. */
struct config_file {
	char *servers, *prefix, *ttl, *password_file, *node_timeout, *history;
	char *min_hold, *unavailable, *connect_budget;
	char *tls_ca, *tls_cert, *tls_key, *tls_insecure;
	char *metrics_dir, *log_format;
	char servers_from[256];	/* the file that named the servers */
};

/* Parses a config file's len bytes in place ("name = value" lines, '#'
 * comments on lines of their own; text has room for one byte more), and
 * checks the form of each value that is a number or a word. Returns 0, or
 * -1 with "LINE: reason" in err (a NUL byte too). Pure: unit-tested,
 * fuzzable. */
int config_parse(char *text, size_t len, struct config_file *cf, char *err,
		 size_t errlen);

/* The config files in order, each overriding the one before key by key:
 * given (--config) alone, which must exist; else /etc/dlock.conf, then
 * $XDG_CONFIG_HOME/dlock/config (~/.config/dlock/config), each where it
 * exists. Their texts, which cf points into, go to texts[*n_texts] (two at
 * most), for the caller to free. Returns 0, or -1 with the reason. */
int configfile_load(const char *given, struct config_file *cf, char **texts,
		    size_t *n_texts, char *err, size_t errlen);
/* The password in the file at path (one line; warns if group or others
 * can read it): malloc'd in *out. Returns 0, or -1 with the reason. */
int configfile_password(const char *path, char **out, char *err, size_t errlen);
