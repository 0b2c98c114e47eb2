/*
 * LTTng-UST tracepoint provider of the rtrace-bench workload (`workload-lttng`).
 *
 *   rtrace:event  fired in the measured loop (cases 1 and 3), one integer field `i`
 *   rtrace:idle   never fired during a run (case 2 enables it)
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER rtrace

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(RTRACE_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RTRACE_LTTNG_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(rtrace, event,
	LTTNG_UST_TP_ARGS(long, i),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(long, i, i))
)

LTTNG_UST_TRACEPOINT_EVENT(rtrace, idle,
	LTTNG_UST_TP_ARGS(long, i),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(long, i, i))
)

#endif /* RTRACE_LTTNG_TP_H */

#include <lttng/tracepoint-event.h>
