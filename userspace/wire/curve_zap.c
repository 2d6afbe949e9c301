/* curve_zap — the ZAP handler of curve.h: the allow-list, read once, and
 * the thread answering inproc://zeromq.zap.01. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/config/trust.h"
#include "userspace/log/log.h"
#include "userspace/wire/curve.h"
#include "userspace/wire/curve_internal.h"

#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define ZAP_FRAMES_MAX 8
#define ZAP_FRAME_BYTES 256
/* refusals logged one by one up to this many, then every 1024th: an
 * unknown Agent retrying must not fill the log */
#define ZAP_LOG_FIRST 16

struct curve_zap {
	void *rep;	   /* bound to ZAP_ENDPOINT, used by the thread only */
	void *stop_tx;	   /* PAIR, used by curve_zap__free only */
	void *stop_rx;	   /* PAIR, used by the thread only */
	uint8_t (*keys)[32]; /* sorted */
	size_t n_keys, cap_keys;
	_Atomic uint64_t refused;
	pthread_t thread;
	int started;
};

/* ---- the allow-list ---- */

static int add_key(const char *z85, unsigned line, void *data)
{
	struct curve_zap *zap = data;
	uint8_t (*grown)[32];
	size_t cap;

	(void)line;
	if (zap->n_keys == zap->cap_keys) {
		cap = zap->cap_keys ? 2 * zap->cap_keys : 64;
		grown = realloc(zap->keys, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		zap->keys = grown;
		zap->cap_keys = cap;
	}
	if (!zmq_z85_decode(zap->keys[zap->n_keys], z85))
		return -EINVAL; /* curve_parse_keys checked it */
	zap->n_keys++;
	return 0;
}

static int load_key_file(struct curve_zap *zap, const char *path, size_t max, char *err,
			 size_t errlen)
{
	char *text = NULL;
	int ret;

	ret = curve_read_trusted(path, 0, max, &text, err, errlen);
	if (!ret)
		ret = curve_parse_keys(text, path, add_key, zap, err, errlen);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "cannot read '%s': %s", path, strerror(ENOMEM));
	free(text);
	return ret;
}

static int ends_with_pub(const char *name)
{
	size_t len = strlen(name);

	return len > 4 && name[0] != '.' && !strcmp(name + len - 4, ".pub");
}

/* Every *.pub of the directory @dir; each passes the trust rules. */
static int load_key_dir(struct curve_zap *zap, const char *dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	d = opendir(dir);
	if (!d) {
		ret = -errno;
		snprintf(err, errlen, "cannot read the directory '%s': %s", dir, strerror(-ret));
		return ret;
	}
	while (!ret && (errno = 0, de = readdir(d))) {
		if (!ends_with_pub(de->d_name))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path)) {
			ret = -ENAMETOOLONG;
			snprintf(err, errlen, "'%s/%s': path too long", dir, de->d_name);
			break;
		}
		ret = load_key_file(zap, path, CURVE_KEY_FILE_MAX_BYTES, err, errlen);
	}
	if (!ret && errno) {
		ret = -errno;
		snprintf(err, errlen, "cannot read the directory '%s': %s", dir, strerror(-ret));
	}
	closedir(d);
	return ret;
}

static int key_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}

static int load_allowed(struct curve_zap *zap, const char *allowed, char *err, size_t errlen)
{
	struct stat st;
	int dirfd, ret;

	if (lstat(allowed, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot read the allowed Agent keys '%s': %s", allowed,
			 strerror(-ret));
		return ret;
	}
	if (S_ISDIR(st.st_mode)) {
		/* the directory and those above it: nobody else may add a key */
		ret = trust_open_dir_chain(NULL, allowed, &dirfd, err, errlen);
		if (ret)
			return ret;
		close(dirfd);
		ret = load_key_dir(zap, allowed, err, errlen);
	} else {
		ret = load_key_file(zap, allowed, CURVE_ALLOW_FILE_MAX_BYTES, err, errlen);
	}
	if (ret)
		return ret;
	if (!zap->n_keys) {
		snprintf(err, errlen,
			 "no Agent key in '%s': every Agent would be refused; put each node's "
			 "NAME.pub (from 'nunatak keygen') there%s",
			 allowed, S_ISDIR(st.st_mode) ? "" : ", one key per line");
		return -EINVAL;
	}
	qsort(zap->keys, zap->n_keys, sizeof(zap->keys[0]), key_cmp);
	return 0;
}

/* ---- the handler ---- */

struct zap_request {
	char frame[ZAP_FRAMES_MAX][ZAP_FRAME_BYTES];
	size_t len[ZAP_FRAMES_MAX];
	int n;
};

/* One multipart request; 0, or -1 when it is not one (drained; when
 * req->n > 0 it still needs a reply: a REP socket answers every request). */
static int zap_recv(void *rep, struct zap_request *req)
{
	int more = 1, n;
	size_t sz = sizeof(more);

	req->n = 0;
	while (more) {
		n = zmq_recv(rep, req->frame[req->n < ZAP_FRAMES_MAX ? req->n : 0],
			     ZAP_FRAME_BYTES, ZMQ_DONTWAIT);
		if (n < 0)
			return -1;
		if (req->n < ZAP_FRAMES_MAX)
			req->len[req->n] = (size_t)n < ZAP_FRAME_BYTES ? (size_t)n : ZAP_FRAME_BYTES;
		req->n++;
		if (zmq_getsockopt(rep, ZMQ_RCVMORE, &more, &sz))
			return -1;
	}
	return req->n >= 6 && req->n <= ZAP_FRAMES_MAX ? 0 : -1;
}

static int frame_is(const struct zap_request *req, int i, const char *text)
{
	return req->len[i] == strlen(text) && !memcmp(req->frame[i], text, req->len[i]);
}

static void zap_reply(void *rep, const struct zap_request *req, const char *status,
		      const char *text, const char *user)
{
	zmq_send(rep, "1.0", 3, ZMQ_SNDMORE);
	zmq_send(rep, req->frame[1], req->len[1], ZMQ_SNDMORE); /* request id */
	zmq_send(rep, status, strlen(status), ZMQ_SNDMORE);
	zmq_send(rep, text, strlen(text), ZMQ_SNDMORE);
	zmq_send(rep, user, strlen(user), ZMQ_SNDMORE);
	zmq_send(rep, "", 0, 0); /* metadata */
}

static void zap_refuse(struct curve_zap *zap, const struct zap_request *req, const char *why,
		       const char *key)
{
	uint64_t n = atomic_fetch_add(&zap->refused, 1) + 1;
	char address[64];

	snprintf(address, sizeof(address), "%.*s", (int)req->len[3], req->frame[3]);
	if (n <= ZAP_LOG_FIRST || !(n % 1024))
		pr_warn("refused an Agent from %s: %s%s%s (%llu refused so far)", address, why,
			key ? " " : "", key ? key : "", (unsigned long long)n);
	zap_reply(zap->rep, req, "400", why, "");
}

static void zap_answer(struct curve_zap *zap, const struct zap_request *req)
{
	char z85[CURVE_KEY_Z85_LEN + 1];

	/* frames: version, request id, domain, address, routing id,
	 * mechanism, credentials... */
	if (!frame_is(req, 0, "1.0"))
		return zap_refuse(zap, req, "ZAP version not 1.0", NULL);
	if (frame_is(req, 5, "NULL"))
		return zap_reply(zap->rep, req, "200", "OK", "");
	if (!frame_is(req, 5, "CURVE") || req->n != 7 || req->len[6] != 32)
		return zap_refuse(zap, req, "mechanism other than CURVE", NULL);
	zmq_z85_encode(z85, (const uint8_t *)req->frame[6], 32);
	if (!bsearch(req->frame[6], zap->keys, zap->n_keys, sizeof(zap->keys[0]), key_cmp))
		return zap_refuse(zap, req, "public key not in allowed_agents:", z85);
	pr_debug("accepted Agent key %s", z85);
	zap_reply(zap->rep, req, "200", "OK", z85);
}

static void *zap_thread(void *data)
{
	struct curve_zap *zap = data;
	struct zap_request *req;
	zmq_pollitem_t items[2] = {{.socket = zap->rep, .events = ZMQ_POLLIN},
				   {.socket = zap->stop_rx, .events = ZMQ_POLLIN}};

	req = malloc(sizeof(*req));
	if (!req) {
		pr_warn("the ZAP handler has no memory: every Agent will wait for an answer");
		return NULL;
	}
	for (;;) {
		/* no timeout: curve_zap__free() wakes the poll with a message */
		if (zmq_poll(items, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break; /* ETERM: the context is going away */
		}
		if (items[1].revents & ZMQ_POLLIN)
			break;
		if (!(items[0].revents & ZMQ_POLLIN))
			continue;
		if (!zap_recv(zap->rep, req)) {
			zap_answer(zap, req);
		} else if (req->n > 0) {
			req->len[1] = 0;
			zap_reply(zap->rep, req, "500", "malformed ZAP request", "");
		}
	}
	free(req);
	return NULL;
}

static void close_socket(void *sock)
{
	int linger = 0;

	if (!sock)
		return;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_close(sock);
}

static int open_sockets(struct curve_zap *zap, void *ctx, char *err, size_t errlen)
{
	char stop_ep[64];
	int ret;

	zap->rep = zmq_socket(ctx, ZMQ_REP);
	zap->stop_tx = zmq_socket(ctx, ZMQ_PAIR);
	zap->stop_rx = zmq_socket(ctx, ZMQ_PAIR);
	if (!zap->rep || !zap->stop_tx || !zap->stop_rx) {
		ret = -errno;
		snprintf(err, errlen, "cannot make the ZAP handler's sockets: %s", zmq_strerror(-ret));
		return ret;
	}
	if (zmq_bind(zap->rep, ZAP_ENDPOINT)) {
		ret = -errno;
		snprintf(err, errlen, "cannot bind '%s': %s%s", ZAP_ENDPOINT, zmq_strerror(-ret),
			 ret == -EADDRINUSE ? " (another ZAP handler serves this context)" : "");
		return ret;
	}
	snprintf(stop_ep, sizeof(stop_ep), "inproc://nunatak-zap-stop-%p", (void *)zap);
	if (zmq_bind(zap->stop_rx, stop_ep) || zmq_connect(zap->stop_tx, stop_ep)) {
		ret = -errno;
		snprintf(err, errlen, "cannot bind '%s': %s", stop_ep, zmq_strerror(-ret));
		return ret;
	}
	return 0;
}

struct curve_zap *curve_zap__new(void *zmq_ctx, const char *allowed, char *err, size_t errlen)
{
	struct curve_zap *zap;
	char no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	if (!zmq_ctx || !allowed || !*allowed) {
		snprintf(err, errlen, "no ZeroMQ context or no allowed Agent keys given");
		errno = EINVAL;
		return NULL;
	}
	zap = calloc(1, sizeof(*zap));
	if (!zap) {
		errno = ENOMEM;
		return NULL;
	}
	ret = curve_check_support(err, errlen);
	if (!ret)
		ret = load_allowed(zap, allowed, err, errlen);
	if (!ret)
		ret = open_sockets(zap, zmq_ctx, err, errlen);
	if (!ret) {
		ret = -pthread_create(&zap->thread, NULL, zap_thread, zap);
		if (ret)
			snprintf(err, errlen, "cannot start the ZAP handler: %s", strerror(-ret));
		zap->started = !ret;
	}
	if (ret) {
		curve_zap__free(zap);
		errno = -ret;
		return NULL;
	}
	pr_info("ZAP handler: %zu allowed Agent keys from '%s'", zap->n_keys, allowed);
	return zap;
}

size_t curve_zap_allowed_count(const struct curve_zap *zap)
{
	return zap ? zap->n_keys : 0;
}

uint64_t curve_zap_refused(const struct curve_zap *zap)
{
	return zap ? atomic_load(&((struct curve_zap *)zap)->refused) : 0;
}

uint64_t curve_zap_refused_fn(void *zap)
{
	return curve_zap_refused(zap);
}

void curve_zap__free(struct curve_zap *zap)
{
	if (!zap)
		return;
	if (zap->started) {
		/* a PAIR send to a connected peer queues at once (HWM 1000) */
		zmq_send(zap->stop_tx, "", 0, 0);
		pthread_join(zap->thread, NULL);
	}
	close_socket(zap->rep);
	close_socket(zap->stop_tx);
	close_socket(zap->stop_rx);
	free(zap->keys);
	free(zap);
}
