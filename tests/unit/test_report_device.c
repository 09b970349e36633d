/* SPDX-License-Identifier: MIT */
/* test_report_device.c - the report's device section (viewer/render/report_device.c)
 * on device truth built in memory (model_rig.h): a straggler is named as
 * view names it, with its bars and its lateness per collective; a healthy
 * job names none; a trace without device records gets no section; and the
 * times a damaged trace holds (a start at 2^63 ns, a clock gone backwards,
 * every rank at one instant) draw no NaN or Infinity and stay inside the
 * charts. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "device.h"
#include "export_int.h"
#include "model_rig.h"

/* when rank ri starts collective c on the device (ns), the base ~ c s */
typedef uint64_t (*at_fn)(int ri, int c, uint64_t base);

/* ncoll AllReduces on 4 ranks, started where at says (0: never started) */
static void job(int ncoll, at_fn at)
{
	for (int i = 0; i < t->nranks; i++) {
		OK(i, cudaSetDevice, i, RT_FN_device, U(i));
		OK(i, ncclCommInitRank, i, RT_FN_comm_id, COMM, RT_FN_nranks, U(t->nranks), RT_FN_rank, U(i));
	}
	for (int c = 1; c <= ncoll; c++) {
		uint64_t base = 1000000000ull * (uint64_t)c;

		for (int i = 0; i < t->nranks; i++) {
			uint64_t ts = at(i, c, base);

			now = base;
			ev(i, RT_ID_ncclAllReduce, i, 0, false, RT_FN_comm_id, COMM, RT_FN_seq, U(c),
			   RT_FN_count, U(256), -1);
			if (!ts)
				continue;
			now = ts;
			ev(i, RT_ID_rt_dev_coll, i, 0, false, RT_FN_dev_phase, U(RT_DEV_STARTED),
			   RT_FN_comm_id, COMM, RT_FN_seq, U(c), RT_FN_source, U(1), -1);
		}
	}
	now = 1000000000ull * (uint64_t)(ncoll + 1);
	for (int i = 0; i < t->nranks; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
}

static uint64_t slow2(int ri, int c, uint64_t base)
{
	(void)c;
	return base + (ri == 2 ? 5000000 : 1000 * (uint64_t)ri);
}

static uint64_t rotating(int ri, int c, uint64_t base)
{
	return base + ((ri + c) % 4 == 2 ? 5000000 : 1000 * (uint64_t)ri);
}

/* rank 2 starts at 2^63 ns and on: 9.2e18 ns late */
static uint64_t huge2(int ri, int c, uint64_t base)
{
	return ri == 2 ? (1ull << 63) + (uint64_t)c : base + (uint64_t)ri;
}

/* rank 2 is 50 ms late, but 10 ms early (before its call) in collective 5 */
static uint64_t backwards2(int ri, int c, uint64_t base)
{
	if (ri == 2)
		return c == 5 ? base - 10000000 : base + 50000000;
	return base + 1000 * (uint64_t)ri;
}

static uint64_t same_instant(int ri, int c, uint64_t base)
{
	(void)ri, (void)c;
	return base;
}

/* only rank 0's collectives start on the device */
static uint64_t only0(int ri, int c, uint64_t base)
{
	(void)c;
	return ri == 0 ? base : 0;
}

/* The section for ncoll collectives started where at says; free() it. */
static char *section(int ncoll, at_fn at)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f;

	rig(4);
	job(ncoll, at);
	rt_vw_model_finish(m);
	f = open_memstream(&buf, &n);
	cr_assert_not_null(f);
	rt_vw_report_device(t, f);
	cr_assert_eq(fclose(f), 0);
	rt_vw_free(t);
	free(m);
	return buf;
}

/* No "nan" or "inf" as a word: printf's NaN or infinity. */
static bool nonfinite(const char *s)
{
	for (const char *p = s; *p; p++)
		if ((!strncasecmp(p, "nan", 3) || !strncasecmp(p, "inf", 3)) &&
		    (p == s || !isalpha((unsigned char)p[-1])) &&
		    (!isalpha((unsigned char)p[3]) || !strncasecmp(p, "infinity", 8)))
			return true;
	return false;
}

/* Every number after key (width="..." or points="x,y x,y") within [0, max]. */
static void within(const char *s, const char *key, double xmax, double ymax)
{
	for (const char *p = strstr(s, key); p; p = strstr(p + 1, key)) {
		char *end;
		const char *q = p + strlen(key);

		while (*q && *q != '"') {
			double x = strtod(q, &end), y = 0;

			cr_assert(end != q, "not a number after %s: %.40s", key, q);
			if (*end == ',')
				y = strtod(end + 1, &end);
			cr_expect(x >= 0 && x <= xmax && y >= 0 && y <= ymax, "%s %g,%g outside the chart",
				  key, x, y);
			q = end;
			while (*q == ' ')
				q++;
		}
	}
}

/* What every section holds: finite numbers inside the charts. */
static void sound(const char *s)
{
	cr_expect(!nonfinite(s), "NaN or Infinity in the section: %s", s);
	within(s, "<rect x=\"0\" y=\"0\" width=\"", 100, 0);
	within(s, "<rect x=\"", 1000, 0);
	within(s, "\" width=\"", 1000, 0);
	within(s, "\" y=\"", 120, 0);
	within(s, "\" height=\"", 120, 0);
	within(s, "y1=\"", 120, 0);
}

Test(report_device, a_straggler_is_named_with_its_bars_and_its_lateness)
{
	char *s = section(10, slow2);

	sound(s);
	cr_expect(strstr(s, "<b>Straggler:</b> rank 2 is the straggler: last into 100 % of "
			    "collectives (10 of 10), typically 5.0 ms after the others (the median)"), "%s", s);
	cr_expect(strstr(s, "<tr class=\"straggler\" data-rank=\"2\">"), "%s", s);
	cr_expect(strstr(s, "data-value=\"4.9987\"/></svg>5.00 ms"), "%s", s);
	cr_expect(strstr(s, "<svg id=\"lateness\""), "%s", s);
	cr_expect(strstr(s, "lateness in each collective (10,"), "%s", s);
	cr_expect(strstr(s, "data-late-ms=\"4.999\"><title>AllReduce #10: 5.00 ms</title>"), "%s", s);
	free(s);
}

Test(report_device, a_healthy_job_names_no_straggler)
{
	char *s = section(10, rotating);

	sound(s);
	cr_expect(strstr(s, "<p id=\"straggler\">No straggler:"), "%s", s);
	cr_expect(!strstr(s, "class=\"straggler\""), "%s", s);
	cr_expect(!strstr(s, "id=\"lateness\""), "%s", s);
	free(s);
}

Test(report_device, no_device_records_no_section)
{
	char *s = section(10, only0); /* rank 0's records only: a section, nothing to compare */

	sound(s);
	cr_expect(strstr(s, "No straggler analysis"), "%s", s);
	free(s);
	rig(4);
	for (int i = 0; i < 4; i++)
		OK(i, rt_exit, i, RT_FN_status, U(0));
	rt_vw_model_finish(m);
	{
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);

		rt_vw_report_device(t, f);
		fclose(f);
		cr_expect_eq(n, 0, "a section without device records: %s", buf);
		free(buf);
	}
	rt_vw_free(t);
	free(m);
}

Test(report_device, a_start_at_2_to_the_63_draws_inside_the_charts)
{
	char *s = section(10, huge2);

	sound(s);
	cr_expect(strstr(s, "rank 2 is the straggler"), "%s", s);
	cr_expect(strstr(s, "e+12 ms"), "the lateness in ms, readable: %s", s);
	free(s);
}

Test(report_device, a_clock_gone_backwards_draws_below_the_zero_line)
{
	char *s = section(10, backwards2);

	sound(s);
	cr_expect(strstr(s, "rank 2 is the straggler"), "%s", s);
	cr_expect(strstr(s, "<div>-10.00 ms</div>"), "the lowest label: %s", s);
	cr_expect(strstr(s, "data-late-ms=\"-10.001\"><title>AllReduce #5: -10.00 ms"), "%s", s);
	free(s);
}

Test(report_device, every_rank_at_one_instant_divides_by_nothing)
{
	char *s = section(10, same_instant);

	sound(s);
	cr_expect(strstr(s, "No straggler:"), "%s", s);
	cr_expect(strstr(s, "width=\"0.00\""), "%s", s);
	free(s);
}

/* the model's side of the same damage: still healthy, the straggler named */
static void s_huge(void)
{
	job(10, huge2);
}

RIG_CASE(report_device, a_start_at_2_to_the_63_leaves_the_verdict_healthy, s_huge, RT_V_HEALTHY,
	 "rank 2 is the straggler", NULL)
