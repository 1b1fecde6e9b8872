package main

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
)

func (r *Run) memberList(ctx context.Context) ([]*machine.EtcdMember, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	resp, err := r.admin.EtcdMemberList(ctx, &machine.EtcdMemberListRequest{QueryLocal: false})
	if err != nil {
		return nil, err
	}

	if len(resp.GetMessages()) == 0 {
		return nil, nil
	}

	return resp.GetMessages()[0].GetMembers(), nil
}

// memberValue names a member by its hostname; URLs keep their form with the node key for the IP.
func (r *Run) memberValue(m *machine.EtcdMember) map[string]any {
	return map[string]any{
		"hostname":   m.GetHostname(),
		"peerUrls":   r.keyed(m.GetPeerUrls()),
		"clientUrls": r.keyed(m.GetClientUrls()),
		"isLearner":  m.GetIsLearner(),
	}
}

// keyed replaces node IPs by their keys (`https://<cp1>:2379`), so expectations need no addresses.
func (r *Run) keyed(urls []string) []string {
	out := []string{}

	for _, u := range urls {
		for key, ip := range r.opts.Nodes {
			u = strings.ReplaceAll(u, "//"+ip+":", "//<"+key+">:")
		}

		out = append(out, u)
	}

	return out
}

// etcdCases: the etcd RPCs the product calls (EtcdMemberList query_local=false, EtcdStatus,
// EtcdAlarmList, EtcdForfeitLeadership) on control planes of three versions and on a worker.
func (r *Run) etcdCases(ctx context.Context) {
	var members []*machine.EtcdMember

	for _, key := range []string{"cp1", "cp2", "cp3"} {
		list, err := r.memberList(r.on(ctx, key))
		if key == "cp1" {
			members = list
		}

		items := []map[string]any{}
		ids := make([]uint64, 0, len(list))

		for _, m := range list {
			items = append(items, r.memberValue(m))
			ids = append(ids, m.GetId())
		}

		// By hostname here; the order the node answered is an observation of its own.
		sort.Slice(items, func(i, j int) bool { return items[i]["hostname"].(string) < items[j]["hostname"].(string) })
		r.emit("etcd-member-list", key, map[string]any{"members": items}, err)
		r.emit("etcd-member-list-order", key, map[string]any{"sortedById": slices.IsSorted(ids)}, err)
	}

	_, err := r.memberList(r.on(ctx, "w113"))
	r.emit("etcd-member-list", "w113", nil, err)

	r.etcdStatusCases(ctx, members)
	r.etcdAlarmCases(ctx)
	r.forfeitCases(ctx, members)
}

func (r *Run) etcdStatusCases(ctx context.Context, members []*machine.EtcdMember) {
	ids := map[uint64]string{}
	for _, m := range members {
		ids[m.GetId()] = m.GetHostname()
	}

	for _, key := range []string{"cp1", "w113"} {
		sctx, cancel := short(r.on(ctx, key))
		resp, err := r.admin.EtcdStatus(sctx)
		cancel()

		var value any

		if err == nil && len(resp.GetMessages()) == 1 {
			s := resp.GetMessages()[0].GetMemberStatus()
			value = map[string]any{
				"member":          ids[s.GetMemberId()],
				"leaderIsMember":  ids[s.GetLeader()] != "",
				"isLearner":       s.GetIsLearner(),
				"errors":          nonNil(s.GetErrors()),
				"protocolVersion": s.GetProtocolVersion() != "",
				"raftIndex":       s.GetRaftIndex() > 0,
			}
		}

		r.emit("etcd-status", key, value, err)
	}
}

func (r *Run) etcdAlarmCases(ctx context.Context) {
	for _, key := range []string{"cp1", "w113"} {
		actx, cancel := short(r.on(ctx, key))
		resp, err := r.admin.EtcdAlarmList(actx)
		cancel()

		var value any

		if err == nil && len(resp.GetMessages()) == 1 {
			alarms := []string{}
			for _, a := range resp.GetMessages()[0].GetMemberAlarms() {
				alarms = append(alarms, a.GetAlarm().String())
			}

			sort.Strings(alarms)
			value = map[string]any{"alarms": alarms}
		}

		r.emit("etcd-alarm-list", key, value, err)
	}
}

// forfeitCases: on a member that is not the leader nothing moves (member ""); on the leader,
// leadership goes to the first other member in member-list order. The suite makes cp1 the leader.
func (r *Run) forfeitCases(ctx context.Context, members []*machine.EtcdMember) {
	forfeit := func(key string) (string, error) {
		fctx, cancel := short(r.on(ctx, key))
		defer cancel()

		resp, err := r.admin.EtcdForfeitLeadership(fctx, &machine.EtcdForfeitLeadershipRequest{})
		if err != nil || len(resp.GetMessages()) == 0 {
			return "", err
		}

		return resp.GetMessages()[0].GetMember(), nil
	}

	member, err := forfeit("cp2")
	r.emit("etcd-forfeit-not-leader", "cp2", map[string]any{"member": member}, err)

	self := ""

	for _, m := range members {
		if slices.Contains(r.keyed(m.GetClientUrls()), "https://<cp1>:2379") {
			self = m.GetHostname()
		}
	}

	firstOther := ""

	for _, m := range members {
		if m.GetHostname() != self {
			firstOther = m.GetHostname()

			break
		}
	}

	member, err = forfeit("cp1")
	r.emit("etcd-forfeit-leader", "cp1", map[string]any{"moved": member != "", "firstOtherInList": member != "" && member == firstOther}, err)

	_, err = forfeit("w113")
	r.emit("etcd-forfeit-leader", "w113", nil, err)
}
