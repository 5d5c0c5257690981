/*
 * formats.c: the files of one run (formats.h): the Prometheus textfile
 * after every update, the samples for the folded and pprof files, written
 * when the run ends.
 *
 * The agent prints, so failures are reported here on stderr; a textfile
 * that cannot be written once (a full disk) does not stop a watch run: it
 * says so once, and again when it works again.
 */
#include "formats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct formats {
	struct format_opts o;
	unsigned mode;		/* 0666 less the umask, as open(2) would */
	struct prom_state prom;
	bool prom_failing;
	struct samples *samples;
	pid_t pid;
	bool sampling_failed;
};

bool formats_wanted(const struct format_opts *o)
{
	return o->prometheus || o->folded || o->pprof;
}

int formats_open(const struct format_opts *o, struct formats **ret,
		 const char **ret_path)
{
	const char *paths[] = { o->prometheus, o->folded, o->pprof };
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		int err = paths[i] ? atomicfile_check(paths[i]) : 0;
		if (err) {
			*ret_path = paths[i];
			return err;
		}
	}
	struct formats *f = calloc(1, sizeof *f);
	if (!f)
		return -ENOMEM;
	f->o = *o;
	f->prom.wait_ages = o->wait_ages;
	f->prom.hung_after_ns = o->hung_after_ns;
	mode_t um = umask(0);
	umask(um);
	f->mode = 0666 & ~um;
	if ((o->folded || o->pprof) && !(f->samples = samples_new())) {
		free(f);
		return -ENOMEM;
	}
	*ret = f;
	return 0;
}

void formats_set_lockorder(struct formats *f, const struct lockorder *lo)
{
	if (f)
		f->prom.lockorder = lo;
}

static void write_prom(struct formats *f, const tinspect_snapshot *snap)
{
	int err = prom_write(f->o.prometheus, &f->prom, snap, f->mode);
	if (err && !f->prom_failing)
		fprintf(stderr, "tinspect: cannot write %s: %s\n", f->o.prometheus,
			strerror(-err));
	else if (!err && f->prom_failing)
		fprintf(stderr, "tinspect: %s written again\n", f->o.prometheus);
	f->prom_failing = err != 0;
}

void formats_snapshot(struct formats *f, const tinspect_snapshot *snap)
{
	if (!f)
		return;
	f->pid = tinspect_snapshot_pid(snap);
	if (f->samples && samples_add(f->samples, snap) == -ENOMEM &&
	    !f->sampling_failed) {
		f->sampling_failed = true;
		fprintf(stderr, "tinspect: out of memory: some threads are missing "
			"from the folded and pprof samples\n");
	}
	if (f->o.prometheus) {
		f->prom.updates++;
		write_prom(f, snap);
	}
}

void formats_update_failed(struct formats *f)
{
	if (!f || !f->o.prometheus)
		return;
	f->prom.errors++;
	write_prom(f, NULL);
}

int formats_close(struct formats *f)
{
	if (!f)
		return 0;
	int first = 0;
	if (f->samples && samples_lost(f->samples))
		fprintf(stderr, "tinspect: %llu thread samples were not counted (more "
			"than %d distinct stacks, or out of memory)\n",
			(unsigned long long)samples_lost(f->samples),
			SAMPLES_MAX_DISTINCT);
	/* no update, no samples: an empty profile would say "no threads" */
	bool any = f->samples && samples_updates(f->samples);
	if (f->o.folded && any) {
		int err = folded_write(f->o.folded, f->samples, f->o.folded_by_name,
				       f->mode);
		if (err) {
			fprintf(stderr, "tinspect: cannot write %s: %s\n", f->o.folded,
				strerror(-err));
			first = err;
		}
	}
	if (f->o.pprof && any) {
		int err = pprof_write(f->o.pprof, f->samples, f->pid, f->mode);
		if (err) {
			fprintf(stderr, "tinspect: cannot write %s: %s\n", f->o.pprof,
				strerror(-err));
			first = first ? first : err;
		}
	}
	if (f->o.prometheus && f->prom_failing)
		first = first ? first : -EIO;
	prom_state_free(&f->prom);
	samples_free(f->samples);
	free(f);
	return first;
}
