/* SPDX-License-Identifier: MIT */
/* test_findings.c - findings are data (viewer/analyse/findings.c, matcher.c,
 * the detectors): their kind (format/findings.def), the rank a finding is
 * about, the ranks it names, the collective it concerns, its values; the
 * sentence is made in the render room (rt_vw_finding_text), and the
 * diagnosis (render/diagnosis.c) groups findings by what they are, never by
 * reading "rank N" back from their text. */
#include "trace_rig.h"

#define COMM U(0xc0)

static struct rig g;

static void teardown(void)
{
	if (g.t)
		rig_free(&g);
	g = (struct rig){ 0 };
}

TestSuite(findings, .fini = teardown);

static void init(int n)
{
	rig_init(&g, n, 0, "/nonexistent/findings");
	for (int i = 0; i < n; i++)
		RIG_OK(&g, i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(n), RT_FN_rank, U(i));
}

static void all_reduce(int ri, uint32_t seq, uint64_t count)
{
	RIG_OK(&g, ri, ncclAllReduce, ri, RT_FN_comm_id, COMM, RT_FN_seq, U(seq), RT_FN_count, count,
	       RT_FN_datatype, U(7), RT_FN_op, U(0));
}

static void exit_status(int ri, int status)
{
	RIG_OK(&g, ri, rt_exit, -1, RT_FN_status, U(status));
}

static const struct rt_vw_finding *find(const char *id)
{
	for (int i = 0; i < g.t->nfindings; i++)
		if (!strcmp(rt_findings[g.t->findings[i].kind].id, id))
			return &g.t->findings[i];
	return NULL;
}

/* Ranks 1 and 3 of 4 call a different count at sequence 1: the finding names
 * them and the collective, as numbers. */
Test(findings, a_mismatch_names_the_odd_ranks_and_the_collective)
{
	const struct rt_vw_finding *f;

	init(4);
	for (int i = 0; i < 4; i++) {
		all_reduce(i, 1, i % 2 ? 7 : 1024);
		exit_status(i, 0);
	}
	rig_finish(&g);
	f = find("collective-mismatch");
	cr_assert(f, "no collective-mismatch finding");
	cr_expect_eq(f->kind, RT_FK_COLLECTIVE_MISMATCH);
	cr_expect_eq(f->rank, -1);
	cr_assert_eq(f->nranks, 2);
	cr_expect_eq(f->ranks[0], 1);
	cr_expect_eq(f->ranks[1], 3);
	cr_expect_eq(f->coll.comm, COMM);
	cr_expect_eq(f->coll.seq, 1);
	/* what the others called, and what the odd ones called, as numbers */
	cr_expect(f->coll.sig && f->other.sig);
	cr_expect_eq(f->coll.count, 1024);
	cr_expect_eq(f->other.count, 7);
	cr_expect_eq(f->coll.kind, RT_CK_AllReduce);
	cr_assert(rt_vw_fv(f, RT_FV_ranks_same));
	cr_expect_eq(rt_vw_fv(f, RT_FV_ranks_same)->v.i, 2);
	cr_expect_not(rt_vw_finding_subject(f));
	cr_expect_eq(g.t->verdict, RT_V_COLLECTIVE_MISMATCH);
}

/* Rank 2 of 3 never calls sequence 1: the finding names it. */
Test(findings, never_called_names_the_ranks_that_did_not_call)
{
	const struct rt_vw_finding *f;

	init(3);
	for (int i = 0; i < 3; i++) {
		if (i != 2)
			all_reduce(i, 1, 64);
		exit_status(i, 0);
	}
	rig_finish(&g);
	f = find("never-called");
	cr_assert(f, "no never-called finding");
	cr_assert_eq(f->nranks, 1);
	cr_expect_eq(f->ranks[0], 2);
	cr_expect_eq(f->coll.comm, COMM);
	cr_expect_eq(f->coll.seq, 1);
	cr_expect_eq(f->coll.count, 64);
}

/* A finding about one rank says what it did; "rank N" is put before it at
 * the edge, and nowhere is the rank read back from the words. */
Test(findings, a_rank_finding_is_its_subject_and_the_sentence_is_made_at_the_edge)
{
	const struct rt_vw_finding *f;
	char text[RT_VW_FINDING_TEXT];

	init(2);
	exit_status(0, 0);
	exit_status(1, 3);
	rig_finish(&g);
	f = find("exit-status");
	cr_assert(f, "no exit-status finding");
	cr_expect(rt_vw_finding_subject(f));
	cr_expect_eq(f->rank, 1);
	cr_assert_eq(f->nranks, 1);
	cr_expect_eq(f->ranks[0], 1);
	cr_assert(rt_vw_fv(f, RT_FV_status));
	cr_expect_eq(rt_vw_fv(f, RT_FV_status)->v.i, 3);
	rt_vw_finding_body(g.t, f, text, sizeof(text), false);
	cr_expect_str_eq(text, " exited with status 3");
	rt_vw_finding_text(g.t, f, text, sizeof(text));
	cr_expect_str_eq(text, "rank 1 exited with status 3");
}

/* Findings built by hand, as the analyses store them: kind about rank,
 * with one value. */
static struct rt_vw_finding *finding(int rank, enum rt_finding_kind kind, enum rt_fvalue name,
				     int64_t v)
{
	struct rt_vw_finding *f = rt_vw_finding_add(g.t, kind, rank);

	cr_assert(f);
	rt_vw_fv_int(f, name, v);
	return f;
}

static int diagnose(struct rt_vw_diag **d, int only_rank)
{
	int hidden;

	return rt_vw_diagnose(g.t, only_rank, false, d, &hidden);
}

/* The same words about several ranks: one group, "ranks 0-2,5"; other
 * words or another kind: their own group. */
Test(findings, the_same_words_about_several_ranks_are_one_group)
{
	struct rt_vw_diag *d;
	int n;

	rig_init(&g, 6, 0, "/nonexistent/findings");
	for (int r = 0; r < 6; r++)
		if (r == 4)
			finding(r, RT_FK_KILLED, RT_FV_signo, 9);
		else
			finding(r, RT_FK_EXIT_STATUS, RT_FV_status, r == 3 ? 2 : 1);
	n = diagnose(&d, -1);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(d[0].text, "ranks 0-2,5 exited with status 1");
	cr_expect_str_eq(d[1].text, "rank 3 exited with status 2");
	cr_expect_str_eq(d[2].text, "rank 4 was killed by signal 9");
	free(d);
	n = diagnose(&d, 5); /* --rank 5: its own findings and the trace's */
	cr_assert_eq(n, 1);
	cr_expect_str_eq(d[0].text, "rank 5 exited with status 1");
	free(d);
}

/* Words agree with the ranks they are said of: "ranks 0-2 were killed",
 * "ranks 0-3 are alive" (were "ranks 0-2 was killed", "ranks 0-3 is
 * alive"); one rank's words as before. */
Test(findings, the_words_agree_with_several_ranks)
{
	struct rt_vw_diag *d;
	int n;

	rig_init(&g, 8, 0, "/nonexistent/findings");
	for (int r = 0; r < 3; r++)
		finding(r, RT_FK_KILLED, RT_FV_signo, 9);
	for (int r = 3; r < 7; r++) {
		struct rt_vw_finding *f = rt_vw_finding_add(g.t, RT_FK_RANK_STALLED, r);

		cr_assert(f);
		rt_vw_fv_real(f, RT_FV_idle_s, 30);
		rt_vw_fv_flag(f, RT_FV_stopped, true);
	}
	finding(7, RT_FK_NO_END, RT_FV_last_event_s, 0);
	n = diagnose(&d, -1);
	cr_assert_geq(n, 3);
	for (int k = 0; k < n; k++)
		if (!strncmp(d[k].text, "ranks 0-2", 9))
			cr_expect_str_eq(d[k].text, "ranks 0-2 were killed by signal 9");
		else if (!strncmp(d[k].text, "ranks 3-6", 9))
			cr_expect_str_eq(d[k].text, "ranks 3-6 are alive, no call returned for 30 s "
				       "(their processes are stopped: SIGSTOP, Ctrl-Z or a debugger)");
		else
			cr_expect(strstr(d[k].text, "rank 7 has no recorded end"), "%s", d[k].text);
	free(d);
}

/* A finding that names a rank other than its own in its words (not a
 * subject): the same sentence about ranks 2 and 3 is said once, as it is;
 * the rank in the words is not taken for theirs ("ranks 2-3 trace damaged"
 * would be the wrong reading). */
Test(findings, a_rank_named_in_the_words_is_not_the_findings_rank)
{
	struct rt_vw_diag *d;
	int n;

	rig_init(&g, 4, 0, "/nonexistent/findings");
	g.t->ranks[0].completeness = RT_C_DAMAGED;
	g.t->ranks[0].incomplete = RT_I_EMPTY;
	for (int r = 2; r < 4; r++)
		rt_vw_fv_end(rt_vw_finding_add(g.t, RT_FK_INCOMPLETE, r), RT_FV_trace, &g.t->ranks[0]);
	n = diagnose(&d, -1);
	cr_assert_eq(n, 1);
	cr_expect_eq(d[0].nranks, 2);
	cr_expect_str_eq(d[0].text, "rank-00000: rank 0 trace damaged: rank-00000/ holds no readable "
			 "event (no stream file, or only empty ones)");
	free(d);
}

/* Every kind of format/findings.def has words: a template whose every
 * {NAME}, {s:NAME} and [NAME:...] names a declared value, or a renderer
 * of its own (render/finding_say.c), never the title as a stand-in. */
Test(findings, every_kind_has_its_words)
{
	rig_init(&g, 2, 0, "/nonexistent/findings");
	for (int k = 0; k < RT_FK_COUNT; k++) {
		const char *tpl = rt_findings[k].text;
		struct rt_vw_finding *f = rt_vw_finding_add(g.t, (enum rt_finding_kind)k, 0);
		char text[RT_VW_FINDING_TEXT];

		cr_assert(f);
		for (const char *p = tpl; p && (p = strpbrk(p, "{[")); p++) {
			const char *name = p + 1 + (!strncmp(p, "{s:", 3) ? 2 : 0);
			size_t len = strcspn(name, *p == '[' ? ":" : "}");

			if (!strncmp(p, "{rank}", 6) || !strncmp(p, "{ranks}", 7))
				continue;
			if (*p == '{' && (len == 2 || len == 3) &&
			    (!strncmp(name, "is}", 3) || !strncmp(name, "was}", 4) ||
			     !strncmp(name, "has}", 4) || !strncmp(name, "its}", 4) ||
			     !strncmp(name, "it}", 3) || !strncmp(name, "es}", 3)))
				continue; /* words that agree with {rank} */
			cr_expect_geq(rt_fvalue_parse(name, len), 0, "%s: %.*s is no value of findings.def",
				      rt_findings[k].id, (int)len, name);
		}
		if (k == RT_FK_INCOMPLETE) /* it says its rank's trace */
			rt_vw_fv_end(f, RT_FV_trace, &g.t->ranks[0]);
		rt_vw_finding_text(g.t, f, text, sizeof(text));
		cr_expect(text[0] && strcmp(text, rt_findings[k].title), "%s: no words of its own (%s)",
			  rt_findings[k].id, text);
	}
}

/* The analyses' table (analyse/analyses.c): each reads only what the
 * pass, the live state or a row above it made. */
Test(findings, every_analysis_runs_after_what_it_reads)
{
	const char *bad = NULL;

	cr_expect_eq(rt_vw_analyses_check(&bad), 0, "%s reads what no row above it makes", bad);
	cr_expect_str_eq(rt_vw_analysis_name(0), "completeness");
	for (size_t i = 0; rt_vw_analysis_name(i); i++)
		if (!rt_vw_analysis_name(i + 1))
			cr_expect_str_eq(rt_vw_analysis_name(i), "verdict", "the verdict is decided last");
}
