package engines

import (
	"context"
	"os"
	"path/filepath"
)

// promPackage is the Prometheus server's main package, required by the
// tools module.
const promPackage = "github.com/prometheus/prometheus/cmd/prometheus"

// BuildPrometheus builds the prometheus server from the tools module
// root/tools/engines (which pins its version) into the user's cache, as
// BuildInferenceSim does: minutes the first time, a fraction of a second
// after. A build that cannot reach the module proxy is an *UnavailableError.
func BuildPrometheus(ctx context.Context, root string) (string, error) {
	return buildTool(ctx, root, "prometheus", promPackage)
}

// StartPrometheus starts prometheus on a free loopback port with its
// storage in dir (a test's temporary directory), scraping nothing, with the
// remote-write and OTLP receivers on: /api/v1/write and /api/v1/otlp. The
// Engine's Origin is its API root (/api/v1/query).
func StartPrometheus(ctx context.Context, bin, dir string) (*Engine, error) {
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		return nil, err
	}
	args := []string{"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:PORT", "--web.enable-remote-write-receiver", "--web.enable-otlp-receiver",
		"--log.level=warn"}
	return startAt(ctx, "prometheus", "/-/ready", bin, nil, args)
}
