/*
 * The firing half of librtrace_preload.so: rtrace:event, the workload's LTTng-UST tracepoint,
 * fired by the clock_nanosleep wrapper (src/lib.rs) after an absolute-time sleep returns, i.e.
 * between cyclictest's wake-up and its clock reading, where the thesis' modified cyclictest
 * fired its tracepoint. The provider itself is workload/lttng/tp.c, compiled into this library.
 */
#include "tp.h"

void rtrace_preload_fire(long rc)
{
	lttng_ust_tracepoint(rtrace, event, rc);
}
