/*
 * The provider (probes + tracepoint definitions) and the out-of-line half of the
 * `lttng_ust_tracepoint()` macro for the Rust workload.
 *
 * The macro is `if (lttng_ust_tracepoint_enabled(p, n)) lttng_ust_do_tracepoint(p, n, ...)`:
 * the test of the tracepoint's `state` is inline at the call site, and only an enabled
 * tracepoint calls the probe. The Rust workload makes the same test inline (it reads `state`
 * of the tracepoint structures defined here) and calls these functions only when it is set,
 * so a disabled tracepoint costs what it costs in a C program: one load and one branch.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include <stddef.h>
#include "tp.h"

/* The Rust side reads `state` at this offset (workload/src/bin/workload-lttng.rs). */
_Static_assert(offsetof(struct lttng_ust_tracepoint, state) == 24,
	       "struct lttng_ust_tracepoint changed: update TracepointHead in workload-lttng.rs");

/* rtrace:event, the loop's tracepoint: called only when it is enabled. */
void rtrace_lttng_event(long i)
{
	lttng_ust_do_tracepoint(rtrace, event, i);
}

/* rtrace:idle, never fired during a run. */
void rtrace_lttng_idle(long i)
{
	lttng_ust_do_tracepoint(rtrace, idle, i);
}
