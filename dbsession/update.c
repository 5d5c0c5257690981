/*
 * update.c: one update of a session, by its capture mode: an all-stop
 * capture (session.c), or one that holds nothing, confirmed by an
 * all-stop capture when it shows a candidate (nonblock.c).
 */
#include "dbs_int.h"

int dbs_session_update(struct dbs_session *s, struct dbs_snapshot **ret)
{
	if (s->opts.mode != DBS_MODE_STOP)
		return dbs_nb_update(s, ret);	/* nonblock.c */
	return dbs_capture_once(s, false, ret);
}
