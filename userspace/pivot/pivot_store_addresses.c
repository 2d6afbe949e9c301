/* pivot_store_addresses — the addresses of one Batch into the pivot, each
 * looked up once: a Batch of deep Stacks names the same few hundred
 * addresses hundreds of thousands of times (a recursion 60 frames deep at
 * 10 kHz), and two SQLite statements per frame made storing it slower than
 * the Agent's wait for its acknowledgement. The cache lives as long as the
 * Batch's store (ids are the transaction's). */
#include <errno.h>
#include <stdlib.h>

#include "userspace/pivot/pivot.h"
#include "userspace/pivot/pivot_internal.h"

static size_t slot_of(uint32_t module, uint64_t offset, size_t cap)
{
	uint64_t h = (offset ^ ((uint64_t)module << 48)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17) & (cap - 1);
}

/* *slot for (module, offset): its id, or 0 where it goes */
static struct address_slot *cache_find(struct store *s, uint32_t module, uint64_t offset)
{
	size_t i = slot_of(module, offset, s->acache_cap);

	while (s->acache[i].id &&
	       (s->acache[i].module != module || s->acache[i].offset != offset))
		i = (i + 1) & (s->acache_cap - 1);
	return &s->acache[i];
}

static int cache_grow(struct store *s)
{
	struct address_slot *old = s->acache;
	size_t cap = s->acache_cap, i;

	s->acache_cap = cap ? cap * 2 : 1024;
	s->acache = calloc(s->acache_cap, sizeof(*s->acache));
	if (!s->acache) {
		s->acache = old;
		s->acache_cap = cap;
		return -ENOMEM;
	}
	for (i = 0; i < cap; i++)
		if (old[i].id)
			*cache_find(s, old[i].module, old[i].offset) = old[i];
	free(old);
	return 0;
}

int store_address_cached(struct store *s, uint32_t module, uint64_t offset, int64_t *id)
{
	struct address_slot *slot;
	int err;

	if (s->acache_n * 2 >= s->acache_cap && cache_grow(s))
		return store_address(s, module, offset, id); /* no memory: uncached */
	slot = cache_find(s, module, offset);
	if (slot->id) {
		*id = slot->id;
		return 0;
	}
	err = store_address(s, module, offset, id);
	if (err)
		return err;
	*slot = (struct address_slot){ module, offset, *id };
	s->acache_n++;
	return 0;
}

void store_address_cache_release(struct store *s)
{
	free(s->acache);
	s->acache = NULL;
	s->acache_cap = s->acache_n = 0;
}
