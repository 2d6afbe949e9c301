/* Tests of report/report_html: the page written into a Run directory (a
 * temporary directory here) from a pivot built in the test
 * (tests/unit/payload_fixture.h): 0600, the markers filled, the title
 * and the summary text escaped, nothing from the pivot able to end the
 * script element, the payload parsed back equal to payload_json(); the
 * file owned by the directory's owner when root writes it; a failure
 * (a directory in the way, a file size limit, a bad name) leaves no file
 * behind and an older page as it was; the embedded assets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "report/payload.h"
#include "report/report_assets.h"
#include "report/report_html.h"
#include "report/run_model.h"
#include "tests/unit/test_helpers.h"
#include "tests/unit/payload_fixture.h"

#define PAYLOAD_OPEN "<script id=\"nunatak-payload\" type=\"application/json\">"

static char tmpdir[PATH_MAX];
static int serial;

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/nunatak-report-html-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(tmpdir);
}

/* a new Run directory with the fixture's pivot, its fd; the model built */
struct run {
	char dir[PATH_MAX];
	int dirfd;
	struct pivot *p;
	json_t *manifest;
	struct run_model m;
};

static void run_open(struct run *r, unsigned flags)
{
	snprintf(r->dir, sizeof(r->dir), "%s/run%d", tmpdir, serial++);
	assert_int_equal(mkdir(r->dir, 0700), 0);
	r->dirfd = open(r->dir, O_RDONLY | O_DIRECTORY);
	assert_true(r->dirfd >= 0);
	r->p = pf_build(r->dir, "pivot.sqlite", 1);
	r->manifest = pf_manifest();
	assert_int_equal(run_model_build(&r->m, r->p, r->manifest, RUN_MODEL_COMPONENTS | flags), 0);
	r->m.run_dir = r->dir;
}

static void run_close(struct run *r)
{
	run_model_release(&r->m);
	pivot__free(r->p);
	json_decref(r->manifest);
	close(r->dirfd);
}

/* the names in dir but the pivot's */
static int entries(const char *dir, char *names, size_t len)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	names[0] = '\0';
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strncmp(e->d_name, "pivot.sqlite", 12))
			continue;
		strncat(names, e->d_name, len - strlen(names) - 2);
		strcat(names, " ");
		n++;
	}
	closedir(d);
	return n;
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_page(void **state)
{
	struct report_html_stats st = {0};
	char path[PATH_MAX + 32], names[512], *page, *at, *end;
	json_t *back, *direct;
	struct stat sb;
	struct run r;
	size_t len;

	(void)state;
	run_open(&r, 0);
	assert_int_equal(report_html_write(r.dirfd, REPORT_HTML_NAME, &r.m, 0, &st), 0);
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NAME);
	assert_int_equal(lstat(path, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal((size_t)sb.st_size, st.bytes);
	assert_true(st.payload_bytes > 0 && st.payload_bytes < st.bytes);
	/* the page alone: no temporary file left */
	assert_int_equal(entries(r.dir, names, sizeof(names)), 1);
	assert_string_equal(names, "report.html ");

	page = read_all(path, &len);
	assert_int_equal(len, st.bytes);
	assert_null(strstr(page, "{{TITLE}}"));
	assert_null(strstr(page, "{{PAYLOAD}}"));
	assert_null(strstr(page, "{{SCRIPT}}"));
	assert_null(strstr(page, "{{STYLE}}"));
	assert_null(strstr(page, "{{SUMMARY_TEXT}}"));
	assert_non_null(strstr(page, "<title>nunatak \xe2\x80\x94 payload &lt;run&gt; &amp; co</title>"));
	/* the name that tries to end the script element: never as it is */
	assert_null(strstr(page, "</script><!--std"));
	assert_non_null(strstr(page, "&lt;/script&gt;&lt;!--std::vector&lt;int, std::allocator&lt;int"
				     "&gt; &gt;::operator[]&amp;&amp;"));
	assert_non_null(strstr(page, "\\u003c/script\\u003e\\u003c!--std::vector\\u003cint"));
	/* the payload parses back to what payload_json gives */
	at = strstr(page, PAYLOAD_OPEN);
	assert_non_null(at);
	at += strlen(PAYLOAD_OPEN);
	end = strstr(at, "</script>");
	assert_non_null(end);
	*end = '\0';
	back = json_loads(at, 0, NULL);
	assert_non_null(back);
	direct = payload_json(&r.m, 0);
	assert_non_null(direct);
	json_object_del(back, "generated");
	json_object_del(direct, "generated");
	assert_true(json_equal(back, direct));
	json_decref(back);
	json_decref(direct);
	free(page);
	run_close(&r);
}

static void test_no_source_page(void **state)
{
	char path[PATH_MAX + 32], *page;
	struct run r;
	size_t len;

	(void)state;
	run_open(&r, RUN_MODEL_NO_SOURCE);
	assert_int_equal(
	    report_html_write(r.dirfd, REPORT_HTML_NO_SOURCE_NAME, &r.m, PAYLOAD_NO_SOURCE, NULL), 0);
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NO_SOURCE_NAME);
	page = read_all(path, &len);
	assert_null(strstr(page, "SECRET_LINE"));
	assert_non_null(strstr(page, RUN_MODEL_NO_SOURCE_REASON));
	free(page);
	/* the model read no source: the flag is refused, nothing written */
	run_close(&r);
	run_open(&r, 0);
	assert_int_equal(report_html_write(r.dirfd, REPORT_HTML_NO_SOURCE_NAME, &r.m,
					   PAYLOAD_NO_SOURCE, NULL),
			 -EINVAL);
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NO_SOURCE_NAME);
	assert_int_equal(access(path, F_OK), -1);
	run_close(&r);
}

static void test_owner(void **state)
{
	char path[PATH_MAX + 32];
	struct stat sb;
	struct run r;

	(void)state;
	SKIP_UNLESS(geteuid() == 0, "needs root: the page is given to the Run's owner by root");
	run_open(&r, 0);
	assert_int_equal(chown(r.dir, 4242, 4243), 0);
	assert_int_equal(report_html_write(r.dirfd, REPORT_HTML_NAME, &r.m, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NAME);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_uid, 4242);
	assert_int_equal(sb.st_gid, 4243);
	assert_int_equal(sb.st_mode & 07777, 0600);
	run_close(&r);
}

static void test_failures_leave_nothing(void **state)
{
	char path[PATH_MAX + 32], names[512], *old;
	struct rlimit lim, small;
	struct stat sb;
	struct run r;
	size_t len;

	(void)state;
	run_open(&r, 0);
	/* a directory in the way: the rename fails, the temporary file goes */
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NAME);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_true(report_html_write(r.dirfd, REPORT_HTML_NAME, &r.m, 0, NULL) < 0);
	assert_int_equal(entries(r.dir, names, sizeof(names)), 1);
	assert_string_equal(names, "report.html ");
	assert_int_equal(stat(path, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(rmdir(path), 0);

	/* the disk "full" mid-page: an older page stays whole */
	assert_int_equal(write_file(path, "old page"), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &lim), 0);
	small = lim;
	small.rlim_cur = 4096;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
	assert_int_equal(report_html_write(r.dirfd, REPORT_HTML_NAME, &r.m, 0, NULL), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	signal(SIGXFSZ, SIG_DFL);
	old = read_all(path, &len);
	assert_string_equal(old, "old page");
	free(old);
	assert_int_equal(entries(r.dir, names, sizeof(names)), 1);

	/* names that are not one plain file of the Run */
	assert_int_equal(report_html_write(r.dirfd, "../escape.html", &r.m, 0, NULL), -EINVAL);
	assert_int_equal(report_html_write(r.dirfd, ".hidden", &r.m, 0, NULL), -EINVAL);
	assert_int_equal(report_html_write(r.dirfd, "", &r.m, 0, NULL), -EINVAL);
	assert_int_equal(report_html_write(-1, REPORT_HTML_NAME, &r.m, 0, NULL), -EINVAL);
	assert_int_equal(entries(r.dir, names, sizeof(names)), 1);
	run_close(&r);
}

/* every asset of report/app/ is there, by name, each in the page */
static void test_assets(void **state)
{
	char path[PATH_MAX + 32], *page, probe[41];
	struct run r;
	size_t i, len, n;
	int has_page = 0;

	(void)state;
	assert_true(report_n_assets >= 1);
	for (i = 0; i < report_n_assets; i++) {
		if (i)
			assert_true(strcmp(report_assets[i - 1].name, report_assets[i].name) < 0);
		has_page |= !strcmp(report_assets[i].name, "page.html");
		assert_true(report_assets[i].end >= report_assets[i].data);
		assert_int_equal(*report_assets[i].end, '\0');
	}
	assert_true(has_page);
	run_open(&r, 0);
	assert_int_equal(report_html_write(r.dirfd, REPORT_HTML_NAME, &r.m, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/%s", r.dir, REPORT_HTML_NAME);
	page = read_all(path, &len);
	for (i = 0; i < report_n_assets; i++) {
		const struct report_asset *a = &report_assets[i];

		if (!strcmp(a->name, "page.html"))
			continue;
		n = (size_t)(a->end - a->data) < 40 ? (size_t)(a->end - a->data) : 40;
		memcpy(probe, a->data, n);
		probe[n] = '\0';
		assert_non_null(strstr(page, probe));
	}
	free(page);
	run_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_page),
	    cmocka_unit_test(test_no_source_page),
	    cmocka_unit_test(test_owner),
	    cmocka_unit_test(test_failures_leave_nothing),
	    cmocka_unit_test(test_assets),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
