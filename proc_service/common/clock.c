/*
 * clock.c: the two clocks proc_service reads.  CLOCK_MONOTONIC times the
 * freeze, the deadlines and the session's own timings; CLOCK_REALTIME
 * stamps the thread events of follow mode, which a reader compares with
 * wall-clock logs.  A leaf: every other file may use it, it uses none.
 */
#include "psvc_int.h"

#include <time.h>

uint64_t psvc_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return psvc_ts_to_ns(&ts);
}

uint64_t psvc_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return psvc_ts_to_ns(&ts);
}
