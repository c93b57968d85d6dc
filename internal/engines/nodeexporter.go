package engines

import "context"

// nodeExporterPackage is the Prometheus node exporter's main package,
// required by the tools module.
const nodeExporterPackage = "github.com/prometheus/node_exporter"

// BuildNodeExporter builds the Prometheus node exporter from the tools
// module root/tools/engines (which pins its version) into the user's cache,
// as BuildInferenceSim does. A build that cannot reach the module proxy is
// an *UnavailableError.
func BuildNodeExporter(ctx context.Context, root string) (string, error) {
	return buildTool(ctx, root, "node_exporter", nodeExporterPackage)
}

// StartNodeExporter starts the node exporter on a free loopback port with
// the collectors a telemetry target reads (CPU, load, memory, network); its
// page is at Origin + "/metrics".
func StartNodeExporter(ctx context.Context, bin string) (*Engine, error) {
	args := []string{"--web.listen-address=127.0.0.1:PORT", "--collector.disable-defaults",
		"--collector.cpu", "--collector.loadavg", "--collector.meminfo", "--collector.netdev", "--log.level=warn"}
	return startAt(ctx, "node_exporter", "/metrics", bin, nil, args)
}
