/* SPDX-License-Identifier: MIT */
/* cmd_bisect.c - `ranktrace bisect`: find the first version or commit whose
 * traced run shows a failure signature.
 *
 * The command layer of the bisect module (bisect/bisect.h): this file
 * parses and checks the arguments, lists the candidates (bisect/cands.c),
 * creates BISECT_DIR and hands over to the rounds (bisect/search.c). Every
 * check on the user's input happens before anything is created: a bad
 * input prints one message and exits 2 with nothing written. `--resume -o
 * DIR` re-reads the arguments saved in DIR.
 * Exit status: 0 first bad (--find fix: first good) found, 1 not found (or an endpoint misjudged),
 * 2 usage, 130 interrupted (state saved). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bisect.h"
#include "cli.h"
#include "rt_util.h"
#include "env.h"
#include "escape.h"

/* "  --signature SIG  the failure hunted: a, b or c (...)": the verdicts
 * format/findings.def says bisect hunts, wrapped as the usage is. */
static void signature_usage(FILE *f)
{
	char list[256], *p = list;
	int col = 0;

	rt_verdict_bisect_list(list, sizeof(list));
	fprintf(f, "  --signature SIG      the failure hunted: ");
	col = 43;
	while (*p) {
		size_t w = strcspn(p, " ");

		if (col + (int)w > 80) {
			fprintf(f, "\n%23s", "");
			col = 23;
		}
		fprintf(f, "%.*s%s", (int)w, p, p[w] ? " " : "");
		col += (int)w + 1;
		p += w + (p[w] != '\0');
	}
	fprintf(f, "\n%23s(default: the --bad endpoint's own verdict, measured first)\n", "");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ranktrace bisect CANDIDATES [JUDGING] [-o BISECT_DIR] [--jobs P] -- CMD...\n"
		"       ranktrace bisect --resume -o BISECT_DIR\n"
		"\n"
		"Finds the first version or commit whose run of CMD shows a failure signature\n"
		"in its trace (or, with --find fix, the first one after them that no longer\n"
		"does), going around candidates that fail for other reasons. Each\n"
		"candidate runs `ranktrace run -o BISECT_DIR/<candidate>/ -- CMD` and is judged by\n"
		"`ranktrace verdict`: healthy = good, the signature = bad, anything else (set-up\n"
		"failed, another failure, inconclusive, over --timeout) = skipped.\n"
		"\n"
		"candidates (one of):\n"
		"  --pip PKG --good V1 --bad V2   the versions pip finds between V1 and V2, in\n"
		"                       PEP 440 order; each installed alone (--no-deps, with the\n"
		"                       --with pins) into a cached overlay put first on PYTHONPATH\n"
		"                       (RANKTRACE_CACHE_DIR, default ~/.cache/ranktrace/overlays)\n"
		"    --find-links DIR | --index-url URL   where pip looks;  --pre  pre-releases too\n"
		"    --with REQ         also install REQ in every candidate (e.g. 'tokenizers<0.22')\n"
		"    --isolated         a venv per candidate, with dependencies, instead: over one\n"
		"                       shared base (the --with pins and PKG's dependencies at\n"
		"                       the newer endpoint, in BISECT_DIR/.bisect/base), each\n"
		"                       adds only what its version needs\n"
		"    --python PY        the interpreter whose pip is used (default python3)\n"
		"    --min-free SIZE    free space an install needs at least (default 512M, 2G for\n"
		"                       the base, or twice the largest install so far); below it\n"
		"                       the bisect stops, saying how much is needed (--resume)\n"
		"  --git REPO --good REV --bad REV   the commits between, a worktree each; CMD\n"
		"                       and --setup run in the worktree\n"
		"    --first-parent     follow first parents only (merges as single steps)\n"
		"    --pythonpath SUB   put the worktree's SUB first on PYTHONPATH (pure Python)\n"
		"  --versions A,B,C     any list, oldest first (--good/--bad pick the endpoints)\n"
		"  --setup 'CMD'        prepares a candidate (sh -c; {version} and {dir}, the\n"
		"                       worktree or work dir, stand for \"$RANKTRACE_BISECT_CANDIDATE\"\n"
		"                       and \"$RANKTRACE_BISECT_DIR\": data, never shell text;\n"
		"                       in CMD... they are replaced too)\n"
		"\n"
		"direction:\n"
		"  --find break         (default) the first bad after a good one: --good is the\n"
		"                       older endpoint, --bad the newer (\"which release broke it?\")\n"
		"  --find fix           the first good after a bad one: --bad is the older\n"
		"                       endpoint, --good the newer (\"which release fixed it?\"),\n"
		"                       as git bisect's old/new terms and cargo-bisect-rustc's\n"
		"                       --regress=success; tables stay oldest first\n"
		"\n"
		"judging:\n");
	signature_usage(f);
	fprintf(f,
		"  --like TRACE_DIR     the signature of a reference trace (e.g. a run with\n"
		"                       --inject skip-fsdp-root)\n"
		"  --retries N          run again up to N times; bad only if the signature repeats\n"
		"  --timeout SECONDS    a set-up step or run over this is killed and skipped\n"
		"\n"
		"running:\n"
		"  -o, --output DIR     BISECT_DIR (default ranktrace-bisect-YYYYmmdd-HHMMSS); must\n"
		"                       not exist or be empty; state in DIR/.bisect/ after each step\n"
		"  --jobs P             P candidates at once (about log_(P+1) N rounds)\n"
		"  --launcher 'PREFIX'  run each candidate through PREFIX, e.g. 'srun -N2'\n"
		"  --env NAME=VALUE     set NAME in every candidate's --setup and run (repeatable;\n"
		"                       a candidate's overlay or venv still comes first on\n"
		"                       PYTHONPATH and PATH); kept for --resume and in the\n"
		"                       reproducing command\n"
		"  --keep               keep every judged candidate's venv or worktree (default:\n"
		"                       only the two boundary candidates' stay)\n"
		"  --resume             continue the bisect saved in -o DIR (after Ctrl-C)\n"
		"  --json               the result as JSON (schema ranktrace.bisect/1) on stdout\n"
		"\n"
		"Progress goes to stderr. At the end: first bad and last good (--find fix: first\n"
		"good and last bad), every candidate tried (oldest first), `ranktrace diff` of\n"
		"the two boundary traces (older first), the command reproducing the boundary's\n"
		"bad run, and the commits (git log) or release range between them.\n"
		"Exit status: 0 found, 1 not found, 2 usage error, 130 interrupted.\n"
		"\n"
		"examples:\n"
		"  ranktrace bisect --pip transformers --good 4.51.3 --bad 4.53.0 \\\n"
		"      --env PYTHONPATH=$PWD/deps -- torchrun --nproc-per-node 8 train.py\n"
		"  ranktrace bisect --pip transformers --good 4.52.4 --bad 4.53.0 --isolated \\\n"
		"      --with accelerate==1.8.1 --with torch -- accelerate launch train.py\n"
		"  ranktrace bisect --git ~/src/trainer --good v1.0 --bad main --pythonpath src \\\n"
		"      --jobs 4 --launcher 'srun -N1 --gpus-per-node 8' -- python -m trainer\n"
		"  ranktrace bisect --pip transformers --find fix --bad 4.53.0 --good 4.54.1 \\\n"
		"      --env PYTHONPATH=$PWD/deps -- torchrun --nproc-per-node 8 train.py\n"
		"  ranktrace bisect --versions 4.52.4,4.53.0 \\\n"
		"      -- rt-launch -n 4 fsdp_mini --trainer-version {version}\n");
}

static int bad_usage(const char *fmt, const char *arg)
{
	rt_esc_printf(stderr, "ranktrace bisect: ");
	rt_esc_printf(stderr, fmt, arg);
	rt_esc_printf(stderr, "\n(see `ranktrace bisect --help`)\n");
	return BS_EXIT_USAGE;
}

static bool parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

static const struct option opts[] = {
	{ "pip", required_argument, NULL, 'p' },
	{ "good", required_argument, NULL, 'g' },
	{ "bad", required_argument, NULL, 'b' },
	{ "find-links", required_argument, NULL, 'f' },
	{ "index-url", required_argument, NULL, 'i' },
	{ "pre", no_argument, NULL, 'P' },
	{ "with", required_argument, NULL, 'w' },
	{ "isolated", no_argument, NULL, 'I' },
	{ "python", required_argument, NULL, 'y' },
	{ "git", required_argument, NULL, 'G' },
	{ "setup", required_argument, NULL, 's' },
	{ "first-parent", no_argument, NULL, 'F' },
	{ "pythonpath", required_argument, NULL, 'Y' },
	{ "versions", required_argument, NULL, 'v' },
	{ "signature", required_argument, NULL, 'S' },
	{ "find", required_argument, NULL, 'X' },
	{ "like", required_argument, NULL, 'l' },
	{ "retries", required_argument, NULL, 'r' },
	{ "timeout", required_argument, NULL, 't' },
	{ "jobs", required_argument, NULL, 'j' },
	{ "env", required_argument, NULL, 'E' },
	{ "keep", no_argument, NULL, 'K' },
	{ "min-free", required_argument, NULL, 'M' },
	{ "launcher", required_argument, NULL, 'L' },
	{ "resume", no_argument, NULL, 'R' },
	{ "json", no_argument, NULL, 'J' },
	{ "output", required_argument, NULL, 'o' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* NAME=VALUE, NAME a shell variable name. */
static bool env_ok(const char *s)
{
	size_t k = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

	return k > 0 && s[k] == '=' && (s[0] < '0' || s[0] > '9');
}

/* One option into o; 0, 1 for --help, or exit code 2. */
static int take(struct bs_opts *o, int c, const char *arg)
{
	double v;

	switch (c) {
	case 'p': o->pkg = arg; o->source = BS_PIP; break;
	case 'G': o->repo = arg; o->source = BS_GIT; break;
	case 'v': o->versions = arg; o->source = BS_VERSIONS; break;
	case 'g': o->good = arg; break;
	case 'b': o->bad = arg; break;
	case 'f': o->find_links = arg; break;
	case 'i': o->index_url = arg; break;
	case 'P': o->pre = true; break;
	case 'I': o->isolated = true; break;
	case 'y': o->python = arg; break;
	case 's': o->setup = arg; break;
	case 'F': o->first_parent = true; break;
	case 'Y': o->pythonpath = arg; break;
	case 'S': o->signature = arg; break;
	case 'X':
		if (strcmp(arg, "break") && strcmp(arg, "fix"))
			return bad_usage("--find %s: expected break (the first bad after a good one) or "
					 "fix (the first good after a bad one)", arg);
		o->find = !strcmp(arg, "fix") ? BS_FIND_FIX : BS_FIND_BREAK;
		break;
	case 'l': o->like = arg; break;
	case 'L': o->launcher = arg; break;
	case 'R': o->resume = true; break;
	case 'J': o->json = true; break;
	case 'o': o->dir = arg; break;
	case 'h': return 1;
	case 'w':
		if (o->nwith == BS_MAX_WITH)
			return bad_usage("--with: at most %s pins", "16");
		o->with[o->nwith++] = arg;
		break;
	case 'E':
		if (o->nenv == BS_MAX_ENV)
			return bad_usage("--env: at most %s variables", "32");
		if (!env_ok(arg))
			return bad_usage("--env %s: expected NAME=VALUE (NAME: letters, digits, _)", arg);
		o->env[o->nenv++] = arg;
		break;
	case 'K': o->keep = true; break;
	case 'M': {
		uint64_t b;

		if (rt_parse_size(arg, &b) != 0)
			return bad_usage("--min-free %s: expected a size, e.g. 2G or 500M", arg);
		o->min_free = b ? b : 1; /* 0: no floor beyond the largest install */
		break;
	}
	case 'r':
		if (!parse_num(arg, 0, 10, &v) || v != (int)v)
			return bad_usage("--retries %s: expected 0 to 10", arg);
		o->retries = (int)v;
		break;
	case 't':
		if (!parse_num(arg, 0.1, 1e7, &v))
			return bad_usage("--timeout %s: expected seconds, e.g. 600", arg);
		o->timeout = v;
		break;
	case 'j':
		if (!parse_num(arg, 1, 64, &v) || v != (int)v)
			return bad_usage("--jobs %s: expected 1 to 64", arg);
		o->jobs = (int)v;
		break;
	default: return BS_EXIT_USAGE;
	}
	return 0;
}

/* Options that only mean something with one source. */
static int check_source(const struct bs_opts *o, int nsources)
{
	if (nsources != 1)
		return bad_usage("%s", nsources ? "give only one of --pip, --git, --versions"
				 : "say where the candidates come from: --pip, --git or --versions");
	if (o->source != BS_PIP && (o->find_links || o->index_url || o->pre || o->nwith ||
				    o->isolated || o->min_free))
		return bad_usage("%s", "--find-links, --index-url, --pre, --with, --isolated and "
				 "--min-free go with --pip");
	if (o->source != BS_GIT && (o->first_parent || o->pythonpath))
		return bad_usage("%s", "--first-parent and --pythonpath go with --git");
	if (o->source != BS_VERSIONS && (!o->good || !o->bad))
		return bad_usage("%s", "--good and --bad are both needed");
	if (o->source == BS_VERSIONS && !strchr(o->versions, ','))
		return bad_usage("--versions %s: list at least two, comma-separated", o->versions);
	if (o->signature && o->like)
		return bad_usage("%s", "--signature and --like both name the signature: give one");
	if (o->signature) { /* the failures format/findings.def says bisect hunts */
		int v = rt_verdict_parse(o->signature);
		char list[256], msg[512];

		if (v >= 0 && rt_verdicts[v].bisect)
			return 0;
		rt_verdict_bisect_list(list, sizeof(list));
		snprintf(msg, sizeof(msg), "--signature %s: expected %s", o->signature, list);
		return bad_usage("%s", msg);
	}
	return 0;
}

/* Is CMD's program runnable from here? (Not checked through a launcher, nor
 * when it names the candidate's own tree.) */
static bool runnable(const struct bs_opts *o)
{
	const char *p = o->cmd[0], *path = getenv("PATH");
	char buf[PATH_MAX];

	if (o->launcher || strchr(p, '{') || (o->source == BS_GIT && p[0] != '/' && strchr(p, '/')))
		return true;
	if (strchr(p, '/'))
		return access(p, X_OK) == 0;
	for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
		size_t n = strcspn(d, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, n ? d : ".", p);
		if (access(buf, X_OK) == 0)
			return true;
		d += n + (d[n] == ':');
	}
	return false;
}

/* Parse argv into x->o. 0, 1 after --help, or 2 after a message. */
static int parse_args(struct bs_ctx *x, int argc, char **argv)
{
	struct bs_opts *o = &x->o;
	int c, rc, nsources = 0;

	memset(o, 0, sizeof(*o));
	o->python = "python3";
	o->jobs = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
		nsources += c == 'p' || c == 'G' || c == 'v';
		rc = take(o, c, optarg);
		if (rc == 1) {
			usage(stdout);
			return 1;
		}
		if (rc)
			return rc;
	}
	o->cmd = argv + optind;
	o->ncmd = argc - optind;
	if (o->resume)
		return 0; /* the rest comes from the saved state */
	if ((rc = check_source(o, nsources)))
		return rc;
	if (!o->ncmd)
		return bad_usage("%s", "no command given: ranktrace bisect ... -- CMD [ARG...]");
	if (!runnable(o))
		return bad_usage("%s: no such executable (not found or not executable)", o->cmd[0]);
	return 0;
}

static int like_signature(struct bs_ctx *x)
{
	char **names, *out = NULL;
	char *argv[] = { x->self, "verdict", (char *)x->o.like, NULL };
	int n = rt_vw_list_ranks(x->o.like, &names);

	rt_vw_free_names(names, n > 0 ? n : 0);
	if (n <= 0)
		return bad_usage("--like %s: not a ranktrace trace (no rank-* directories)", x->o.like);
	bs_capture(argv, NULL, &out, true);
	snprintf(x->signature, sizeof(x->signature), "%s", out ? out : "");
	x->signature[strcspn(x->signature, " \t\r\n")] = '\0';
	free(out);
	if (!x->signature[0] || rt_verdict_parse(x->signature) < 0 ||
	    !rt_verdicts[rt_verdict_parse(x->signature)].bisect)
		return bad_usage("--like %s: the trace shows no failure signature (verdict: %s)",
				 x->signature[0] ? x->signature : "none");
	return 0;
}

/* A new bisect: check and list everything, then create BISECT_DIR. */
static int start(struct bs_ctx *x)
{
	struct stat st;
	int rc;

	if (!x->o.dir) {
		static char def[64];
		time_t t = time(NULL);
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(def, sizeof(def), "ranktrace-bisect-%Y%m%d-%H%M%S", &tm);
		x->o.dir = def;
	}
	if (stat(x->o.dir, &st) == 0 && (!S_ISDIR(st.st_mode) || !bs_dir_empty(x->o.dir)))
		return bad_usage("-o %s already exists and is not empty (use --resume to continue "
				 "a bisect there)", x->o.dir);
	if (x->o.like && (rc = like_signature(x)))
		return rc;
	if (x->o.signature)
		snprintf(x->signature, sizeof(x->signature), "%s", x->o.signature);
	if ((rc = bs_list_candidates(x)))
		return rc;
	return bs_state_create(x);
}

static int resume(struct bs_ctx *x, bool json)
{
	char **argv;
	int argc, rc;

	if (!x->o.dir)
		return bad_usage("%s", "--resume needs -o BISECT_DIR");
	if (!realpath(x->o.dir, x->dir))
		return bad_usage("--resume: -o %s does not exist", x->o.dir);
	if (bs_state_load(x, &argv, &argc) != 0)
		return BS_EXIT_USAGE;
	x->argc = argc;
	x->argv = argv;
	rc = parse_args(x, argc, argv);
	if (rc)
		return rc == 1 ? BS_EXIT_USAGE : rc;
	x->o.json |= json;
	for (int i = 0; i < x->n; i++)
		rc += x->c[i].judged != BS_UNTESTED;
	rt_esc_printf(stderr, "bisect: resuming in %s (%d candidates, %d judged before)\n",
		      x->dir, x->n,
		      rc);
	rc = 0;
	return 0;
}

int rt_cli_cmd_bisect(int argc, char **argv)
{
	struct bs_ctx x = { 0 };
	ssize_t k;
	int rc;

	x.argc = argc;
	x.argv = argv;
	x.tty = isatty(2);
	k = readlink("/proc/self/exe", x.self, sizeof(x.self) - 1);
	if (k <= 0) {
		rt_esc_printf(stderr, "ranktrace bisect: cannot find this program (/proc/self/exe)\n");
		return BS_EXIT_USAGE;
	}
	x.self[k] = '\0';
	bs_cache_dir(&x);
	rc = parse_args(&x, argc, argv);
	if (rc)
		return rc == 1 ? 0 : rc;
	/* each candidate's `ranktrace run` would refuse them: say it once, now */
	if (rt_cli_check_env("bisect", "tracer probe test") != 0)
		return EXIT_ENV;
	if (x.o.resume)
		rc = resume(&x, x.o.json);
	else
		rc = start(&x);
	if (!rc)
		rc = bs_search(&x);
	free(x.c);
	return rc;
}
