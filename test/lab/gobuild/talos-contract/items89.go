package main

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/safe"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
)

// serviceCases (issue item 9): MachineService.ServiceList and the Services COSI resources of a
// worker and a control plane.
func (r *Run) serviceCases(ctx context.Context) {
	for _, key := range []string{"w113", "cp1"} {
		sctx, cancel := short(r.on(ctx, key))
		resp, err := r.admin.ServiceList(sctx)

		var value any

		if err == nil && len(resp.GetMessages()) == 1 {
			services := map[string]string{}
			for _, s := range resp.GetMessages()[0].GetServices() {
				services[s.GetId()] = s.GetState() + healthWord(s.GetHealth().GetHealthy(), s.GetHealth().GetUnknown())
			}

			value = map[string]any{"services": services}
		}

		r.emit("service-list", key, value, err)

		list, err := safe.StateList[*v1alpha1.Service](sctx, r.admin.COSI, resource.NewMetadata(v1alpha1.NamespaceName, v1alpha1.ServiceType, "", resource.VersionUndefined))
		services := map[string]string{}

		for s := range list.All() {
			word := "stopped"
			if s.TypedSpec().Running {
				word = "running"
			}

			services[s.Metadata().ID()] = word + healthWord(s.TypedSpec().Healthy, s.TypedSpec().Unknown)
		}

		r.emit("services-resources", key, map[string]any{"services": services}, err)
		cancel()
	}
}

func healthWord(healthy, unknown bool) string {
	switch {
	case unknown:
		return ", health unknown"
	case healthy:
		return ", healthy"
	default:
		return ", unhealthy"
	}
}

// eventCases (issue item 9): MachineService.Events from the start of the node's buffer, read
// with machinery's EventsWatchV2 (it needs the hello event first).
func (r *Run) eventCases(ctx context.Context) {
	ectx, cancel := context.WithTimeout(r.on(ctx, "w113"), 5*time.Second)
	defer cancel()

	ch := make(chan client.EventResult, 256)

	if err := r.admin.EventsWatchV2(ectx, ch, client.WithTailEvents(-1)); err != nil {
		r.emit("events", "w113", nil, err)

		return
	}

	types := map[string]bool{}
	lastStage, lastReady, running := "", false, map[string]bool{}

	var streamErr error

	idle := time.NewTimer(500 * time.Millisecond)

loop:
	for {
		select {
		case res := <-ch:
			if res.Error != nil {
				streamErr = res.Error

				break loop
			}

			types[strings.TrimPrefix(res.Event.TypeURL, "talos/runtime/")] = true

			switch p := res.Event.Payload.(type) {
			case *machine.MachineStatusEvent:
				lastStage, lastReady = p.GetStage().String(), p.GetStatus().GetReady()
			case *machine.ServiceStateEvent:
				running[p.GetService()] = p.GetAction() == machine.ServiceStateEvent_RUNNING
			}

			idle.Reset(300 * time.Millisecond)
		case <-idle.C:
			break loop
		}
	}

	names := []string{}
	for t := range types {
		names = append(names, t)
	}

	sort.Strings(names)

	up := []string{}
	for s, ok := range running {
		if ok {
			up = append(up, s)
		}
	}

	sort.Strings(up)

	r.emit("events", "w113", map[string]any{
		"types":                 names,
		"lastMachineStatus":     lastStage,
		"lastMachineReady":      lastReady,
		"servicesRunning":       up,
		"includesMachineStatus": slices.Contains(names, "machine.MachineStatusEvent"),
	}, streamErr)
}

// namespaceCases (issue item 9): the `storage` and `containers` namespaces of v1.14 (empty for a
// type that lives elsewhere), refused by a v1.13 node.
func (r *Run) namespaceCases(ctx context.Context) {
	for _, key := range []string{"w113", "w114"} {
		for _, ns := range []string{"storage", "containers"} {
			lctx, cancel := short(r.on(ctx, key))
			list, err := r.admin.COSI.List(lctx, resource.NewMetadata(ns, v1alpha1.ServiceType, "", resource.VersionUndefined))
			cancel()

			r.emit("namespace-"+ns, key, map[string]any{"items": len(list.Items)}, err)
		}
	}
}

// applyDryRunCases: a dry run of the config the node has (nothing changes), as the product's
// preview sends it.
func (r *Run) applyDryRunCases(ctx context.Context) {
	mc, err := r.getConfig(r.on(ctx, "w113"), r.admin)
	if err != nil {
		r.emit("apply-dry-run-same-config", "w113", nil, err)

		return
	}

	data, err := mc.Provider().Bytes()
	if err != nil {
		r.emit("apply-dry-run-same-config", "w113", nil, err)

		return
	}

	resp, err := r.apply(r.on(ctx, "w113"), data, machine.ApplyConfigurationRequest_NO_REBOOT, true)
	r.emit("apply-dry-run-same-config", "w113", applyValue(resp), err)
}
