/* elf_open — see elf_open.h. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/elf/elf_open.h"
#include "userspace/log/log.h"

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return "a device";
}

int elf_open_regular(const char *path, uint64_t inode, struct stat *st)
{
	struct stat before;
	int fd, err, flags;

	/* examined before the open: a device sees no open, a FIFO blocks none */
	if (stat(path, &before))
		return -errno;
	err = S_ISDIR(before.st_mode) ? -EISDIR : -EINVAL;
	if (!S_ISREG(before.st_mode))
		goto refused;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st->st_mode) || st->st_dev != before.st_dev || st->st_ino != before.st_ino) {
		pr_debug("cannot read '%s': replaced while it was opened", path);
		err = -ESTALE;
		goto fail;
	}
	/* the dev of a mapping on overlayfs is the real file's, not the
	 * overlay's st_dev: only the inode number is compared */
	if (inode && st->st_ino != inode) {
		pr_debug("cannot read '%s': inode %llu is not the mapped one (%llu): the file "
			 "was replaced after it was mapped",
			 path, (unsigned long long)st->st_ino, (unsigned long long)inode);
		err = -ESTALE;
		goto fail;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
refused:
	pr_debug("refusing '%s' as an ELF file: not a regular file but %s", path,
		 file_kind(before.st_mode));
	return err;
}
