/* SPDX-License-Identifier: MIT */
/* cmd_diff.c - `ranktrace diff A B`: where two traces first diverge, per rank,
 * and whether B shows A's failure signature. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void call_str(const struct rt_vw_call_sig *c, char *out, size_t n)
{
	snprintf(out, n, "%s #%u (count %llu)", rt_coll_names[c->kind], c->seq,
		 (unsigned long long)c->count);
}

/* Where parameter name lives across t's ranks, in one phrase: "cuda:N" (each
 * rank on its own device), "storage freed on every rank", "rank 0 cpu, ranks
 * 1-3 meta", "not reported". */
static void placement_phrase(const struct rt_vw_trace *t, const char *name, char *out, size_t n)
{
	char text[64][32]; /* the first 64 ranks */
	int nr = t->nranks < 64 ? t->nranks : 64, ranks[64];
	bool done[64] = { false };
	size_t len = 0;

	for (int i = 0; i < nr; i++) {
		const struct rt_vw_rank *r = &t->ranks[i];
		const struct rt_vw_param *p = rt_vw_find_param(r, name);
		int own = r->meta.local_rank >= 0 ? r->meta.local_rank : r->meta.rank;

		if (!p)
			snprintf(text[i], sizeof(text[i]), "not reported");
		else if (p->last.place == RT_P_CUDA && p->last.device == own)
			snprintf(text[i], sizeof(text[i]), "cuda:N");
		else
			rt_vw_placement_str(&p->last, text[i], sizeof(text[i]));
	}
	out[0] = '\0';
	for (int i = 0; i < nr && len < n; i++) {
		char list[160];
		int k = 0;

		if (done[i])
			continue;
		for (int j = i; j < nr; j++)
			if (!done[j] && !strcmp(text[i], text[j])) {
				done[j] = true;
				ranks[k++] = t->ranks[j].meta.rank;
			}
		if (k == nr) {
			snprintf(out, n, strcmp(text[i], "cuda:N") ? "%s on every rank" : "%s", text[i]);
			return;
		}
		rt_vw_rank_list(ranks, k, list, sizeof(list));
		len += (size_t)snprintf(out + len, n - len, "%s%s %s %s", len ? ", " : "",
					k > 1 ? "ranks" : "rank", list, text[i]);
	}
}

/* Parameters placed differently in A and B: one line per kind of difference,
 * naming an example ("B: model.embed_tokens.weight storage freed on every
 * rank, A: cuda:N; 5 of 5 parameters alike"). */
static void diff_placement(const struct rt_vw_trace *a, const struct rt_vw_trace *b)
{
	struct rt_vw_names na = { 0 };
	struct { char pa[200], pb[200]; const char *example; int n; } kinds[16];
	int nkinds = 0, other = 0;

	if (rt_vw_param_names(a, NULL, &na) != 0 || !na.n) {
		free(na.v);
		return;
	}
	for (size_t q = 0; q < na.n; q++) {
		char pa[200], pb[200];
		int k;

		placement_phrase(a, na.v[q], pa, sizeof(pa));
		placement_phrase(b, na.v[q], pb, sizeof(pb));
		if (!strcmp(pa, pb))
			continue;
		for (k = 0; k < nkinds; k++)
			if (!strcmp(kinds[k].pa, pa) && !strcmp(kinds[k].pb, pb))
				break;
		if (k == nkinds && nkinds == 16) {
			other++;
			continue;
		}
		if (k == nkinds) {
			snprintf(kinds[k].pa, sizeof(kinds[k].pa), "%s", pa);
			snprintf(kinds[k].pb, sizeof(kinds[k].pb), "%s", pb);
			kinds[k].example = na.v[q];
			kinds[k].n = 0;
			nkinds++;
		}
		kinds[k].n++;
	}
	printf("\nparameter placement (latest report)%s\n", nkinds ? ":" : ": the same in A and B");
	for (int k = 0; k < nkinds; k++)
		printf("  B: %s %s, A: %s; %d of %zu parameters alike\n", rt_cli_esc(kinds[k].example),
		       kinds[k].pb, kinds[k].pa, kinds[k].n, na.n);
	if (other)
		printf("  and %d more parameters placed differently\n", other);
	free(na.v);
}

int rt_cli_cmd_diff(int argc, char **argv)
{
	struct rt_vw_trace *a, *b;
	bool same;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf("usage: ranktrace diff A B\n\nCompares two traces rank by rank: where the\n"
		       "sequence of collectives first diverges, allocation counts and peaks, how each\n"
		       "rank ended; then both verdicts and whether B shows A's failure signature.\n"
		       "Exit status: 0 same verdict, 1 different verdicts, 3 unreadable input.\n");
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "ranktrace diff: expected two trace directories, A and B\n"
			"usage: ranktrace diff A B\n");
		return EXIT_USAGE;
	}
	if (rt_cli_check_dir("diff", argv[1]) || rt_cli_check_dir("diff", argv[2]))
		return EXIT_USAGE;
	a = rt_cli_load("diff", argv[1]);
	b = a ? rt_cli_load("diff", argv[2]) : NULL;
	if (!a || !b) {
		rt_vw_free(a);
		return RT_VW_ERR_CORRUPT;
	}
	printf("A %s: %s\nB %s: %s\n\n", rt_cli_esc(a->dir), rt_vw_verdict_names[a->verdict], rt_cli_esc(b->dir),
	       rt_vw_verdict_names[b->verdict]);
	for (int i = 0; i < a->nranks; i++) {
		const struct rt_vw_rank *ra = &a->ranks[i];
		int j = rt_vw_rank_index(b, ra->meta.rank);
		const struct rt_vw_rank *rb = j >= 0 ? &b->ranks[j] : NULL;
		char x[96], y[96], ea[80], eb[80];
		uint32_t k = 0;

		if (!rb) {
			printf("rank %d: only in A\n", ra->meta.rank);
			continue;
		}
		while (k < ra->ncalls && k < rb->ncalls && ra->calls[k].kind == rb->calls[k].kind &&
		       ra->calls[k].count == rb->calls[k].count && ra->calls[k].root == rb->calls[k].root)
			k++;
		rt_vw_rank_end(ra, ea, sizeof(ea));
		rt_vw_rank_end(rb, eb, sizeof(eb));
		if (k == ra->ncalls && k == rb->ncalls) {
			printf("rank %d: same %u collectives", ra->meta.rank, k);
		} else {
			if (k < ra->ncalls)
				call_str(&ra->calls[k], x, sizeof(x));
			else
				snprintf(x, sizeof(x), "nothing more (%s)", ea);
			if (k < rb->ncalls)
				call_str(&rb->calls[k], y, sizeof(y));
			else
				snprintf(y, sizeof(y), "nothing more (%s)", eb);
			printf("rank %d: first divergence after %u identical collectives%s: A %s, B %s",
			       ra->meta.rank, k,
			       k && ra->calls[k - 1].kind == RT_CK_Broadcast &&
					       ra->broadcasts_before_allgather == k ? " (the init broadcasts)" : "",
			       x, y);
		}
		printf("; allocations A %llu, B %llu", (unsigned long long)ra->allocs,
		       (unsigned long long)rb->allocs);
		if (strcmp(ea, eb))
			printf("; end A %s, B %s", ea, eb);
		printf("\n");
	}
	for (int j = 0; j < b->nranks; j++)
		if (rt_vw_rank_index(a, b->ranks[j].meta.rank) < 0)
			printf("rank %d: only in B\n", b->ranks[j].meta.rank);
	diff_placement(a, b);
	same = a->verdict == b->verdict;
	printf("\nverdicts: A %s, B %s: %s\n", rt_vw_verdict_names[a->verdict],
	       rt_vw_verdict_names[b->verdict],
	       same ? (a->verdict == RT_V_HEALTHY ? "both healthy" : "B shows the same failure signature as A")
		    : "different");
	rt_vw_free(a);
	rt_vw_free(b);
	return same ? 0 : 1;
}
