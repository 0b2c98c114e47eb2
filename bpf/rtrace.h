/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Structs shared by the BPF programs in rtrace.bpf.c and the Rust loader (crate rtrace-ebpf).
 * The loader gets their Rust definitions from the skeleton (see the dummy instances at the
 * bottom of rtrace.bpf.c): no struct is written twice by hand.
 */
#ifndef RTRACE_H
#define RTRACE_H

/* Buckets of the log2 histogram: bucket 0 holds values <= 0, bucket k (1..63) holds
 * [2^(k-1), 2^k), the last bucket also everything above. */
#define RTRACE_HIST_BUCKETS 64

/* One recorded hit (record mode), as submitted to the ring buffer. */
struct rtrace_event {
	/* bpf_ktime_get_ns() at the hit (CLOCK_MONOTONIC, ns). */
	__u64 ts_ns;
	/* The probe's first argument (USDT, uprobe), the function's return value (uretprobe) or
	 * the syscall's return value (tracepoint); for a tracing script, the index of the
	 * tracepoint in the script. */
	__s64 arg;
	/* CPU the hit ran on. */
	__u32 cpu;
	/* Thread group id (the process id user space sees). */
	__u32 pid;
};

/* Per-CPU aggregate (aggregate mode): a counter and a log2 histogram of the argument. */
struct rtrace_agg {
	/* Hits on this CPU. */
	__u64 count;
	/* log2 histogram of the argument; sums to count. */
	__u64 hist[RTRACE_HIST_BUCKETS];
};

#endif /* RTRACE_H */
