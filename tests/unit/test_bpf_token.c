/* test_bpf_token — the exec decisions of the task program, run in the
 * kernel through bpf_prog_test_run_opts (STYLE.md 9): a process of a
 * user's Target that execs with credentials the user could not debug
 * (another uid in any of the four, a setgid gid, capabilities, not
 * dumpable as the user) leaves it, the reader of those credentials sees
 * the calling task's, and the Run token is found in a new process'
 * environment and adopts it only for its owner (and network namespace).
 *
 * bpf/selftest_token.bpf.c wraps the helpers of bpf/target.bpf.h and
 * bpf/token.bpf.h; the environment scan reads user memory of the calling
 * task, so the test lays out an initial stack (argc, argv[], NULL,
 * envp[], NULL) in its own memory and hands its address over. The real
 * exec of a setuid program and a real adoption are in
 * tests/unit/test_sampler_targets.c.
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf/selftest_token.h"
#include "bpf/selftest_token.skel.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/test_helpers.h"

#define TOKEN "0123456789abcdef0123456789abcdef"
#define OWNER 4242

static struct selftest_token_bpf *skel;
static const char *why_not;

static int setup(void **state)
{
	int err;

	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	skel = selftest_token_bpf__open();
	if (!skel)
		return -1;
	err = selftest_token_bpf__load(skel);
	if (err) {
		print_error("loading bpf/selftest_token.bpf.c failed: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	selftest_token_bpf__destroy(skel);
	return 0;
}

static void empty_map(int fd, size_t key_size)
{
	char key[64], next[64];

	assert_true(key_size <= sizeof(key));
	while (!bpf_map_get_next_key(fd, NULL, next)) {
		memcpy(key, next, key_size);
		assert_int_equal(bpf_map_delete_elem(fd, key), 0);
	}
}

static int reset(void **state)
{
	(void)state;
	if (!skel)
		return 0;
	empty_map(bpf_map__fd(skel->maps.targets), sizeof(__u32));
	empty_map(bpf_map__fd(skel->maps.tokens), sizeof(struct token_key));
	return 0;
}

static struct selftest_token_args run(struct selftest_token_args a)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	a.ret = -99;
	skel->bss->token_args = a;
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.selftest_token), &opts),
			 0);
	assert_int_equal(opts.retval, 0);
	return skel->bss->token_args;
}

static void add_target(__u32 tgid, __u32 target_id, __u32 uid)
{
	struct target_info info = {.target_id = target_id, .root_tgid = tgid, .uid = uid};

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.targets), &tgid, &info, 0), 0);
}

static int in_target(__u32 tgid)
{
	struct target_info info;

	return !bpf_map_lookup_elem(bpf_map__fd(skel->maps.targets), &tgid, &info);
}

/* what a process of uid (gid the same) that the user may debug has */
static struct target_cred user_cred(__u32 uid)
{
	return (struct target_cred){.uid = uid, .euid = uid, .suid = uid, .fsuid = uid,
				    .gid = uid, .egid = uid, .sgid = uid, .fsgid = uid,
				    .dumpable = TARGET_DUMP_USER};
}

static struct selftest_token_args exec_cred(__u32 tgid, struct target_cred c)
{
	return run((struct selftest_token_args){.op = SELFTEST_EXEC, .tgid = tgid, .cred = c});
}

static struct selftest_token_args exec_as(__u32 tgid, __u32 uid, __u32 euid)
{
	struct target_cred c = user_cred(uid);

	c.euid = c.fsuid = euid;
	return exec_cred(tgid, c);
}

static void test_exec_stays_or_leaves(void **state)
{
	struct selftest_token_args a;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_target(100, 7, OWNER);
	add_target(200, 8, TARGET_UID_ANY);
	/* the owner's credentials: a new image */
	a = exec_as(100, OWNER, OWNER);
	assert_int_equal(a.ret, TARGET_EXEC_STAYS);
	assert_int_equal(a.info.exec_seq, 1);
	assert_int_equal(a.info.target_id, 7);
	/* a root Target keeps any process, setuid or not */
	a = exec_as(200, 1000, 0);
	assert_int_equal(a.ret, TARGET_EXEC_STAYS);
	assert_int_equal(a.info.exec_seq, 1);
	/* not a Target process */
	assert_int_equal(exec_as(300, OWNER, OWNER).ret, TARGET_EXEC_OUTSIDE);
	/* setuid root (euid 0): leaves, with its entry as it was */
	a = exec_as(100, OWNER, 0);
	assert_int_equal(a.ret, TARGET_EXEC_LEFT);
	assert_int_equal(a.info.target_id, 7);
	assert_int_equal(a.info.exec_seq, 1);
	assert_false(in_target(100));
	assert_int_equal(exec_as(100, OWNER, OWNER).ret, TARGET_EXEC_OUTSIDE);
	/* another real uid (a setuid program that also set its real uid) */
	add_target(101, 7, OWNER);
	assert_int_equal(exec_as(101, 0, OWNER).ret, TARGET_EXEC_LEFT);
	assert_false(in_target(101));
	assert_true(in_target(200));
}

/* red F2: what keeps ruid == euid == the owner and still is not the
 * owner's to debug leaves at its exec; a root Target keeps it */
static void test_exec_leaves_what_the_owner_cannot_debug(void **state)
{
	struct target_cred cases[6];
	int i;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	for (i = 0; i < 6; i++)
		cases[i] = user_cred(OWNER);
	cases[0].egid = cases[0].sgid = cases[0].fsgid = 42; /* a setgid program */
	cases[1].suid = 0;		/* saved uid root: a dropped setuid program */
	cases[2].fsuid = 0;
	cases[3].dumpable = 0;		/* made non-dumpable by the kernel at exec */
	cases[4].dumpable = 2;		/* suid_dumpable=2: dumpable by root only */
	cases[5].caps = 1;		/* a file-capability program */
	for (i = 0; i < 6; i++) {
		add_target(100, 7, OWNER);
		add_target(200, 8, TARGET_UID_ANY);
		assert_int_equal(exec_cred(100, cases[i]).ret, TARGET_EXEC_LEFT);
		assert_false(in_target(100));
		assert_int_equal(exec_cred(200, cases[i]).ret, TARGET_EXEC_STAYS);
	}
	/* the owner with another group of theirs (newgrp): stays */
	cases[0] = user_cred(OWNER);
	cases[0].gid = cases[0].egid = cases[0].sgid = cases[0].fsgid = 42;
	add_target(100, 7, OWNER);
	assert_int_equal(exec_cred(100, cases[0]).ret, TARGET_EXEC_STAYS);
}

static struct selftest_token_args cred_read(void)
{
	return run((struct selftest_token_args){.op = SELFTEST_CRED_READ});
}

/* the reader on this kernel: this process' ids, its capabilities (root),
 * and its dumpability as prctl sets it (mm->flags) */
static void test_cred_read(void **state)
{
	struct selftest_token_args a;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	a = cred_read();
	assert_int_equal(a.ret, 0);
	assert_int_equal(a.cred.uid, getuid());
	assert_int_equal(a.cred.euid, geteuid());
	assert_int_equal(a.cred.egid, getegid());
	assert_int_equal(a.cred.dumpable, TARGET_DUMP_USER);
	assert_int_equal(a.cred.caps, 1); /* root holds capabilities */
	assert_int_equal(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), 0);
	a = cred_read();
	assert_int_equal(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	assert_int_equal(a.cred.dumpable, 0);
	assert_int_equal(cred_read().cred.dumpable, TARGET_DUMP_USER);
}

/* an initial stack as exec lays it out, in this process' memory */
struct fake_stack {
	uint64_t words[2 + 8 + 8200];
};

static uint64_t lay_out(struct fake_stack *st, char **argv, int argc, char **envp, int envc)
{
	int i, w = 0;

	st->words[w++] = (uint64_t)argc;
	for (i = 0; i < argc; i++)
		st->words[w++] = (uint64_t)(uintptr_t)argv[i];
	st->words[w++] = 0;
	for (i = 0; i < envc; i++)
		st->words[w++] = (uint64_t)(uintptr_t)envp[i];
	st->words[w++] = 0;
	return (uint64_t)(uintptr_t)st->words;
}

static struct selftest_token_args env_find(uint64_t start_stack)
{
	return run((struct selftest_token_args){.op = SELFTEST_ENV_FIND,
						.start_stack = start_stack});
}

static void test_env_find(void **state)
{
	static struct fake_stack st;
	static char vars[TOKEN_ENV_MAX + 8][32];
	char *argv[] = {"app", "-x", "input"};
	char *envp[TOKEN_ENV_MAX + 8];
	char good[] = "NUNATAK_RUN=" TOKEN;
	char longer[] = "NUNATAK_RUN=" TOKEN "0";
	char shorter[] = "NUNATAK_RUN=0123456789abcdef";
	char other[] = "NUNATAK_RUX=" TOKEN;
	struct selftest_token_args a;
	int i;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	for (i = 0; i < TOKEN_ENV_MAX + 8; i++) {
		snprintf(vars[i], sizeof(vars[i]), "VAR_%d=value", i);
		envp[i] = vars[i];
	}
	/* near variables that look like it, at the end of 200 others */
	envp[196] = longer;
	envp[197] = shorter;
	envp[198] = other;
	envp[199] = good;
	a = env_find(lay_out(&st, argv, 3, envp, 200));
	assert_int_equal(a.ret, 1);
	assert_memory_equal(a.key.hex, TOKEN, TOKEN_HEX_BYTES);
	/* the look-alikes alone: none */
	assert_int_equal(env_find(lay_out(&st, argv, 3, envp, 199)).ret, 0);
	/* no environment at all, no arguments */
	assert_int_equal(env_find(lay_out(&st, argv, 0, envp, 0)).ret, 0);
	envp[0] = good;
	assert_int_equal(env_find(lay_out(&st, argv, 0, envp, 1)).ret, 1);
	for (i = 0; i < 200; i++)
		envp[i] = vars[i];
	/* the last string scanned, and the first one beyond */
	envp[TOKEN_ENV_MAX - 1] = good;
	assert_int_equal(env_find(lay_out(&st, argv, 1, envp, TOKEN_ENV_MAX + 8)).ret, 1);
	envp[TOKEN_ENV_MAX - 1] = vars[TOKEN_ENV_MAX - 1];
	envp[TOKEN_ENV_MAX] = good;
	assert_int_equal(env_find(lay_out(&st, argv, 1, envp, TOKEN_ENV_MAX + 8)).ret, 0);
	/* unreadable or absurd stacks: none, no fault */
	assert_int_equal(env_find(0).ret, 0);
	assert_int_equal(env_find(8).ret, 0);
	st.words[0] = 1ull << 40;
	assert_int_equal(env_find((uint64_t)(uintptr_t)st.words).ret, 0);
}

static void add_token(const char *hex, __u32 target_id, __u32 uid)
{
	struct token_info info = {.target_id = target_id, .uid = uid};
	struct token_key key;

	memcpy(key.hex, hex, TOKEN_HEX_BYTES);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.tokens), &key, &info, 0), 0);
}

static struct selftest_token_args adopts_cred(const char *hex, struct target_cred c,
					      __u32 netns, __u32 want_netns)
{
	struct selftest_token_args a = {.op = SELFTEST_ADOPTS,
					.tgid = 555,
					.cred = c,
					.netns = netns,
					.want_netns = want_netns};

	memcpy(a.key.hex, hex, TOKEN_HEX_BYTES);
	memset(&a.info, 0xa5, sizeof(a.info));
	return run(a);
}

static struct selftest_token_args adopts(const char *hex, __u32 uid, __u32 euid, __u32 netns,
					 __u32 want_netns)
{
	struct target_cred c = user_cred(uid);

	c.euid = c.fsuid = euid;
	return adopts_cred(hex, c, netns, want_netns);
}

static void test_token_adopts(void **state)
{
	const char *root_token = "ffffffffffffffffffffffffffffffff";
	struct selftest_token_args a;
	struct target_cred c;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	add_token(TOKEN, 9, OWNER);
	add_token(root_token, 10, TARGET_UID_ANY);
	a = adopts(TOKEN, OWNER, OWNER, 1, 0);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.info.target_id, 9);
	assert_int_equal(a.info.root_tgid, 555);
	assert_int_equal(a.info.exec_seq, 0);
	assert_int_equal(a.info.uid, OWNER);
	/* another user, or the owner's program made setuid */
	assert_int_equal(adopts(TOKEN, OWNER + 1, OWNER + 1, 1, 0).ret, 0);
	assert_int_equal(adopts(TOKEN, OWNER, 0, 1, 0).ret, 0);
	assert_int_equal(adopts(TOKEN, 0, OWNER, 1, 0).ret, 0);
	/* red F2: setgid, saved uid root, not dumpable, capabilities */
	c = user_cred(OWNER);
	c.egid = c.sgid = c.fsgid = 42;
	assert_int_equal(adopts_cred(TOKEN, c, 1, 0).ret, 0);
	c = user_cred(OWNER);
	c.suid = 0;
	assert_int_equal(adopts_cred(TOKEN, c, 1, 0).ret, 0);
	c = user_cred(OWNER);
	c.dumpable = 0;
	assert_int_equal(adopts_cred(TOKEN, c, 1, 0).ret, 0);
	c = user_cred(OWNER);
	c.caps = 1;
	assert_int_equal(adopts_cred(TOKEN, c, 1, 0).ret, 0);
	assert_int_equal(adopts_cred(root_token, c, 1, 0).ret, 0);
	/* an unknown token */
	assert_int_equal(adopts("0123456789abcdef0123456789abcdee", OWNER, OWNER, 1, 0).ret, 0);
	/* red F9: a root Run's token adopts root's processes (capabilities and
	 * all), not a user's, nor a setuid-root program of a user */
	c = user_cred(0);
	c.caps = 1;
	a = adopts_cred(root_token, c, 1, 0);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.info.uid, TARGET_UID_ANY);
	assert_int_equal(adopts(root_token, 1000, 1000, 1, 0).ret, 0);
	assert_int_equal(adopts(root_token, 1000, 0, 1, 0).ret, 0);
	c.suid = 1000;
	assert_int_equal(adopts_cred(root_token, c, 1, 0).ret, 0);
	/* the Agent's network namespace only */
	assert_int_equal(adopts(TOKEN, OWNER, OWNER, 77, 77).ret, 1);
	assert_int_equal(adopts(TOKEN, OWNER, OWNER, 78, 77).ret, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_exec_stays_or_leaves, reset),
	    cmocka_unit_test_setup(test_exec_leaves_what_the_owner_cannot_debug, reset),
	    cmocka_unit_test_setup(test_cred_read, reset),
	    cmocka_unit_test_setup(test_env_find, reset),
	    cmocka_unit_test_setup(test_token_adopts, reset),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
