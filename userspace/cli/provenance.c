/* provenance — see provenance.h. */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include <protobuf-c/protobuf-c.h>
#include <sqlite3.h>
#include <zmq.h>

#include "userspace/cli/provenance.h"
#include "userspace/config/config.h"
#include "version.h" /* generated: NUNATAK_COMMIT, NUNATAK_DIRTY */

/* first line of `tool --version` that names a version, or null */
static json_t *tool_version(const char *tool)
{
	char cmd[4200], line[256];
	json_t *v = NULL;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", tool);
	p = popen(cmd, "r");
	if (!p)
		return json_null();
	while (!v && fgets(line, sizeof(line), p)) {
		char *at = strstr(line, "version");

		if (!at)
			continue;
		line[strcspn(line, "\n")] = '\0';
		v = json_string(line);
	}
	pclose(p);
	return v ? v : json_null();
}

json_t *provenance_json(const struct config *cfg)
{
	char libbpf[32], zmq[32];
	int major, minor, patch;

	snprintf(libbpf, sizeof(libbpf), "%u.%u", libbpf_major_version(), libbpf_minor_version());
	zmq_version(&major, &minor, &patch);
	snprintf(zmq, sizeof(zmq), "%d.%d.%d", major, minor, patch);
	return json_pack("{s:s, s:b, s:{s:s, s:s, s:s, s:s, s:s, s:o}, s:o}", "commit",
			 NUNATAK_COMMIT, "dirty_tree", NUNATAK_DIRTY, "dependencies", "libbpf",
			 libbpf, "libzmq", zmq, "sqlite", sqlite3_libversion(), "jansson",
			 JANSSON_VERSION, "protobuf-c", protobuf_c_version(), "llvm-symbolizer",
			 tool_version(cfg->llvm_symbolizer), "effective_configuration",
			 config_effective_json(cfg));
}
