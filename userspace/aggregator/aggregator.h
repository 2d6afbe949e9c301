/* aggregator — receives Batches from Agents over ZeroMQ (a ROUTER socket),
 * stores each exactly once in its Run's measured pivot, acknowledges it
 * only once it is durable (committed), and finalizes the Run when told.
 *
 * Protocol (userspace/wire/nunatak.proto): Control START creates the Run
 * (directory, pivot.sqlite, a first manifest.json), Batch stores and Acks,
 * Control FINALIZE attributes (llvm-symbolizer bounded by the budget
 * FINALIZE gives), derives Measurements, rewrites the manifest and Acks. A Batch for an unknown Run or a malformed message gets an
 * Error reply, and the Aggregator goes on.
 */
#ifndef NUNATAK_AGGREGATOR_H
#define NUNATAK_AGGREGATOR_H

struct aggregator;

/* Takes ownership of a bound ROUTER socket. NULL + errno. */
struct aggregator *aggregator__new(void *router_socket);
void aggregator__free(struct aggregator *agg);

/* Serve until a Run is finalized (once = 1), or until aggregator_stop()
 * (-ECANCELED; a message already waiting is served first), or until the
 * ZeroMQ context is terminated (-ETERM). 0 or -errno. */
int aggregator_serve(struct aggregator *agg, int once);

/* Both safe to call from another thread than the one serving, any time
 * between aggregator__new() and aggregator__free().
 *
 * aggregator_interrupt(): the finalize under way (or the next one) stops
 * running llvm-symbolizer at once; addresses it did not name keep their
 * ELF names and the Run gets a run-interrupted Degradation. The finalize
 * still ends (measurements, manifest) and is acknowledged.
 * aggregator_stop(): the same, and aggregator_serve() returns. */
void aggregator_interrupt(struct aggregator *agg);
void aggregator_stop(struct aggregator *agg);

#endif
