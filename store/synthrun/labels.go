package synthrun

import (
	"github.com/runnerbench/runner/records"
	"github.com/runnerbench/runner/result"
)

// setLabels puts the run's labels in its header.
func setLabels(h *records.Header, l map[string]string) {
	if len(l) > 0 {
		h.Labels = result.Labels(l)
	}
	h.Host = "synthetic-host"
}
