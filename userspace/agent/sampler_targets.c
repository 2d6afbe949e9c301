/* sampler_targets — the Target set, the Run tokens and the job names of
 * the sampler (see sampler.h): the maps bpf/task.bpf.c decides with. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "userspace/agent/sampler.h"
#include "userspace/agent/sampler_internal.h"

int sampler_add_target(struct sampler *s, pid_t tgid, uint32_t target_id, uint32_t uid)
{
	struct target_info info = {
	    .target_id = target_id, .root_tgid = (__u32)tgid, .uid = uid};
	__u32 key = (__u32)tgid;

	if (tgid <= 0)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(s->task->maps.targets), &key, &info, BPF_ANY))
		return -errno;
	return 0;
}

int sampler_adopt_process(struct sampler *s, pid_t tgid, uint32_t target_id, uint32_t uid)
{
	struct target_info info = {
	    .target_id = target_id, .root_tgid = (__u32)tgid, .uid = uid};
	__u32 key = (__u32)tgid;

	if (tgid <= 0 || !target_id)
		return -EINVAL;
	if (bpf_map_update_elem(bpf_map__fd(s->task->maps.targets), &key, &info, BPF_NOEXIST))
		return errno == E2BIG ? -ENOSPC : -errno;
	return 0;
}

/* Deletes every entry of map fd (keys of key_size bytes) for which
 * doomed(value) says so; the number deleted, or -errno. One pass of keys
 * first: a walk that deletes as it goes may skip keys. */
static int delete_where(int fd, size_t key_size, size_t value_size,
			int (*doomed)(const void *value, uint32_t id), uint32_t id)
{
	char *keys = NULL, *grown, value[64], *prev = NULL;
	size_t n = 0, cap = 0, i;
	int deleted = 0;

	if (value_size > sizeof(value))
		return -EINVAL;
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			grown = realloc(keys, cap * key_size);
			if (!grown) {
				free(keys);
				return -ENOMEM;
			}
			keys = grown;
			prev = n ? keys + (n - 1) * key_size : NULL;
		}
		if (bpf_map_get_next_key(fd, prev, keys + n * key_size))
			break;
		prev = keys + n * key_size;
		n++;
	}
	for (i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, keys + i * key_size, value) || !doomed(value, id))
			continue;
		if (!bpf_map_delete_elem(fd, keys + i * key_size))
			deleted++;
	}
	free(keys);
	return deleted;
}

static int target_of(const void *value, uint32_t id)
{
	return ((const struct target_info *)value)->target_id == id;
}

static int token_of(const void *value, uint32_t id)
{
	return ((const struct token_info *)value)->target_id == id;
}

/* a Target's tokens and job names first (no new adoption), then its
 * processes, until a pass finds none: a fork under way when a pass read
 * its parent adds its child after that pass */
int sampler_remove_target(struct sampler *s, uint32_t target_id)
{
	int n, pass;

	n = delete_where(bpf_map__fd(s->task->maps.tokens), sizeof(struct token_key),
			 sizeof(struct token_info), token_of, target_id);
	if (n < 0)
		return n;
	s->n_tokens = s->n_tokens > (uint32_t)n ? s->n_tokens - (uint32_t)n : 0;
	s->task->bss->token_count = s->n_tokens;
	n = delete_where(bpf_map__fd(s->task->maps.jobs), sizeof(struct job_key),
			 sizeof(struct token_info), token_of, target_id);
	if (n < 0)
		return n;
	s->n_jobs = s->n_jobs > (uint32_t)n ? s->n_jobs - (uint32_t)n : 0;
	s->task->bss->job_count = s->n_jobs;
	if (!s->n_jobs)
		s->task->bss->job_env = 0;
	for (pass = 0; pass < 8; pass++) {
		n = delete_where(bpf_map__fd(s->task->maps.targets), sizeof(__u32),
				 sizeof(struct target_info), target_of, target_id);
		if (n <= 0)
			return n;
	}
	return 0;
}

static int token_key_of(const char *hex, struct token_key *key)
{
	size_t i;

	if (!hex || strlen(hex) != TOKEN_HEX_BYTES)
		return -EINVAL;
	for (i = 0; i < TOKEN_HEX_BYTES; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return -EINVAL;
	memcpy(key->hex, hex, TOKEN_HEX_BYTES);
	return 0;
}

int sampler_add_token(struct sampler *s, const char *token_hex32, uint32_t target_id,
		      uint32_t uid)
{
	struct token_info info = {.target_id = target_id, .uid = uid};
	struct token_key key;
	int err = token_key_of(token_hex32, &key);

	if (err)
		return err;
	if (s->n_tokens >= MAX_TOKENS)
		return -ENOSPC;
	if (bpf_map_update_elem(bpf_map__fd(s->task->maps.tokens), &key, &info, BPF_NOEXIST))
		return errno == E2BIG ? -ENOSPC : -errno;
	s->task->bss->token_count = ++s->n_tokens;
	return 0;
}

int sampler_remove_token(struct sampler *s, const char *token_hex32)
{
	struct token_key key;
	int err = token_key_of(token_hex32, &key);

	if (err)
		return err;
	if (bpf_map_delete_elem(bpf_map__fd(s->task->maps.tokens), &key))
		return -errno;
	if (s->n_tokens)
		s->n_tokens--;
	s->task->bss->token_count = s->n_tokens;
	return 0;
}

void sampler_job_key(uint32_t job_id, struct job_key *key)
{
	memset(key, 0, sizeof(*key));
	snprintf(key->name, sizeof(key->name), JOB_NAME_PREFIX "%u", job_id);
}

int sampler_add_job(struct sampler *s, uint32_t job_id, uint32_t target_id, uint32_t uid)
{
	struct token_info info = {.target_id = target_id, .uid = uid};
	struct job_key key;

	if (!job_id || !target_id)
		return -EINVAL;
	if (s->n_jobs >= MAX_JOBS)
		return -ENOSPC;
	sampler_job_key(job_id, &key);
	if (bpf_map_update_elem(bpf_map__fd(s->task->maps.jobs), &key, &info, BPF_NOEXIST))
		return errno == E2BIG ? -ENOSPC : -errno;
	s->task->bss->job_count = ++s->n_jobs;
	return 0;
}

int sampler_remove_job(struct sampler *s, uint32_t job_id, uint32_t target_id)
{
	int fd = bpf_map__fd(s->task->maps.jobs);
	struct token_info info;
	struct job_key key;

	sampler_job_key(job_id, &key);
	if (bpf_map_lookup_elem(fd, &key, &info))
		return -errno;
	if (info.target_id != target_id)
		return -ENOENT; /* another Target's */
	if (bpf_map_delete_elem(fd, &key))
		return -errno;
	if (s->n_jobs)
		s->n_jobs--;
	s->task->bss->job_count = s->n_jobs;
	if (!s->n_jobs)
		s->task->bss->job_env = 0;
	return 0;
}

int sampler_set_job_env(struct sampler *s, int on)
{
	s->task->bss->job_env = !!on;
	return 0;
}

int sampler_set_netns_only(struct sampler *s, int on)
{
	struct stat st;

	if (!on) {
		s->task->bss->token_netns = 0;
		return 0;
	}
	if (stat("/proc/self/ns/net", &st))
		return -errno;
	s->task->bss->token_netns = (__u32)st.st_ino;
	return 0;
}
