/*
 * The provider (probes + tracepoint definitions) and the functions the Rust workload calls
 * through FFI. Each wrapper is exactly what a C program would write at its call site.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tp.h"

/* rtrace:event, the loop's tracepoint. */
void rtrace_lttng_event(long i)
{
	lttng_ust_tracepoint(rtrace, event, i);
}

/* rtrace:idle, never fired during a run. */
void rtrace_lttng_idle(long i)
{
	lttng_ust_tracepoint(rtrace, idle, i);
}
