package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
)

// The containerd instance talosctl puts installer images in: the CRI containerd's system namespace.
var systemContainerd = &common.ContainerdInstance{Driver: common.ContainerDriver_CRI, Namespace: common.ContainerdNamespace_NS_SYSTEM}

var digestSuffix = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// nameForm tells how Pull named the image: the reference as asked (`tag`), the repository pinned by
// digest (`digest`), or something else.
func nameForm(name, requested string) string {
	repo := requested
	if i := strings.LastIndex(requested, ":"); i > strings.LastIndex(requested, "/") {
		repo = requested[:i]
	}

	switch {
	case name == requested:
		return "tag"
	case digestSuffix.MatchString(name) && strings.TrimSuffix(name, digestSuffix.FindString(name)) == repo:
		return "digest"
	default:
		return "other: " + name
	}
}

// tagOf is the tag of an image reference (the Talos version of an installer).
func tagOf(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}

	return ""
}

type pullResult struct {
	name     string
	progress int
}

// pull runs ImageService.Pull to its end.
func (r *Run) pull(ctx context.Context, image string) (pullResult, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	var res pullResult

	stream, err := r.admin.ImageClient.Pull(ctx, &machine.ImageServicePullRequest{Containerd: systemContainerd, ImageRef: image})
	if err != nil {
		return res, err
	}

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, nil
		}

		if err != nil {
			return res, err
		}

		if msg.GetPullProgress() != nil {
			res.progress++
		}

		if msg.GetName() != "" {
			res.name = msg.GetName()
		}
	}
}

func (r *Run) pullValue(p pullResult, image string) map[string]any {
	return map[string]any{"form": nameForm(p.name, image), "progress": p.progress > 0}
}

// pullCases: a pull into the system namespace, the same pull again (the namespace holds the name:
// skipped, no progress), and ImageService on a node that has none (before v1.13).
func (r *Run) pullCases(ctx context.Context) {
	img := r.opts.PullImage

	p, err := r.pull(r.on(ctx, "w113"), img)
	r.emit("pull", "w113", r.pullValue(p, img), err)

	p, err = r.pull(r.on(ctx, "w113"), img)
	r.emit("pull-already-present", "w113", r.pullValue(p, img), err)

	_, err = r.pull(r.on(ctx, "w113"), "Not A Reference")
	r.emit("pull-invalid-reference", "w113", nil, err)
}

// state of a node as the waits below read it.
type nodeState struct {
	tag, bootID, stage string
	ready              bool
}

func (r *Run) nodeState(ctx context.Context, key string) (nodeState, error) {
	v, err := r.version(r.on(ctx, key))
	if err != nil {
		return nodeState{}, err
	}

	id, err := r.readBootID(r.on(ctx, key))
	if err != nil {
		return nodeState{}, err
	}

	ms, err := r.getMachineStatus(r.on(ctx, key))
	if err != nil {
		return nodeState{}, err
	}

	return nodeState{tag: v.GetVersion().GetTag(), bootID: strings.TrimSpace(id), stage: ms.TypedSpec().Stage.String(), ready: ms.TypedSpec().Status.Ready}, nil
}

// waitBooted waits until the node runs, ready, on a new boot ID with this tag; the value says what it reached.
func (r *Run) waitBooted(ctx context.Context, key string, from nodeState, tag string) map[string]any {
	var last nodeState

	poll(ctx, 10*time.Second, func(ctx context.Context) bool {
		s, err := r.nodeState(ctx, key)
		if err != nil {
			return false // down, or booting without an API yet
		}

		last = s

		return s.bootID != from.bootID && s.tag == tag && s.stage == "running" && s.ready
	})

	return map[string]any{"tag": last.tag, "stage": last.stage, "ready": last.ready, "newBootId": last.bootID != "" && last.bootID != from.bootID}
}

// legacyUpgradeCases: MachineService.Upgrade on a v1.12 node (acknowledged, then the node installs
// and reboots itself into the new version), then Rollback to the entry it booted before.
func (r *Run) legacyUpgradeCases(ctx context.Context) {
	_, err := r.pull(r.on(ctx, "w112"), r.opts.LegacyImage)
	r.emit("pull-before-v1.13", "w112", nil, err)

	before, err := r.nodeState(ctx, "w112")
	if err != nil {
		r.emit("legacy-upgrade", "w112", nil, err)

		return
	}

	uctx, cancel := short(r.on(ctx, "w112"))
	defer cancel()

	resp, err := r.admin.UpgradeWithOptions(uctx,
		client.WithUpgradeImage(r.opts.LegacyImage),
		client.WithUpgradeRebootMode(machine.UpgradeRequest_DEFAULT),
	)
	r.emit("legacy-upgrade", "w112", upgradeValue(resp), err)

	if err != nil {
		return
	}

	r.emit("legacy-upgrade-result", "w112", r.waitBooted(ctx, "w112", before, tagOf(r.opts.LegacyImage)), nil)

	upgraded, err := r.nodeState(ctx, "w112")
	if err == nil {
		rctx, rcancel := short(r.on(ctx, "w112"))
		err = r.admin.Rollback(rctx)
		rcancel()
	}

	r.emit("rollback", "w112", map[string]any{}, err)

	if err == nil {
		r.emit("rollback-result", "w112", r.waitBooted(ctx, "w112", upgraded, before.tag), nil)
	}
}

func upgradeValue(resp *machine.UpgradeResponse) any {
	if resp == nil || len(resp.GetMessages()) == 0 {
		return nil
	}

	m := resp.GetMessages()[0]

	return map[string]any{"ack": m.GetAck(), "actorIdIsUUID": isUUID(m.GetActorId()), "metadata": m.GetMetadata() != nil}
}

// busyUpgradeCases: a second legacy Upgrade while the node upgrades (the suite holds it in
// `upgrading`): acknowledged like the first; the sequence it starts is refused inside machined.
func (r *Run) busyUpgradeCases(ctx context.Context) {
	upgrade := func() (*machine.UpgradeResponse, error) {
		uctx, cancel := short(r.on(ctx, "w112busy"))
		defer cancel()

		return r.admin.UpgradeWithOptions(uctx, client.WithUpgradeImage(r.opts.LegacyImage))
	}

	resp, err := upgrade()
	r.emit("legacy-upgrade-first", "w112busy", upgradeValue(resp), err)

	stage := ""

	poll(ctx, 3*time.Second, func(ctx context.Context) bool {
		ms, err := r.getMachineStatus(r.on(ctx, "w112busy"))
		if err == nil {
			stage = ms.TypedSpec().Stage.String()
		}

		return stage == "upgrading"
	})
	r.emit("legacy-upgrade-stage", "w112busy", map[string]any{"stage": stage}, nil)

	resp, err = upgrade()
	r.emit("legacy-upgrade-second", "w112busy", upgradeValue(resp), err)
}

type lifecycleResult struct {
	exitCode *int32
	messages int
}

// lifecycleUpgrade runs LifecycleService.Upgrade; onFirst runs once, after the first progress line.
func (r *Run) lifecycleUpgrade(ctx context.Context, image string, onFirst func()) (lifecycleResult, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	var res lifecycleResult

	stream, err := r.admin.LifecycleClient.Upgrade(ctx, &machine.LifecycleServiceUpgradeRequest{
		Containerd: systemContainerd,
		Source:     &machine.InstallArtifactsSource{ImageName: image},
	})
	if err != nil {
		return res, err
	}

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, nil
		}

		if err != nil {
			return res, err
		}

		p := msg.GetProgress()
		if p.GetMessage() != "" {
			res.messages++

			if res.messages == 1 && onFirst != nil {
				onFirst()
			}
		}

		if _, ok := p.GetResponse().(*machine.LifecycleServiceInstallProgress_ExitCode); ok {
			code := p.GetExitCode()
			res.exitCode = &code
		}
	}
}

func lifecycleValue(l lifecycleResult) map[string]any {
	out := map[string]any{"progressLines": l.messages > 0, "exitCode": nil}
	if l.exitCode != nil {
		out["exitCode"] = *l.exitCode
	}

	return out
}

// lifecycleUpgradeCases: the v1.13+ flow on a v1.14 node: Pull, LifecycleService.Upgrade (a second
// one meanwhile is refused), the node keeps running; Reboot boots the new version.
func (r *Run) lifecycleUpgradeCases(ctx context.Context) {
	img := r.opts.LifecycleImage

	before, err := r.nodeState(ctx, "w114")
	if err != nil {
		r.emit("lifecycle-pull", "w114", nil, err)

		return
	}

	p, err := r.pull(r.on(ctx, "w114"), img)
	r.emit("lifecycle-pull", "w114", r.pullValue(p, img), err)

	var concurrent error

	res, err := r.lifecycleUpgrade(r.on(ctx, "w114"), img, func() {
		_, concurrent = r.lifecycleUpgrade(r.on(ctx, "w114"), img, nil)
	})
	r.emit("lifecycle-upgrade", "w114", lifecycleValue(res), err)
	r.emit("lifecycle-upgrade-concurrent", "w114", map[string]any{}, concurrent)

	after, err := r.nodeState(ctx, "w114")
	r.emit("lifecycle-upgrade-keeps-running", "w114", map[string]any{
		"tag": after.tag, "stage": after.stage, "ready": after.ready, "sameBootId": after.bootID == before.bootID,
	}, err)

	_, err = r.lifecycleUpgrade(r.on(ctx, "w114"), "factory.talos.dev/metal-installer/"+r.opts.Schematic+":v1.14.99", nil)
	r.emit("lifecycle-upgrade-not-pulled", "w114", map[string]any{}, err)

	r.reboot(ctx, "w114", "reboot-default", nil, tagOf(img), after)
}

// reboot sends Reboot in a mode and waits for the node to boot `tag`.
func (r *Run) reboot(ctx context.Context, key, name string, mode client.RebootMode, tag string, before nodeState) {
	rctx, cancel := short(r.on(ctx, key))
	defer cancel()

	var opts []client.RebootMode
	if mode != nil {
		opts = append(opts, mode)
	}

	resp, err := r.admin.RebootWithResponse(rctx, opts...)

	var value any

	if err == nil && len(resp.GetMessages()) == 1 {
		value = map[string]any{"actorIdIsUUID": isUUID(resp.GetMessages()[0].GetActorId())}
	}

	r.emit(name, key, value, err)

	if err == nil {
		r.emit(name+"-result", key, r.waitBooted(ctx, key, before, tag), nil)
	}
}

// rebootModeCases: POWERCYCLE and FORCE (1.12+) are acknowledged like DEFAULT; Rollback on a node
// with no previous boot entry fails before any reboot.
func (r *Run) rebootModeCases(ctx context.Context) {
	if before, err := r.nodeState(ctx, "w114pc"); err == nil {
		r.reboot(ctx, "w114pc", "reboot-powercycle", client.WithPowerCycle, before.tag, before)
	} else {
		r.emit("reboot-powercycle", "w114pc", nil, err)
	}

	rctx, cancel := short(r.on(ctx, "w113force"))
	defer cancel()

	r.emit("rollback-without-previous", "w113force", map[string]any{}, r.admin.Rollback(rctx))

	if before, err := r.nodeState(ctx, "w113force"); err == nil {
		r.reboot(ctx, "w113force", "reboot-force", client.WithForce, before.tag, before)
	} else {
		r.emit("reboot-force", "w113force", nil, err)
	}
}
