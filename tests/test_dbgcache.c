/*
 * test_dbgcache: separate debug files kept uncompressed between runs
 * (dbsession/stacks/dbgcache.c).  The stacks of a real process, with
 * libc's source lines from libc6-dbg, must be the same with the cache off,
 * when the cache entry is made, when it is used, and when the entry found
 * is damaged, of another debug file, or in a directory others may write to
 * (then it is ignored, and replaced where the directory is ours).
 */
#include <criterion/criterion.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbs_int.h"
#include "harness.h"

static struct fixture fx;
static char tmpdir[64];

static void teardown(void)
{
	fx_kill(&fx);
	unsetenv("TINSPECT_DEBUG_CACHE");
	if (tmpdir[0]) {
		chmod(tmpdir, 0700);
		remove_tree(tmpdir);
		tmpdir[0] = '\0';
	}
}

TestSuite(dbgcache, .fini = teardown, .timeout = 300);

/* Every thread's frames, symbol file:line each, in thread order: what a
 * reader of the stacks sees. */
static char *frames_of(json_t *doc)
{
	size_t cap = 1 << 16, len = 0;
	char *s = calloc(1, cap);
	json_t *threads = json_object_get(doc, "threads"), *t;
	size_t i;
	json_array_foreach(threads, i, t) {
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames"), *f;
		size_t k;
		json_array_foreach(frames, k, f) {
			const char *sym = jstr(f, "symbol"), *file = jstr(f, "file");
			json_t *line = json_object_get(f, "line");
			char one[1024];
			int n = snprintf(one, sizeof one, "%s %s:%lld\n", sym ? sym : "??",
					 file ? file : "?",
					 line ? (long long)json_integer_value(line) : 0);
			if (len + (size_t)n + 1 > cap) {
				cap *= 2;
				s = realloc(s, cap);
			}
			memcpy(s + len, one, (size_t)n + 1);
			len += (size_t)n;
		}
	}
	return s;
}

/* The build-id of libc's frames, as hex; fails the test if none. */
static void libc_build_id(json_t *doc, char *out, size_t len)
{
	json_t *threads = json_object_get(doc, "threads"), *t;
	size_t i;
	json_array_foreach(threads, i, t) {
		json_t *frames = json_object_get(json_object_get(t, "stack"), "frames"), *f;
		size_t k;
		json_array_foreach(frames, k, f) {
			const char *m = jstr(f, "module"), *id = jstr(f, "build_id");
			if (m && id && strstr(m, "/libc.so.6")) {
				snprintf(out, len, "%s", id);
				return;
			}
		}
	}
	cr_assert_fail("no frame in libc");
}

static char *run_frames(const char *cache)
{
	setenv("TINSPECT_DEBUG_CACHE", cache, 1);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	char *s = frames_of(doc);
	json_decref(doc);
	return s;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Set up: the fixture, the reference (no cache), libc's debug file and
 * the name of its entry.  Skips when libc has no separate debug file
 * with compressed sections to cache. */
static char *setup(char *entry, size_t len)
{
	const char *const args[] = { "alpha:", "beta:", NULL };
	fx_start(&fx, "fx_threads", args, 30);
	snprintf(tmpdir, sizeof tmpdir, "/tmp/tinspect-dbgc-XXXXXX");
	cr_assert(mkdtemp(tmpdir));
	setenv("TINSPECT_DEBUG_CACHE", "off", 1);
	json_t *doc = inspect_json(fx.pid, NULL, NULL);
	char id[160], debug[256];
	libc_build_id(doc, id, sizeof id);
	char *ref = frames_of(doc);
	json_decref(doc);
	snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
	if (access(debug, R_OK) != 0)
		cr_skip_test("no separate debug file for libc (libc6-dbg)");
	cr_assert(strstr(ref, "pthread_cond_wait") || strstr(ref, "futex"),
		  "no libc frame in the reference:\n%s", ref);
	snprintf(entry, len, "%s/%s.debug", tmpdir, id);
	return ref;
}

Test(dbgcache, made_then_used_same_stacks)
{
	char entry[256];
	char *ref = setup(entry, sizeof entry);
	char *first = run_frames(tmpdir);
	struct stat st1, st2;
	if (stat(entry, &st1) != 0)
		cr_skip_test("libc's debug file has no compressed sections: nothing cached");
	cr_assert_str_eq(first, ref);
	char *second = run_frames(tmpdir);
	cr_assert_str_eq(second, ref);
	cr_assert_eq(stat(entry, &st2), 0);
	cr_assert(same_file(&st1, &st2), "the entry was made again instead of used");
	free(ref);
	free(first);
	free(second);
}

Test(dbgcache, damaged_entry_ignored_and_replaced)
{
	char entry[256];
	char *ref = setup(entry, sizeof entry);
	free(run_frames(tmpdir));
	struct stat st;
	if (stat(entry, &st) != 0)
		cr_skip_test("libc's debug file has no compressed sections: nothing cached");
	/* one byte in the middle (the inflated DWARF), and a cut tail */
	int fd = open(entry, O_RDWR);
	cr_assert(fd >= 0);
	off_t mid = st.st_size / 2 + 12345;
	unsigned char b, nb;
	cr_assert_eq(pread(fd, &b, 1, mid), 1);
	nb = b ^ 0x5a;
	cr_assert_eq(pwrite(fd, &nb, 1, mid), 1);
	close(fd);
	char *damaged = run_frames(tmpdir);
	cr_assert_str_eq(damaged, ref);
	fd = open(entry, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &nb, 1, mid), 1);
	close(fd);
	cr_assert_eq(nb, b, "the damaged entry was not replaced");

	cr_assert_eq(truncate(entry, st.st_size - 100), 0);
	char *cut = run_frames(tmpdir);
	cr_assert_str_eq(cut, ref);
	struct stat st2;
	cr_assert_eq(stat(entry, &st2), 0);
	cr_assert_eq(st2.st_size, st.st_size, "the cut entry was not replaced");
	free(ref);
	free(damaged);
	free(cut);
}

/* An entry that passed gets a stamp (NAME.ok) naming the file it was, so
 * that later runs need not hash it again; a stamp that does not name the
 * entry (here: zeroed) is no pass: the entry is hashed, used (not made
 * again) and stamped anew. */
Test(dbgcache, passed_entry_is_stamped_and_a_wrong_stamp_is_remade)
{
	char entry[256], stamp[272];
	char *ref = setup(entry, sizeof entry);
	free(run_frames(tmpdir));
	struct stat st1, st2, sst;
	if (stat(entry, &st1) != 0)
		cr_skip_test("libc's debug file has no compressed sections: nothing cached");
	snprintf(stamp, sizeof stamp, "%s.ok", entry);
	cr_assert_eq(stat(stamp, &sst), 0, "no stamp beside the entry");
	unsigned char good[256], now[256], zero[256] = { 0 };
	cr_assert(sst.st_size > 0 && (size_t)sst.st_size <= sizeof good);
	size_t n = (size_t)sst.st_size;
	int fd = open(stamp, O_RDWR);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, good, n, 0), (ssize_t)n);
	cr_assert_eq(pwrite(fd, zero, n, 0), (ssize_t)n);
	close(fd);
	char *again = run_frames(tmpdir);
	cr_assert_str_eq(again, ref);
	cr_assert_eq(stat(entry, &st2), 0);
	cr_assert(same_file(&st1, &st2), "the entry was made again instead of hashed");
	fd = open(stamp, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, now, n, 0), (ssize_t)n);
	close(fd);
	cr_assert(!memcmp(now, good, n), "the stamp was not made again");
	free(ref);
	free(again);
}

/* The build-id of an ELF file, as bytes; 0 if none. */
static size_t build_id_of(const char *path, unsigned char *out, size_t len)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &id) : -1;
	size_t r = 0;
	if (n > 0 && (size_t)n <= len) {
		memcpy(out, id, (size_t)n);
		r = (size_t)n;
	}
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

Test(dbgcache, entry_of_another_file_ignored)
{
	char entry[256];
	char *ref = setup(entry, sizeof entry);
	/* a well-formed entry, of the dynamic loader's debug file, put where
	 * libc's would be */
	unsigned char id[64];
	size_t n = build_id_of("/lib64/ld-linux-x86-64.so.2", id, sizeof id);
	if (!n)
		cr_skip_test("no build-id on the dynamic loader");
	char hex[160], debug[256], made[256];
	for (size_t i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	int fd = open(debug, O_RDONLY);
	if (fd < 0)
		cr_skip_test("no debug file for the dynamic loader");
	setenv("TINSPECT_DEBUG_CACHE", tmpdir, 1);
	fd = dbs_dbgcache_use(fd, id, n);
	cr_assert(fd >= 0);
	close(fd);
	snprintf(made, sizeof made, "%s/%s.debug", tmpdir, hex);
	if (access(made, F_OK) != 0)
		cr_skip_test("the loader's debug file has no compressed sections");
	cr_assert_eq(rename(made, entry), 0);
	char *foreign = run_frames(tmpdir);
	cr_assert_str_eq(foreign, ref);
	unsigned char got[64];
	cr_assert_gt(build_id_of(entry, got, sizeof got), 0);
	cr_assert(memcmp(got, id, n) != 0, "the foreign entry is still there");
	free(ref);
	free(foreign);
}

Test(dbgcache, directory_others_may_write_is_not_used)
{
	char entry[256];
	char *ref = setup(entry, sizeof entry);
	cr_assert_eq(chmod(tmpdir, 0777), 0);
	char *open_dir = run_frames(tmpdir);
	cr_assert_str_eq(open_dir, ref);
	cr_assert_neq(access(entry, F_OK), 0, "an entry was written where others may write");
	free(ref);
	free(open_dir);
}
