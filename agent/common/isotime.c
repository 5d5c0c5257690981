/*
 * isotime.c: a CLOCK_REALTIME instant as RFC 3339 in UTC with
 * microseconds, "2026-11-27T17:12:24.077183Z": captured_at and every
 * other time in the JSON document and the watch stream; and a
 * snapshot's own instant in nanoseconds, which the ages are counted to.
 */
#include "common.h"

#include <time.h>

void agent_iso_time(int64_t sec, long nsec, char *buf, size_t len)
{
	struct tm tm;
	time_t t = (time_t)sec;
	gmtime_r(&t, &tm);
	size_t l = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + l, len - l, ".%06ldZ", nsec / 1000);
}

void agent_iso_time_ns(int64_t ns, char *buf, size_t len)
{
	agent_iso_time(ns / 1000000000, (long)(ns % 1000000000), buf, len);
}

int64_t agent_captured_ns(const tinspect_snapshot *snap)
{
	int64_t sec;
	long nsec;
	tinspect_snapshot_captured_at(snap, &sec, &nsec);
	return sec * 1000000000 + nsec;
}
