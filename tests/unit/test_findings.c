/* SPDX-License-Identifier: MIT */
/* test_findings.c - findings are data (viewer/analyse/findings.c, matcher.c,
 * detectors.c): the rank a finding is about, the ranks it names, the
 * collective it concerns; the sentence is made at the edge
 * (rt_vw_finding_text), and the diagnosis (diagnosis.c) groups findings by
 * what they are, never by reading "rank N" back from their text. */
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
		if (g.t->findings[i].id && !strcmp(g.t->findings[i].id, id))
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
	f = find("matcher");
	cr_assert(f, "no matcher finding");
	cr_expect_eq(f->rank, -1);
	cr_assert_eq(f->nranks, 2);
	cr_expect_eq(f->ranks[0], 1);
	cr_expect_eq(f->ranks[1], 3);
	cr_expect_eq(f->comm, COMM);
	cr_expect_eq(f->seq, 1);
	cr_expect_not(f->subject);
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
	f = find("matcher");
	cr_assert(f, "no matcher finding");
	cr_assert_eq(f->nranks, 1);
	cr_expect_eq(f->ranks[0], 2);
	cr_expect_eq(f->comm, COMM);
	cr_expect_eq(f->seq, 1);
}

/* A finding about one rank says what it did; "rank N" is put before it at
 * the edge, and nowhere is the rank read back from the words. */
Test(findings, a_rank_finding_is_its_subject_and_the_sentence_is_made_at_the_edge)
{
	const struct rt_vw_finding *f;
	char text[sizeof(f->text)];

	init(2);
	exit_status(0, 0);
	exit_status(1, 3);
	rig_finish(&g);
	f = find("exit-status");
	cr_assert(f, "no exit-status finding");
	cr_expect(f->subject);
	cr_expect_eq(f->rank, 1);
	cr_assert_eq(f->nranks, 1);
	cr_expect_eq(f->ranks[0], 1);
	cr_expect_str_eq(f->text, " exited with status 3");
	rt_vw_finding_text(f, text, sizeof(text));
	cr_expect_str_eq(text, "rank 1 exited with status 3");
}

/* Findings built by hand, as the passes store them. */
static void finding(int rank, bool subject, const char *id, const char *text)
{
	struct rt_vw_finding *f = realloc(g.t->findings, sizeof(*f) * (size_t)(g.t->nfindings + 1));

	cr_assert(f);
	g.t->findings = f;
	f = &g.t->findings[g.t->nfindings++];
	*f = (struct rt_vw_finding){ .severity = 1, .level = RT_VW_ERROR, .id = id, .rank = rank,
				     .subject = subject };
	snprintf(f->text, sizeof(f->text), "%s", text);
}

static int diagnose(struct rt_vw_diag **d, int only_rank)
{
	int hidden;

	return rt_vw_diagnose(g.t, only_rank, false, d, &hidden);
}

/* The same words about several ranks: one group, "ranks 0-2,5"; other
 * words or another detector: their own group. */
Test(findings, the_same_words_about_several_ranks_are_one_group)
{
	static const char *const id = "exit-status", *const other = "killed";
	struct rt_vw_diag *d;
	int n;

	rig_init(&g, 6, 0, "/nonexistent/findings");
	for (int r = 0; r < 6; r++)
		finding(r, true, r == 4 ? other : id, r == 3 ? " exited with status 2" : " exited with status 1");
	n = diagnose(&d, -1);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(d[0].text, "ranks 0-2,5 exited with status 1");
	cr_expect_str_eq(d[1].text, "rank 3 exited with status 2");
	cr_expect_str_eq(d[2].text, "rank 4 exited with status 1");
	free(d);
	n = diagnose(&d, 5); /* --rank 5: its own findings and the trace's */
	cr_assert_eq(n, 1);
	cr_expect_str_eq(d[0].text, "rank 5 exited with status 1");
	free(d);
}

/* A finding that names a rank other than its own in its words: the same
 * sentence about ranks 2 and 3 is said once, as it is; the rank in the words
 * is not taken for theirs ("ranks 2-3 is late" was the old reading). */
Test(findings, a_rank_named_in_the_words_is_not_the_findings_rank)
{
	struct rt_vw_diag *d;
	int n;

	rig_init(&g, 4, 0, "/nonexistent/findings");
	finding(2, false, "laggard", "rank 0 is late");
	finding(3, false, "laggard", "rank 0 is late");
	n = diagnose(&d, -1);
	cr_assert_eq(n, 1);
	cr_expect_eq(d[0].nranks, 2);
	cr_expect_str_eq(d[0].text, "rank 0 is late");
	free(d);
}
