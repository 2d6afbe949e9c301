/* wire — Envelopes of the nunatak protocol, packed for ZeroMQ.
 *
 * The protobuf schema is userspace/wire/nunatak.proto; this module owns the
 * protocol version and the frame format: one ZeroMQ frame = one packed
 * Envelope (a ROUTER peer sees an identity frame before it). A received
 * Envelope of a newer major version is an Invalidity: wire_unpack() refuses
 * it with a message naming both versions.
 */
#ifndef NUNATAK_WIRE_H
#define NUNATAK_WIRE_H

#include <stddef.h>

#include "userspace/wire/nunatak.pb-c.h"

#define WIRE_PROTOCOL_MAJOR 1
#define WIRE_PROTOCOL_MINOR 6 /* 1.1: Error.code, Error.seq, Batch.last; 1.2: incarnation
			       * (Hello, Batch, Ack, Error), Hello.status_json,
			       * Ack.json, Control OPEN/CLOSE/STATUS, Control.node;
			       * 1.3: Control ATTACH; 1.4: Module.symbols; 1.5: Batch.components,
			       * component_costs, steps; 1.6: ProcessExit.run_delay_ns */

typedef Nunatak__Wire__Envelope wire_envelope;

/* Sets the protocol version of env, packs it and sends it as the last (or
 * only) frame of a message on socket. Returns 0 or -errno. */
int wire_send(void *socket, wire_envelope *env);

/* Sets the protocol version of env and packs it into a buffer the caller
 * frees; *len its size. NULL + errno (ENOMEM). */
void *wire_pack(wire_envelope *env, size_t *len);

/* Unpacks one frame. Returns the Envelope (free with wire_envelope_free) or
 * NULL with errno EBADMSG (not an Envelope) or EPROTONOSUPPORT (newer
 * major); err then holds a one-line explanation. */
wire_envelope *wire_unpack(const void *data, size_t len, char *err, size_t errlen);

void wire_envelope_free(wire_envelope *env);

/* 1 when a Batch refused with code (an errno) was valid but could not be
 * stored (disk full, I/O error, read-only, no reply...): the Agent keeps
 * it, sends it again later and, if it never gets in, counts it as
 * storage-failed; 0 when it never will be stored as it is (malformed,
 * unknown Run, ...): counted as refused. */
int wire_storage_error_transient(int code);

/* The text of the storage-failed Degradation: "N samples in M Batches
 * were not stored: <why>", why said from code (ETIMEDOUT: no Ack). */
void wire_storage_failed_message(char *buf, size_t len, unsigned long long samples,
				 unsigned long long batches, int code);
/* Its remedy, for the same code: free space for a full disk, close the
 * reader for a locked pivot, look at the file system otherwise. */
const char *wire_storage_failed_remedy(int code);

#endif
