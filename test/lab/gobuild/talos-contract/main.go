// talos-contract drives the Talos simulator of the lab (test/lab/talos) with Siderolabs' own Go
// client (github.com/siderolabs/talos/pkg/machinery/client, the COSI client of cosi-project/runtime)
// through every behaviour the product depends on, and prints one JSON line per observation on
// stdout: the case, the node (the key the caller gave it), the gRPC code, the status message and the
// value observed. It judges nothing: test/integration/talos-upstream-contract.test.ts compares every
// line with what upstream Talos answers.
//
//	talos-contract -talosconfig <file> [-reader-talosconfig <file>] -node cp1=127.0.93.1 ... \
//	  -schematic <id> -legacy-image <ref> -lifecycle-image <ref> -pull-image <ref>
//
// Node keys the cases use (each one required): see the `required` list below.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
)

// The node keys the cases address, as the caller names its nodes with -node key=ip.
var required = []string{
	"cp1", "cp2", "cp3", // control planes v1.13, v1.14, v1.12: etcd; cp1 leads
	"w112",      // v1.12 worker: legacy Upgrade, then Rollback
	"w112busy",  // v1.12 worker held in `upgrading`: a second legacy Upgrade
	"w113",      // v1.13 worker, vanilla schematic: reads, pulls, services, events
	"w113cfg",   // v1.13 worker: a config change seen by a watch
	"w113force", // v1.13 worker: Rollback without a previous entry, Reboot FORCE
	"w114",      // v1.14 worker: 1.14 types, Pull, LifecycleService.Upgrade, Reboot
	"w114pc",    // v1.14 worker: Reboot POWERCYCLE
}

type nodeList map[string]string

func (n nodeList) String() string { return fmt.Sprint(map[string]string(n)) }

func (n nodeList) Set(v string) error {
	key, ip, ok := strings.Cut(v, "=")
	if !ok || key == "" || ip == "" {
		return fmt.Errorf("-node wants key=ip, got %q", v)
	}

	n[key] = ip

	return nil
}

// Options are the command line.
type Options struct {
	Talosconfig       string
	ReaderTalosconfig string
	Nodes             nodeList
	Schematic         string
	LegacyImage       string
	LifecycleImage    string
	PullImage         string
	Timeout           time.Duration
	Timing            bool
}

// Observation is one line of output.
type Observation struct {
	Case    string `json:"case"`
	Node    string `json:"node"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Value   any    `json:"value,omitempty"`
}

// Run holds what every case needs.
type Run struct {
	opts   Options
	admin  *client.Client
	reader *client.Client
	mu     sync.Mutex
	out    *json.Encoder
}

// ip is the address of a node key (checked at start: every key is there).
func (r *Run) ip(key string) string { return r.opts.Nodes[key] }

// on is a context addressed to one node with `node` metadata, as talosctl -n does.
func (r *Run) on(ctx context.Context, key string) context.Context {
	return client.WithNode(ctx, r.ip(key))
}

// emit prints one observation: the value, or the error's gRPC code and message.
func (r *Run) emit(name, key string, value any, err error) {
	o := Observation{Case: name, Node: key, Code: "OK", Value: value}
	if err != nil {
		o.Code, o.Message = statusOf(err)
		o.Value = nil
	}

	r.mu.Lock()
	defer r.mu.Unlock()

	if encErr := r.out.Encode(o); encErr != nil {
		fmt.Fprintln(os.Stderr, "talos-contract: writing an observation:", encErr)
	}
}

func parseFlags() (Options, error) {
	o := Options{Nodes: nodeList{}}
	flag.StringVar(&o.Talosconfig, "talosconfig", "", "talosconfig of an os:admin client (its endpoints are used)")
	flag.StringVar(&o.ReaderTalosconfig, "reader-talosconfig", "", "talosconfig of an os:reader client (optional)")
	flag.Var(o.Nodes, "node", "key=ip of a node the cases address (repeat)")
	flag.StringVar(&o.Schematic, "schematic", "", "schematic ID of the nodes' images (all but w113)")
	flag.StringVar(&o.LegacyImage, "legacy-image", "", "installer for the legacy Upgrade of w112")
	flag.StringVar(&o.LifecycleImage, "lifecycle-image", "", "installer for the LifecycleService.Upgrade of w114")
	flag.StringVar(&o.PullImage, "pull-image", "", "image w113 pulls twice (its name, then already present)")
	flag.DurationVar(&o.Timeout, "timeout", 30*time.Second, "the whole run")
	flag.BoolVar(&o.Timing, "timing", false, "print how long each group of cases took on stderr")
	flag.Parse()

	if o.Talosconfig == "" || o.LegacyImage == "" || o.LifecycleImage == "" || o.PullImage == "" {
		return o, fmt.Errorf("-talosconfig, -legacy-image, -lifecycle-image and -pull-image are required")
	}

	for _, k := range required {
		if o.Nodes[k] == "" {
			return o, fmt.Errorf("-node %s=<ip> is required", k)
		}
	}

	return o, nil
}

func connect(ctx context.Context, talosconfig string) (*client.Client, error) {
	if talosconfig == "" {
		return nil, nil
	}

	return client.New(ctx, client.WithConfigFromFile(talosconfig))
}

func main() {
	opts, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "talos-contract:", err)
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()

	r := &Run{opts: opts, out: json.NewEncoder(os.Stdout)}

	if r.admin, err = connect(ctx, opts.Talosconfig); err != nil {
		fmt.Fprintln(os.Stderr, "talos-contract: the admin client:", err)
		os.Exit(1)
	}
	defer r.admin.Close() //nolint:errcheck

	if r.reader, err = connect(ctx, opts.ReaderTalosconfig); err != nil {
		fmt.Fprintln(os.Stderr, "talos-contract: the reader client:", err)
		os.Exit(1)
	}

	if r.reader != nil {
		defer r.reader.Close() //nolint:errcheck
	}

	// Two phases: first every read (nothing reboots under them), then the cases that change nodes.
	// In a phase the groups run side by side, the cases of a group one after the other (they share a
	// node's state).
	phases := [][][]func(context.Context){
		{
			{r.versionCases, r.targetCases},
			{r.readCases, r.cosiTypeCases, r.cosiErrorCases, r.watchCases, r.resourceDefinitionCases},
			{r.pullCases, r.serviceCases, r.eventCases, r.namespaceCases, r.applyDryRunCases},
		},
		{
			{r.configWatchCases},
			{r.etcdCases},
			{r.legacyUpgradeCases},
			{r.busyUpgradeCases},
			{r.lifecycleUpgradeCases},
			{r.rebootModeCases},
		},
	}

	for _, groups := range phases {
		var wg sync.WaitGroup

		for _, g := range groups {
			wg.Go(func() {
				start := time.Now()

				for _, c := range g {
					c(ctx)
				}

				if opts.Timing {
					name := runtime.FuncForPC(reflect.ValueOf(g[0]).Pointer()).Name()
					fmt.Fprintf(os.Stderr, "talos-contract: %s and %d more in %s\n", name, len(g)-1, time.Since(start).Round(time.Millisecond))
				}
			})
		}

		wg.Wait()
	}

	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "talos-contract: the run timed out after", opts.Timeout)
		os.Exit(1)
	}
}
