package export

import (
	"context"
	"time"

	"github.com/runnerbench/runner/result"
)

// SendReport sends a finished run's final points (every whole level's, from
// its report) to the targets, stamped now (a receiver such as Prometheus
// takes samples only near the present), and returns each target's account.
// The run id is the live run's (RunID of its plan hash and start).
func SendReport(ctx context.Context, o Options, rep *result.Report) []result.ExportStat {
	o.Plan, o.RunID, o.Labels = rep.Plan.Name, RunID(rep.Plan.Hash, rep.StartedAt), rep.Labels
	base := runLabels(o.Plan, o.RunID, o.Labels)
	b := &batch{at: time.Now(), start: rep.StartedAt}
	for _, st := range rep.Stages {
		for i := range st.Points {
			p := &st.Points[i]
			if p.Part() {
				continue
			}
			b.series = append(b.series, pointSeries(p, levelLabels(base, st.Name, p.Label(), st.Endpoint.Name))...)
		}
	}
	client := o.Client
	if client == nil {
		client = newClient()
	}
	out := make([]result.ExportStat, 0, len(o.Targets))
	for _, t := range o.Targets {
		s, err := newSender(t, client, o.Warn)
		if err != nil {
			out = append(out, result.ExportStat{To: t.To, URL: t.Shown(), RunID: o.RunID, LastError: err.Error()})
			continue
		}
		go s.run()
		s.enqueue(b)
		s.close(ctx)
		st := s.stat()
		st.RunID = o.RunID
		out = append(out, st)
	}
	return out
}
