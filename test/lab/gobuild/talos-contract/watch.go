package main

import (
	"context"
	"strings"
	"time"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/meta"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// eventValue is what the tests compare of a COSI watch event.
func eventValue(ev state.Event) map[string]any {
	out := map[string]any{"type": ev.Type.String(), "bookmark": len(ev.Bookmark) > 0}

	if ev.Resource != nil {
		out["id"] = ev.Resource.Metadata().ID()

		// A tombstone's version says it is one ("undefined"); a live resource's depends on its history.
		if ev.Type == state.Destroyed || ev.Type == state.Bootstrapped {
			out["version"] = ev.Resource.Metadata().Version().String()
		}
	}

	if ev.Error != nil {
		out["error"] = ev.Error.Error()
	}

	return out
}

// collect reads events until `want` arrived, an Errored event, or `within` passed.
func collect(ch <-chan state.Event, want int, within time.Duration) []state.Event {
	var got []state.Event

	timeout := time.After(within)

	for len(got) < want {
		select {
		case ev := <-ch:
			got = append(got, ev)
			if ev.Type == state.Errored {
				return got
			}
		case <-timeout:
			return got
		}
	}

	return got
}

func eventValues(evs []state.Event) map[string]any {
	out := []map[string]any{}
	for _, ev := range evs {
		out = append(out, eventValue(ev))
	}

	return map[string]any{"events": out}
}

// watchCases: a watch of one resource, of one that does not exist, of a kind with its contents.
func (r *Run) watchCases(ctx context.Context) {
	wctx, cancel := context.WithCancel(r.on(ctx, "w113"))
	defer cancel()

	ch := make(chan state.Event, 16)
	err := r.admin.COSI.Watch(wctx, runtime.NewMachineStatus().Metadata(), ch)
	r.emit("watch-existing", "w113", eventValues(collect(ch, 1, 2*time.Second)), err)

	missing := make(chan state.Event, 16)
	err = r.admin.COSI.Watch(wctx, resource.NewMetadata(runtime.NamespaceName, runtime.MachineStatusType, "kangal-missing", resource.VersionUndefined), missing)
	r.emit("watch-missing", "w113", eventValues(collect(missing, 1, 2*time.Second)), err)

	kind := make(chan state.Event, 16)
	err = r.admin.COSI.WatchKind(wctx, runtime.NewMachineStatus().Metadata(), kind, state.WithBootstrapContents(true))
	r.emit("watchkind-bootstrap", "w113", eventValues(collect(kind, 2, 2*time.Second)), err)
}

// configWatchCases: a machine config change, applied NO_REBOOT as the product applies one, seen
// by a watch of the config resource; then the same config again as a dry run.
func (r *Run) configWatchCases(ctx context.Context) {
	wctx, cancel := context.WithCancel(r.on(ctx, "w113cfg"))
	defer cancel()

	ch := make(chan state.Event, 16)
	err := r.admin.COSI.Watch(wctx, resource.NewMetadata(config.NamespaceName, config.MachineConfigType, config.ActiveID, resource.VersionUndefined), ch)
	initial := collect(ch, 1, 2*time.Second)

	mc, err2 := r.getConfig(r.on(ctx, "w113cfg"), r.admin)
	if err == nil {
		err = err2
	}

	var changed []byte

	if err == nil {
		changed, err = patched(mc)
	}

	if err != nil {
		r.emit("config-watch", "w113cfg", nil, err)

		return
	}

	resp, err := r.apply(r.on(ctx, "w113cfg"), changed, machine.ApplyConfigurationRequest_NO_REBOOT, false)
	r.emit("apply-no-reboot", "w113cfg", applyValue(resp), err)

	updates := collect(ch, 1, 2*time.Second)
	value := eventValues(append(initial, updates...))

	if len(initial) == 1 && len(updates) == 1 && initial[0].Resource != nil && updates[0].Resource != nil {
		before, after := initial[0].Resource.Metadata().Version(), updates[0].Resource.Metadata().Version()
		value["versionDelta"] = int(after.Value()) - int(before.Value())
	}

	r.emit("config-watch", "w113cfg", value, nil)

	resp, err = r.apply(r.on(ctx, "w113cfg"), changed, machine.ApplyConfigurationRequest_NO_REBOOT, true)
	r.emit("apply-dry-run-unchanged", "w113cfg", applyValue(resp), err)

	resp, err = r.apply(r.on(ctx, "w113cfg"), changed, machine.ApplyConfigurationRequest_AUTO, false)
	r.emit("apply-auto", "w113cfg", applyValue(resp), err)

	resp, err = r.apply(r.on(ctx, "w113cfg"), []byte("apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 192.168.10.3:3247\n"), machine.ApplyConfigurationRequest_NO_REBOOT, false)
	r.emit("apply-without-v1alpha1", "w113cfg", applyValue(resp), err)

	if len(updates) == 1 {
		cancel() // the watch breaks; a new one resumes after the last event it saw
		r.resumeCases(ctx, mc, updates[0].Bookmark)
	}
}

// resumeCases: a change made while no watch runs reaches a watch started from the bookmark of the
// last event seen (and only that change); a bookmark the node did not give is refused.
func (r *Run) resumeCases(ctx context.Context, mc *config.MachineConfig, bookmark state.Bookmark) {
	again, err := patchedWith(mc, "524288")
	if err == nil {
		_, err = r.apply(r.on(ctx, "w113cfg"), again, machine.ApplyConfigurationRequest_NO_REBOOT, false)
	}

	if err != nil {
		r.emit("watch-resume", "w113cfg", nil, err)

		return
	}

	wctx, cancel := context.WithCancel(r.on(ctx, "w113cfg"))
	defer cancel()

	md := resource.NewMetadata(config.NamespaceName, config.MachineConfigType, config.ActiveID, resource.VersionUndefined)
	ch := make(chan state.Event, 16)
	err = r.admin.COSI.Watch(wctx, md, ch, state.WithStartFromBookmark(bookmark))
	// Two wanted: the one change, and a second that must not come (one second to show it does not).
	r.emit("watch-resume", "w113cfg", eventValues(collect(ch, 2, time.Second)), err)

	invalid := make(chan state.Event, 16)
	err = r.admin.COSI.Watch(wctx, md, invalid, state.WithStartFromBookmark(state.Bookmark("not-a-bookmark")))
	r.emit("watch-resume-invalid", "w113cfg", nil, err)
}

// patched is the config with one live-applicable change (a sysctl), as a strategic merge patch gives it.
func patched(mc *config.MachineConfig) ([]byte, error) {
	return patchedWith(mc, "262144")
}

func patchedWith(mc *config.MachineConfig, maxMapCount string) ([]byte, error) {
	patch, err := configpatcher.LoadPatch([]byte("machine:\n  sysctls:\n    vm.max_map_count: \"" + maxMapCount + "\"\n"))
	if err != nil {
		return nil, err
	}

	out, err := configpatcher.Apply(configpatcher.WithConfig(mc.Provider()), []configpatcher.Patch{patch})
	if err != nil {
		return nil, err
	}

	return out.Bytes()
}

func (r *Run) apply(ctx context.Context, data []byte, mode machine.ApplyConfigurationRequest_Mode, dryRun bool) (*machine.ApplyConfiguration, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	resp, err := r.admin.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: data, Mode: mode, DryRun: dryRun})
	if err != nil {
		return nil, err
	}

	if len(resp.GetMessages()) == 0 {
		return &machine.ApplyConfiguration{}, nil
	}

	return resp.GetMessages()[0], nil
}

func applyValue(a *machine.ApplyConfiguration) any {
	if a == nil {
		return nil
	}

	return map[string]any{"mode": a.GetMode().String(), "modeDetails": a.GetModeDetails()}
}

// The types whose ResourceDefinition the tests compare (item 8): the product's and talosctl's reads.
var definitionTypes = []string{
	runtime.MachineStatusType,
	runtime.VersionType,
	runtime.ExtensionStatusType,
	runtime.SecurityStateType,
	"Services.v1alpha1.talos.dev",
	config.MachineConfigType,
	"KubeletSpecs.kubernetes.talos.dev",
	"APIServerConfigs.kubernetes.talos.dev",
}

// resourceDefinitionCases: meta ResourceDefinitions as machinery decodes them (a filled spec:
// aliases, print columns, sensitivity), and the alias lookup `talosctl get <alias>` does with them.
func (r *Run) resourceDefinitionCases(ctx context.Context) {
	gctx, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	for _, typ := range definitionTypes {
		rd, err := safe.StateGet[*meta.ResourceDefinition](gctx, r.admin.COSI, resource.NewMetadata(meta.NamespaceName, meta.ResourceDefinitionType, strings.ToLower(typ), resource.VersionUndefined))
		r.emit("resource-definition "+typ, "w113", valueOr(rd, err, func(rd *meta.ResourceDefinition) map[string]any {
			s := rd.TypedSpec()
			columns := []string{}

			for _, c := range s.PrintColumns {
				columns = append(columns, c.Name+"="+c.JSONPath)
			}

			return map[string]any{
				"id":               rd.Metadata().ID(),
				"type":             s.Type,
				"displayType":      s.DisplayType,
				"defaultNamespace": s.DefaultNamespace,
				"aliases":          nonNil(s.Aliases),
				"allAliases":       nonNil(s.AllAliases),
				"printColumns":     columns,
				"sensitivity":      string(s.Sensitivity),
			}
		}), err)
	}

	// talosctl get <alias>: machinery's own lookup (client.ResolveResourceKind) over every definition
	// (`ms` names three types on a real node: MachineStatus, ManifestStatus and block MountStatus).
	for _, alias := range []string{"machinestatus", "machineconfig", "extensions", "securitystate", "ms"} {
		ns := resource.Namespace("")

		rd, err := r.admin.ResolveResourceKind(gctx, &ns, alias)
		r.emit("resource-alias "+alias, "w113", valueOr(rd, err, func(rd *meta.ResourceDefinition) map[string]any {
			return map[string]any{"type": rd.TypedSpec().Type, "namespace": ns}
		}), err)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}

	return s
}
