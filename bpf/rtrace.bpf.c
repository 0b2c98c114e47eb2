// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * rtrace-bench's BPF programs, embedded into the binary as a libbpf skeleton.
 *
 * Four hooks (USDT, function entry, function return, the nanosleep tracepoint), each in two
 * modes, and a tracing script of many tracepoints (script_*, at the end); the loader autoloads
 * exactly one of the ten programs:
 *   *_record     one struct rtrace_event per hit into the ring buffer `events`; reservation
 *                failures are counted in the per-CPU map `lost`. Submitted without wakeup (user
 *                space polls), or, with the rodata flag `wakeup_per_event`, waking the reader on
 *                every event as bpftrace's printf perf buffer does (wakeup_events = 1).
 *   *_aggregate  per-CPU counter + log2 histogram of the argument in `aggs`; no per-event output
 *                (with the rodata `agg_level`: the counter only, or one global increment).
 * USDT (usdt_*), uprobe (up_*: first argument) and uretprobe (uret_*: return value) programs are
 * attached per process by libbpf (the kernel filters the pid, USDT semaphores are handled through
 * the uprobe ref_ctr_offset), or, to follow a process tree, to every process with the tree
 * filter below (tree_fork, tree_exit). The tracepoint programs (tp_*) filter the thread group id
 * themselves, from the rodata constant `target_tgid` (0 = every process).
 *
 * Without vmlinux.h: USDT and uprobe programs only need pt_regs from the uapi headers and the syscall
 * exit tracepoint's record layout is a stable ABI (see struct sys_exit_args).
 */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "rtrace.h"
#include "log2.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Only hits of this thread group count in the tracepoint programs; 0 = all. Set before load. */
const volatile __u32 target_tgid = 0;

/* Hits of this thread are ignored (cyclictest's main thread, whose usleep also calls
 * clock_nanosleep); 0 = none. Set before load: with 0 the verifier removes the test. */
const volatile __u32 skip_tid = 0;

/* Tree mode (`count`'s command with every process it starts later, through fork, exec, setsid,
 * under any user): the probes are attached to every process mapping the binary, so that the
 * kernel raises USDT semaphores in processes started after the attach, and only hits of a thread
 * group in `tree` count. `tree` holds the command's pid (written before attach) and grows by
 * `tree_fork` on every new process whose parent's group is in it; `tree_exit` removes a group when
 * its last thread exits, not its leader (a main thread may exit first, and an exec from another
 * thread ends the old leader while the group goes on). Set before load; false removes the test
 * from every program. */
const volatile bool follow_tree = false;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} tree SEC(".maps");

/* Tree mode: hits of processes outside the tree (not counted), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} outside SEC(".maps");

/* Tree mode: new processes whose parent is in the tree but which did not fit into it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} tree_full SEC(".maps");

static __always_inline void bump(void *percpu_counter)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(percpu_counter, &zero);

	if (n)
		*n += 1;
}

/* Whether this hit is to be left out: of thread `skip_tid`, or (tree mode) of a process outside
 * the tree, which is counted in `outside`. */
static __always_inline bool skipped(void)
{
	__u64 id;
	__u32 tgid;

	/* Both are rodata: with neither set, the verifier removes the rest (no helper call). */
	if (!skip_tid && !follow_tree)
		return false;
	id = bpf_get_current_pid_tgid();
	tgid = id >> 32;
	if (skip_tid && (__u32)id == skip_tid)
		return true;
	if (follow_tree && !bpf_map_lookup_elem(&tree, &tgid)) {
		bump(&outside);
		return true;
	}
	return false;
}

/* The record of task:task_newtask (tracefs `format`: pid at 8, clone_flags at 32). */
struct task_newtask_args {
	__u64 common;
	__s32 pid;
	char comm[16];
	__u64 clone_flags;
};

#define RTRACE_CLONE_THREAD 0x00010000ULL

/* Tree mode: a new process (not a thread) of a process in the tree joins it. Runs in the parent. */
SEC("tracepoint/task/task_newtask")
int tree_fork(struct task_newtask_args *ctx)
{
	__u32 parent = bpf_get_current_pid_tgid() >> 32, child = ctx->pid;
	__u8 one = 1;

	if (ctx->clone_flags & RTRACE_CLONE_THREAD)
		return 0;
	if (!bpf_map_lookup_elem(&tree, &parent))
		return 0;
	if (bpf_map_update_elem(&tree, &child, &one, BPF_ANY))
		bump(&tree_full);
	return 0;
}

/* The kernel's own fields, found through its BTF (CO-RE): the live threads of a thread group. */
struct signal_struct___rtrace {
	struct {
		int counter;
	} live;
} __attribute__((preserve_access_index));

struct task_struct___rtrace {
	struct signal_struct___rtrace *signal;
} __attribute__((preserve_access_index));

/* Tree mode: a process leaves the tree with its last thread (its pid may then be reused).
 * do_exit() counts the thread out of signal->live before this tracepoint fires (Linux 6.1 and
 * 6.18): the last thread, and any that exits beside it, reads 0. */
SEC("tracepoint/sched/sched_process_exit")
int tree_exit(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct task_struct___rtrace *task = (void *)bpf_get_current_task();

	if (BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&tree, &tgid);
	return 0;
}

/* Record mode: wake the ring buffer's reader on every event (BPF_RB_FORCE_WAKEUP) instead of
 * never (BPF_RB_NO_WAKEUP). Set before load; the verifier removes the branch not taken, so both
 * settings run the same instructions but the flag. */
const volatile bool wakeup_per_event = false;

/* Record mode: the events. max_entries (bytes) is set by the loader before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} events SEC(".maps");

/* Record mode: ring-buffer reservations that failed (buffer full), per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* Aggregate mode: counter and histogram, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rtrace_agg);
} aggs SEC(".maps");

/* The record of syscalls:sys_exit_* tracepoints (tracefs `format`: common fields in the first
 * 8 bytes, __syscall_nr at 8, ret at 16). */
struct sys_exit_args {
	__u64 common;
	__s64 syscall_nr;
	__s64 ret;
};

/* Register operand of a USDT argument spec, by its offset in struct pt_regs. The load is an asm
 * statement with a constant offset so that clang cannot merge the cases into one load through a
 * computed context pointer, which the verifier rejects ("dereference of modified ctx ptr"). */
#define RTRACE_REG(r)                                                                              \
	case __builtin_offsetof(struct pt_regs, r):                                               \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                              \
			     : "=r"(val)                                                           \
			     : "r"(ctx), "i"(__builtin_offsetof(struct pt_regs, r)));              \
		break

/*
 * The probe's first argument, 0 if it has none. Same result as bpf_usdt_arg(ctx, 0, &v), minus
 * its cost for the common case of a register operand ("-8@%rdx"): no BPF-to-BPF call and no
 * bpf_probe_read_kernel(); the register is loaded from the context directly. Other operands
 * (memory, constants) go through bpf_usdt_arg().
 */
static __always_inline __s64 usdt_arg0(struct pt_regs *ctx)
{
	struct __bpf_usdt_arg_spec *a;
	struct __bpf_usdt_spec *spec;
	unsigned long val;
	long res;
	int id;

	id = __bpf_usdt_spec_id(ctx);
	if (id < 0)
		return 0;
	spec = bpf_map_lookup_elem(&__bpf_usdt_specs, &id);
	if (!spec || spec->arg_cnt < 1)
		return 0;
	a = &spec->args[0];
	if (a->arg_type != BPF_USDT_ARG_REG)
		goto generic;
	switch (a->reg_off) {
	RTRACE_REG(rdx);
	RTRACE_REG(rax);
	RTRACE_REG(rdi);
	RTRACE_REG(rsi);
	RTRACE_REG(rcx);
	RTRACE_REG(rbx);
	RTRACE_REG(r8);
	RTRACE_REG(r9);
	RTRACE_REG(r10);
	RTRACE_REG(r11);
	RTRACE_REG(r12);
	RTRACE_REG(r13);
	RTRACE_REG(r14);
	RTRACE_REG(r15);
	RTRACE_REG(rbp);
	RTRACE_REG(rsp);
	default:
		goto generic;
	}
	/* Narrow and sign- or zero-extend as bpf_usdt_arg() does. */
	val <<= a->arg_bitshift;
	if (a->arg_signed)
		return ((long)val) >> a->arg_bitshift;
	return val >> a->arg_bitshift;
generic:
	bpf_usdt_arg(ctx, 0, &res);
	return res;
}

static __always_inline void record(__s64 arg, __u32 tgid)
{
	struct rtrace_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		bump(&lost);
		return;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->arg = arg;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = tgid;
	if (wakeup_per_event)
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	else
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

/* What the aggregate programs do per hit (set before load; the verifier removes the code a
 * level does not use, so each level runs only its own instructions):
 *   AGG_FLOOR  one increment of the global `floor_hits`: no helper, no map lookup, the argument
 *              not read; the cheapest program that still counts every hit (the decomposition's
 *              floor). Not atomic: only for a single measured thread (`usdt`).
 *   AGG_COUNT  the per-CPU counter of `aggs`, the argument not read.
 *   AGG_HIST   the argument read (for USDT: its spec looked up by attach cookie), the per-CPU
 *              counter and the log2 histogram of the argument (`aggregate`). */
#define AGG_FLOOR 0
#define AGG_COUNT 1
#define AGG_HIST 2
const volatile __u32 agg_level = AGG_HIST;

/* AGG_FLOOR's counter. */
__u64 floor_hits = 0;

/* AGG_FLOOR and AGG_COUNT: count the hit without reading its argument. Returns whether it did
 * (the caller then stops); AGG_HIST goes on to read the argument. */
static __always_inline bool counted_only(void)
{
	struct rtrace_agg *a;
	__u32 zero = 0;

	if (agg_level == AGG_FLOOR) {
		floor_hits += 1;
		return true;
	}
	if (agg_level != AGG_COUNT)
		return false;
	a = bpf_map_lookup_elem(&aggs, &zero);
	if (a)
		a->count += 1;
	return true;
}

/* AGG_HIST: the per-CPU counter and the log2 histogram of the argument. */
static __always_inline void aggregate(__s64 arg)
{
	struct rtrace_agg *a;
	__u32 zero = 0;

	a = bpf_map_lookup_elem(&aggs, &zero);
	if (!a)
		return;
	a->count += 1;
	a->hist[log2_bucket(arg)] += 1;
}

SEC("usdt")
int usdt_record(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	record(usdt_arg0(ctx), bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("usdt")
int usdt_aggregate(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	if (counted_only())
		return 0;
	aggregate(usdt_arg0(ctx));
	return 0;
}

/* Function entry (uprobe) and return (uretprobe): the same work as the USDT programs, with the
 * first argument or the return value read straight from the registers. Names stay under the
 * kernel's 15 visible characters. */
SEC("uprobe")
int up_record(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	record(PT_REGS_PARM1(ctx), bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("uprobe")
int up_aggregate(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	if (counted_only())
		return 0;
	aggregate(PT_REGS_PARM1(ctx));
	return 0;
}

SEC("uretprobe")
int uret_record(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	record(PT_REGS_RC(ctx), bpf_get_current_pid_tgid() >> 32);
	return 0;
}

SEC("uretprobe")
int uret_aggregate(struct pt_regs *ctx)
{
	if (skipped())
		return 0;
	if (counted_only())
		return 0;
	aggregate(PT_REGS_RC(ctx));
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_clock_nanosleep")
int tp_record(struct sys_exit_args *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (skipped())
		return 0;
	if (target_tgid && tgid != target_tgid)
		return 0;
	record(ctx->ret, tgid);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_clock_nanosleep")
int tp_aggregate(struct sys_exit_args *ctx)
{
	if (skipped())
		return 0;
	if (target_tgid && (bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	if (counted_only())
		return 0;
	aggregate(ctx->ret);
	return 0;
}

/* Tracepoint scripts (`Hook::Tracepoints`: `syscalls:sys_enter_*`, `sched:*`): one program
 * attached by the loader to every tracepoint of the script (SEC("tracepoint") names none), each
 * link carrying the point's index in the script as its BPF cookie (bpf_get_attach_cookie,
 * Linux >= 5.15). script_count keeps a per-CPU count per index in `script_hits` (max_entries =
 * the number of points, set by the loader); script_record submits one struct rtrace_event per hit
 * with the index as `arg` (lost reservations in `lost`, as the other record programs). The
 * points have no common argument: nothing else is read. Same filters as the tp_* programs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} script_hits SEC(".maps");

SEC("tracepoint")
int script_count(void *ctx)
{
	__u32 point = bpf_get_attach_cookie(ctx);
	__u64 *n;

	if (skipped())
		return 0;
	if (target_tgid && (bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	n = bpf_map_lookup_elem(&script_hits, &point);
	if (n)
		*n += 1;
	else
		bump(&lost); /* a cookie beyond the map: a loader bug, but never a silent drop */
	return 0;
}

SEC("tracepoint")
int script_record(void *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (skipped())
		return 0;
	if (target_tgid && tgid != target_tgid)
		return 0;
	record(bpf_get_attach_cookie(ctx), tgid);
	return 0;
}

/* Dummy instance: makes the skeleton emit the Rust type of struct rtrace_event (map value
 * types such as struct rtrace_agg are emitted anyway). */
struct rtrace_event _rtrace_event = {0};
