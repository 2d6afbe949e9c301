/* elf_dynamic — see elf_dynamic.h. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/elf/elf_dynamic.h"
#include "userspace/elf/elf_open.h"

static int keep_needed(struct elf_dynamic *d, const char *name)
{
	char **needed = realloc(d->needed, (d->n_needed + 1) * sizeof(*needed));

	if (!needed)
		return -ENOMEM;
	d->needed = needed;
	d->needed[d->n_needed] = strdup(name);
	if (!d->needed[d->n_needed])
		return -ENOMEM;
	d->n_needed++;
	return 0;
}

static int read_dynamic(Elf *elf, struct elf_dynamic *d)
{
	Elf_Scn *scn = NULL;
	char *rpath = NULL;
	int err = -ENODATA;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		Elf_Data *data;
		size_t i;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !shdr.sh_entsize)
			break;
		err = 0;
		for (i = 0; i < shdr.sh_size / shdr.sh_entsize && !err; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(data, (int)i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED)
				err = keep_needed(d, s);
			else if (dyn.d_tag == DT_RUNPATH && !d->runpath)
				d->runpath = strdup(s);
			else if (dyn.d_tag == DT_RPATH && !rpath)
				rpath = strdup(s);
		}
		break;
	}
	/* RPATH counts only where there is no RUNPATH, as for ld.so */
	if (!d->runpath)
		d->runpath = rpath;
	else
		free(rpath);
	return err;
}

int elf_dynamic_read(const char *path, struct elf_dynamic *out)
{
	Elf *elf = NULL;
	struct stat st;
	int fd, err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = elf_open_regular(path, 0, &st);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out;
	}
	err = read_dynamic(elf, out);
out:
	elf_end(elf);
	close(fd);
	if (err)
		elf_dynamic_release(out);
	return err;
}

void elf_dynamic_release(struct elf_dynamic *d)
{
	size_t i;

	for (i = 0; i < d->n_needed; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->runpath);
	memset(d, 0, sizeof(*d));
}
