/* fuzz_cli.c - libFuzzer target for the command line: cli_parse() on an
 * argv made of the input's NUL-separated strings (argv[0] is "dlock").
 *
 * cli_parse() ends the process on a usage error, as it may (errx 64,
 * before any server is touched), and on --help and --version (exit 0).
 * This target's build compiles cli.c and clicheck.c with exit, err and
 * errx renamed to the functions below (tests/meson.build), which jump
 * back here instead: the fuzzer sees every path, dlock itself is
 * unchanged. What cli_parse() allocated before it gave up is freed as
 * main() frees it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
void fuzz_exit(int status) __attribute__((noreturn));
void fuzz_err(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));
void fuzz_errx(int status, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

static jmp_buf back;
static int exit_status;

void fuzz_exit(int status)
{
	exit_status = status;
	longjmp(back, 1);
}

void fuzz_err(int status, const char *fmt, ...)
{
	fuzz_exit(status);
}

void fuzz_errx(int status, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	/* the message is formatted, as errx would: its arguments are read */
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fuzz_exit(status);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* --help, --version and a bare "dlock" print: not to the fuzzer's log */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	stderr = fopen("/dev/null", "w");	/* libFuzzer keeps its own */
	return stderr ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct options opts;	/* static: longjmp leaves it as it was */
	char *copy = malloc(size + 1), *argv[MAX_ARGS + 2];
	int argc = 0;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	argv[argc++] = (char *)"dlock";
	for (char *p = copy; p < copy + size && argc <= MAX_ARGS; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;
	memset(&opts, 0, sizeof opts);
	optind = 0;	/* glibc: getopt starts afresh */
	exit_status = -1;
	if (setjmp(back) == 0) {
		cli_parse(argc, argv, &opts);
		/* what main() reads next: the KEYs, the command */
		for (const char **k = opts.keys; k && *k; k++)
			if (!**k)
				abort();	/* check() rejects an empty KEY */
		/* a command, or -c STRING: exactly one; in the descriptor
		 * form (dlock FD), none, and the lock's name from the FD */
		if (opts.cmd == CMD_RUN && !opts.fd_form &&
		    !opts.argv == !opts.shell_cmd)
			abort();
		if (opts.fd_form && (opts.argv || opts.shell_cmd || !opts.fd_path))
			abort();
	} else if (exit_status != 0 && exit_status != 64 && exit_status != 65 &&
		   exit_status != 71) {
		abort();	/* a usage error is 64 (65: a descriptor that
				 * is not open, as flock), --help 0, no memory 71 */
	}
	cli_free(&opts);
	free(copy);
	return 0;
}
