/* map_walk — see map_walk.h. */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/map_walk.h"

/* one key at a time, the next one read before fn may delete the current */
static int walk_one_by_one(int fd, size_t key_size, char *key, char *next, char *value,
			   int (*fn)(const void *key, const void *value, void *ctx), void *ctx)
{
	int have = !bpf_map_get_next_key(fd, NULL, next), err = 0;

	while (have && !err) {
		memcpy(key, next, key_size);
		have = !bpf_map_get_next_key(fd, key, next);
		if (!bpf_map_lookup_elem(fd, key, value))
			err = fn(key, value, ctx);
	}
	return err;
}

int map_walk(int fd, size_t key_size, size_t value_size,
	     int (*fn)(const void *key, const void *value, void *ctx), void *ctx)
{
	char *keys = malloc(MAP_WALK_BATCH * key_size),
	     *values = malloc(MAP_WALK_BATCH * value_size);
	char *key = malloc(key_size), *next = malloc(key_size), token_in[64], token_out[64];
	int err = 0, last = 0, first = 1;
	__u32 count, i;

	if (!keys || !values || !key || !next || key_size > sizeof(token_in)) {
		err = -ENOMEM;
		goto out;
	}
	while (!last && !err) {
		count = MAP_WALK_BATCH;
		if (bpf_map_lookup_batch(fd, first ? NULL : token_in, token_out, keys, values,
					 &count, NULL)) {
			if (errno != ENOENT) {
				/* none read yet: the old way; else what was read stands */
				err = first ? walk_one_by_one(fd, key_size, key, next, values, fn,
							      ctx)
					    : -errno;
				break;
			}
			last = 1;
		}
		first = 0;
		memcpy(token_in, token_out, key_size);
		for (i = 0; i < count && !err; i++)
			err = fn(keys + i * key_size, values + i * value_size, ctx);
	}
out:
	free(keys);
	free(values);
	free(key);
	free(next);
	return err;
}
