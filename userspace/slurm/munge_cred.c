/* munge_cred — see munge_cred.h. One munge context per call. */
#include <errno.h>
#include <limits.h>
#include <munge.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/slurm/munge_cred.h"
#include "userspace/slurm/slurm_internal.h"

#define MUNGE_CRED_MAX_TTL 3600

static const char *socket_name(const char *socket)
{
	return socket ? socket : MUNGE_CRED_DEFAULT_SOCKET;
}

/* The context's message, copied at once: it lives in the context and a
 * later munge_ctx_get may overwrite it. */
static void ctx_message(munge_ctx_t ctx, munge_err_t e, char *buf, size_t len)
{
	const char *s = ctx ? munge_ctx_strerror(ctx) : NULL;

	snprintf(buf, len, "%s", s ? s : munge_strerror(e));
}

/* A context talking to @socket. NULL with -errno in *ret and err. */
static munge_ctx_t ctx_open(const char *socket, int *ret, char *err, size_t errlen)
{
	munge_ctx_t ctx = munge_ctx_create();
	munge_err_t e;

	if (!ctx) {
		*ret = slurm_error(err, errlen, -ENOMEM, "munge: no memory for a munge context");
		return NULL;
	}
	if (socket) {
		e = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket);
		if (e != EMUNGE_SUCCESS) {
			*ret = slurm_error(err, errlen, -EINVAL,
					  "munge: cannot use socket '%s': %s", socket,
					  munge_strerror(e));
			munge_ctx_destroy(ctx);
			return NULL;
		}
	}
	return ctx;
}

static int unreachable(const char *socket, const char *what, const char *msg, char *err,
		       size_t errlen)
{
	return slurm_error(err, errlen, -EHOSTUNREACH,
			  "munge: cannot %s: munged unreachable at '%s' (%s): start munged "
			  "(systemctl start munge) or set [service].munge_socket to its socket",
			  what, socket_name(socket), msg);
}

int munge_cred_make_for(const char *socket, const char *payload, int ttl_s,
			uid_t restrict_uid, char **cred, char *err, size_t errlen)
{
	char msg[256];
	munge_ctx_t ctx;
	munge_err_t e;
	int ret = 0;

	if (!payload || !cred || ttl_s < 1 || ttl_s > MUNGE_CRED_MAX_TTL ||
	    (socket && socket[0] != '/'))
		return slurm_error(err, errlen, -EINVAL,
				  "munge: bad arguments to munge_cred_make (payload %s, ttl %d "
				  "s: 1..%d, socket '%s': absolute)",
				  payload ? "set" : "NULL", ttl_s, MUNGE_CRED_MAX_TTL,
				  socket_name(socket));
	*cred = NULL;
	ctx = ctx_open(socket, &ret, err, errlen);
	if (!ctx)
		return ret;
	e = munge_ctx_set(ctx, MUNGE_OPT_TTL, ttl_s);
	if (e == EMUNGE_SUCCESS)
		e = munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, restrict_uid);
	if (e != EMUNGE_SUCCESS) {
		ret = slurm_error(err, errlen, -EIO, "munge: cannot set the credential's options: %s",
				 munge_strerror(e));
		goto cleanup;
	}
	e = munge_encode(cred, ctx, payload, (int)strlen(payload));
	if (e != EMUNGE_SUCCESS) {
		ctx_message(ctx, e, msg, sizeof(msg));
		free(*cred);
		*cred = NULL;
		if (e == EMUNGE_SOCKET)
			ret = unreachable(socket, "make a credential", msg, err, errlen);
		else if (e == EMUNGE_NO_MEMORY)
			ret = slurm_error(err, errlen, -ENOMEM, "munge: out of memory: %s", msg);
		else
			ret = slurm_error(err, errlen, -EIO,
					 "munge: cannot make a credential through '%s': %s (munge "
					 "error %d; see munged's log)",
					 socket_name(socket), msg, (int)e);
	}
cleanup:
	munge_ctx_destroy(ctx);
	return ret;
}

int munge_cred_make(const char *socket, const char *payload, int ttl_s, char **cred,
		    char *err, size_t errlen)
{
	return munge_cred_make_for(socket, payload, ttl_s, 0, cred, err, errlen);
}

/* Why a credential that reached munged was refused, as -errno and err. */
static int refused(munge_err_t e, const char *msg, const char *socket, char *err, size_t errlen)
{
	const char *why;

	switch (e) {
	case EMUNGE_CRED_EXPIRED:
		why = "expired: make a fresh one (it lives its ttl seconds)";
		break;
	case EMUNGE_CRED_REPLAYED:
		why = "replayed: it was decoded once already on this host; make a fresh one "
		      "for each request";
		break;
	case EMUNGE_CRED_REWOUND:
		why = "rewound (made in the future): check the clocks of the two hosts";
		break;
	case EMUNGE_CRED_UNAUTHORIZED:
		why = "unauthorized: it is restricted to another uid or gid than this decoder's";
		break;
	case EMUNGE_CRED_INVALID:
		why = "invalid: made with another munge key or altered; every host needs the "
		      "same /etc/munge/munge.key";
		break;
	case EMUNGE_BAD_ARG: /* in a decode: no credential ("") */
	case EMUNGE_BAD_CRED:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
	case EMUNGE_BAD_LENGTH:
		why = "malformed: not a munge credential (\"MUNGE:...\") this munged understands";
		break;
	default:
		return slurm_error(err, errlen, -EIO,
				  "munge: cannot decode the credential through '%s': %s (munge "
				  "error %d; see munged's log)",
				  socket_name(socket), msg, (int)e);
	}
	return slurm_error(err, errlen, -EACCES, "munge credential refused by munged at '%s': %s (%s)",
			  socket_name(socket), why, msg);
}

int munge_cred_check(const char *socket, const char *cred, const char *expected, uid_t *uid,
		     gid_t *gid, char *err, size_t errlen)
{
	void *payload = NULL;
	char msg[256];
	munge_ctx_t ctx;
	munge_err_t e;
	uid_t u = (uid_t)-1;
	gid_t g = (gid_t)-1;
	int len = 0, ret = 0;

	if (!cred || !expected || !uid || !gid || (socket && socket[0] != '/'))
		return slurm_error(err, errlen, -EINVAL,
				  "munge: bad arguments to munge_cred_check (socket '%s' must be "
				  "absolute)",
				  socket_name(socket));
	ctx = ctx_open(socket, &ret, err, errlen);
	if (!ctx)
		return ret;
	e = munge_decode(cred, ctx, &payload, &len, &u, &g);
	if (e != EMUNGE_SUCCESS) {
		ctx_message(ctx, e, msg, sizeof(msg));
		if (e == EMUNGE_SOCKET)
			ret = unreachable(socket, "check a credential", msg, err, errlen);
		else if (e == EMUNGE_NO_MEMORY)
			ret = slurm_error(err, errlen, -ENOMEM, "munge: out of memory: %s", msg);
		else
			ret = refused(e, msg, socket, err, errlen);
		goto cleanup;
	}
	if (len < 0 || (size_t)len != strlen(expected) || (len && memcmp(payload, expected, len))) {
		ret = slurm_error(err, errlen, -EPROTO,
				 "munge credential refused: it was made for another request (%d "
				 "bytes of payload, expected \"%s\"): make one for this request",
				 len, expected);
		goto cleanup;
	}
	*uid = u;
	*gid = g;
cleanup:
	free(payload);
	munge_ctx_destroy(ctx);
	return ret;
}
