/* curve — CURVE keys of the transport between Agents and Aggregators, and
 * the ZAP handler that decides which Agents an Aggregator accepts.
 *
 * A key is 32 bytes, written as 40 characters of Z85 (ZeroMQ's text form).
 * Key files are text: lines starting with '#' and blank lines are
 * comments, the one other line is the key (trailing blanks and CR
 * ignored). NAME.key holds a secret key (the public one is derived from
 * it), NAME.pub a public key; curve_keygen() writes both.
 *
 * Trust: a key file is read only if trust_open() (config/trust.h) accepts
 * it — a regular file, no symbolic link, owned by root or the euid, not
 * writable by group or others, under directories only they can write —
 * and a secret key file must moreover not be readable by group or others.
 * Another user who could write a public key file or the allow-list could
 * let their own Agent in; one who could read a secret key could pose as
 * the Aggregator. A refusal names the file, its owner or mode and the
 * command that fixes it.
 *
 * The allow-list of an Aggregator (allowed_agents) is either a directory,
 * of which every "*.pub" file holds one public key (other names are
 * ignored, each *.pub must pass the trust rules), or a file with one
 * public key per line ("KEY" or "KEY  comment", '#' comments, blank lines).
 * It is read once, by curve_zap__new().
 *
 * The ZAP handler is a thread answering ZeroMQ's authentication requests
 * (RFC 27, inproc://zeromq.zap.01) for every socket of one context: a
 * CURVE client whose public key is in the allow-list is accepted (status
 * 200, user id = the key in Z85); any other CURVE key, and PLAIN or GSSAPI,
 * is refused (400) and counted. NULL-mechanism peers are accepted: a socket
 * without CURVE is unauthenticated by its own configuration, and a NULL
 * peer can never complete a handshake with a CURVE server anyway. One
 * handler per context (ZeroMQ allows one bind of that endpoint).
 *
 * Without a ZAP handler in its context, libzmq lets every CURVE client that
 * knows the server's public key in: a server that means to authenticate
 * its Agents must run curve_zap__new() before it binds.
 *
 * Every function here returns 0 or -errno with "what, why, what to do" in
 * err (err may be NULL); constructors NULL and errno.
 */
#ifndef NUNATAK_WIRE_CURVE_H
#define NUNATAK_WIRE_CURVE_H

#include <stddef.h>
#include <stdint.h>

#define CURVE_KEY_Z85_LEN 40
/* the biggest allow-list file read (10 000 keys with comments fit) */
#define CURVE_ALLOW_FILE_MAX_BYTES (4u << 20)

struct curve_keypair {
	char public_z85[CURVE_KEY_Z85_LEN + 1];
	char secret_z85[CURVE_KEY_Z85_LEN + 1];
};

/* Reads the secret key file @secret_path (trust rules above, secret
 * ones included) into @kp and derives its public key. -ENOENT, -EPERM
 * (owner, writable, readable by group or others, directories), -ELOOP,
 * -EISDIR, -EINVAL (not a regular file, or no valid key: message with
 * file:line), -EFBIG, another -errno. */
int curve_load_keypair(const char *secret_path, struct curve_keypair *kp, char *err,
		       size_t errlen);

/* Overwrites @kp (explicit_bzero): for a key pair no longer needed. */
void curve_keypair_wipe(struct curve_keypair *kp);

/* Reads the public key file @path into @out (40 characters + NUL). Same
 * errors but readability (a public key may be world-readable). */
int curve_load_public(const char *path, char out[CURVE_KEY_Z85_LEN + 1], char *err,
		      size_t errlen);

/* A new key pair in the directory @dir (which must pass the trust rules):
 * @dir/@name.key (mode 0600) and @dir/@name.pub (0644), created with
 * O_EXCL|O_NOFOLLOW under the directory's descriptor, written and synced;
 * @name is [A-Za-z0-9_.-], not starting with '.', at most 64 bytes.
 * -EEXIST when either file exists (nothing is overwritten), -EINVAL for a
 * bad name, the trust_open_dir_chain() errors, another -errno; on error
 * nothing is left behind. */
int curve_keygen(const char *dir, const char *name, char *err, size_t errlen);

/* Whether @z85 is a well-formed 40-character Z85 key: 1 or 0. */
int curve_key_valid(const char *z85);

/* Server side (an Aggregator's ROUTER), before bind: CURVE server with the
 * secret key of @kp, ZAP domain "nunatak". Client side (an Agent's
 * DEALER), before connect: @kp is the Agent's key pair, @server_public_z85
 * the Aggregator's public key. 0 or -errno of zmq_setsockopt (-EINVAL for
 * a malformed key). */
int curve_server_setup(void *sock, const struct curve_keypair *kp);
int curve_client_setup(void *sock, const struct curve_keypair *kp, const char *server_public_z85);

struct curve_zap;

/* Reads the allow-list @allowed (a directory of *.pub or a file of keys,
 * see above), binds inproc://zeromq.zap.01 in @zmq_ctx and starts the
 * handler thread. NULL with errno: EINVAL (a malformed key, with file and
 * line; an empty allow-list is refused: it would refuse every Agent),
 * EPERM/ELOOP/ENOENT... (trust rules), EADDRINUSE (another handler in this
 * context), ENOMEM; the message in @err. The handler answers each request
 * at once (a lookup in a sorted table), so it never holds a handshake. */
struct curve_zap *curve_zap__new(void *zmq_ctx, const char *allowed, char *err, size_t errlen);

/* How many allowed public keys the handler knows. */
size_t curve_zap_allowed_count(const struct curve_zap *zap);

/* Authentication requests refused so far (any thread may ask). The second
 * form fits aggregator_set_refused_counter(agg, curve_zap_refused_fn, zap). */
uint64_t curve_zap_refused(const struct curve_zap *zap);
uint64_t curve_zap_refused_fn(void *zap);

/* Stops the thread (within one poll: it wakes on a stop message, no
 * timeout involved), joins it and closes its sockets; must be called
 * before zmq_ctx_term() of the context (which waits for every socket to
 * close, these too). NULL-safe. */
void curve_zap__free(struct curve_zap *zap);

#endif
