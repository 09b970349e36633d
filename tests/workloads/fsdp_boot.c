/* SPDX-License-Identifier: MIT */
/* fsdp_boot.c - fsdp_mini's bootstrap: rank 0 serves the ncclUniqueIds over
 * TCP (MASTER_ADDR, MASTER_PORT), as torch's TCPStore would (wl_boot.c). */
#include "fsdp_mini.h"
#include "wl_boot.h"

void share_unique_ids(ncclUniqueId *ids, int n)
{
	if (wl_share_ids(ids, n, rank, world, "fsdp_mini") != 0)
		die(1);
}
