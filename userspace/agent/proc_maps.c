/* proc_maps — see proc_maps.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/proc_maps.h"
#include "userspace/log/log.h"

/* Parses a hex (base 16) or decimal (base 10) number at *p, with at least one
 * digit and no sign, and advances *p past it. */
static int parse_u64(const char **p, int base, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int ndigits = 0;

	for (;; s++, ndigits++) {
		unsigned int d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned int)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned int)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned int)(*s - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / (uint64_t)base)
			return -EINVAL;
		v = v * (uint64_t)base + d;
	}
	if (!ndigits)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

static int expect_char(const char **p, char c)
{
	if (**p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

/* One or more blanks between fields. */
static int skip_blanks(const char **p)
{
	if (**p != ' ' && **p != '\t')
		return -EINVAL;
	while (**p == ' ' || **p == '\t')
		(*p)++;
	return 0;
}

int proc_maps_parse_line(const char *line, struct proc_map *out)
{
	static const char perm_chars[4][2] = {{'r', '-'}, {'w', '-'}, {'x', '-'}, {'p', 's'}};
	const char *p = line;
	uint64_t major, minor;
	size_t len;

	if (parse_u64(&p, 16, &out->start) || expect_char(&p, '-') ||
	    parse_u64(&p, 16, &out->end) || skip_blanks(&p))
		return -EINVAL;
	if (out->end < out->start)
		return -EINVAL;
	for (int i = 0; i < 4; i++) {
		if (p[i] != perm_chars[i][0] && p[i] != perm_chars[i][1])
			return -EINVAL;
		out->perms[i] = p[i];
	}
	out->perms[4] = '\0';
	p += 4;
	if (skip_blanks(&p) || parse_u64(&p, 16, &out->pgoff) || skip_blanks(&p) ||
	    parse_u64(&p, 16, &major) || expect_char(&p, ':') || parse_u64(&p, 16, &minor) ||
	    skip_blanks(&p) || parse_u64(&p, 10, &out->inode))
		return -EINVAL;
	if (major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	out->dev_major = (uint32_t)major;
	out->dev_minor = (uint32_t)minor;

	/* the path is everything after the blanks, spaces inside it included */
	if (*p && *p != '\n' && skip_blanks(&p))
		return -EINVAL;
	len = strcspn(p, "\n");
	if (p[len] == '\n' && p[len + 1] != '\0')
		return -EINVAL; /* more than one line */
	if (len >= sizeof(out->path))
		return -EINVAL;
	memcpy(out->path, p, len);
	out->path[len] = '\0';
	return 0;
}

int proc_maps_for_each_exec(int pid, int (*cb)(const struct proc_map *m, void *ctx), void *ctx)
{
	struct proc_map *m = NULL;
	char *line = NULL;
	size_t cap = 0;
	char path[64];
	size_t nlines = 0;
	FILE *fp;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	m = malloc(sizeof(*m));
	if (!m) {
		err = -ENOMEM;
		goto cleanup;
	}
	errno = 0;
	while (getline(&line, &cap, fp) > 0) {
		nlines++;
		err = proc_maps_parse_line(line, m);
		if (err) {
			pr_warn("cannot parse line of '%s': '%s'", path, line);
			goto cleanup;
		}
		if (m->perms[2] != 'x')
			continue;
		err = cb(m, ctx);
		if (err)
			goto cleanup;
		errno = 0;
	}
	if (ferror(fp))
		err = errno ? -errno : -EIO; /* ESRCH when the process exited mid-read */
	else if (!nlines)
		err = -ESRCH; /* exited (zombie) or a kernel thread: no user mapping at all */
cleanup:
	free(line);
	free(m);
	fclose(fp);
	return err;
}
