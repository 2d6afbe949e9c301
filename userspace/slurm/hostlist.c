/* hostlist — slurm_job_hostlist_expand() of slurm_job.h in plain C: no
 * libslurm call, so any thread may expand a hostlist while another is
 * inside libslurm (the Aggregator's serving thread at a START, its worker
 * in a lookup). Slurm's syntax as its hostlist code reads it (the tests
 * compare both): items joined by ','; in an item, literal text and groups
 * "[R,R...]" of ranges R = "N" or "N-M" (N <= M), numbers printed at the
 * width of N as written ("n[08-10]": n08 n09 n10), nothing after the last
 * group (Slurm 22.05 refuses "n[1-2]-ib"); several groups expand in
 * Slurm's order, the last fastest, then the first, the second...
 * ("x[1-2]y[3-4]": x1y3 x1y4 x2y3 x2y4); order and duplicates kept, empty
 * items skipped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/slurm/slurm_job.h"

/* Slurm's limit for one range; and ours for a whole list */
#define MAX_RANGE_HOSTS 65536
#define MAX_HOSTS 262144
#define NODE_NAME_MAX 255

struct expansion {
	char **list;
	size_t n, cap;
};

void slurm_job_nodes_free(char **nodes, size_t n)
{
	size_t i;

	for (i = 0; nodes && i < n; i++)
		free(nodes[i]);
	free(nodes);
}

static int node_name_valid(const char *s, size_t len)
{
	size_t i;

	if (!len || len > NODE_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
			    s[i]))
			return 0;
	return 1;
}

static int push_name(struct expansion *out, const char *name, size_t len)
{
	char **grown;

	if (!node_name_valid(name, len) || out->n >= MAX_HOSTS)
		return -EINVAL;
	if (out->n + 1 >= out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 8;

		grown = realloc(out->list, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		out->list = grown;
		out->cap = cap;
	}
	out->list[out->n] = strndup(name, len);
	if (!out->list[out->n])
		return -ENOMEM;
	out->list[++out->n] = NULL;
	return 0;
}

/* One range of a group at *p: lo, hi and the width of lo as written;
 * *p moves past it. 0 or -EINVAL. */
static int parse_range(const char **p, unsigned long *lo, unsigned long *hi, int *width)
{
	const char *s = *p;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	*lo = strtoul(s, &end, 10);
	*width = (int)(end - s);
	*hi = *lo;
	if (*end == '-') {
		if (end[1] < '0' || end[1] > '9')
			return -EINVAL;
		*hi = strtoul(end + 1, &end, 10);
	}
	if (*hi < *lo || *hi - *lo >= MAX_RANGE_HOSTS || *width > 20)
		return -EINVAL;
	*p = end;
	return 0;
}

#define MAX_GROUPS 8

/* One "[...]" of an item: the literal before it, its ranges */
struct group {
	const char *literal;
	size_t literal_len;
	const char *body; /* after '[', up to the ']' */
};

/* The value of group g at step k of its own count (ranges in order) into
 * buf; the group's count when buf is NULL. */
static unsigned long group_value(const struct group *g, unsigned long k, char *buf, size_t len)
{
	unsigned long lo, hi, count = 0;
	const char *p = g->body;
	int width;

	while (!parse_range(&p, &lo, &hi, &width)) {
		if (buf && k < count + (hi - lo + 1)) {
			snprintf(buf, len, "%0*lu", width, lo + (k - count));
			return 0;
		}
		count += hi - lo + 1;
		if (*p != ',')
			break;
		p++;
	}
	return count;
}

/* The groups of item[0..len): 0 and *n, or -EINVAL (a ']' outside a
 * group, a bad range, more than MAX_GROUPS, text after the last group:
 * Slurm 22.05 refuses "n[1-2]-ib" too) */
static int parse_item(const char *item, size_t len, struct group *groups, size_t *n,
		      const char **tail)
{
	const char *p = item, *end = item + len, *lb, *rb, *r;
	unsigned long lo, hi;
	int width;

	*n = 0;
	while ((lb = memchr(p, '[', end - p))) {
		rb = memchr(lb, ']', end - lb);
		if (!rb || memchr(p, ']', lb - p) || *n == MAX_GROUPS)
			return -EINVAL;
		for (r = lb + 1;; r++) {
			if (parse_range(&r, &lo, &hi, &width) || (r != rb && *r != ','))
				return -EINVAL;
			if (r == rb)
				break;
		}
		groups[*n] = (struct group){.literal = p, .literal_len = lb - p, .body = lb + 1};
		(*n)++;
		p = rb + 1;
	}
	if (memchr(p, ']', end - p) || (*n && p != end))
		return -EINVAL;
	*tail = p;
	return 0;
}

/* Every name of item[0..len), in Slurm's order: the last group fastest,
 * then the first, the second... (the next-to-last slowest) */
static int expand_item(const char *item, size_t len, struct expansion *out)
{
	unsigned long count[MAX_GROUPS], idx[MAX_GROUPS] = {0};
	struct group groups[MAX_GROUPS];
	char name[NODE_NAME_MAX + 1], value[32];
	size_t n, i, nlen, order[MAX_GROUPS];
	const char *tail;
	int ret = parse_item(item, len, groups, &n, &tail);

	if (ret)
		return ret;
	if (!n)
		return push_name(out, item, len);
	for (i = 0; i < n; i++) {
		count[i] = group_value(&groups[i], 0, NULL, 0);
		order[i] = i ? i - 1 : n - 1; /* order[0]: the fastest */
	}
	for (;;) {
		for (nlen = 0, i = 0; i < n; i++) {
			group_value(&groups[i], idx[i], value, sizeof(value));
			if (nlen + groups[i].literal_len + strlen(value) > NODE_NAME_MAX)
				return -EINVAL;
			memcpy(name + nlen, groups[i].literal, groups[i].literal_len);
			nlen += groups[i].literal_len;
			memcpy(name + nlen, value, strlen(value));
			nlen += strlen(value);
		}
		ret = push_name(out, name, nlen);
		if (ret)
			return ret;
		for (i = 0; i < n && ++idx[order[i]] == count[order[i]]; i++)
			idx[order[i]] = 0;
		if (i == n)
			return 0;
	}
}

int slurm_job_hostlist_expand(const char *hostlist, char ***nodes, size_t *n)
{
	struct expansion out = {0};
	const char *item, *p;
	int depth = 0, ret = 0;

	if (!nodes || !n)
		return -EINVAL;
	*nodes = NULL;
	*n = 0;
	if (!hostlist)
		return -EINVAL;
	for (item = p = hostlist; !ret; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (depth < 0 || depth > 1)
			ret = -EINVAL;
		else if (*p == '\0' || (*p == ',' && !depth)) {
			if (p > item)
				ret = expand_item(item, p - item, &out);
			item = p + 1;
			if (*p == '\0')
				break;
		}
	}
	if (!ret && (depth || !out.n))
		ret = -EINVAL;
	if (ret) {
		slurm_job_nodes_free(out.list, out.n);
		return ret;
	}
	*nodes = out.list;
	*n = out.n;
	return 0;
}
