/*
 * test_abi: the promises of libtinspect's ABI that need no process.
 * TINSPECT_OPTIONS() zeroes the padding of the options too; the size
 * member lets an older program pass fewer bytes and makes a newer one's
 * unknown non-zero bytes an error; the version macros agree with the
 * library's tinspect_version(); the count enumerators count the names.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <tinspect/tinspect.h>

/* Leaves 0xa5 where the next call's locals will lie. */
static __attribute__((noinline)) void dirty_stack(void)
{
	volatile unsigned char junk[8192];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0xa5;
}

static __attribute__((noinline)) void options_bytes(unsigned char *ret)
{
	TINSPECT_OPTIONS(o, .flags = TINSPECT_OPT_KEYS, .wake_signal = SIGUSR2,
			 .max_frames = 7);
	memcpy(ret, &o, sizeof o);
}

Test(options, macro_zeroes_every_byte_padding_included)
{
	typedef struct tinspect_options opts;
	/* the structure has padding for the test to see: after wake_signal
	 * (an int before a pointer) */
	cr_assert_lt(offsetof(opts, wake_signal) + sizeof(int),
		     offsetof(opts, holding));
	opts ref;
	memset(&ref, 0, sizeof ref);
	ref.size = sizeof ref;
	ref.flags = TINSPECT_OPT_KEYS;
	ref.wake_signal = SIGUSR2;
	ref.max_frames = 7;
	unsigned char want[sizeof ref], got[sizeof ref];
	memcpy(want, &ref, sizeof ref);
	for (int round = 0; round < 3; round++) {
		dirty_stack();
		options_bytes(got);
		for (size_t i = 0; i < sizeof got; i++)
			cr_assert_eq(got[i], want[i], "byte %zu of the options: 0x%02x, not 0x%02x",
				     i, got[i], want[i]);
	}
}

/* tinspect_session_init() reads the options before it looks at the pid:
 * -ESRCH for pid -1 means they were accepted, -EINVAL that they were not. */
static int init_with(const void *opts)
{
	tinspect_session *s = NULL;
	int err = tinspect_session_init(-1, opts, &s);
	cr_assert_null(s);
	return err;
}

Test(options, size_member_older_and_newer_programs)
{
	TINSPECT_OPTIONS(o);
	cr_assert_eq(o.size, sizeof o);
	cr_assert_eq(init_with(&o), -ESRCH);
	cr_assert_eq(init_with(NULL), -ESRCH);

	/* an older program: only the first members */
	o.size = offsetof(struct tinspect_options, wake_signal);
	cr_assert_eq(init_with(&o), -ESRCH);
	o.size = 0;
	cr_assert_eq(init_with(&o), -EINVAL);

	/* a newer program: members this library does not know, zero or not */
	unsigned char bigger[sizeof o + 16];
	memset(bigger, 0, sizeof bigger);
	TINSPECT_OPTIONS(n);
	n.size = sizeof bigger;
	memcpy(bigger, &n, sizeof n);
	cr_assert_eq(init_with(bigger), -ESRCH);
	bigger[sizeof o + 9] = 1;
	cr_assert_eq(init_with(bigger), -EINVAL);

	/* a flag this library does not know */
	TINSPECT_OPTIONS(f, .flags = 1u << 31);
	cr_assert_eq(init_with(&f), -EINVAL);
}

Test(version, macros_and_library_agree)
{
	char want[64];
	snprintf(want, sizeof want, "%d.%d.%d", TINSPECT_VERSION_MAJOR,
		 TINSPECT_VERSION_MINOR, TINSPECT_VERSION_PATCH);
	cr_assert_str_eq(TINSPECT_VERSION_STRING, want);
	cr_assert_str_eq(tinspect_version(), want);
	cr_assert(TINSPECT_VERSION_AT_LEAST(TINSPECT_VERSION_MAJOR, TINSPECT_VERSION_MINOR,
					    TINSPECT_VERSION_PATCH));
	cr_assert(TINSPECT_VERSION_AT_LEAST(0, 0, 1));
	cr_assert(!TINSPECT_VERSION_AT_LEAST(TINSPECT_VERSION_MAJOR,
					     TINSPECT_VERSION_MINOR + 1, 0));
	cr_assert(!TINSPECT_VERSION_AT_LEAST(TINSPECT_VERSION_MAJOR + 1, 0, 0));
}

/* Every value below a count has a name of its own. */
Test(enums, counts_count_the_named_values)
{
	cr_assert_eq(TINSPECT_LOCK_KIND_COUNT, TINSPECT_LOCK_FILE + 1);
	for (int i = 0; i < TINSPECT_LOCK_KIND_COUNT; i++)
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(tinspect_lock_kind_name((enum tinspect_lock_kind)i),
					  tinspect_lock_kind_name((enum tinspect_lock_kind)j),
					  "lock kinds %d and %d", i, j);
	cr_assert_eq(TINSPECT_PROGRESS_COUNT, TINSPECT_PROGRESS_INSIDE + 1);
	for (int i = 0; i < TINSPECT_PROGRESS_COUNT; i++) {
		const char *n = tinspect_progress_name((enum tinspect_progress)i);
		cr_assert(i == TINSPECT_PROGRESS_UNKNOWN || strcmp(n, "unknown"),
			  "progress %d has no name", i);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(n, tinspect_progress_name((enum tinspect_progress)j));
	}
	cr_assert_str_eq(tinspect_progress_name(TINSPECT_PROGRESS_COUNT), "unknown");
}
