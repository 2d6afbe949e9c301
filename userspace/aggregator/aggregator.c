/* aggregator — see aggregator.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>
#include <jansson.h>

#include "userspace/aggregator/aggregator.h"
#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/wire/wire.h"

struct aggregator {
	void *socket;
	/* aggregator_stop() and aggregator_interrupt() from another thread:
	 * eventfds that stay readable once written */
	int stop_fd, cancel_fd;
	/* the one Run being collected */
	char *run_id;
	char *run_dir;
	char *symbolizer;
	struct pivot *pivot;
	json_t *manifest;
	/* the Run directory, opened and checked at START and locked (flock)
	 * until the Run is closed: every file of the Run is made under it */
	int run_dir_fd;
	int has_run_dir_fd;
};

struct aggregator *aggregator__new(void *router_socket)
{
	struct aggregator *agg = calloc(1, sizeof(*agg));
	int err;

	if (!agg)
		return NULL;
	agg->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	agg->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (agg->stop_fd < 0 || agg->cancel_fd < 0) {
		err = errno;
		if (agg->stop_fd >= 0)
			close(agg->stop_fd);
		if (agg->cancel_fd >= 0)
			close(agg->cancel_fd);
		free(agg);
		errno = err;
		return NULL;
	}
	agg->socket = router_socket;
	return agg;
}

static void eventfd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		pr_debug("eventfd: %s", strerror(errno));
}

void aggregator_stop(struct aggregator *agg)
{
	eventfd_signal(agg->cancel_fd);
	eventfd_signal(agg->stop_fd);
}

void aggregator_interrupt(struct aggregator *agg)
{
	eventfd_signal(agg->cancel_fd);
}

static void aggregator_close_run(struct aggregator *agg)
{
	pivot__free(agg->pivot);
	if (agg->has_run_dir_fd) {
		/* the Run is no longer written: no room is kept for its end, and
		 * closing releases the lock */
		unlinkat(agg->run_dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
		close(agg->run_dir_fd);
	}
	agg->has_run_dir_fd = 0;
	json_decref(agg->manifest);
	free(agg->run_id);
	free(agg->run_dir);
	free(agg->symbolizer);
	agg->pivot = NULL;
	agg->manifest = NULL;
	agg->run_id = agg->run_dir = agg->symbolizer = NULL;
}

void aggregator__free(struct aggregator *agg)
{
	if (!agg)
		return;
	aggregator_close_run(agg);
	if (agg->socket)
		zmq_close(agg->socket);
	close(agg->stop_fd);
	close(agg->cancel_fd);
	free(agg);
}

static int reply(struct aggregator *agg, zmq_msg_t *identity, wire_envelope *env)
{
	if (zmq_send(agg->socket, zmq_msg_data(identity), zmq_msg_size(identity), ZMQ_SNDMORE) < 0)
		return -zmq_errno();
	return wire_send(agg->socket, env);
}

static int reply_ack(struct aggregator *agg, zmq_msg_t *identity, const char *run_id,
		     const char *node, uint64_t seq)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;

	ack.run_id = (char *)run_id;
	ack.node = (char *)node;
	ack.seq = seq;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	return reply(agg, identity, &env);
}

static int reply_error(struct aggregator *agg, zmq_msg_t *identity, const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	pr_warn("%s", message);
	error.message = (char *)message;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	return reply(agg, identity, &env);
}

/* Opens the Run directory START names (created by `nunatak run`, which
 * sends its st_dev/st_ino) and keeps it for the whole Run, locked: a
 * directory replaced by another or by a symbolic link, not ours, or not
 * private is refused, and nothing is created in it. */
static int aggregator_open_run_dir(struct aggregator *agg, const json_t *spec, const char *run_dir,
				   char *why, size_t whylen)
{
	json_t *dev = json_object_get(spec, "run_dir_dev"), *ino = json_object_get(spec, "run_dir_ino");
	struct stat st;
	int fd, err = 0;

	if (!json_is_integer(dev) || !json_is_integer(ino)) {
		snprintf(why, whylen, "malformed START: run directory '%s' given without its "
			 "run_dir_dev and run_dir_ino", run_dir);
		return -EINVAL;
	}
	fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		err = -errno;
		snprintf(why, whylen, "cannot open run directory '%s': %s", run_dir, strerror(-err));
		goto out;
	}
	if ((json_int_t)st.st_dev != json_integer_value(dev) ||
	    (json_int_t)st.st_ino != json_integer_value(ino)) {
		err = -ESTALE;
		snprintf(why, whylen, "refusing run directory '%s': it is not the directory created "
			 "for this Run (replaced since); start the Run again", run_dir);
		goto out;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		err = -EPERM;
		snprintf(why, whylen, "refusing run directory '%s': owner uid %u, mode %04o; a Run "
			 "directory is its writer's (uid %u) and 0700", run_dir, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		goto out;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK) {
			err = -EBUSY;
			snprintf(why, whylen, "run directory '%s' is locked: another nunatak "
				 "writes it", run_dir);
			goto out;
		}
		/* a file system without locks (Lustre without -o flock): the Run
		 * is written all the same, unlocked */
		pr_warn("cannot lock run directory '%s': %s; `nunatak summary` will not "
			"finalize it, not knowing whether it is still written", run_dir,
			strerror(errno));
	}
	agg->run_dir_fd = fd;
	agg->has_run_dir_fd = 1;
out:
	if (err && fd >= 0)
		close(fd);
	return err;
}

/* The room the Agent's last Batch and the finalize need when the disk
 * fills up during the Run: a file of zeros made when the Run starts and
 * removed for the last Batch (Batch.last), so that what was lost can still
 * be said in the Run. make 0: remove it. 0, or -errno when it cannot be
 * made (a Run without that room would lose the count of its losses: the
 * start fails instead, before the application runs). */
#define STORAGE_RESERVE_BYTES (512 * 1024)

static int aggregator_storage_reserve(const struct aggregator *agg, int make)
{
	static const char zeros[64 * 1024];
	size_t done;
	int fd, err = 0;

	if (!agg->has_run_dir_fd)
		return 0;
	if (!make) {
		unlinkat(agg->run_dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
		return 0;
	}
	fd = openat(agg->run_dir_fd, RUN_STORAGE_RESERVE_FILE,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno; /* EEXIST: made already */
	for (done = 0; done < STORAGE_RESERVE_BYTES && !err; done += sizeof(zeros)) {
		ssize_t n = write(fd, zeros, sizeof(zeros));

		if (n != (ssize_t)sizeof(zeros))
			err = n < 0 ? -errno : -ENOSPC;
	}
	if (!err && fsync(fd))
		err = -errno;
	close(fd);
	if (err)
		unlinkat(agg->run_dir_fd, RUN_STORAGE_RESERVE_FILE, 0);
	return err;
}

static int aggregator_start(struct aggregator *agg, const Nunatak__Wire__Control *c, char *why,
			    size_t whylen)
{
	const char *run_dir, *symbolizer;
	json_error_t jerr;
	json_t *spec;
	char path[PATH_MAX];
	int err;

	if (agg->run_id) {
		snprintf(why, whylen, "run '%s' is already being collected", agg->run_id);
		return -EBUSY;
	}
	spec = json_loads(c->json ? c->json : "", 0, &jerr);
	run_dir = json_string_value(json_object_get(spec, "run_dir"));
	symbolizer = json_string_value(json_object_get(spec, "symbolizer"));
	if (!spec || !run_dir || !json_is_object(json_object_get(spec, "manifest"))) {
		snprintf(why, whylen, "malformed START for run '%s'", c->run_id);
		json_decref(spec);
		return -EINVAL;
	}
	err = aggregator_open_run_dir(agg, spec, run_dir, why, whylen);
	if (err)
		goto out;
	snprintf(path, sizeof(path), "%s/" PIVOT_FILE, run_dir);
	agg->pivot = pivot__create_at(agg->run_dir_fd, PIVOT_FILE, path);
	if (!agg->pivot) {
		err = -errno;
		snprintf(why, whylen, "cannot create '%s': %s", path, strerror(-err));
		goto out;
	}
	/* before the disk can fill (the first Batch may be too late), and
	 * before the manifest: a Run with a manifest has its reserve */
	err = aggregator_storage_reserve(agg, 1);
	if (err) {
		snprintf(why, whylen, "cannot reserve %d KiB for the end of the Run in '%s': %s",
			 STORAGE_RESERVE_BYTES / 1024, run_dir, strerror(-err));
		goto out;
	}
	agg->manifest = json_incref(json_object_get(spec, "manifest"));
	err = manifest_write(agg->run_dir_fd, agg->manifest);
	if (err) {
		snprintf(why, whylen, "cannot write the manifest in '%s': %s", run_dir,
			 strerror(-err));
		goto out;
	}
	agg->run_id = strdup(c->run_id);
	agg->run_dir = strdup(run_dir);
	agg->symbolizer = strdup(symbolizer ? symbolizer : ""); /* none: ELF names */
	if (!agg->run_id || !agg->run_dir || !agg->symbolizer)
		err = -ENOMEM;
out:
	if (err)
		aggregator_close_run(agg);
	json_decref(spec);
	return err;
}

/* FINALIZE's json: {"exit_code": n|null, "end": "...", "symbolizer_budget_ms": n?}.
 * The symbolizer is bounded by that budget (SYMBOLIZER_TOTAL_MS when
 * absent) and stopped by aggregator_interrupt(). */
static int aggregator_finalize(struct aggregator *agg, const Nunatak__Wire__Control *c,
			       char *why, size_t whylen)
{
	json_t *result, *passes, *pass, *run, *budget_ms;
	struct symbolizer_budget budget, *previous;
	json_error_t jerr;
	uint64_t drained;
	int err;

	result = json_loads(c->json ? c->json : "{}", 0, &jerr);
	if (!result) {
		snprintf(why, whylen, "malformed FINALIZE for run '%s'", c->run_id);
		return -EINVAL;
	}
	run = json_object_get(agg->manifest, "run");
	passes = json_object_get(agg->manifest, "passes");
	pass = json_array_get(passes, json_array_size(passes) - 1);
	if (run)
		json_object_set(run, "exit_code", json_object_get(result, "exit_code"));
	if (pass) {
		json_object_set(pass, "exit_code", json_object_get(result, "exit_code"));
		json_object_set(pass, "end", json_object_get(result, "end"));
	}
	budget_ms = json_object_get(result, "symbolizer_budget_ms");
	symbolizer_budget_init(&budget, SYMBOLIZER_REQUEST_MS,
			       json_is_integer(budget_ms) && json_integer_value(budget_ms) > 0 &&
					       json_integer_value(budget_ms) <= INT_MAX
				       ? (int)json_integer_value(budget_ms)
				       : SYMBOLIZER_TOTAL_MS,
			       agg->cancel_fd);
	json_decref(result);
	previous = symbolizer_budget_bind(&budget);
	err = finalize_run(agg->pivot, agg->run_dir_fd, agg->manifest, agg->symbolizer);
	symbolizer_budget_bind(previous);
	/* an interruption ends with this finalize: the next Run starts anew */
	if (read(agg->cancel_fd, &drained, sizeof(drained)) < 0 && errno != EAGAIN)
		pr_debug("eventfd: %s", strerror(errno));
	if (err)
		snprintf(why, whylen, "finalizing run '%s' failed: %s", agg->run_id,
			 strerror(-err));
	return err;
}

/* An Error about Batch b, with code (an errno) saying whether storing it
 * again later may work (wire_storage_error_transient). */
static int reply_batch_error(struct aggregator *agg, zmq_msg_t *identity,
			     const Nunatak__Wire__Batch *b, int code, const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	if (wire_storage_error_transient(code))
		pr_debug("%s", message); /* the Agent says it once, not at each resend */
	else
		pr_warn("%s", message);
	error.message = (char *)message;
	error.has_code = error.has_seq = 1;
	error.code = code;
	error.seq = b->seq;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	return reply(agg, identity, &env);
}

static int aggregator_store_batch(struct aggregator *agg, zmq_msg_t *identity,
				  const Nunatak__Wire__Batch *b)
{
	char why[1024], cause[128];
	int err;

	if (!agg->run_id || strcmp(b->run_id, agg->run_id)) {
		snprintf(why, sizeof(why), "batch %llu from '%s' names unknown run '%s'",
			 (unsigned long long)b->seq, b->node, b->run_id);
		return reply_batch_error(agg, identity, b, ENOENT, why);
	}
	if (b->has_last && b->last)
		aggregator_storage_reserve(agg, 0);
	err = pivot_store_batch(agg->pivot, b);
	if (err < 0) {
		snprintf(why, sizeof(why), "batch %llu from '%s' not stored in '%s': %s",
			 (unsigned long long)b->seq, b->node, agg->run_dir,
			 errno_text(err, cause, sizeof(cause)));
		return reply_batch_error(agg, identity, b, -err, why);
	}
	return reply_ack(agg, identity, b->run_id, b->node, b->seq);
}

static int aggregator_handle(struct aggregator *agg, zmq_msg_t *identity, const wire_envelope *env,
			     int *finalized)
{
	char why[1024] = "";
	int err;

	switch (env->body_case) {
	case NUNATAK__WIRE__ENVELOPE__BODY_BATCH:
		return aggregator_store_batch(agg, identity, env->batch);
	case NUNATAK__WIRE__ENVELOPE__BODY_CONTROL: {
		const Nunatak__Wire__Control *c = env->control;

		if (c->action == NUNATAK__WIRE__CONTROL__ACTION__START) {
			err = aggregator_start(agg, c, why, sizeof(why));
		} else if (!agg->run_id || strcmp(c->run_id, agg->run_id)) {
			snprintf(why, sizeof(why), "FINALIZE names unknown run '%s'", c->run_id);
			err = -ENOENT;
		} else {
			err = aggregator_finalize(agg, c, why, sizeof(why));
			if (!err)
				*finalized = 1;
		}
		if (err)
			return reply_error(agg, identity, why);
		err = reply_ack(agg, identity, c->run_id, "", 0);
		if (*finalized)
			aggregator_close_run(agg); /* the next START opens another Run */
		return err;
	}
	default:
		return reply_error(agg, identity, "unexpected message: only Batch and Control are served");
	}
}

/* Reads what remains of the current message; 1 when something did. */
static int aggregator_discard_rest(struct aggregator *agg)
{
	size_t more_size;
	int more, extra = 0;

	for (;;) {
		zmq_msg_t frame;

		more_size = sizeof(more);
		if (zmq_getsockopt(agg->socket, ZMQ_RCVMORE, &more, &more_size) || !more)
			return extra;
		zmq_msg_init(&frame);
		zmq_msg_recv(&frame, agg->socket, 0);
		zmq_msg_close(&frame);
		extra = 1;
	}
}

/* Serves the one message waiting on the socket. 0, or -errno when the
 * socket itself failed (ETERM: the context is being terminated). */
static int aggregator_serve_one(struct aggregator *agg, int *finalized)
{
	zmq_msg_t identity, payload;
	wire_envelope *env;
	char why[256];
	int more = 0, err = 0;
	size_t more_size = sizeof(more);

	zmq_msg_init(&identity);
	zmq_msg_init(&payload);
	if (zmq_msg_recv(&identity, agg->socket, ZMQ_DONTWAIT) < 0) {
		err = -zmq_errno();
		if (err == -EINTR || err == -EAGAIN)
			err = 0;
		goto next;
	}
	zmq_getsockopt(agg->socket, ZMQ_RCVMORE, &more, &more_size);
	if (!more || zmq_msg_recv(&payload, agg->socket, 0) < 0)
		goto next;
	/* one message = one frame: the rest of a longer one is read and
	 * refused here, or it would pass for the next peer's message */
	if (aggregator_discard_rest(agg)) {
		reply_error(agg, &identity, "malformed message: one frame expected");
		goto next;
	}
	env = wire_unpack(zmq_msg_data(&payload), zmq_msg_size(&payload), why, sizeof(why));
	if (!env) {
		reply_error(agg, &identity, why);
		goto next;
	}
	err = aggregator_handle(agg, &identity, env, finalized);
	wire_envelope_free(env);
	if (err)
		pr_warn("aggregator reply failed: %s", zmq_strerror(-err));
	err = 0;
next:
	zmq_msg_close(&identity);
	zmq_msg_close(&payload);
	return err;
}

int aggregator_serve(struct aggregator *agg, int once)
{
	int finalized = 0, err = 0;

	while (!err && !(once && finalized)) {
		zmq_pollitem_t items[2] = {
			{ .socket = agg->socket, .events = ZMQ_POLLIN },
			{ .fd = agg->stop_fd, .events = ZMQ_POLLIN },
		};

		/* no timeout here: the bound is the caller's, who ends this wait
		 * through stop_fd (aggregator_stop) and joins with a deadline */
		if (zmq_poll(items, 2, -1) < 0) {
			err = -zmq_errno();
			if (err == -EINTR)
				err = 0;
			continue;
		}
		/* a message already there is served before a stop is obeyed */
		if (items[0].revents & ZMQ_POLLIN)
			err = aggregator_serve_one(agg, &finalized);
		else if (items[1].revents & ZMQ_POLLIN)
			err = -ECANCELED;
	}
	return err;
}
