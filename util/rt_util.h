/* SPDX-License-Identifier: MIT */
/*
 * rt_util.h - helpers every room shares, declared once (util/). Serves cli/
 * (run's output directory, bisect's work directories) and whoever needs the
 * same thing next: add it here rather than a second copy in a room.
 */
#ifndef RT_UTIL_H
#define RT_UTIL_H

#include <stdint.h>
#include <sys/types.h>

/* mkdir -p PATH: missing parents made with PARENT_MODE, PATH itself with
 * LEAF_MODE; an existing directory is fine. 0 or -errno. */
int rt_mkdir_p(const char *path, mode_t parent_mode, mode_t leaf_mode);

/* A size: digits, then an optional unit K, M, G, T (powers of 1024, either
 * case), then an optional "i" (after a unit only) and "B": "4096", "64M",
 * "512KiB", "1GB". 0 and *out, or -1 (signs, fractions, spaces, unknown
 * units, "4096i", overflow) leaving *out alone. */
int rt_parse_size(const char *s, uint64_t *out);

#endif
