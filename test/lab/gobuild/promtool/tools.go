//go:build tools

// Pins Prometheus for the lab: build-alerting.sh builds its cmd/promtool from this module.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
