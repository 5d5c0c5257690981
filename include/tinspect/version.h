/*
 * tinspect/version.h: which libtinspect these headers describe, and which
 * one a program runs with.  Include <tinspect/tinspect.h>; this header is
 * part of it.
 *
 * The macros are the version of the headers the program was compiled
 * with; tinspect_version() is the version of the library it runs with.
 * Within one major version a newer library serves programs built against
 * an older one (struct tinspect_options carries its size; every function
 * keeps the symbol version of the release that added it, TINSPECT_0.1
 * and so on, libtinspect.map).  Before 1.0 a minor release may still
 * change the API; the soname (libtinspect.so.0) says when the ABI breaks.
 */
#ifndef TINSPECT_VERSION_H
#define TINSPECT_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define TINSPECT_VERSION_MAJOR 0
#define TINSPECT_VERSION_MINOR 1
#define TINSPECT_VERSION_PATCH 0
#define TINSPECT_VERSION_STRING "0.1.0"

/* The headers are of version major.minor.patch or later:
 *     #if TINSPECT_VERSION_AT_LEAST(0, 2, 0) */
#define TINSPECT_VERSION_AT_LEAST(major, minor, patch)				\
	(TINSPECT_VERSION_MAJOR > (major) ||					\
	 (TINSPECT_VERSION_MAJOR == (major) &&					\
	  (TINSPECT_VERSION_MINOR > (minor) ||					\
	   (TINSPECT_VERSION_MINOR == (minor) &&				\
	    TINSPECT_VERSION_PATCH >= (patch)))))

/* The version of the library the program runs with
 * (TINSPECT_VERSION_STRING of its own headers, "0.1.0"). */
const char *tinspect_version(void);

#ifdef __cplusplus
}
#endif

#endif
