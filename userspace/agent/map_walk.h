/* map_walk — every entry of a BPF hash map, read with batch lookups
 * (MAP_WALK_BATCH entries per system call instead of two per entry: a
 * full map is read at every publish), one by one on kernels without batch
 * lookups of hash maps. Used by the MPI probes (call sites) and the
 * Component probes (running totals, Steps).
 */
#ifndef NUNATAK_AGENT_MAP_WALK_H
#define NUNATAK_AGENT_MAP_WALK_H

#include <stddef.h>

#define MAP_WALK_BATCH 1024

/* Calls fn(key, value, ctx) for every entry of map fd (keys of key_size
 * <= 64 bytes, values of value_size); fn may delete the entry it is
 * given. Stops at fn's first non-zero return and returns it; 0, -ENOMEM,
 * or -errno of a lookup that failed after some entries were given. */
int map_walk(int fd, size_t key_size, size_t value_size,
	     int (*fn)(const void *key, const void *value, void *ctx), void *ctx);

#endif
