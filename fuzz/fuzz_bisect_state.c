/* SPDX-License-Identifier: MIT */
/* fuzz_bisect_state.c - libFuzzer target: `ranktrace bisect --resume` reading
 * a state file (BISECT_DIR/.bisect/state) of arbitrary bytes. It must refuse
 * or load it without a crash, overflow or leak; a loaded state is saved again
 * (the writer's escaping must round-trip whatever the reader accepted). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bisect.h"

static char dir[512];

static int setup(void)
{
	char side[sizeof(dir) + 16];

	snprintf(dir, sizeof(dir) - 16, "%s/rt-fuzz-bisect-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(side, sizeof(side), "%s/.bisect", dir);
	return mkdir(side, 0700);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready = -2;
	char path[sizeof(dir) + 32];
	struct bs_ctx x;
	char **argv = NULL;
	int argc = 0;
	FILE *f;

	if (ready == -2)
		ready = setup();
	if (ready != 0)
		return 0;
	snprintf(path, sizeof(path), "%s/.bisect/state", dir);
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	memset(&x, 0, sizeof(x));
	snprintf(x.dir, sizeof(x.dir), "%s", dir);
	if (bs_state_load(&x, &argv, &argc) == 0) {
		x.argv = argv;
		x.argc = argc;
		bs_state_save(&x);
	}
	for (int i = 0; argv && i < argc; i++)
		free(argv[i]);
	free(argv);
	free(x.c);
	return 0;
}
