/* attribution_kernel — the "[kernel]" pseudo module's offsets named from
 * the symbols its Agents sent (attribution.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/attribution/attribution.h"
#include "userspace/attribution/own_code.h"

int attribution_is_kernel(const char *identity)
{
	size_t len = strlen(ATTRIBUTION_KERNEL_MODULE);

	return identity && !strncmp(identity, ATTRIBUTION_KERNEL_MODULE, len) &&
	       (identity[len] == '\0' || identity[len] == ':');
}

/* the symbol covering offset, or NULL: the last start <= offset, if its
 * extent reaches offset */
static const struct pseudo_symbol *covering(const struct pseudo_symbol *syms, size_t n,
					    uint64_t offset)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (syms[mid].start <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || offset - syms[lo - 1].start >= syms[lo - 1].size)
		return NULL;
	return &syms[lo - 1];
}

static int attribute_one(struct attributed_address *a, const struct pseudo_symbol *sym,
			 uint64_t offset)
{
	memset(a, 0, sizeof(*a));
	a->address = offset;
	if (sym) {
		char own[128];

		a->level = RESOLUTION_FUNCTION;
		a->function_start = sym->start;
		a->function = strdup(own_code_bpf_program(sym->name, own, sizeof(own)) == 1
					 ? own
					 : sym->name);
	} else {
		a->level = RESOLUTION_UNRESOLVED;
		a->function_start = ATTRIBUTION_KERNEL_UNNAMED_START;
		a->function = strdup(ATTRIBUTION_KERNEL_NAME);
	}
	return a->function ? 0 : -ENOMEM;
}

int attribution_attribute_kernel(const struct pseudo_symbol *syms, size_t n_syms,
				 const uint64_t *addrs, size_t n, struct attributed_address *out)
{
	size_t i;
	int err = 0;

	if ((n && (!addrs || !out)) || (n_syms && !syms))
		return -EINVAL;
	for (i = 0; i < n_syms; i++)
		if (!syms[i].name || (i && syms[i].start < syms[i - 1].start))
			return -EINVAL;
	for (i = 0; i < n; i++) {
		int e = attribute_one(&out[i], covering(syms, n_syms, addrs[i]), addrs[i]);

		if (e && !err)
			err = e;
	}
	return err;
}
