/* fuzz_wire_aggregator — a frame as the Aggregator receives it: wire_unpack()
 * of arbitrary bytes, and a Batch stored with pivot_store_batch() into a
 * real pivot, as aggregator_handle() does.
 * (No "packs again to bytes that unpack" check: protobuf-c accepts a field
 * number 0 whose tag is encoded overlong, keeps it as an unknown field and
 * writes it back in a form it then refuses — seed tag0-overlong. Nunatak
 * never packs a received Envelope again, so that is no finding of ours.)
 *
 * The pivot lives on tmpfs, is created once per process and reused across
 * inputs (a Batch already stored answers 1); it is recreated every
 * PIVOT_RENEW stored Batches so that a long run does not fill memory.
 * Before a pivot is dropped, what the finalize and `nunatak summary` do
 * with the stored Batches runs on it: the derived Measurements, the
 * diagnosis, the summary as text and JSON, then SQLite's integrity and
 * foreign-key checks.
 * Each Batch gets a fresh seq before it is stored: mutated inputs keep the
 * seq of their seed, and would otherwise stop at "already stored" without
 * reaching the content; the dedup is then checked by storing it again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/diagnose.h"
#include "report/summary.h"
#include "tests/unit/run_model_fixture.h"
#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/wire/wire.h"

#define PIVOT_RENEW 2000

static struct pivot *pivot;
static unsigned long stored;
static char pivot_path[128];
/* what the inputs came to, printed at exit: a target that never reaches
 * the pivot would pass while testing nothing */
static unsigned long n_envelopes, n_batches, n_stored, n_again, n_invalid;
static unsigned long n_read_back, n_summary_json_failed;

static void print_outcomes(void)
{
	fprintf(stderr,
		"fuzz_wire_aggregator: %lu envelopes unpacked, %lu batches: %lu stored, "
		"%lu already stored, %lu refused as invalid; %lu pivots read back, "
		"summary_json failed on %lu\n",
		n_envelopes, n_batches, n_stored, n_again, n_invalid, n_read_back,
		n_summary_json_failed);
}

static void remove_pivot(void)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-journal" };
	char path[160];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", pivot_path, suffixes[i]);
		unlink(path);
	}
}

/* one row "ok" from integrity_check, no row from foreign_key_check */
static void check_sqlite(struct pivot *p)
{
	sqlite3_stmt *st;

	FUZZ_CHECK(sqlite3_prepare_v2(pivot_sqlite(p), "PRAGMA integrity_check", -1, &st, NULL) ==
		   SQLITE_OK);
	FUZZ_CHECK(sqlite3_step(st) == SQLITE_ROW);
	FUZZ_CHECK(strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0);
	sqlite3_finalize(st);
	FUZZ_CHECK(sqlite3_prepare_v2(pivot_sqlite(p), "PRAGMA foreign_key_check", -1, &st,
				      NULL) == SQLITE_OK);
	FUZZ_CHECK(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
}

/* what the finalize and the summary read from the stored Batches */
static void read_back(struct pivot *p)
{
	FILE *devnull = fopen("/dev/null", "w");
	struct diagnosis *d;
	json_t *j;

	FUZZ_CHECK(devnull);
	n_read_back++;
	FUZZ_CHECK(pivot_derive_measurements(p) == 0);
	FUZZ_CHECK(pivot_needs_finalize(p) >= 0);
	d = diagnosis__new(p);
	FUZZ_CHECK(d);
	summary_print_of(devnull, d, p);
	/* a string that is not UTF-8 (a file name, a symbol, a Degradation's
	 * text; seed nonutf8-remedy) is escaped by the summary (json_text):
	 * a failed summary_json() is a lost --json document, a finding */
	j = summary_json_of(d, p);
	FUZZ_CHECK(j);
	FUZZ_CHECK(json_dumpf(j, devnull, JSON_INDENT(2)) == 0);
	json_decref(j);
	diagnosis__free(d);
	fclose(devnull);
	check_sqlite(p);
}

static void drop_pivot(void)
{
	if (pivot && stored)
		read_back(pivot);
	pivot__free(pivot);
	pivot = NULL;
}

static struct pivot *the_pivot(void)
{
	if (pivot && stored < PIVOT_RENEW)
		return pivot;
	drop_pivot();
	if (!pivot_path[0]) {
		snprintf(pivot_path, sizeof(pivot_path), "%s/pivot.sqlite", fuzz_scratch_dir());
		atexit(remove_pivot);
		atexit(drop_pivot); /* runs first */
	}
	remove_pivot();
	stored = 0;
	pivot = pivot__create(pivot_path);
	if (!pivot) {
		perror("fuzz: cannot create the pivot");
		abort();
	}
	return pivot;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* an Invalidity is logged at warn level: one line per input is noise */
	log_set_level(LOG_QUIET);
	atexit(print_outcomes);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	wire_envelope *env;
	char why[256];
	int err;

	why[0] = '\0';
	env = wire_unpack(data, size, why, sizeof(why));
	if (!env) {
		FUZZ_CHECK(errno == EBADMSG || errno == EPROTONOSUPPORT);
		FUZZ_CHECK(why[0]);
		return 0;
	}
	n_envelopes++;
	if (env->body_case == NUNATAK__WIRE__ENVELOPE__BODY_BATCH) {
		static uint64_t next_seq;

		n_batches++;
		env->batch->seq = next_seq++;
		err = pivot_store_batch(the_pivot(), env->batch);
		n_stored += err == 0;
		n_again += err == 1;
		n_invalid += err == -EINVAL;
		/* the Aggregator's reply names these: never NULL */
		FUZZ_CHECK(env->batch->run_id && env->batch->node);
		FUZZ_CHECK(err == 0 || err == 1 || err == -EINVAL || err == -ENOMEM);
		if (err == 0)
			stored++;
		/* the same Batch again is recognised and writes nothing */
		if (err == 0)
			FUZZ_CHECK(pivot_store_batch(pivot, env->batch) == 1);
	}
	wire_envelope_free(env);
	return 0;
}
