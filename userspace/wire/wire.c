/* wire — see wire.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

void *wire_pack(wire_envelope *env, size_t *len)
{
	void *buf;

	env->protocol_major = WIRE_PROTOCOL_MAJOR;
	env->protocol_minor = WIRE_PROTOCOL_MINOR;
	*len = nunatak__wire__envelope__get_packed_size(env);
	buf = malloc(*len ? *len : 1);
	if (buf)
		nunatak__wire__envelope__pack(env, buf);
	return buf;
}

int wire_send(void *socket, wire_envelope *env)
{
	size_t len;
	void *buf;
	int err = 0;

	buf = wire_pack(env, &len);
	if (!buf)
		return -ENOMEM;
	if (zmq_send(socket, buf, len, 0) < 0)
		err = -zmq_errno();
	free(buf);
	return err;
}

wire_envelope *wire_unpack(const void *data, size_t len, char *err, size_t errlen)
{
	wire_envelope *env;

	env = nunatak__wire__envelope__unpack(NULL, len, data);
	if (!env) {
		snprintf(err, errlen, "malformed message: not a nunatak envelope (%zu bytes)", len);
		errno = EBADMSG;
		return NULL;
	}
	if (env->protocol_major > WIRE_PROTOCOL_MAJOR) {
		snprintf(err, errlen, "protocol %u.%u is newer than this peer's %u.%u: upgrade nunatak",
			 env->protocol_major, env->protocol_minor, WIRE_PROTOCOL_MAJOR,
			 WIRE_PROTOCOL_MINOR);
		nunatak__wire__envelope__free_unpacked(env, NULL);
		errno = EPROTONOSUPPORT;
		return NULL;
	}
	return env;
}

void wire_envelope_free(wire_envelope *env)
{
	if (env)
		nunatak__wire__envelope__free_unpacked(env, NULL);
}

int wire_storage_error_transient(int code)
{
	switch (code) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
	case EROFS:
	case EIO:
	case ENOMEM:
	case EBUSY:
	case EAGAIN:
	case ETIMEDOUT:
		return 1;
	default:
		return 0;
	}
}

void wire_storage_failed_message(char *buf, size_t len, unsigned long long samples,
				 unsigned long long batches, int code)
{
	char why[128];

	snprintf(buf, len, "%llu samples in %llu Batches were not stored: %s", samples, batches,
		 code == ETIMEDOUT || code <= 0 ? "the Aggregator did not acknowledge them"
						: errno_text(code, why, sizeof(why)));
}

const char *wire_storage_failed_remedy(int code)
{
	switch (code) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return "free space in the runs directory (or point runs_dir at a larger file "
		       "system) and run again; what was stored is consistent and readable";
	case EBUSY:
		return "another program held the Run's pivot locked (a reader inside a "
		       "transaction): read a Run while it is written only with 'nunatak summary', "
		       "and run again";
	case ETIMEDOUT:
	case 0:
		return "the Aggregator was too slow or gone: run again on a less loaded node";
	default:
		return "check the file system of the runs directory (read-only, I/O errors) and "
		       "run again; what was stored is consistent and readable";
	}
}
