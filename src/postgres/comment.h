/* comment.h - PostgreSQL: the comment every statement of a holder
 * carries, "/ * dlock mode=M token=T fence=F slot=S key=K holder=INFO * /",
 * which pg_stat_activity shows to other sessions: status reads holders
 * from it, a nested dlock its caller's token, fence and mode, a shared
 * holder the mode the others hold in. The short fields come first, as
 * pg_stat_activity cuts a statement at track_activity_query_size. Pure:
 * written and read back here alone (comment.c), unit-tested. */
#pragma once
#include <stddef.h>

/* What the statements that try for the lock say first: their mode, so
 * that a holder in another mode that looks at the same moment sees it
 * (a printf format taking the mode word). */
#define PG_TRY_COMMENT "/* dlock try mode=%s */"

/* What a holder's comment says. */
struct pg_comment_fields {
	const char *mode;	/* pg_mode_word() */
	const char *token;
	const char *fence;	/* "": none */
	long slot;		/* --limit: 1..N; 0: none */
	const char *key;	/* the text the server hashes */
	const char *info;	/* the holder info (show.h) */
};

/* The comment, malloc'd (each field one word: '%', '*', '/', blanks,
 * controls and non-ASCII as %XX); NULL: out of memory. */
char *pg_comment(const struct pg_comment_fields *f);
/* A statement's text in pg_stat_activity: dlock's comment in it, or
 * NULL. */
const char *pg_comment_in(const char *query);
/* The word of field "name=" in a comment, decoded; "" when absent (or
 * comment NULL). */
void pg_comment_field(const char *comment, const char *name, char *out,
		      size_t len);

/* The mode word the comments carry for a lock_params.limit: "x", "s" or
 * N (--limit N). */
void pg_mode_word(long limit, char *out, size_t len);
/* The mode a dlock session's statement says it holds in (its comment,
 * or its try statement's); "" for another client's. */
void pg_mode_in(const char *query, char *out, size_t len);
/* How a mode reads in a message: "shared", "with --limit N". */
void pg_mode_words(const char *mode, char *out, size_t len);

/* [s, s+n) with its %XX decoded, into out (len > 0), cut at len - 1; a
 * '%' that starts no escape is kept as it is. */
void pg_unescape(const char *s, size_t n, char *out, size_t len);
