/* SPDX-License-Identifier: MIT */
/* pyboot.c - the PyTorch probe loaded into every Python process by the
 * tracer itself, once Python's runtime is up, whatever the command line or a
 * wrapper did to PYTHONPATH, site or the environment.
 *
 * Why here and not a sitecustomize on PYTHONPATH (as before): a launch
 * script that sets PYTHONPATH outright, `python -I` (isolated: PYTHONPATH
 * ignored), `python -S` (no site, so no sitecustomize), `env -u PYTHONPATH`
 * and conda-style activation all dropped the probe silently, and the
 * sitecustomize itself put two entries on sys.path. The library is already
 * preloaded into every process of the job, so it asks the interpreter
 * itself: the constructor registers a C audit hook (PySys_AddAuditHook,
 * PEP 578, which CPython documents as safe to call before Py_Initialize),
 * found by dlsym, so in a process without Python nothing happens at all. The
 * first "cpython.run_*" event (run_file, run_module, run_command, run_stdin,
 * raised by the interpreter after start-up, site included, and before the
 * program's first line) imports the probe from RANKTRACE_PROBE_PATH with
 * importlib's file loader: sys.path is never touched, the code runs in a
 * private namespace (not __main__'s), and the program's own sitecustomize
 * is never shadowed. After that, every audit event costs the hook one load
 * and a compare.
 *
 * What happened is the rank's: rt_tr_rank.probe and probe_detail
 * (loaded, off by RANKTRACE_PROBE=0, failed with the exception, or Python
 * ran without it), written into the rank's metadata (store/metadata.c), so
 * `run`, `view` and `verdict` say which ranks ran Python without the probe.
 *
 * The hook runs with the GIL held, on the thread that raised the event; the
 * probe loads once per process (a forked child keeps its parent's). Never
 * raises into the program: errors are kept as the failure's detail. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "env.h"
#include "identity.h"
#include "interpose.h"
#include "schema.h"
#include "store.h"

typedef struct _object PyObject; /* opaque: only CPython's stable C API is used */
typedef int (*audit_hook_fn)(const char *, PyObject *, void *);

#define PY_FILE_INPUT 257 /* Py_file_input (Include/compile.h) */

/* CPython's C API, found by dlsym in a process that has it:
 * X(field, return type, parameters, symbol). */
#define PY_API(X)                                                                          \
	X(add_audit_hook, int, (audit_hook_fn, void *), "PySys_AddAuditHook")               \
	X(err_occurred, PyObject *, (void), "PyErr_Occurred")                                \
	X(err_clear, void, (void), "PyErr_Clear")                                            \
	X(dict_new, PyObject *, (void), "PyDict_New")                                        \
	X(dict_set, int, (PyObject *, const char *, PyObject *), "PyDict_SetItemString")     \
	X(dict_get, PyObject *, (PyObject *, const char *), "PyDict_GetItemString")          \
	X(builtins, PyObject *, (void), "PyEval_GetBuiltins")                                \
	X(decode_fs, PyObject *, (const char *), "PyUnicode_DecodeFSDefault")                \
	X(run, PyObject *, (const char *, int, PyObject *, PyObject *, void *),               \
	  "PyRun_StringFlags")                                                               \
	X(as_utf8, const char *, (PyObject *), "PyUnicode_AsUTF8")                           \
	X(decref, void, (PyObject *), "Py_DecRef")

#define PY_FIELD(field, ret, params, symbol) ret(*field) params;
static struct {
	PY_API(PY_FIELD)
} py;

static char probe_path[4096];
static int state; /* 0 waiting for the first run event, 1 loading or done */

/* Runs in a fresh namespace: imports the probe package from `path` without
 * sys.path, installs it, and leaves what happened in `result`. */
static const char boot_code[] =
	"import sys\n"
	"try:\n"
	"    m = sys.modules.get('ranktrace_probe')\n"
	"    if m is None:\n"
	"        import importlib.util\n"
	"        d = path + '/ranktrace_probe'\n"
	"        spec = importlib.util.spec_from_file_location(\n"
	"            'ranktrace_probe', d + '/__init__.py', submodule_search_locations=[d])\n"
	"        if spec is None:\n"
	"            raise ImportError('no probe in ' + d)\n"
	"        m = importlib.util.module_from_spec(spec)\n"
	"        sys.modules['ranktrace_probe'] = m\n"
	"        try:\n"
	"            spec.loader.exec_module(m)\n"
	"        except BaseException:\n"
	"            del sys.modules['ranktrace_probe']\n"
	"            raise\n"
	"    result = 'ok' if m.install() else 'failed: the probe found no ranktrace library'\n"
	"except BaseException as e:\n"
	"    result = 'failed: %s: %s' % (type(e).__name__, e)\n";

/* The detail goes into the metadata's env block as one TSDL string the
 * viewer reads up to ';': quotes and separators become harmless ones. */
static void set_state(int st, const char *detail)
{
	char *d = rt_tr_rank.probe_detail;

	snprintf(d, sizeof(rt_tr_rank.probe_detail), "%s", detail);
	for (; *d; d++)
		if (*d == ';' || *d == '"' || *d == '\\' || (unsigned char)*d < 0x20)
			*d = *d == ';' ? ',' : *d == '"' ? '\'' : ' ';
	rt_tr_rank.probe = st;
}

/* The probe's outcome into the rank (and its metadata, if the process
 * already writes a trace: a first event before the program started). */
static void settle(int st, const char *detail)
{
	pthread_mutex_lock(&rt_tr_lock);
	set_state(st, detail);
	if (rt_tr_process_traced() && !rt_tr_lttng_wanted)
		rt_tr_write_metadata(rt_tr_rank.dir, true);
	pthread_mutex_unlock(&rt_tr_lock);
}

/* Import and install the probe (GIL held). */
static void load_probe(void)
{
	PyObject *g, *v, *r;
	const char *res;
	char detail[sizeof(rt_tr_rank.probe_detail)] = "";

	if (py.err_occurred()) { /* never run code over the program's pending error */
		settle(RT_PROBE_MISSING, "an exception was pending when Python started the program");
		return;
	}
	g = py.dict_new();
	v = py.decode_fs(probe_path);
	if (!g || !v || py.dict_set(g, "__builtins__", py.builtins()) != 0 ||
	    py.dict_set(g, "path", v) != 0 || !(r = py.run(boot_code, PY_FILE_INPUT, g, g, NULL))) {
		py.err_clear();
		snprintf(detail, sizeof(detail), "failed: the probe's loader did not run");
	} else {
		py.decref(r);
		res = (v = py.dict_get(g, "result")) ? py.as_utf8(v) : NULL;
		if (!res)
			py.err_clear();
		snprintf(detail, sizeof(detail), "%s", res ? res : "failed: no result");
	}
	if (g)
		py.decref(g);
	if (!strcmp(detail, "ok"))
		settle(RT_PROBE_LOADED, "");
	else
		settle(RT_PROBE_FAILED, detail + (strncmp(detail, "failed: ", 8) ? 0 : 8));
}

static int on_audit(const char *event, PyObject *args, void *data)
{
	(void)args;
	(void)data;
	if (__atomic_load_n(&state, __ATOMIC_RELAXED) || strncmp(event, "cpython.run_", 12))
		return 0;
	__atomic_store_n(&state, 1, __ATOMIC_RELAXED); /* the probe's own events come back here */
	load_probe();
	return 0;
}

void rt_tr_pyboot_init(void)
{
	struct rt_env_val v;

	if (rt_tr_env(RT_ENV_PROBE_PATH, &v) != 0)
		return; /* preloaded by hand, without `ranktrace run`: no probe asked for */
	if (!dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
		return; /* no Python in this process: nothing to do, nothing recorded */
	snprintf(probe_path, sizeof(probe_path), "%s", v.s);
	if (rt_tr_env(RT_ENV_PROBE, &v) == 0 && rt_env_is(&v, "0")) {
		set_state(RT_PROBE_OFF, "RANKTRACE_PROBE=0");
		return;
	}
#define PY_FIND(field, ret, params, symbol)                                                   \
	if (!(*(void **)&py.field = dlsym(RTLD_DEFAULT, symbol))) {                         \
		set_state(RT_PROBE_MISSING, "this Python has no " symbol " (audit hooks came in " \
			  "Python 3.8)");                                                   \
		return;                                                                     \
	}
	PY_API(PY_FIND)
	set_state(RT_TR_PROBE_WAITING, "");
	if (py.add_audit_hook(on_audit, NULL) != 0)
		set_state(RT_PROBE_MISSING, "Python refused the audit hook that loads the probe");
}
