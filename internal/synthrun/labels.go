package synthrun

import "github.com/runnerbench/runner/records"

// setLabels puts the run's labels in its header.
func setLabels(h *records.Header, l map[string]string) {}
