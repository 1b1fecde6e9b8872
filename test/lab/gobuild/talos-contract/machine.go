package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
)

// versionValue is what a Version answer says; `metadata` is only there when apid set it.
func versionValue(v *machine.Version) map[string]any {
	out := map[string]any{
		"tag":          v.GetVersion().GetTag(),
		"os":           v.GetVersion().GetOs(),
		"arch":         v.GetVersion().GetArch(),
		"platform":     v.GetPlatform().GetName(),
		"platformMode": v.GetPlatform().GetMode(),
		"features":     v.GetFeatures() != nil,
		"rbac":         v.GetFeatures().GetRbac(),
	}

	if md := v.GetMetadata(); md != nil {
		out["metadata"] = map[string]any{"hostname": md.GetHostname(), "error": md.GetError()}
	}

	return out
}

func (r *Run) version(ctx context.Context) (*machine.Version, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	resp, err := r.admin.Version(ctx)
	if err != nil {
		return nil, err
	}

	if len(resp.GetMessages()) != 1 {
		return nil, fmt.Errorf("Version answered %d messages", len(resp.GetMessages()))
	}

	return resp.GetMessages()[0], nil
}

// versionCases: Version of every node addressed with `node` (one-to-one: no metadata), of one node
// with the deprecated `nodes` (one-to-many: apid names the target), and of the endpoint node itself.
func (r *Run) versionCases(ctx context.Context) {
	for _, key := range required {
		v, err := r.version(r.on(ctx, key))
		r.emit("version", key, valueOr(v, err, versionValue), err)
	}

	v, err := r.version(client.WithNodes(ctx, r.ip("w113")))
	r.emit("version-nodes-metadata", "w113", valueOr(v, err, versionValue), err)

	v, err = r.version(ctx)
	r.emit("version-endpoint-node", "endpoint", valueOr(v, err, versionValue), err)
}

// targetCases: what apid answers for targets it cannot use, before any node is called.
func (r *Run) targetCases(ctx context.Context) {
	_, err := r.version(client.WithNode(ctx, r.ip("w113")+":50000"))
	r.emit("target-with-port", "w113", nil, err)

	_, err = r.version(client.WithNodes(ctx, r.ip("w113")+":50000"))
	r.emit("target-with-port-nodes", "w113", nil, err)

	_, err = r.version(metadata.AppendToOutgoingContext(ctx, "node", r.ip("w113"), "node", r.ip("w114")))
	r.emit("target-two-node-values", "w113", nil, err)

	_, err = r.version(client.WithNode(ctx, "127.0.93.250"))
	r.emit("target-unknown-node", "none", nil, err)

	// COSI is one-to-one only: `nodes` is refused by apid's director for every non-MachineService method.
	_, err = r.getMachineStatus(client.WithNodes(ctx, r.ip("w113")))
	r.emit("cosi-with-nodes", "w113", nil, err)
}

// readBootID reads /proc/sys/kernel/random/boot_id with MachineService.Read, as talosctl does.
func (r *Run) readBootID(ctx context.Context) (string, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	stream, err := r.admin.MachineClient.Read(ctx, &machine.ReadRequest{Path: "/proc/sys/kernel/random/boot_id"})
	if err != nil {
		return "", err
	}

	var sb strings.Builder

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return sb.String(), nil
		}

		if err != nil {
			return "", err
		}

		sb.Write(msg.GetBytes())
	}
}

// readCases: the boot ID as Talos before 1.14 gives it (the product reads it so), and the Version
// RPC with the raw generated client (google.protobuf.Empty in, as on the wire).
func (r *Run) readCases(ctx context.Context) {
	for _, key := range []string{"w112", "w113", "w114"} {
		id, err := r.readBootID(r.on(ctx, key))
		r.emit("read-boot-id", key, map[string]any{
			"uuid":            isUUID(strings.TrimSuffix(id, "\n")),
			"trailingNewline": strings.HasSuffix(id, "\n"),
		}, err)
	}

	_, err := r.readOther(r.on(ctx, "w113"))
	r.emit("read-missing-file", "w113", nil, err)

	ctx2, cancel := short(r.on(ctx, "w113"))
	defer cancel()

	resp, err := r.admin.MachineClient.Version(ctx2, &emptypb.Empty{})
	r.emit("version-raw-messages", "w113", map[string]any{"messages": len(resp.GetMessages())}, err)
}

func (r *Run) readOther(ctx context.Context) (string, error) {
	ctx, cancel := short(ctx)
	defer cancel()

	stream, err := r.admin.MachineClient.Read(ctx, &machine.ReadRequest{Path: "/var/lib/kangal-contract-missing"})
	if err != nil {
		return "", err
	}

	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return "", nil
			}

			return "", err
		}
	}
}

// valueOr applies f to v when the call succeeded.
func valueOr[T any](v T, err error, f func(T) map[string]any) any {
	if err != nil {
		return nil
	}

	return f(v)
}
