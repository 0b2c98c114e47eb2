/*
 * The thesis' printf-style alternative to a tracepoint: LTTng event `lttng_ust_tracef:event`.
 * Its tracepoint and probe live in liblttng-ust, so this file must not define tracepoints
 * (kept apart from tp.c, which does).
 *
 * As for tp.c, this is the out-of-line half of the `lttng_ust_tracef()` macro: the workload
 * tests `lttng_ust_tracepoint_lttng_ust_tracef___event.state` inline and calls this only when
 * the event is enabled.
 */
#include <stddef.h>
#include <lttng/tracef.h>

_Static_assert(offsetof(struct lttng_ust_tracepoint, state) == 24,
	       "struct lttng_ust_tracepoint changed: update TracepointHead in workload-lttng.rs");

void rtrace_lttng_tracef(long i)
{
	lttng_ust__tracef("%s (%d)", "event", (int) i);
}
