//go:build tools

// Pins Alertmanager for the lab: build-alerting.sh builds its cmd/alertmanager from this module.
package tools

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
