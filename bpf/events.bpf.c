// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The `events` suite's BPF programs (Gregg's per-event cost benchmark, BPF Performance Tools
 * ch. 18, as rerun by Piotrowski 2024): one program per experiment, each doing what the
 * experiment's bpftrace one-liner does, no more. The loader autoloads only the programs of the
 * experiment it runs. Gregg's experiments 8-18 hook kprobe:vfs_read; on a kernel without
 * kprobes they hook the syscalls:sys_enter_read tracepoint (its `count` field is vfs_read's
 * arg2) and experiment 16 times sys_enter_read -> sys_exit_read.
 *
 * Every program hooks every process, as the one-liners do; the maps keep what user space needs
 * to check each experiment's events against the workload's own count.
 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "events.h"
#include "log2.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* The record of syscalls:sys_enter_read (tracefs `format`: common fields in the first 8 bytes,
 * __syscall_nr at 8, fd at 16, buf at 24, count at 32). A stable ABI. */
struct sys_enter_read_args {
	__u64 common;
	__s32 syscall_nr;
	__u32 pad;
	__u64 fd;
	__u64 buf;
	__u64 count;
};

/* 9: @ = count() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ev_count SEC(".maps");

/* 10: @[pid] = count() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} ev_by_pid SEC(".maps");

/* 11: @[comm] = count() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, char[EV_COMM_LEN]);
	__type(value, __u64);
} ev_by_comm SEC(".maps");

/* 12: @[pid, comm] = count() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct ev_pid_comm);
	__type(value, __u64);
} ev_by_pid_comm SEC(".maps");

/* 13, 14, 17: the stacks. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 10240);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} ev_stacks SEC(".maps");

/* 13: @[kstack] = count(), 14: @[ustack] = count() */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct ev_stack_key);
	__type(value, __u64);
} ev_by_stack SEC(".maps");

/* 15, 16: @ = hist(...) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EV_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} ev_hist SEC(".maps");

/* 16: @s[tid] = nsecs */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10240);
	__type(key, __u32);
	__type(value, __u64);
} ev_start SEC(".maps");

/* 17: @[kstack, ustack] = hist(arg2) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 10240);
	__type(key, struct ev_multi_key);
	__type(value, __u64);
} ev_by_multi SEC(".maps");

/* 18: printf("%d bytes\n", arg2): the records, and reservations that failed (per CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} ev_lines SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ev_lost SEC(".maps");

static __always_inline void bump(void *map, const void *key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(map, key);

	if (v)
		*v += 1;
	else
		bpf_map_update_elem(map, key, &one, BPF_NOEXIST);
}

static __always_inline __u32 tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* Experiments 8-18 hook kprobe:vfs_read where the kernel has kprobes (Gregg's hook; arg2 is
 * the byte count), else syscalls:sys_enter_read (its `count`): each body below is one inline
 * function of (context, count), and FEATURE() makes its two programs, `NAME_tp` and `NAME_kp`;
 * the loader loads the one this kernel can attach. */
#define FEATURE(name, body)                                                                      \
	SEC("tracepoint/syscalls/sys_enter_read")                                                \
	int name##_tp(struct sys_enter_read_args *ctx)                                           \
	{                                                                                        \
		body(ctx, ctx->count);                                                           \
		return 0;                                                                        \
	}                                                                                        \
	SEC("kprobe/vfs_read")                                                                   \
	int name##_kp(struct pt_regs *ctx)                                                       \
	{                                                                                        \
		body(ctx, PT_REGS_PARM3(ctx));                                                   \
		return 0;                                                                        \
	}

/* 2 */
SEC("kprobe/vfs_read")
int ev_kprobe(struct pt_regs *ctx)
{
	return 0;
}

/* 3 */
SEC("kretprobe/vfs_read")
int ev_kretprobe(struct pt_regs *ctx)
{
	return 0;
}

/* 4 */
SEC("tracepoint/syscalls/sys_enter_read")
int ev_enter(void *ctx)
{
	return 0;
}

/* 5 */
SEC("tracepoint/syscalls/sys_exit_read")
int ev_exit(void *ctx)
{
	return 0;
}

/* 6 */
SEC("uprobe")
int ev_uprobe(struct pt_regs *ctx)
{
	return 0;
}

/* 7 */
SEC("uretprobe")
int ev_uretprobe(struct pt_regs *ctx)
{
	return 0;
}

/* 8: /arg2 > 0/ { 1 }: the count is loaded and compared; the action is empty. */
static __always_inline void filter(void *ctx, __u64 count)
{
	if (count > 0)
		asm volatile("" ::: "memory");
}
FEATURE(ev_filter, filter)

/* 9 */
static __always_inline void map(void *ctx, __u64 count)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&ev_count, &zero);

	if (v)
		*v += 1;
}
FEATURE(ev_map, map)

/* 10 */
static __always_inline void pid_key(void *ctx, __u64 count)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
}
FEATURE(ev_pid_key, pid_key)

/* 11 */
static __always_inline void comm_key(void *ctx, __u64 count)
{
	char comm[EV_COMM_LEN] = {};

	bpf_get_current_comm(comm, sizeof(comm));
	bump(&ev_by_comm, comm);
}
FEATURE(ev_comm_key, comm_key)

/* 12 */
static __always_inline void two_keys(void *ctx, __u64 count)
{
	struct ev_pid_comm k = {};

	k.pid = tgid();
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	bump(&ev_by_pid_comm, &k);
}
FEATURE(ev_two_keys, two_keys)

/* 13 */
static __always_inline void kstack(void *ctx, __u64 count)
{
	struct ev_stack_key k = {};

	k.stack = bpf_get_stackid(ctx, &ev_stacks, 0);
	bump(&ev_by_stack, &k);
}
FEATURE(ev_kstack, kstack)

/* 14 */
static __always_inline void ustack(void *ctx, __u64 count)
{
	struct ev_stack_key k = {};

	k.stack = bpf_get_stackid(ctx, &ev_stacks, BPF_F_USER_STACK);
	k.pid = tgid();
	bump(&ev_by_stack, &k);
}
FEATURE(ev_ustack, ustack)

static __always_inline void hist(__s64 v)
{
	__u32 b = log2_bucket(v);
	__u64 *slot = bpf_map_lookup_elem(&ev_hist, &b);

	if (slot)
		*slot += 1;
}

/* 15 */
static __always_inline void hist_arg(void *ctx, __u64 count)
{
	hist(count);
}
FEATURE(ev_hist_arg, hist_arg)

/* 16: entry (either hook), return (the syscall's exit or vfs_read's return) */
static __always_inline void timing_enter(void *ctx, __u64 count)
{
	__u32 tid = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();

	bpf_map_update_elem(&ev_start, &tid, &now, BPF_ANY);
}
FEATURE(ev_timing_enter, timing_enter)

static __always_inline void timing_exit(void)
{
	__u32 tid = bpf_get_current_pid_tgid();
	__u64 *start = bpf_map_lookup_elem(&ev_start, &tid);

	if (!start)
		return;
	hist(bpf_ktime_get_ns() - *start);
	bpf_map_delete_elem(&ev_start, &tid);
}

SEC("tracepoint/syscalls/sys_exit_read")
int ev_timing_exit_tp(void *ctx)
{
	timing_exit();
	return 0;
}

SEC("kretprobe/vfs_read")
int ev_timing_exit_kp(struct pt_regs *ctx)
{
	timing_exit();
	return 0;
}

/* 17 */
static __always_inline void multiple(void *ctx, __u64 count)
{
	struct ev_multi_key k = {};

	k.kstack = bpf_get_stackid(ctx, &ev_stacks, 0);
	k.ustack = bpf_get_stackid(ctx, &ev_stacks, BPF_F_USER_STACK);
	k.pid = tgid();
	k.bucket = log2_bucket(count);
	bump(&ev_by_multi, &k);
}
FEATURE(ev_multiple, multiple)

/* 18: one record per event, the reader woken for each (bpftrace's printf: a perf buffer with
 * wakeup_events = 1). */
static __always_inline void print(void *ctx, __u64 count)
{
	struct ev_line *l = bpf_ringbuf_reserve(&ev_lines, sizeof(*l), 0);

	if (!l) {
		__u32 zero = 0;
		__u64 *lost = bpf_map_lookup_elem(&ev_lost, &zero);

		if (lost)
			*lost += 1;
		return;
	}
	l->count = count;
	l->pid = tgid();
	l->pad = 0;
	bpf_ringbuf_submit(l, BPF_RB_FORCE_WAKEUP);
}
FEATURE(ev_print, print)

/* Accounting runs: the workload's events on each hook, counted per process (@[pid] = count()). */
SEC("tracepoint/syscalls/sys_enter_read")
int ev_acct_enter(void *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_read")
int ev_acct_exit(void *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

SEC("uprobe")
int ev_acct_uprobe(struct pt_regs *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

SEC("uretprobe")
int ev_acct_uretprobe(struct pt_regs *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

SEC("kprobe/vfs_read")
int ev_acct_kprobe(struct pt_regs *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

SEC("kretprobe/vfs_read")
int ev_acct_kretprobe(struct pt_regs *ctx)
{
	__u32 pid = tgid();

	bump(&ev_by_pid, &pid);
	return 0;
}

/* The skeleton generator emits Rust types for structs it sees used. */
struct ev_pid_comm _ev_pid_comm = {};
struct ev_stack_key _ev_stack_key = {};
struct ev_multi_key _ev_multi_key = {};
struct ev_line _ev_line = {};
