/* test_sampler_targets — who is in a Target, on real BPF and real execs:
 * a new sampler takes no sample until it is made active; a setuid-root
 * copy of a spinning program exec'd by an unprivileged user inside that
 * user's Target leaves it at that exec and is never sampled, while the
 * same program without the setuid bit is, and so do a setgid copy and a
 * copy with a file capability and an execute-only copy (red F2: their
 * uids stay the user's, but
 * the user may not debug them); a Target process that makes itself
 * non-dumpable is no longer sampled; a process no Target follows,
 * exec'd with the Run token in its environment, is adopted under the
 * token's Target (its samples carry that target_id) only when its uid is
 * the token's owner's and, netns-only, when it runs in this network
 * namespace; a removed Target loses its processes and its tokens.
 *
 * The spinning program is this test binary itself ("spin MS" as its
 * arguments), copied into a directory of its own (0755, on a file system
 * without nosuid). The unprivileged users are throwaway uids set with
 * setresuid in the child (no account is needed for that).
 *
 * Without root or kernel BTF every test is SKIPPED with the reason.
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "tests/unit/bpf_fixture.h"
#include "tests/unit/sampler_fixture.h"
#include "userspace/agent/sampler.h"

#define FREQUENCY 999
#define SPIN_MS "300"
#define TOKEN "5a17c0ffee5a17c0ffee5a17c0ffee00"
#define OTHER_TOKEN "5a17c0ffee5a17c0ffee5a17c0ffee01"

extern char **environ;

static const char *why_not;
static struct sampler *s;
static char dir[64];	/* the programs' own directory */
static char plain[128]; /* the spinning program, 0755 */
static char setuid_copy[128]; /* the same, setuid root */
static char setgid_copy[128]; /* the same, setgid to a group not the user's */
static char filecap_copy[128]; /* the same, with cap_net_raw as a file capability */
static char xonly_copy[128]; /* the same, 0711: the user may run it, not read it */
static uid_t user, other_user;

/* this binary at path, group gid, mode */
static int copy_self(const char *path, gid_t gid, mode_t mode)
{
	char buf[65536];
	ssize_t n;
	int in, out, err = 0;

	in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0700);
	if (in < 0 || out < 0)
		err = -1;
	while (!err && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			err = -1;
	if (!err && (fchown(out, 0, gid) || fchmod(out, mode)))
		err = -1;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		err = -1;
	return err;
}

static int group_setup(void **state)
{
	struct statvfs vfs;

	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	user = 61000 + (uid_t)(getpid() % 1000);
	other_user = user + 1000;
	snprintf(dir, sizeof(dir), "/tmp/nunatak-sampler-XXXXXX");
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return -1;
	if (statvfs(dir, &vfs) || (vfs.f_flag & ST_NOSUID)) {
		why_not = "the temporary directory is on a nosuid file system";
		return 0;
	}
	snprintf(plain, sizeof(plain), "%s/spin", dir);
	snprintf(setuid_copy, sizeof(setuid_copy), "%s/spin-setuid", dir);
	snprintf(setgid_copy, sizeof(setgid_copy), "%s/spin-setgid", dir);
	snprintf(filecap_copy, sizeof(filecap_copy), "%s/spin-filecap", dir);
	snprintf(xonly_copy, sizeof(xonly_copy), "%s/spin-xonly", dir);
	if (copy_self(plain, 0, 0755) || copy_self(setuid_copy, 0, 04755) ||
	    copy_self(setgid_copy, 4242, 02755) || copy_self(filecap_copy, 0, 0755) ||
	    copy_self(xonly_copy, 0, 0711))
		return -1;
	{
		struct vfs_cap_data cap = {
		    .magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE,
		    .data = {{.permitted = 1u << CAP_NET_RAW}}};

		if (setxattr(filecap_copy, "security.capability", &cap, sizeof(cap), 0)) {
			why_not = "file capabilities cannot be set here (security.capability)";
			return 0;
		}
	}
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (plain[0])
		unlink(plain);
	if (setuid_copy[0])
		unlink(setuid_copy);
	if (setgid_copy[0])
		unlink(setgid_copy);
	if (filecap_copy[0])
		unlink(filecap_copy);
	if (xonly_copy[0])
		unlink(xonly_copy);
	if (dir[0])
		rmdir(dir);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	if (why_not)
		return 0;
	s = sampler_fixture_new(FREQUENCY);
	return s ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sampler__free(s);
	s = NULL;
	return 0;
}

struct child {
	pid_t pid;
	int gate;
};

/* A child that becomes uid (unless 0), optionally in a new network
 * namespace, waits for the gate, then execs program "spin" SPIN_MS with
 * environ plus env_extra (NULL: none). */
static struct child exec_child_as(uid_t uid, const char *program, const char *mode,
				  const char *env_extra, int new_netns)
{
	struct child c = {-1, -1};
	int gate[2];
	char ch;

	assert_int_equal(pipe(gate), 0);
	c.pid = fork();
	assert_true(c.pid >= 0);
	if (c.pid == 0) {
		size_t n = 0, i;
		char **envp;

		close(gate[1]);
		while (environ[n])
			n++;
		envp = calloc(n + 2, sizeof(*envp));
		for (i = 0; envp && i < n; i++)
			envp[i] = environ[i];
		if (envp && env_extra)
			envp[n] = (char *)env_extra;
		if (!envp || (new_netns && unshare(CLONE_NEWNET)))
			_exit(120);
		if (proc_become(uid))
			_exit(121);
		if (read(gate[0], &ch, 1) != 1)
			_exit(122);
		execve(program, (char *[]){(char *)program, (char *)mode, SPIN_MS, NULL}, envp);
		_exit(123);
	}
	close(gate[0]);
	c.gate = gate[1];
	return c;
}

static struct child exec_child(uid_t uid, const char *program, const char *env_extra,
			       int new_netns)
{
	return exec_child_as(uid, program, "spin", env_extra, new_netns);
}

static void run_child(struct child *c)
{
	int status;

	assert_int_equal(write(c->gate, "g", 1), 1);
	close(c->gate);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int reports_of(pid_t pid, struct task_event *out, int max)
{
	return sampler_reports_of(s, pid, out, max);
}

static struct sampler_tally samples_of(pid_t pid, uint32_t target_id)
{
	return sampler_samples_of(s, pid, target_id);
}

static int in_target(pid_t tgid)
{
	struct target_info info;
	__u32 key = (__u32)tgid;

	return !bpf_map_lookup_elem(sampler_targets_fd(s), &key, &info);
}

static void test_idle_until_active(void **state)
{
	struct sampler_counters c;
	struct child ch;
	struct sampler_tally t;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_false(sampler_active(s));
	ch = exec_child(0, plain, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 1, TARGET_UID_ANY), 0);
	run_child(&ch);
	sampler_read_counters(s, &c);
	assert_int_equal(c.seen, 0);
	assert_int_equal(samples_of(ch.pid, 1).samples, 0);

	assert_int_equal(sampler_set_active(s, 1), 0);
	assert_true(sampler_active(s));
	ch = exec_child(0, plain, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 1, TARGET_UID_ANY), 0);
	run_child(&ch);
	t = samples_of(ch.pid, 1);
	assert_true(t.samples >= 60);
	assert_int_equal(t.wrong_target, 0);

	/* idle again: nothing more */
	assert_int_equal(sampler_set_active(s, 0), 0);
	sampler_read_counters(s, &c);
	ch = exec_child(0, plain, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 1, TARGET_UID_ANY), 0);
	run_child(&ch);
	assert_int_equal(samples_of(ch.pid, 1).samples, 0);
}

/* user's Target: the plain copy is sampled (its exec keeps it), the
 * setuid-root copy leaves at its exec and is never sampled */
static void test_setuid_exec_leaves(void **state)
{
	struct task_event e[4];
	struct sampler_counters c;
	struct child ch;
	struct sampler_tally t;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_set_active(s, 1), 0);
	ch = exec_child(user, plain, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 5, user), 0);
	run_child(&ch);
	t = samples_of(ch.pid, 5);
	assert_true(t.exec_samples >= 60);
	assert_int_equal(t.wrong_target, 0);
	assert_int_equal(reports_of(ch.pid, e, 4), 2);
	assert_int_equal(e[0].kind, TASK_EVENT_EXEC);
	assert_int_equal(e[0].exec_seq, 1);
	assert_int_equal(e[1].kind, TASK_EVENT_EXIT);

	ch = exec_child(user, setuid_copy, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 5, user), 0);
	run_child(&ch);
	assert_int_equal(samples_of(ch.pid, 5).exec_samples, 0);
	assert_false(in_target(ch.pid));
	/* reported as leaving, and never as exiting */
	assert_int_equal(reports_of(ch.pid, e, 4), 1);
	assert_int_equal(e[0].kind, TASK_EVENT_LEFT);
	assert_int_equal(e[0].target_id, 5);
	sampler_read_counters(s, &c);
	assert_int_equal(c.left, 1);

	/* a root Target keeps it */
	ch = exec_child(user, setuid_copy, NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 6, TARGET_UID_ANY), 0);
	run_child(&ch);
	assert_true(samples_of(ch.pid, 6).samples >= 60);
}

/* red F2: a setgid copy, a file-capability copy and an execute-only copy
 * keep the user's uids but are not the user's to debug (the kernel makes
 * them non-dumpable): each leaves the user's Target at its exec and is
 * never sampled */
static void test_setgid_and_filecap_exec_leave(void **state)
{
	const char *programs[] = {setgid_copy, filecap_copy, xonly_copy};
	struct task_event e[4];
	struct sampler_counters c;
	struct child ch;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_set_active(s, 1), 0);
	for (int i = 0; i < 3; i++) {
		ch = exec_child(user, programs[i], NULL, 0);
		assert_int_equal(sampler_add_target(s, ch.pid, 5, user), 0);
		run_child(&ch);
		assert_int_equal(samples_of(ch.pid, 5).exec_samples, 0);
		assert_false(in_target(ch.pid));
		assert_int_equal(reports_of(ch.pid, e, 4), 1);
		assert_int_equal(e[0].kind, TASK_EVENT_LEFT);
		/* a root Target keeps it */
		ch = exec_child(user, programs[i], NULL, 0);
		assert_int_equal(sampler_add_target(s, ch.pid, 6, TARGET_UID_ANY), 0);
		run_child(&ch);
		assert_true(samples_of(ch.pid, 6).samples >= 60);
	}
	sampler_read_counters(s, &c);
	assert_int_equal(c.left, 3);
}

/* a Target process that makes itself non-dumpable after its exec
 * (prctl(PR_SET_DUMPABLE, 0), as agents holding secrets do) stays in the
 * set but is not sampled: the check at each sample */
static void test_nondumpable_not_sampled(void **state)
{
	struct sampler_counters before, after;
	struct child ch;
	struct sampler_tally t;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_set_active(s, 1), 0);
	sampler_read_counters(s, &before);
	ch = exec_child_as(user, plain, "spin-nodump", NULL, 0);
	assert_int_equal(sampler_add_target(s, ch.pid, 5, user), 0);
	run_child(&ch);
	t = samples_of(ch.pid, 5);
	sampler_read_counters(s, &after);
	print_message("made non-dumpable: %llu samples (between its exec and its prctl), "
		      "%llu skipped\n", (unsigned long long)t.exec_samples,
		      (unsigned long long)(after.skipped_credentials - before.skipped_credentials));
	/* only what fell between its exec and its prctl (longer with a
	 * sanitizer's start-up): a small part of its 300 ms */
	assert_true(after.skipped_credentials - before.skipped_credentials >= 60);
	assert_true(t.exec_samples * 4 < after.skipped_credentials - before.skipped_credentials);
}

static void check_adoption_of(uid_t uid, const char *program, const char *env, int new_netns,
			      uint32_t want_target)
{
	struct task_event e[4];
	struct child ch;
	struct sampler_tally t;

	ch = exec_child(uid, program, env, new_netns);
	run_child(&ch);
	t = samples_of(ch.pid, want_target);
	assert_int_equal(t.wrong_target, 0);
	if (!want_target) {
		assert_int_equal(t.samples, 0);
		assert_int_equal(reports_of(ch.pid, e, 4), 0);
		return;
	}
	assert_true(t.samples >= 60);
	assert_int_equal(reports_of(ch.pid, e, 4), 2);
	assert_int_equal(e[0].kind, TASK_EVENT_EXEC);
	assert_int_equal(e[0].target_id, want_target);
	assert_int_equal(e[0].exec_seq, 0);
	assert_int_equal(e[1].kind, TASK_EVENT_EXIT);
}

static void check_adoption(uid_t uid, const char *env, int new_netns, uint32_t want_target)
{
	check_adoption_of(uid, plain, env, new_netns, want_target);
}

static void test_token_adopts_its_owner_only(void **state)
{
	struct sampler_counters c;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_set_active(s, 1), 0);
	/* no token registered: nothing adopted */
	check_adoption(user, "NUNATAK_RUN=" TOKEN, 0, 0);
	assert_int_equal(sampler_add_token(s, TOKEN, 11, user), 0);
	check_adoption(user, "NUNATAK_RUN=" TOKEN, 0, 11);
	check_adoption(other_user, "NUNATAK_RUN=" TOKEN, 0, 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 0, 0);
	check_adoption(user, "NUNATAK_RUN=" OTHER_TOKEN, 0, 0);
	check_adoption(user, NULL, 0, 0);
	/* red F2: the owner's setgid and file-capability programs are not */
	check_adoption_of(user, setgid_copy, "NUNATAK_RUN=" TOKEN, 0, 0);
	check_adoption_of(user, filecap_copy, "NUNATAK_RUN=" TOKEN, 0, 0);
	sampler_read_counters(s, &c);
	assert_int_equal(c.adopted, 1);
	/* removed: no more */
	assert_int_equal(sampler_remove_token(s, TOKEN), 0);
	assert_int_equal(sampler_remove_token(s, TOKEN), -ENOENT);
	check_adoption(user, "NUNATAK_RUN=" TOKEN, 0, 0);
}

static void test_token_netns_only(void **state)
{
	char err[256] = "";

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_set_active(s, 1), 0);
	assert_int_equal(sampler_add_token(s, TOKEN, 12, TARGET_UID_ANY), 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 1, 12); /* any namespace */
	/* red F9: a root Run's token adopts no user's process */
	check_adoption(user, "NUNATAK_RUN=" TOKEN, 0, 0);
	assert_int_equal(sampler_set_netns_only(s, 1), 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 1, 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 0, 12);
	/* the same from the start (sampler_opts) */
	sampler__free(s);
	s = sampler__new(&(struct sampler_opts){.frequency = FREQUENCY, .netns_only = 1}, err,
			 sizeof(err));
	if (!s)
		fail_msg("sampler__new (netns_only): %s", err);
	assert_int_equal(sampler_set_active(s, 1), 0);
	assert_int_equal(sampler_add_token(s, TOKEN, 13, TARGET_UID_ANY), 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 1, 0);
	check_adoption(0, "NUNATAK_RUN=" TOKEN, 0, 13);
}

static void test_token_checks_and_remove_target(void **state)
{
	struct child a, b;

	(void)state;
	SKIP_UNLESS(!why_not, why_not);
	assert_int_equal(sampler_add_token(s, "5A17C0FFEE5A17C0FFEE5A17C0FFEE00", 1, 0), -EINVAL);
	assert_int_equal(sampler_add_token(s, "5a17c0ffee", 1, 0), -EINVAL);
	assert_int_equal(sampler_add_token(s, TOKEN "0", 1, 0), -EINVAL);
	assert_int_equal(sampler_add_token(s, "5a17c0ffee5a17c0ffee5a17c0ffee0g", 1, 0), -EINVAL);
	assert_int_equal(sampler_add_token(s, NULL, 1, 0), -EINVAL);
	assert_int_equal(sampler_add_token(s, TOKEN, 3, user), 0);
	assert_int_equal(sampler_add_token(s, TOKEN, 4, user), -EEXIST);
	assert_int_equal(sampler_add_token(s, OTHER_TOKEN, 4, user), 0);
	assert_int_equal(sampler_add_target(s, 0, 3, user), -EINVAL);

	a = exec_child(0, plain, NULL, 0);
	b = exec_child(0, plain, NULL, 0);
	assert_int_equal(sampler_add_target(s, a.pid, 3, user), 0);
	assert_int_equal(sampler_add_target(s, b.pid, 4, user), 0);
	assert_int_equal(sampler_remove_target(s, 3), 0);
	assert_false(in_target(a.pid));
	assert_true(in_target(b.pid));
	/* its token went with it, the other Target's did not */
	assert_int_equal(sampler_remove_token(s, TOKEN), -ENOENT);
	assert_int_equal(sampler_remove_token(s, OTHER_TOKEN), 0);
	run_child(&a);
	run_child(&b);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_idle_until_active, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_setuid_exec_leaves, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_setgid_and_filecap_exec_leave, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nondumpable_not_sampled, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_adopts_its_owner_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_netns_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_token_checks_and_remove_target, setup, teardown),
	};

	if (argc == 3 && !strcmp(argv[1], "spin")) { /* the exec'd workload */
		proc_spin(atoi(argv[2]));
		_exit(0);
	}
	if (argc == 3 && !strcmp(argv[1], "spin-nodump")) {
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
			_exit(124);
		proc_spin(atoi(argv[2]));
		_exit(0);
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
