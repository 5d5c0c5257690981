/*
 * ps_export.h: libthread_db's callbacks are the library's ABI too.
 *
 * libtinspect is compiled with -fvisibility=hidden, and libthread_db
 * (dlopen'ed by the session) finds the ps_* functions it imports in the
 * global symbol scope: they must stay visible.  This header is put in
 * front of every proc_service/ source (-include, proc_service/meson.build),
 * so that <proc_service.h> is first read under a default-visibility
 * pragma: its declarations, and with them shim.c's definitions, keep
 * default visibility, and nothing else does.  libtinspect.map then exports
 * exactly these and tinspect_*.
 */
#ifndef TINSPECT_PS_EXPORT_H
#define TINSPECT_PS_EXPORT_H

#pragma GCC visibility push(default)
#include <proc_service.h>
#pragma GCC visibility pop

#endif
