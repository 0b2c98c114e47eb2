/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Structs shared by the `events` suite's BPF programs (events.bpf.c) and the Rust loader
 * (crate rtrace-ebpf, module events): the loader takes their Rust form from the skeleton.
 */
#ifndef RTRACE_EVENTS_H
#define RTRACE_EVENTS_H

#define EV_COMM_LEN 16
#define EV_HIST_BUCKETS 64

/* Experiment 12: two keys. */
struct ev_pid_comm {
	__u32 pid;
	char comm[EV_COMM_LEN];
};

/* Experiments 13, 14: a stack id; the pid is part of a user stack's key (as bpftrace keeps it,
 * to resolve the stack's symbols), 0 for a kernel stack. */
struct ev_stack_key {
	__s64 stack;
	__u32 pid;
	__u32 pad;
};

/* Experiment 17: a histogram keyed by both stacks. */
struct ev_multi_key {
	__s64 kstack;
	__s64 ustack;
	__u32 pid;
	__u32 bucket;
};

/* Experiment 18: one record per event, formatted by user space ("%d bytes"). */
struct ev_line {
	__u64 count;
	__u32 pid;
	__u32 pad;
};

#endif /* RTRACE_EVENTS_H */
