/* SPDX-License-Identifier: MIT */
/* base.c - process and thread state, warnings, symbol resolution.
 *
 * Real symbols are resolved at first call (Python loads libcudart long after
 * the preload constructor) and cached by the caller: RTLD_NEXT first, then the
 * already-loaded library by soname, which finds a libcudart that was loaded
 * into a local scope (dlopen(RTLD_LOCAL), as torch's extension modules do).
 *
 * Warnings go to the program's stderr only while fd 2 is still the file it
 * was at start, once per flag. Never exits or aborts. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "inject.h" /* rt_inj_host_resolve, rt_inj_host_warn: answered here */

int rt_tr_off = 1;
pid_t rt_tr_pid;
RT_TLS struct rt_tr_thread rt_tr_th = { .cur_id = ~0u };

static uint64_t stderr_dev, stderr_ino; /* what fd 2 was at start */
static bool stderr_known;
static void *self_base; /* load address of libranktrace.so */

void rt_tr_base_init(void)
{
	struct stat st;
	Dl_info info;

	if (dladdr((void *)rt_tr_resolve, &info))
		self_base = info.dli_fbase;
	if (fstat(STDERR_FILENO, &st) == 0) {
		stderr_dev = (uint64_t)st.st_dev;
		stderr_ino = (uint64_t)st.st_ino;
		stderr_known = true;
	}
	rt_tr_pid = getpid();
}

int rt_tr_env(enum rt_env id, struct rt_env_val *v)
{
	static int warned[RT_ENV_COUNT];
	char why[160], msg[300];
	int rc = rt_env_get(id, v, why, sizeof(why));

	if (rc < 0) {
		rt_env_explain(id, getenv(rt_env_names[id]), why, msg, sizeof(msg));
		rt_tr_warn_once(&warned[id], "%s; %s instead", msg, rt_env_fallback[id]);
	}
	return rc;
}

/* Warnings go to the program's stderr only while fd 2 is still the file it
 * was at start (a daemon may have closed it and opened its own data file on
 * the number), and never raise SIGPIPE (own.c). */
void rt_tr_warn_once(int *flag, const char *fmt, ...)
{
	struct rt_tr_quiet q;
	char msg[512];
	va_list ap;
	int n;

	if (__atomic_exchange_n(flag, 1, __ATOMIC_RELAXED) || !stderr_known ||
	    !rt_tr_fd_is(STDERR_FILENO, stderr_dev, stderr_ino))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rt_tr_quiet_begin(&q);
	n = dprintf(STDERR_FILENO, "ranktrace: warning: %s\n", msg);
	rt_tr_quiet_end(&q, n < 0 ? errno : 0);
}

static const char *const sonames[][3] = {
	[RT_LIB_CUDA] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so" },
	[RT_LIB_NCCL] = { "libnccl.so.2", "libnccl.so", NULL },
	[RT_LIB_TRACER] = { NULL, NULL, NULL },
	[RT_LIB_DRIVER] = { "libcuda.so.1", "libcuda.so", NULL },
};

/* The real `name`, or NULL. Never returns one of our own wrappers. */
void *rt_tr_resolve(const char *name, enum rt_lib lib)
{
	static int warned;
	void *p = dlsym(RTLD_NEXT, name);
	Dl_info info;

	for (int i = 0; !p && i < 3 && sonames[lib][i]; i++) {
		void *h = dlopen(sonames[lib][i], RTLD_NOW | RTLD_NOLOAD);

		if (h) {
			p = dlsym(h, name);
			dlclose(h);
		}
	}
	if (p && dladdr(p, &info) && info.dli_fbase == self_base)
		p = NULL;
	if (!p)
		rt_tr_warn_once(&warned, "cannot find the real %s (is its library loaded?): "
				"returning an error", name);
	return p;
}

/* ---- the injector's questions (inject/inject.h) that base answers ---- */

void *rt_inj_host_resolve(const char *name, int lib)
{
	return rt_tr_resolve(name, (enum rt_lib)lib);
}

void rt_inj_host_warn(int *flag, const char *msg)
{
	rt_tr_warn_once(flag, "%s", msg);
}
