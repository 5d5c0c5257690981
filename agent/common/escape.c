/*
 * escape.c: bytes from the target made safe to print.  A thread name, a
 * path or a symbol is any bytes but NUL: printed raw, it could move the
 * cursor of the engineer's terminal or forge a line of the report.  So
 * printable ASCII goes out as it is and everything else as \xNN.  (The
 * JSON writer, jwriter.c, has its own escaping: JSON's.)
 */
#include "common.h"

void agent_put_escaped(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c < 0x7f)
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
}

void agent_fput_quoted(FILE *out, const char *s, size_t len)
{
	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			fputc(c, out);
		else
			fprintf(out, "\\x%02x", c);
	}
	fputc('"', out);
}
