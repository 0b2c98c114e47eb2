/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* The log2 histogram bucket every rtrace-bench BPF program uses. */
#ifndef RTRACE_LOG2_H
#define RTRACE_LOG2_H

#ifndef RTRACE_HIST_BUCKETS
#define RTRACE_HIST_BUCKETS 64 /* as in rtrace.h */
#endif

/* Histogram bucket of v: 0 for v <= 0, else 1 + floor(log2(v)) (at most 63), as bpftrace's
 * hist() puts v in [2^(k-1), 2^k). Branch-light. */
static __always_inline __u32 log2_bucket(__s64 v)
{
	__u64 x = v;
	__u32 r = 0, s;

	if (v <= 0)
		return 0;
	s = (x > 0xffffffffULL) << 5; x >>= s; r |= s;
	s = (x > 0xffffULL) << 4; x >>= s; r |= s;
	s = (x > 0xffULL) << 3; x >>= s; r |= s;
	s = (x > 0xfULL) << 2; x >>= s; r |= s;
	s = (x > 0x3ULL) << 1; x >>= s; r |= s;
	r |= (x >> 1);
	r += 1;
	return r < RTRACE_HIST_BUCKETS ? r : RTRACE_HIST_BUCKETS - 1;
}

#endif /* RTRACE_LOG2_H */
