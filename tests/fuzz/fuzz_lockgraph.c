/*
 * fuzz_lockgraph: the --lock-order file reader
 * (agent/lockorder/lockgraph_file.c) on any bytes.  A document it accepts
 * must hold only what the graph allows (every index in range: the cycle
 * search and the renderers walk it), be written again as valid JSON, and
 * read back into a graph of the same size; one it refuses must say why.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockorder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lockgraph *g = lg_new();
	char why[1024] = "";
	if (!g)
		return 0;
	if (lg_file_parse((const char *)data, size, "input", g, why, sizeof why)) {
		if (!why[0])
			abort();	/* refused without a reason */
		lg_free(g);
		return 0;
	}
	lg_find_all_inversions(g, 1);
	char *buf;
	size_t len;
	if (lg_file_render(g, false, &buf, &len) == 0) {
		json_error_t je;
		json_t *doc = json_loadb(buf, len, 0, &je);
		if (!doc)
			abort();	/* written as invalid JSON */
		json_decref(doc);
		struct lockgraph *again = lg_new();
		if (again) {
			if (lg_file_parse(buf, len, "again", again, why, sizeof why) ||
			    again->nlocks != g->nlocks || again->nedges != g->nedges ||
			    again->ninv != g->ninv) {
				fprintf(stderr, "not read back: %s\n", why);
				abort();
			}
			lg_free(again);
		}
		free(buf);
	}
	lg_free(g);
	return 0;
}
