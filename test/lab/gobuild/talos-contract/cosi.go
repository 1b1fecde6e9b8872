package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/resource/protobuf"
	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/cosi-project/runtime/pkg/state"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"github.com/siderolabs/talos/pkg/machinery/resources/v1alpha1"
)

// Types this machinery (v1.13.9) has no Go type for: the client hands them over undecoded.
const (
	bootIDType                = "BootIDs.runtime.talos.dev"                // v1.14.0-alpha.2+
	imageFactorySchematicType = "ImageFactorySchematics.runtime.talos.dev" // v1.14.0-alpha.2+
	// The name the product and the simulator once gave the Secure Boot state; machinery's is
	// runtime.SecurityStateType, `SecurityStates.talos.dev`, and a real node refuses this one.
	runtimeSecurityStateType = "SecurityStates.runtime.talos.dev"
)

func (r *Run) getMachineStatus(ctx context.Context) (*runtime.MachineStatus, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	return safe.StateGet[*runtime.MachineStatus](ctx, r.admin.COSI, runtime.NewMachineStatus().Metadata())
}

func machineStatusValue(ms *runtime.MachineStatus) map[string]any {
	unmet := []string{}
	for _, c := range ms.TypedSpec().Status.UnmetConditions {
		unmet = append(unmet, c.Name)
	}

	return map[string]any{
		"id":              ms.Metadata().ID(),
		"owner":           ms.Metadata().Owner(),
		"phase":           ms.Metadata().Phase().String(),
		"stage":           ms.TypedSpec().Stage.String(),
		"ready":           ms.TypedSpec().Status.Ready,
		"unmetConditions": unmet,
	}
}

// rawGet reads a resource of a type this machinery does not know: its protobuf spec, undecoded.
func rawGet(ctx context.Context, st state.State, ns, typ, id string) ([]byte, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	res, err := st.Get(ctx, resource.NewMetadata(ns, typ, id, resource.VersionUndefined))
	if err != nil {
		return nil, err
	}

	pr, ok := res.(*protobuf.Resource)
	if !ok {
		return nil, errors.New("the client decoded a type it should not know: " + typ)
	}

	m, err := pr.Marshal()
	if err != nil {
		return nil, err
	}

	return m.GetSpec().GetProtoSpec(), nil
}

// protoStrings decodes the string fields of a flat protobuf message by field number.
func protoStrings(b []byte) map[protowire.Number]string {
	out := map[protowire.Number]string{}

	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}

		b = b[n:]

		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return out
			}

			out[num] = string(v)
			b = b[m:]

			continue
		}

		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return out
		}

		b = b[m:]
	}

	return out
}

// cosiTypeCases: the resources the product reads, with machinery's own types.
func (r *Run) cosiTypeCases(ctx context.Context) {
	for _, key := range []string{"cp1", "w112", "w113", "w114"} {
		ms, err := r.getMachineStatus(r.on(ctx, key))
		r.emit("machinestatus", key, valueOr(ms, err, machineStatusValue), err)
	}

	r.listCases(ctx)
	r.securityStateCases(ctx)
	r.configCases(ctx)
	r.version114Cases(ctx)
	r.kubernetesConfigCases(ctx)
}

func (r *Run) listCases(ctx context.Context) {
	lctx, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	list, err := safe.StateList[*runtime.MachineStatus](lctx, r.admin.COSI, runtime.NewMachineStatus().Metadata())
	ids := []string{}

	for ms := range list.All() {
		ids = append(ids, ms.Metadata().ID())
	}

	r.emit("machinestatus-list", "w113", map[string]any{"ids": ids}, err)

	for _, key := range []string{"w112", "w113"} {
		vctx, vcancel := short(r.on(ctx, key))
		v, err := safe.StateGet[*runtime.Version](vctx, r.admin.COSI, runtime.NewVersion().Metadata())
		vcancel()

		r.emit("version-resource", key, valueOr(v, err, func(v *runtime.Version) map[string]any {
			return map[string]any{"id": v.Metadata().ID(), "version": v.TypedSpec().Version, "name": v.TypedSpec().Name}
		}), err)
	}

	for _, key := range []string{"w113", "w114"} {
		ectx, ecancel := short(r.on(ctx, key))
		exts, err := safe.StateList[*runtime.ExtensionStatus](ectx, r.admin.COSI, resource.NewMetadata(runtime.NamespaceName, runtime.ExtensionStatusType, "", resource.VersionUndefined))
		ecancel()

		items := []map[string]any{}

		for e := range exts.All() {
			items = append(items, map[string]any{
				"id":      e.Metadata().ID(),
				"image":   e.TypedSpec().Image,
				"name":    e.TypedSpec().Metadata.Name,
				"version": e.TypedSpec().Metadata.Version,
			})
		}

		r.emit("extension-statuses", key, map[string]any{"items": items}, err)
	}
}

func (r *Run) securityStateCases(ctx context.Context) {
	sctx, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	ss, err := safe.StateGet[*runtime.SecurityState](sctx, r.admin.COSI, runtime.NewSecurityStateSpec(runtime.NamespaceName).Metadata())
	r.emit("securitystate", "w113", valueOr(ss, err, func(ss *runtime.SecurityState) map[string]any {
		return map[string]any{"id": ss.Metadata().ID(), "secureBoot": ss.TypedSpec().SecureBoot}
	}), err)

	_, err = rawGet(r.on(ctx, "w113"), r.admin.COSI, runtime.NamespaceName, runtimeSecurityStateType, runtime.SecurityStateID)
	r.emit("securitystate-runtime-named", "w113", map[string]any{}, err)
}

func (r *Run) getConfig(ctx context.Context, c *client.Client) (*config.MachineConfig, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	return safe.StateGet[*config.MachineConfig](ctx, c.COSI, resource.NewMetadata(config.NamespaceName, config.MachineConfigType, config.ActiveID, resource.VersionUndefined))
}

// metalMode is how a metal node validates its config (runtime.ModeMetal, installed).
type metalMode struct{}

func (metalMode) String() string        { return "metal" }
func (metalMode) RequiresInstall() bool { return true }
func (metalMode) InContainer() bool     { return false }

func (r *Run) configCases(ctx context.Context) {
	for _, key := range []string{"w113", "cp1"} {
		mc, err := r.getConfig(r.on(ctx, key), r.admin)
		r.emit("machineconfig", key, valueOr(mc, err, func(mc *config.MachineConfig) map[string]any {
			out := map[string]any{"id": mc.Metadata().ID(), "owner": mc.Metadata().Owner()}

			if cfg := mc.Config(); cfg != nil && cfg.Machine() != nil {
				out["machineType"] = cfg.Machine().Type().String()
				out["clusterName"] = cfg.Cluster().Name()
			}

			if p := mc.Provider(); p != nil {
				_, verr := p.Validate(metalMode{})
				out["validates"] = verr == nil

				if verr != nil {
					out["validationError"] = verr.Error()
				}
			}

			return out
		}), err)
	}

	if r.reader != nil {
		_, err := r.getConfig(r.on(ctx, "w113"), r.reader)
		r.emit("machineconfig-reader", "w113", map[string]any{}, err)
	}
}

// version114Cases: the types a v1.14 node has and a v1.13 node refuses.
func (r *Run) version114Cases(ctx context.Context) {
	for _, key := range []string{"w113", "w114"} {
		spec, err := rawGet(r.on(ctx, key), r.admin.COSI, runtime.NamespaceName, bootIDType, "boot-id")

		var value any

		if err == nil {
			read, rerr := r.readBootID(r.on(ctx, key))
			bootID := protoStrings(spec)[1]
			value = map[string]any{"uuid": isUUID(bootID), "sameAsRead": rerr == nil && bootID == strings.TrimSpace(read)}
		}

		r.emit("bootid", key, value, err)

		spec, err = rawGet(r.on(ctx, key), r.admin.COSI, runtime.NamespaceName, imageFactorySchematicType, "image-factory-schematic")
		fields := protoStrings(spec)
		r.emit("imagefactoryschematic", key, map[string]any{"schematicId": fields[1], "flavor": fields[2], "apiUrl": fields[3]}, err)
	}
}

func (r *Run) kubernetesConfigCases(ctx context.Context) {
	kctx, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	ks, err := safe.StateGet[*k8s.KubeletSpec](kctx, r.admin.COSI, k8s.NewKubeletSpec(k8s.NamespaceName, k8s.KubeletID).Metadata())
	r.emit("kubeletspec", "w113", valueOr(ks, err, func(ks *k8s.KubeletSpec) map[string]any {
		return map[string]any{"owner": ks.Metadata().Owner(), "image": ks.TypedSpec().Image, "expectedNodename": ks.TypedSpec().ExpectedNodename}
	}), err)

	actx, acancel := short(r.on(ctx, "cp1"))
	defer acancel()

	api, err := safe.StateGet[*k8s.APIServerConfig](actx, r.admin.COSI, k8s.NewAPIServerConfig().Metadata())
	r.emit("apiserverconfig", "cp1", valueOr(api, err, func(a *k8s.APIServerConfig) map[string]any {
		return map[string]any{"owner": a.Metadata().Owner(), "image": a.TypedSpec().Image, "localPort": a.TypedSpec().LocalPort}
	}), err)

	if r.reader == nil {
		return
	}

	// os:reader: KubeletSpecs are sensitive from v1.12.9 / v1.13.4 ("fix: mark more resources as sensitive").
	for _, key := range []string{"w112", "w113"} {
		rctx, rcancel := short(r.on(ctx, key))
		_, err := safe.StateGet[*k8s.KubeletSpec](rctx, r.reader.COSI, k8s.NewKubeletSpec(k8s.NamespaceName, k8s.KubeletID).Metadata())
		rcancel()

		r.emit("kubeletspec-reader", key, map[string]any{}, err)
	}

	rctx, rcancel := short(r.on(ctx, "w113"))
	defer rcancel()

	ms, err := safe.StateGet[*runtime.MachineStatus](rctx, r.reader.COSI, runtime.NewMachineStatus().Metadata())
	r.emit("machinestatus-reader", "w113", valueOr(ms, err, machineStatusValue), err)
}

// cosiErrorCases: how the COSI API refuses.
func (r *Run) cosiErrorCases(ctx context.Context) {
	gctx, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	_, err := r.admin.COSI.Get(gctx, resource.NewMetadata(runtime.NamespaceName, runtime.MachineStatusType, "kangal-missing", resource.VersionUndefined))
	r.emit("cosi-get-missing", "w113", nil, err)
	r.emit("cosi-get-missing-is-not-found", "w113", map[string]any{"isNotFoundError": state.IsNotFoundError(err)}, nil)

	err = r.admin.COSI.Create(gctx, runtime.NewMachineStatus())
	r.emit("cosi-create", "w113", map[string]any{}, err)

	_, err = r.admin.COSI.Get(gctx, resource.NewMetadata(runtime.NamespaceName, "KangalContracts.example.dev", "x", resource.VersionUndefined))
	r.emit("cosi-unknown-type", "w113", map[string]any{}, err)

	_, err = r.admin.COSI.List(gctx, resource.NewMetadata("kangal-missing", runtime.MachineStatusType, "", resource.VersionUndefined))
	r.emit("cosi-unknown-namespace", "w113", map[string]any{}, err)

	list, err := r.admin.COSI.List(gctx, resource.NewMetadata(config.NamespaceName, runtime.MachineStatusType, "", resource.VersionUndefined))
	r.emit("cosi-other-namespace", "w113", map[string]any{"items": len(list.Items)}, err)

	svcs, err := safe.StateList[*v1alpha1.Service](gctx, r.admin.COSI, resource.NewMetadata(v1alpha1.NamespaceName, v1alpha1.ServiceType, "", resource.VersionUndefined))
	ids := []string{}

	for s := range svcs.All() {
		ids = append(ids, s.Metadata().ID())
	}

	r.emit("services-include-kubelet", "w113", map[string]any{"kubelet": slices.Contains(ids, "kubelet")}, err)
}
