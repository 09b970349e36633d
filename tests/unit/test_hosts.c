/* SPDX-License-Identifier: MIT */
/* test_hosts.c - viewer/analyse/hosts.c's clock offsets on device truth
 * built in memory (model_rig.h), and what straggler.c judges with them:
 * ranks 2,3 on host "b" whose clock reads SHIFT ahead of host "a"'s; the
 * offset is estimated from the completions of shared collectives (noise,
 * a straggler on either host, a negative shift), a straggler is named with
 * its true lateness, a healthy job names none; one host needs no estimate;
 * hosts sharing no collective get none, and lateness across them is not
 * judged. Groups (rt_group) are judged as one launch. */
#include "device.h"
#include "export.h"
#include "json.h"
#include "model_rig.h"

#include <math.h>

#define COMM2 0xC2ull /* {2,3} alone */
#define MS 1000000ll

static int64_t shift; /* host b's clock minus host a's */
static uint32_t lcg = 12345;

/* 0 .. max_ns, the same sequence every run */
static uint64_t noise(uint64_t max_ns)
{
	lcg = lcg * 1103515245u + 12345u;
	return max_ns ? (lcg >> 8) % max_ns : 0;
}

/* the event's time: true time ns on rank ri's host's clock */
static void at(int ri, int64_t ns)
{
	now = (uint64_t)(ns + (ri >= 2 ? shift : 0));
}

static void hosts_ab(void)
{
	for (int i = 0; i < t->nranks; i++) {
		snprintf(t->ranks[i].meta.hostname, sizeof(t->ranks[i].meta.hostname), "%s", i < 2 ? "a" : "b");
		snprintf(t->ranks[i].meta.clock_uuid, sizeof(t->ranks[i].meta.clock_uuid), "boot-%s",
			 i < 2 ? "a" : "b");
	}
}

static void init(int ri, uint64_t comm, int nranks, int rank)
{
	at(ri, 1000);
	OK(ri, ncclCommInitRank, ri, RT_FN_comm_id, U(comm), RT_FN_nranks, U(nranks), RT_FN_rank, U(rank));
}

static void dev(int ri, uint64_t comm, uint32_t seq, int phase, int64_t ns)
{
	at(ri, ns);
	ev(ri, RT_ID_rt_dev_coll, ri, 0, false, RT_FN_dev_phase, U(phase), RT_FN_comm_id, U(comm),
	   RT_FN_seq, U(seq), RT_FN_source, U(RT_DEV_SRC_PLUGIN), -1);
}

/* one collective #seq on comm over ranks lo..hi at true time base: rank
 * late_rank enqueues and starts late_ns late; it completes on every member
 * 0.2 ms after the last start, each rank learning it up to noise_ns late */
static int stalled = -1; /* this rank learns every 3rd collective 22 ms late */

static void coll(uint64_t comm, uint32_t seq, int lo, int hi, int64_t base, int late_rank,
		 int64_t late_ns, uint64_t noise_ns)
{
	int64_t last = base + late_ns, held[8] = { 0 };

	for (int i = lo; i <= hi; i++) {
		int64_t st = base + (i == late_rank ? late_ns : (int64_t)noise(50000));

		held[i] = i == stalled && seq % 3 == 0 ? 22 * MS : 0;
		at(i, st - 10000);
		OK(i, ncclAllReduce, i, RT_FN_comm_id, U(comm), RT_FN_seq, U(seq), RT_FN_count, U(256));
		dev(i, comm, seq, RT_DEV_STARTED, st + held[i]);
		last = st > last ? st : last;
	}
	for (int i = lo; i <= hi; i++)
		dev(i, comm, seq, RT_DEV_COMPLETED, last + 200000 + held[i] + (int64_t)noise(noise_ns));
}

/* ncoll world collectives 100 ms apart on hosts a and b */
static void job(int ncoll, int late_rank, int64_t late_ns, uint64_t noise_ns)
{
	rig(4);
	hosts_ab();
	for (int i = 0; i < 4; i++)
		init(i, COMM, 4, i);
	for (int c = 1; c <= ncoll; c++)
		coll(COMM, (uint32_t)c, 0, 3, (int64_t)c * 100 * MS, late_rank, late_ns, noise_ns);
	rt_vw_model_finish(m);
}

static const struct rt_vw_finding *straggler(void)
{
	for (int i = 0; i < t->nfindings; i++)
		if (t->findings[i].kind == RT_FK_STRAGGLER)
			return &t->findings[i];
	return NULL;
}

static void done(void)
{
	rt_vw_free(t);
	free(m);
}

/* host b's estimate is within tol_ns of shift */
static void expect_offset(int64_t tol_ns)
{
	const struct rt_vw_hosts *h = t->hosts;

	cr_assert(h, "no hosts");
	cr_assert_eq(h->n, 2, "%d hosts, not 2", h->n);
	cr_assert(h->h[1].estimated, "host b's clock not estimated (%llu shared)",
		  (unsigned long long)h->h[1].shared);
	cr_expect(llabs((long long)h->h[1].offset_ns - shift) <= tol_ns, "offset %.3f ms, shift %.3f ms",
		  h->h[1].offset_ns / 1e6, (double)shift / 1e6);
	cr_expect(h->h[1].err_ns >= 0 && h->h[1].err_ns < 1e6, "uncertainty %.3f ms", h->h[1].err_ns / 1e6);
}

Test(hosts, completions_with_noise_give_the_offset_and_no_straggler)
{
	shift = 50 * MS;
	job(20, -1, 0, 400000);
	expect_offset(MS / 2);
	cr_expect_eq(t->hosts->h[1].shared, 20);
	cr_expect_null(straggler(), "a healthy job on two hosts named a straggler (the clocks' 50 ms)");
	done();
}

Test(hosts, a_negative_shift_is_estimated)
{
	shift = -50 * MS;
	job(20, -1, 0, 400000);
	expect_offset(MS / 2);
	cr_expect_null(straggler());
	done();
}

/* a straggler moves when a collective completes, not the hosts' difference */
static void straggler_on(int rank)
{
	const struct rt_vw_finding *f;
	const struct rt_vw_straggle *s;

	shift = 50 * MS;
	job(20, rank, 20 * MS, 400000);
	expect_offset(MS / 2);
	f = straggler();
	s = t->straggle;
	cr_assert(f && s, "no straggler named");
	cr_expect_eq(f->rank, rank, "straggler rank %d, not %d", f->rank, rank);
	cr_expect(fabs(s->r[rank].median_ns - 20e6) <= 4e6, "lateness %.2f ms, not 20 +- 4",
		  s->r[rank].median_ns / 1e6);
	done();
}

Test(hosts, a_straggler_on_the_reference_host_is_named_with_its_lateness)
{
	straggler_on(1);
}

Test(hosts, a_straggler_on_the_other_host_is_named_with_its_lateness)
{
	straggler_on(3);
}

/* rank 3's poller held up 22 ms in every 3rd collective (a loaded host):
 * it sees their start after the others saw them complete; that start was
 * seen late, not made late, and those 10 are not judged: rank 1, 20 ms
 * late every time, is named (before: rank 3 last into 10 of 30 by 13 ms,
 * the noise, and no one named) */
Test(hosts, a_start_seen_after_the_completion_was_seen_late)
{
	const struct rt_vw_finding *f;

	stalled = 3;
	shift = 50 * MS;
	job(30, 1, 20 * MS, 400000);
	stalled = -1;
	f = straggler();
	cr_assert(f, "no straggler named");
	cr_expect_eq(f->rank, 1);
	cr_expect_eq(t->straggle->colls, 20, "%llu judged", (unsigned long long)t->straggle->colls);
	cr_expect_eq(t->straggle->r[1].last, 20, "rank 1 last into %llu of 20",
		     (unsigned long long)t->straggle->r[1].last);
	cr_expect(fabs(t->straggle->r[1].median_ns - 20e6) <= 4e6, "lateness %.2f ms",
		  t->straggle->r[1].median_ns / 1e6);
	done();
}

Test(hosts, one_host_needs_no_estimate)
{
	rig(4);
	for (int i = 0; i < 4; i++)
		init(i, COMM, 4, i);
	shift = 0;
	for (int c = 1; c <= 10; c++)
		coll(COMM, (uint32_t)c, 0, 3, (int64_t)c * 100 * MS, -1, 0, 100000);
	rt_vw_model_finish(m);
	cr_assert(t->hosts);
	cr_expect_eq(t->hosts->n, 1);
	cr_expect_eq(rt_vw_host_shift(t, 2), 0);
	done();
}

/* hosts a and b each run collectives of their own communicator only: no
 * estimate, lateness across them not judged (said), within b still judged */
Test(hosts, hosts_sharing_no_collective_get_no_estimate)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	shift = 50 * MS;
	rig(4);
	hosts_ab();
	for (int i = 0; i < 4; i++)
		init(i, i < 2 ? COMM : COMM2, 2, i % 2);
	for (int c = 1; c <= 10; c++) {
		coll(COMM, (uint32_t)c, 0, 1, (int64_t)c * 100 * MS, -1, 0, 100000);
		coll(COMM2, (uint32_t)c, 2, 3, (int64_t)c * 100 * MS, 3, 5 * MS, 100000);
	}
	rt_vw_model_finish(m);
	cr_assert(t->hosts && t->hosts->n == 2);
	cr_expect_not(t->hosts->h[1].estimated);
	cr_expect_eq(t->hosts->h[1].shared, 0);
	cr_expect_not(rt_vw_hosts_compare(t, 0, 2));
	cr_expect(rt_vw_hosts_compare(t, 2, 3));
	cr_expect(straggler() && straggler()->rank == 3, "rank 3, 5 ms late within host b, not named");
	f = open_memstream(&out, &len);
	cr_assert(f);
	rt_vw_device_text(f, t, -1);
	fclose(f);
	cr_expect(strstr(out, "host b (ranks 2,3): its clock is not estimated") &&
		  strstr(out, "lateness across hosts is not judged"), "view:\n%s", out);
	free(out);
	done();
}

/* view says each host's clock; view --json has it */
Test(hosts, view_and_json_say_the_estimate)
{
	char *out = NULL;
	size_t len = 0;
	struct rt_json w;
	FILE *f;

	shift = 50 * MS;
	job(20, -1, 0, 100000);
	f = open_memstream(&out, &len);
	cr_assert(f);
	rt_vw_device_text(f, t, -1);
	rt_json_init(&w, f, true);
	rt_json_obj(&w, NULL);
	rt_vw_device_json(&w, t);
	rt_json_end(&w);
	cr_assert_eq(rt_json_finish(&w), 0);
	fclose(f);
	cr_expect(strstr(out, "host b (ranks 2,3): clock +50.0"), "view:\n%s", out);
	cr_expect(strstr(out, "\"host\":\"b\",\"ranks\":[2,3],\"reference\":false,\"offset_ms\":50.0"),
		  "json:\n%s", out);
	cr_expect(strstr(out, "\"host\":\"a\",\"ranks\":[0,1],\"reference\":true,\"offset_ms\":0.000"),
		  "json:\n%s", out);
	free(out);
	done();
}

/* steps of one group each (rt_group after its all-reduces): step
 * late_step holds late_n all-reduces and rank 2 enters it late_ns late
 * (late_step 0: every step, each of late_n); the others hold rest_n, rank
 * 2 entering them hair_ns after the others (0: as they do, by noise) */
static int64_t hair_ns;

static void groups(int steps, int late_step, int late_n, int rest_n, int64_t late_ns)
{
	uint32_t seq = 0;

	rig(4);
	shift = 0;
	for (int i = 0; i < 4; i++)
		init(i, COMM, 4, i);
	for (int s = 1; s <= steps; s++) {
		bool late = s == late_step || !late_step;
		int n = late ? late_n : rest_n;
		int64_t base = (int64_t)s * 100 * MS;

		for (int i = 0; i < 4; i++) {
			int64_t st = base + (i == 2 && late ? late_ns : (int64_t)noise(50000));

			if (i == 2 && !late && hair_ns)
				st = base + 50000 + hair_ns;
			at(i, st - 10000);
			for (int k = 1; k <= n; k++)
				OK(i, ncclAllReduce, i, RT_FN_comm_id, COMM, RT_FN_seq, U(seq + (uint32_t)k),
				   RT_FN_count, U(256));
			OK(i, rt_group, i, RT_FN_group, U(s), RT_FN_colls, U(n), RT_FN_p2ps, U(0));
			for (int k = 1; k <= n; k++)
				dev(i, COMM, seq + (uint32_t)k, RT_DEV_STARTED, st + k * 1000);
		}
		seq += (uint32_t)n;
	}
	rt_vw_model_finish(m);
}

/* 15 on-time steps of one all-reduce and one group of 20 entered 10 ms
 * late by rank 2: one late launch of 16 (counted per collective it was 20
 * of 35, and rank 2 was named) */
Test(groups, a_group_entered_late_once_is_late_once)
{
	groups(16, 8, 20, 1, 10 * MS);
	cr_assert(t->straggle);
	cr_expect_eq(t->straggle->colls, 16, "%llu launches judged, not 16",
		     (unsigned long long)t->straggle->colls);
	cr_expect(t->straggle->r[2].last < 8, "rank 2 last into %llu of 16",
		  (unsigned long long)t->straggle->r[2].last);
	cr_expect_null(straggler(), "rank 2 named for one late group");
	done();
}

/* a rank 20 ms late into every group of 20 is still named, once per group */
Test(groups, a_rank_late_into_every_group_is_named)
{
	const struct rt_vw_finding *f;

	groups(10, 0, 20, 20, 20 * MS);
	f = straggler();
	cr_assert(f, "no straggler named");
	cr_expect_eq(f->rank, 2);
	cr_expect_eq(t->straggle->colls, 10);
	cr_expect_eq(t->straggle->r[2].last, 10);
	cr_expect(fabs(t->straggle->r[2].median_ns - 20e6) <= 1e6, "lateness %.2f ms",
		  t->straggle->r[2].median_ns / 1e6);
	done();
}

/* rank 2 last into all 8 steps: 0.3 ms after the others in 7, 10 ms in
 * one group: 1.5 ms late on average, 0.3 typically (the median): no
 * straggler */
Test(groups, last_by_a_hair_and_once_by_much_is_no_straggler)
{
	hair_ns = 300000;
	groups(8, 4, 20, 1, 10 * MS);
	hair_ns = 0;
	cr_assert(t->straggle);
	cr_expect_eq(t->straggle->r[2].last, 8);
	cr_expect(t->straggle->r[2].late_ns > 1e6, "mean %.2f ms", t->straggle->r[2].late_ns / 1e6);
	cr_expect(t->straggle->r[2].median_ns < 0.5e6, "median %.2f ms", t->straggle->r[2].median_ns / 1e6);
	cr_expect_null(straggler(), "rank 2 named");
	done();
}
