/* version — nunatak's version, one for the CLI, both daemons, the
 * manifest and the wire (Hello.agent_version). */
#ifndef NUNATAK_VERSION_H
#define NUNATAK_VERSION_H

#define NUNATAK_VERSION "0.1.0"

#endif
