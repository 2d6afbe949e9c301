/* rank_identity — see rank_identity.h for the contract. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/launch/rank_identity.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ENVIRON_READ_CHUNK 16384

/* a family: its RANK variable, then up to two candidates for size and local rank */
struct rank_family {
	const char *family;
	const char *rank;
	const char *size[2];
	const char *local[2];
};

static const struct rank_family rank_families[] = {
    {"OMPI_COMM_WORLD",
     "OMPI_COMM_WORLD_RANK",
     {"OMPI_COMM_WORLD_SIZE"},
     {"OMPI_COMM_WORLD_LOCAL_RANK"}},
    {"MV2_COMM_WORLD",
     "MV2_COMM_WORLD_RANK",
     {"MV2_COMM_WORLD_SIZE"},
     {"MV2_COMM_WORLD_LOCAL_RANK"}},
    {"PMI", "PMI_RANK", {"PMI_SIZE"}, {"MPI_LOCALRANKID"}},
    {"PMIX",
     "PMIX_RANK",
     {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"},
     {"PMIX_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}},
    {"PALS", "PALS_RANKID", {"PALS_SIZE"}, {"PALS_LOCAL_RANKID"}},
    {"FLUX_TASK", "FLUX_TASK_RANK", {"FLUX_JOB_SIZE"}, {"FLUX_TASK_LOCAL_ID"}},
    {"SLURM", "SLURM_PROCID", {"SLURM_NTASKS"}, {"SLURM_LOCALID"}},
};

/*
 * Value of name in the block, or NULL; *vlen gets its length. The block
 * may lack its final NUL, so nothing here relies on one.
 */
static const char *environ_lookup(const char *block, size_t len, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name), pos = 0;

	while (pos < len) {
		const char *entry = block + pos;
		const char *nul = memchr(entry, '\0', len - pos);
		size_t elen = nul ? (size_t)(nul - entry) : len - pos;

		if (elen > nlen && entry[nlen] == '=' && !memcmp(entry, name, nlen)) {
			*vlen = elen - nlen - 1;
			return entry + nlen + 1;
		}
		pos += elen + 1;
	}
	return NULL;
}

/* a non-negative decimal int, digits only; -1 when absent or malformed */
static int environ_int(const char *block, size_t len, const char *name)
{
	size_t vlen;
	const char *v = name ? environ_lookup(block, len, name, &vlen) : NULL;
	long long n = 0;

	if (!v || !vlen)
		return -1;
	for (size_t k = 0; k < vlen; k++) {
		if (v[k] < '0' || v[k] > '9')
			return -1;
		n = n * 10 + (v[k] - '0');
		if (n > INT_MAX)
			return -1;
	}
	return (int)n;
}

/* the first of two candidate variables that holds a valid number */
static int environ_first_int(const char *block, size_t len, const char *const names[2])
{
	int v = environ_int(block, len, names[0]);

	return v >= 0 ? v : environ_int(block, len, names[1]);
}

static void rank_identity_none(struct rank_identity *out)
{
	out->has_rank = 0;
	out->rank = -1;
	out->world_size = -1;
	out->local_rank = -1;
	out->family = NULL;
}

int rank_identity_from_environ(const char *environ_block, size_t len, struct rank_identity *out)
{
	if (!out)
		return -EINVAL;
	rank_identity_none(out);
	if (!environ_block && len)
		return -EINVAL;

	for (size_t k = 0; k < ARRAY_SIZE(rank_families); k++) {
		const struct rank_family *f = &rank_families[k];
		int rank = environ_int(environ_block, len, f->rank);

		if (rank < 0)
			continue;
		out->has_rank = 1;
		out->rank = rank;
		out->family = f->family;
		out->world_size = environ_first_int(environ_block, len, f->size);
		if (out->world_size <= rank) /* 0, or contradicting the rank */
			out->world_size = -1;
		out->local_rank = environ_first_int(environ_block, len, f->local);
		break;
	}
	return 0;
}

int rank_identity_read(int pid, struct rank_identity *out)
{
	char path[64];
	char *buf = NULL, *bigger;
	size_t len = 0, cap = 0;
	int fd, err = 0;

	if (!out)
		return -EINVAL;
	rank_identity_none(out);
	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n;

		if (cap - len < ENVIRON_READ_CHUNK) {
			bigger = realloc(buf, cap + ENVIRON_READ_CHUNK);
			if (!bigger) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = bigger;
			cap += ENVIRON_READ_CHUNK;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}
		if (n == 0)
			break;
		len += n;
	}
	err = rank_identity_from_environ(buf, len, out);
cleanup:
	free(buf);
	close(fd);
	return err;
}
