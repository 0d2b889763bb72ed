/* zk_auth_refused.c - an LD_PRELOAD library for zookeeper.bats: the first
 * zoo_add_auth() of the process answers ZINVALIDSTATE, as the library
 * itself answers a call made while it is between two connection attempts
 * (its state 0: the first server it tried refused the connection before
 * the caller added its digest, on a loaded host). Later calls go to the
 * library. ZK_AUTH_REFUSED names a file made when it refused, so that the
 * test knows the refusal happened. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

typedef int add_auth_fn(zhandle_t *, const char *, const char *, int,
			void_completion_t, const void *);

int zoo_add_auth(zhandle_t *zh, const char *scheme, const char *cert,
		 int certLen, void_completion_t completion, const void *data)
{
	static int calls;
	const char *mark = getenv("ZK_AUTH_REFUSED");
	add_auth_fn *real;
	void *lib;

	if (__atomic_fetch_add(&calls, 1, __ATOMIC_SEQ_CST) == 0) {
		int fd = mark ? open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;

		if (fd >= 0)
			close(fd);
		return ZINVALIDSTATE;
	}
	/* dlock's module opened the library RTLD_LOCAL: not in the global
	 * scope that RTLD_NEXT searches */
	lib = dlopen("libzookeeper_mt.so.2", RTLD_LAZY | RTLD_NOLOAD);
	real = (add_auth_fn *)dlsym(lib ? lib : RTLD_NEXT, "zoo_add_auth");
	return real ? real(zh, scheme, cert, certLen, completion, data) : ZSYSTEMERROR;
}
