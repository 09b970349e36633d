/* SPDX-License-Identifier: MIT */
/* fuzz_env.c - libFuzzer target: arbitrary bytes as the value of every
 * RANKTRACE_* variable (format/env.c's rt_env_check, each kind's parser,
 * RANKTRACE_TEST_HOST's RANKS=HOST:SHIFT through rt_env_host_at for ranks 0
 * to 3). Whatever goes in: a valid value or -EINVAL with a reason, never a
 * crash; a valid RANKS=HOST:SHIFT names a host of at most 63 safe bytes and
 * a shift of at most an hour. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), why[200], host[64];
	struct rt_env_val v;
	int64_t shift;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (int id = 0; id < RT_ENV_COUNT; id++) {
		int r = rt_env_check((enum rt_env)id, s, &v, why, sizeof(why));

		if (r != 0 && r != 1 && r != -EINVAL)
			abort();
		if (r == -EINVAL && !why[0])
			abort(); /* a refusal says why */
	}
	for (int rank = 0; rank < 4; rank++) {
		host[0] = '\0';
		shift = 0;
		if (rt_env_host_at(s, rank, host, sizeof(host), &shift) == 1 &&
		    (!host[0] || strlen(host) > 63 || strspn(host, "abcdefghijklmnopqrstuvwxyz"
		     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(host) ||
		     shift > 3600000000000ll || shift < -3600000000000ll))
			abort();
	}
	free(s);
	return 0;
}
