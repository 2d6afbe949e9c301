/* unwind_rules — the shared rule dictionary of unwind_table.h: an array
 * of distinct struct unwind_rule (index 0 the all-zero INVALID rule, as
 * bpf/unwind.h's unwind_rules map holds them) and an open-addressing hash
 * from rule to index, sized once for MAX_UNWIND_RULES so that interning is
 * O(1) and never rehashes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/unwind/unwind_table.h"

/* a power of two, at least twice MAX_UNWIND_RULES: probes stay short */
#define RULE_SLOTS_MIN (2u * MAX_UNWIND_RULES)

struct unwind_rules {
	struct unwind_rule *rules;
	size_t n, cap;
	uint32_t *slots; /* index + 1, 0: empty */
	uint32_t mask;
};

static uint32_t slot_count(void)
{
	uint32_t s = 1;

	while (s < RULE_SLOTS_MIN)
		s <<= 1;
	return s;
}

struct unwind_rules *unwind_rules__new(void)
{
	struct unwind_rules *r = calloc(1, sizeof(*r));
	uint32_t index;

	if (!r)
		return NULL;
	r->mask = slot_count() - 1;
	r->slots = calloc((size_t)r->mask + 1, sizeof(*r->slots));
	if (!r->slots)
		goto fail;
	/* index 0: the INVALID rule */
	if (unwind_rules_intern(r, &(struct unwind_rule){ 0 }, &index))
		goto fail;
	return r;
fail:
	unwind_rules__free(r);
	errno = ENOMEM;
	return NULL;
}

void unwind_rules__free(struct unwind_rules *r)
{
	if (!r)
		return;
	free(r->rules);
	free(r->slots);
	free(r);
}

static uint32_t rule_hash(const struct unwind_rule *k)
{
	uint64_t h = ((uint64_t)k->cfa_type << 56) ^ ((uint64_t)k->rbp_type << 48) ^
		     ((uint64_t)(uint32_t)k->cfa_offset << 16) ^ (uint64_t)(uint32_t)k->rbp_offset;

	h ^= (uint64_t)(uint32_t)k->rbp_offset << 37;
	h *= 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

static int rule_equal(const struct unwind_rule *a, const struct unwind_rule *b)
{
	return a->cfa_type == b->cfa_type && a->rbp_type == b->rbp_type &&
	       a->cfa_offset == b->cfa_offset && a->rbp_offset == b->rbp_offset;
}

int unwind_rules_intern(struct unwind_rules *r, const struct unwind_rule *rule, uint32_t *index)
{
	uint32_t s = rule_hash(rule) & r->mask;
	struct unwind_rule k = { .cfa_type = rule->cfa_type,
				 .rbp_type = rule->rbp_type,
				 .cfa_offset = rule->cfa_offset,
				 .rbp_offset = rule->rbp_offset }; /* pad always 0 */

	for (; r->slots[s]; s = (s + 1) & r->mask) {
		if (rule_equal(&r->rules[r->slots[s] - 1], &k)) {
			*index = r->slots[s] - 1;
			return 0;
		}
	}
	if (r->n >= MAX_UNWIND_RULES)
		return -ENOSPC;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct unwind_rule *v;

		if (cap > MAX_UNWIND_RULES)
			cap = MAX_UNWIND_RULES;
		v = realloc(r->rules, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->rules = v;
		r->cap = cap;
	}
	r->rules[r->n] = k;
	r->slots[s] = (uint32_t)r->n + 1;
	*index = (uint32_t)r->n++;
	return 0;
}

size_t unwind_rules_count(const struct unwind_rules *r)
{
	return r->n;
}

const struct unwind_rule *unwind_rules_get(const struct unwind_rules *r, uint32_t i)
{
	return i < r->n ? &r->rules[i] : NULL;
}
