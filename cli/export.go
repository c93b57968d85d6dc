package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/runnerbench/runner/export"
	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/scenario"
)

// exportList is --export (or --to): repeatable PROTOCOL=URL.
type exportList []export.Target

func (l *exportList) String() string {
	s := make([]string, len(*l))
	for i, t := range *l {
		s[i] = t.To + "=" + t.Shown()
	}
	return strings.Join(s, ",")
}

func (l *exportList) Set(v string) error {
	t, err := export.ParseTarget(v)
	if err != nil {
		return err
	}
	*l = append(*l, t)
	return nil
}

// registerExportFlags adds run's --export and --export-interval.
func (o *RunOptions) registerExportFlags(fs *flag.FlagSet) {
	fs.Var((*exportList)(&o.Export), "export", "send the run's figures, live and per level, to `PROTOCOL=URL`: prometheus-rw=http://host:9090/api/v1/write or otlp=http://host:4318 (repeatable)")
	fs.DurationVar(&o.ExportInterval, "export-interval", export.DefaultInterval, "how often a level's running figures are exported")
}

// exportOptions are the run's export targets: --export's and the plan's
// export blocks (whose credentials the plan loader held to --allow-env);
// nil when there are none.
func exportOptions(o *RunOptions, p *scenario.Plan) (*export.Options, error) {
	eo := &export.Options{Targets: append([]export.Target(nil), o.Export...), Interval: o.ExportInterval}
	for i, x := range p.Export {
		if x == nil {
			continue
		}
		t := export.Target{To: x.To, URL: x.URL, Headers: map[string]string{}}
		for k, v := range x.Headers {
			t.Headers[k] = v.Reveal()
		}
		if err := t.Check(); err != nil {
			return nil, exitcode.Errorf(exitcode.Invalid, "%s: export[%d]: %v", p.Path, i, err)
		}
		if d := x.Interval.D(); d > 0 && (eo.Interval == export.DefaultInterval || d < eo.Interval) {
			eo.Interval = d
		}
		eo.Targets = append(eo.Targets, t)
	}
	if len(eo.Targets) == 0 {
		return nil, nil
	}
	if eo.Interval < 100*time.Millisecond {
		return nil, exitcode.Errorf(exitcode.Invalid, "--export-interval: %s is below 100ms", eo.Interval)
	}
	return eo, nil
}

const exportSynopsis = `runner export DIR --to PROTOCOL=URL [flags]

Send a finished run's final points (every level's, recomputed from the
directory's records) to Prometheus remote write (prometheus-rw=URL) or
OpenTelemetry (otlp=URL), as a live run with --export sends them at each
level's end, with the same run_id; stamped with the time they are sent.`

// cmdExport implements "runner export DIR --to PROTOCOL=URL".
func cmdExport(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet("export")
	var to exportList
	fs.Var(&to, "to", "`PROTOCOL=URL` to send to: prometheus-rw=URL or otlp=URL (repeatable, at least one)")
	pos, err := parseArgs(env, fs, exportSynopsis, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitcode.Errorf(exitcode.Invalid, "export: expected one result directory, got %d", len(pos))
	}
	if len(to) == 0 {
		return exitcode.Errorf(exitcode.Invalid, "export: no --to PROTOCOL=URL given")
	}
	// The report from the records, as the live run computed it; a shard's
	// part is sent as its live run sent it.
	op, err := pipeline.Open(pos[0], pipeline.OpenOptions{Recompute: true, Records: true, Shard: true})
	if err != nil {
		return exitcode.Errorf(exitcode.Invalid, "export: %w", err)
	}
	rep := op.Report
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	failed := 0
	for _, st := range export.SendReport(ctx, export.Options{Targets: to}, rep) {
		fmt.Fprintf(env.Stdout, "%s %s: %d samples sent, %d dropped (run_id %s)\n", st.To, st.URL, st.Sent, st.Dropped, st.RunID)
		if st.Dropped > 0 || st.LastError != "" {
			failed++
			fmt.Fprintf(env.Stderr, "runner: export %s to %s: %s\n", st.To, st.URL, st.LastError)
		}
	}
	if failed > 0 {
		return exitcode.Errorf(exitcode.RunFailed, "export: %d of %d targets did not take every sample", failed, len(to))
	}
	return nil
}
