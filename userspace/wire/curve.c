/* curve — key files, key generation and socket setup; see curve.h. The
 * ZAP handler is curve_zap.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/config/trust.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/curve_internal.h"

#define CURVE_NAME_MAX 64
#define CURVE_ZAP_DOMAIN "nunatak"

int curve_check_support(char *err, size_t errlen)
{
	if (zmq_has("curve"))
		return 0;
	snprintf(err, errlen,
		 "this libzmq was built without CURVE: install Debian's libzmq5 (built with "
		 "libsodium)");
	return -ENOTSUP;
}

void curve_text_free(char *text)
{
	if (text)
		explicit_bzero(text, strlen(text));
	free(text);
}

/* -EPERM when a secret key file's mode lets group or others read it */
static int check_secret_mode(const char *path, const struct stat *st, char *err, size_t errlen)
{
	if (!(st->st_mode & (S_IRWXG | S_IRWXO)))
		return 0;
	snprintf(err, errlen,
		 "refusing secret key '%s': mode %04o gives %s access to it; whoever reads it can "
		 "pose as its owner: chmod 600 '%s' (and make a new key pair if others may have "
		 "read it)",
		 path, (unsigned)(st->st_mode & 07777),
		 st->st_mode & S_IRWXO ? "others" : "its group", path);
	return -EPERM;
}

static int read_all(int fd, const char *path, size_t size, char *buf, char *err, size_t errlen)
{
	size_t done = 0;
	ssize_t n;

	while (done < size) {
		n = read(fd, buf + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	buf[done] = '\0';
	if (strlen(buf) != done) {
		snprintf(err, errlen, "refusing '%s': it holds a NUL byte, not key text", path);
		return -EINVAL;
	}
	return 0;
}

int curve_read_trusted(const char *path, int secret, size_t max, char **text, char *err,
		       size_t errlen)
{
	char *buf = NULL;
	struct stat st;
	int fd = -1, ret;

	*text = NULL;
	ret = trust_open(path, &fd, err, errlen);
	if (ret)
		return ret;
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(-ret));
		goto cleanup;
	}
	if (secret && (ret = check_secret_mode(path, &st, err, errlen)))
		goto cleanup;
	if ((size_t)st.st_size > max) {
		ret = -EFBIG;
		snprintf(err, errlen, "refusing '%s': %lld bytes, more than the %zu a key file may hold",
			 path, (long long)st.st_size, max);
		goto cleanup;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(ENOMEM));
		goto cleanup;
	}
	ret = read_all(fd, path, (size_t)st.st_size, buf, err, errlen);
	if (ret)
		goto cleanup;
	*text = buf;
	buf = NULL;
cleanup:
	if (buf)
		explicit_bzero(buf, (size_t)st.st_size + 1);
	free(buf);
	close(fd);
	return ret;
}

int curve_key_valid(const char *z85)
{
	uint8_t bin[32];

	if (!z85 || strlen(z85) != CURVE_KEY_Z85_LEN)
		return 0;
	/* zmq_z85_decode refuses characters outside the alphabet and
	 * 5-character groups over 2^32 */
	if (!zmq_z85_decode(bin, z85))
		return 0;
	explicit_bzero(bin, sizeof(bin));
	return 1;
}

int curve_parse_keys(char *text, const char *path,
		     int (*fn)(const char *z85, unsigned line, void *ctx), void *ctx, char *err,
		     size_t errlen)
{
	char *line = text, *next, *word_end;
	unsigned lineno = 0;
	size_t word;
	int ret;

	for (; line && *line; line = next) {
		lineno++;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line += strspn(line, " \t\r");
		if (!*line)
			continue;
		if (line[0] == '#' && (!line[1] || strchr(" \t\r", line[1])))
			continue;
		word = strcspn(line, " \t\r");
		word_end = line + word;
		if (*word_end)
			*word_end = '\0';
		if (!curve_key_valid(line)) {
			snprintf(err, errlen,
				 "%s:%u: not a CURVE key: a key is 40 characters of Z85 (as "
				 "'nunatak keygen' writes); a comment line starts with '# '",
				 path, lineno);
			return -EINVAL;
		}
		ret = fn(line, lineno, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

struct one_key {
	const char *path;
	char *out;
	unsigned line;
	char *err;
	size_t errlen;
};

static int take_one_key(const char *z85, unsigned line, void *data)
{
	struct one_key *one = data;

	if (one->line) {
		snprintf(one->err, one->errlen,
			 "%s:%u: a second key (the first is on line %u): a key file holds one key",
			 one->path, line, one->line);
		return -EINVAL;
	}
	one->line = line;
	memcpy(one->out, z85, CURVE_KEY_Z85_LEN + 1);
	return 0;
}

/* The one key of the file @path into @out (41 bytes). */
static int load_one_key(const char *path, int secret, char *out, char *err, size_t errlen)
{
	struct one_key one = {.path = path, .out = out, .err = err, .errlen = errlen};
	char *text = NULL;
	int ret;

	ret = curve_check_support(err, errlen);
	if (ret)
		return ret;
	ret = curve_read_trusted(path, secret, CURVE_KEY_FILE_MAX_BYTES, &text, err, errlen);
	if (ret)
		return ret;
	ret = curve_parse_keys(text, path, take_one_key, &one, err, errlen);
	if (!ret && !one.line) {
		snprintf(err, errlen, "%s: no key in it: write one with 'nunatak keygen DIR NAME'",
			 path);
		ret = -EINVAL;
	}
	curve_text_free(text);
	return ret;
}

int curve_load_keypair(const char *secret_path, struct curve_keypair *kp, char *err,
		       size_t errlen)
{
	char no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	memset(kp, 0, sizeof(*kp));
	ret = load_one_key(secret_path, 1, kp->secret_z85, err, errlen);
	if (ret)
		goto cleanup;
	if (zmq_curve_public(kp->public_z85, kp->secret_z85)) {
		ret = -errno;
		snprintf(err, errlen, "cannot derive the public key of '%s': %s", secret_path,
			 strerror(-ret));
	}
cleanup:
	if (ret)
		curve_keypair_wipe(kp);
	return ret;
}

void curve_keypair_wipe(struct curve_keypair *kp)
{
	if (kp)
		explicit_bzero(kp, sizeof(*kp));
}

int curve_load_public(const char *path, char out[CURVE_KEY_Z85_LEN + 1], char *err,
		      size_t errlen)
{
	char no_err[1];

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	out[0] = '\0';
	return load_one_key(path, 0, out, err, errlen);
}

/* ---- key generation ---- */

static int name_valid(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	if (!len || len > CURVE_NAME_MAX || name[0] == '.')
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
	       len;
}

/* Creates @file under @dirfd with exactly @mode, writes @text, syncs. */
static int write_new_file(int dirfd, const char *dir, const char *file, mode_t mode,
			  const char *text, char *err, size_t errlen)
{
	size_t len = strlen(text), done = 0;
	ssize_t n;
	int fd, ret = 0;

	fd = openat(dirfd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			snprintf(err, errlen,
				 "'%s/%s' exists: keygen never overwrites a key; remove it first "
				 "or choose another name",
				 dir, file);
		else
			snprintf(err, errlen, "cannot create '%s/%s': %s", dir, file,
				 strerror(-ret));
		return ret;
	}
	/* whatever the umask, the modes keygen promises */
	if (fchmod(fd, mode))
		ret = -errno;
	while (!ret && done < len) {
		n = write(fd, text + done, len - done);
		if (n < 0 && errno != EINTR)
			ret = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (ret) {
		snprintf(err, errlen, "cannot write '%s/%s': %s", dir, file, strerror(-ret));
		unlinkat(dirfd, file, 0);
	}
	return ret;
}

int curve_keygen(const char *dir, const char *name, char *err, size_t errlen)
{
	char pub[CURVE_KEY_Z85_LEN + 1], sec[CURVE_KEY_Z85_LEN + 1];
	char key_file[CURVE_NAME_MAX + 8], pub_file[CURVE_NAME_MAX + 8];
	char text[256 + CURVE_NAME_MAX];
	char no_err[1];
	int dirfd = -1, ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	if (!name_valid(name)) {
		snprintf(err, errlen,
			 "bad key name '%s': use letters, digits, '_', '.', '-' (at most %d, not "
			 "starting with '.'), for example the node's name",
			 name ? name : "", CURVE_NAME_MAX);
		return -EINVAL;
	}
	ret = curve_check_support(err, errlen);
	if (ret)
		return ret;
	ret = trust_open_dir_chain(NULL, dir, &dirfd, err, errlen);
	if (ret)
		return ret;
	snprintf(key_file, sizeof(key_file), "%s.key", name);
	snprintf(pub_file, sizeof(pub_file), "%s.pub", name);
	if (zmq_curve_keypair(pub, sec)) {
		ret = -errno;
		snprintf(err, errlen, "cannot make a CURVE key pair: %s", strerror(-ret));
		goto cleanup;
	}
	/* the secret file first, then the public one; if that one cannot
	 * be made (it exists, say), the secret one goes away again */
	snprintf(text, sizeof(text),
		 "# nunatak CURVE secret key '%s' (nunatak keygen): keep it mode 0600, never "
		 "copy it off this machine\n%s\n",
		 name, sec);
	ret = write_new_file(dirfd, dir, key_file, 0600, text, err, errlen);
	if (ret)
		goto cleanup;
	snprintf(text, sizeof(text),
		 "# nunatak CURVE public key '%s' (nunatak keygen); its secret key is %s\n%s\n",
		 name, key_file, pub);
	ret = write_new_file(dirfd, dir, pub_file, 0644, text, err, errlen);
	if (ret)
		unlinkat(dirfd, key_file, 0);
cleanup:
	explicit_bzero(sec, sizeof(sec));
	explicit_bzero(text, sizeof(text));
	close(dirfd);
	return ret;
}

/* ---- sockets ---- */

static int set_key(void *sock, int option, const char *z85)
{
	if (!curve_key_valid(z85))
		return -EINVAL;
	if (zmq_setsockopt(sock, option, z85, CURVE_KEY_Z85_LEN + 1))
		return -errno;
	return 0;
}

int curve_server_setup(void *sock, const struct curve_keypair *kp)
{
	int on = 1, ret;

	if (!sock || !kp)
		return -EINVAL;
	ret = set_key(sock, ZMQ_CURVE_SECRETKEY, kp->secret_z85);
	if (ret)
		return ret;
	if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &on, sizeof(on)))
		return -errno;
	if (zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, CURVE_ZAP_DOMAIN, strlen(CURVE_ZAP_DOMAIN)))
		return -errno;
	return 0;
}

int curve_client_setup(void *sock, const struct curve_keypair *kp, const char *server_public_z85)
{
	int ret;

	if (!sock || !kp || !server_public_z85)
		return -EINVAL;
	ret = set_key(sock, ZMQ_CURVE_SERVERKEY, server_public_z85);
	if (!ret)
		ret = set_key(sock, ZMQ_CURVE_PUBLICKEY, kp->public_z85);
	if (!ret)
		ret = set_key(sock, ZMQ_CURVE_SECRETKEY, kp->secret_z85);
	return ret;
}
