// SPDX-License-Identifier: GPL-2.0 OR MIT
/* DCTCP (RFC 8257) as a BPF TCP congestion control, for kernels built without tcp_dctcp.
 *
 * The scalable sender that L4S-style marking is designed for: the window is cut once per round trip by alpha / 2,
 * alpha being an EWMA (gain g = 1/16) of the share of delivered segments that carried CE. The receiver echoes CE
 * per segment (RFC 8257 3.2: an immediate ACK whenever the CE state changes), so it must run this module too.
 * The window grows as Reno's (the kernel's tcp_reno_cong_avoid), and loss is answered as Reno answers it.
 *
 * Built by `make setup` against the running kernel's BTF; `rnf_experiments/congestion.py` registers it (bpftool
 * struct_ops register) when an arm asks for cc = "dctcp" and the kernel has no tcp_dctcp. It stays registered until
 * reboot or `bpftool struct_ops unregister name rnf_dctcp`.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define ALPHA_ONE 1024U /* alpha in units of 1/1024 */
#define NEEDS_ECN 0x2    /* TCP_CONG_NEEDS_ECN (include/net/tcp.h) */
#define SHIFT_G 4U      /* g = 1/16 (RFC 8257 4.2) */
#define ECN_DEMAND_CWR 4 /* TCP_ECN_DEMAND_CWR (include/net/tcp.h) */
#define ACK_TIMER 2      /* ICSK_ACK_TIMER */
#define ACK_NOW 8        /* ICSK_ACK_NOW */

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

struct dctcp {
	__u32 round_end;      /* snd_nxt when this observation window began */
	__u32 delivered;      /* tp->delivered then */
	__u32 delivered_ce;   /* tp->delivered_ce then */
	__u32 alpha;
	__u32 prior_rcv_nxt;  /* receiver: rcv_nxt at the last CE state change */
	__u32 ce_state;       /* receiver: did the last segment carry CE */
	__u32 loss_cwnd;
};

static __always_inline struct inet_connection_sock *inet_csk(struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct dctcp *state(struct sock *sk)
{
	return (struct dctcp *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline bool before(__u32 a, __u32 b)
{
	return (__s32)(a - b) < 0;
}

static __always_inline void new_window(const struct tcp_sock *tp, struct dctcp *ca)
{
	ca->round_end = tp->snd_nxt;
	ca->delivered = tp->delivered;
	ca->delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(rnf_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(sk);

	ca->alpha = ALPHA_ONE; /* RFC 8257 4.2: start conservative */
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = 0;
	ca->loss_cwnd = 0;
	new_window(tp, ca);
}

/* cwnd x (1 - alpha / 2) */
SEC("struct_ops")
__u32 BPF_PROG(rnf_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u32 cut = (cwnd * ca->alpha) >> 11;

	ca->loss_cwnd = cwnd;
	return cwnd - cut > 2 ? cwnd - cut : 2;
}

/* Once per window of data: alpha = (1 - g) alpha + g F, F the share of segments delivered with CE. */
SEC("struct_ops")
void BPF_PROG(rnf_dctcp_in_ack_event, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(sk);
	__u32 alpha, marked, delivered;

	if (before(tp->snd_una, ca->round_end))
		return;
	alpha = ca->alpha;
	alpha -= alpha >> SHIFT_G ? alpha >> SHIFT_G : alpha;
	marked = tp->delivered_ce - ca->delivered_ce;
	if (marked) {
		delivered = tp->delivered - ca->delivered;
		marked = (marked << (10 - SHIFT_G)) / (delivered ? delivered : 1);
		alpha = alpha + marked < ALPHA_ONE ? alpha + marked : ALPHA_ONE;
	}
	ca->alpha = alpha;
	new_window(tp, ca);
}

static __always_inline void echo_ce(struct tcp_sock *tp, __u32 ce)
{
	if (ce)
		tp->ecn_flags |= ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~ECN_DEMAND_CWR;
}

SEC("struct_ops")
void BPF_PROG(rnf_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct dctcp *ca = state(sk);
	__u32 ce;

	if (event == CA_EVENT_LOSS) { /* an RTO: Reno's halving */
		ca->loss_cwnd = tp->snd_cwnd;
		tp->snd_ssthresh = tp->snd_cwnd >> 1 > 2 ? tp->snd_cwnd >> 1 : 2;
		return;
	}
	if (event != CA_EVENT_ECN_IS_CE && event != CA_EVENT_ECN_NO_CE)
		return;
	/* The receiver: ECE on an ACK says exactly whether the segments it covers carried CE (RFC 8257 3.2). When
	 * the state changes, a delayed ACK for the segments before goes out first, with the state they had. */
	ce = event == CA_EVENT_ECN_IS_CE;
	if (ca->ce_state != ce) {
		if (inet_csk(sk)->icsk_ack.pending & ACK_TIMER) {
			echo_ce(tp, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ACK_NOW;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = ce;
	echo_ce(tp, ce);
}

SEC("struct_ops")
void BPF_PROG(rnf_dctcp_set_state, struct sock *sk, __u8 new_state)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;

	/* Entering fast recovery: Reno's halving (the RTO is handled by CA_EVENT_LOSS, once). */
	if (new_state == TCP_CA_Recovery && new_state != BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state)) {
		state(sk)->loss_cwnd = tp->snd_cwnd;
		tp->snd_ssthresh = tp->snd_cwnd >> 1 > 2 ? tp->snd_cwnd >> 1 : 2;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(rnf_dctcp_undo_cwnd, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 loss_cwnd = state(sk)->loss_cwnd;

	return tp->snd_cwnd > loss_cwnd ? tp->snd_cwnd : loss_cwnd;
}

SEC("struct_ops")
void BPF_PROG(rnf_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops rnf_dctcp = {
	.init = (void *)rnf_dctcp_init,
	.ssthresh = (void *)rnf_dctcp_ssthresh,
	.in_ack_event = (void *)rnf_dctcp_in_ack_event,
	.cwnd_event = (void *)rnf_dctcp_cwnd_event,
	.set_state = (void *)rnf_dctcp_set_state,
	.undo_cwnd = (void *)rnf_dctcp_undo_cwnd,
	.cong_avoid = (void *)rnf_dctcp_cong_avoid,
	.flags = NEEDS_ECN,
	.name = "rnf_dctcp",
};
