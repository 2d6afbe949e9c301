/* aggregator — receives Batches from Agents over ZeroMQ (a ROUTER socket),
 * stores each exactly once in its Run's measured pivot, acknowledges it
 * only once it is durable (committed), and finalizes the Run when told.
 *
 * Protocol (userspace/wire/nunatak.proto): Control START creates the Run
 * (directory, pivot.sqlite, a first manifest.json), Batch stores and Acks,
 * Control FINALIZE attributes, derives Measurements, rewrites the manifest
 * and Acks. A Batch for an unknown Run or a malformed message gets an
 * Error reply, and the Aggregator goes on.
 */
#ifndef NUNATAK_AGGREGATOR_H
#define NUNATAK_AGGREGATOR_H

struct aggregator;

/* Takes ownership of a bound ROUTER socket. NULL + errno. */
struct aggregator *aggregator__new(void *router_socket);
void aggregator__free(struct aggregator *agg);

/* Serve until a Run is finalized (once = 1) or forever. 0 or -errno. */
int aggregator_serve(struct aggregator *agg, int once);

#endif
