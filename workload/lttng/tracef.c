/*
 * The thesis' printf-style alternative to a tracepoint: LTTng event `lttng_ust_tracef:event`.
 * Its tracepoint and probe live in liblttng-ust, so this file must not define tracepoints
 * (kept apart from tp.c, which does).
 */
#include <lttng/tracef.h>

void rtrace_lttng_tracef(long i)
{
	lttng_ust_tracef("%s (%d)", "event", (int) i);
}
