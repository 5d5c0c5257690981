/*
 * outq.h: the watch stream's lines, written by a thread of their own
 * (outq.c says why).
 */
#ifndef TINSPECT_AGENT_OUTQ_H
#define TINSPECT_AGENT_OUTQ_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct outq;
struct outq *outq_start(int fd, size_t limit, volatile sig_atomic_t *cancel,
			int cancel_value);
bool outq_put(struct outq *q, const char *data, size_t len);
unsigned long outq_take_dropped(struct outq *q);
int outq_finish(struct outq *q);
/* A stream whose bytes go to the queue as they are written (fclose it at
 * the end of the line); it waits for the reader: never while following. */
FILE *outq_stream(struct outq *q);

#endif
