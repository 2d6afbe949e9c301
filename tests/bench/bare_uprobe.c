/* bare_uprobe — the benchmark's baseline for the MPI probes: an empty
 * entry and return uprobe (bpf/empty.bpf.c) on FUNCTION of LIBRARY, for
 * every process, while CMD runs. Exits with CMD's code.
 *
 * usage: bare-uprobe LIBRARY FUNCTION CMD [ARGS...]
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bpf/empty.skel.h"

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_uprobe_opts, entry, .func_name = argv[2]);
	LIBBPF_OPTS(bpf_uprobe_opts, ret, .func_name = argv[2], .retprobe = true);
	struct empty_bpf *skel;
	int status;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: bare-uprobe LIBRARY FUNCTION CMD [ARGS...]\n");
		return 125;
	}
	skel = empty_bpf__open_and_load();
	if (!skel ||
	    !bpf_program__attach_uprobe_opts(skel->progs.empty_uprobe, -1, argv[1], 0, &entry) ||
	    !bpf_program__attach_uprobe_opts(skel->progs.empty_uretprobe, -1, argv[1], 0, &ret)) {
		fprintf(stderr, "bare-uprobe: probing %s in '%s' failed: %s\n", argv[2], argv[1],
			strerror(errno));
		return 125;
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
