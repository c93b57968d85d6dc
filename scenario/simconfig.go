package scenario

import (
	"fmt"
	"os"
	"reflect"

	"github.com/runnerbench/runner/scenario/planfs"
	"github.com/runnerbench/runner/sim/simconfig"
)

// LoadSimConfig reads a simulator configuration file (`runner sim --config`):
// the fields of a plan's simulator block, decoded by the plan's own strict
// decoder, so an unknown key or an invalid value is reported at its line and
// column, every problem at once (see Errors). Defaults are not applied: a
// zero field means "default" when the simulator starts. ${VAR} is not
// expanded in a simulator config.
func LoadSimConfig(path string) (simconfig.Config, error) {
	var cfg simconfig.Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, &Error{File: path, Msg: "cannot read simulator config: " + planfs.PathErr(err)}
	}
	probs := &problems{file: path}
	if len(data) > MaxPlanBytes {
		probs.add(pos{}, "simulator config is larger than %d MiB", MaxPlanBytes>>20)
		return cfg, probs.err()
	}
	if root := parseRoot(probs, data, "simulator config", "a mapping of simulator settings"); root != nil {
		noEnv := func(string) (string, bool) { return "", false }
		d := newDecoder(probs, noEnv)
		d.decode(root, reflect.ValueOf(&cfg).Elem(), "", 0)
		if len(probs.list) == 0 {
			v := &validator{probs: probs, at: d.at, dec: d}
			for _, p := range cfg.Defaults().Problems() {
				v.errf(p.Field, "%s", p.Error())
			}
		}
	}
	if err := probs.err(); err != nil {
		return simconfig.Config{}, fmt.Errorf("simulator config: %w", err)
	}
	return cfg, nil
}
