package reporters

import (
	"fmt"
	"strings"

	"github.com/runnerbench/runner/checks"
	"github.com/runnerbench/runner/result"
)

// noteKind is what a stage note says.
type noteKind int

const (
	noteStageError   noteKind = iota // the stage could not run (or stopped early)
	noteFailure                      // a level's first failure
	noteHint                         // what the failure before it probably means
	noteWarning                      // a level's warning
	noteInfo                         // a level's note
	noteStageWarning                 // the stage's warning
	noteStop                         // why a level of a stage with until: stopped, or why its sweep did
)

// stageNote is one line of what a reader must know before trusting a
// stage's numbers; the terminal table and the Markdown summary each draw the
// same list (stageNotes) in their own way.
type stageNote struct {
	kind  noteKind
	label string // the level's label (level notes)
	what  string // failures: "first failure" or "every request failed; first"
	text  string // one line, except a hint
}

// stageNotes lists the stage's error, each level's first failure (with its
// hint), warnings and notes, then the stage's warnings. A warning or note
// that several levels carry word for word (how server latencies are read,
// under each of a search's probes) is listed once, where it first comes,
// with the levels it is on.
func stageNotes(st *result.Stage) []stageNote {
	var out []stageNote
	if st.Error != "" {
		out = append(out, stageNote{kind: noteStageError, text: oneLine(st.Error)})
	}
	on := levelsOf(st)
	said := map[string]bool{}
	for i := range st.Points {
		p := &st.Points[i]
		if p.Error != nil {
			what := "first failure"
			if checks.AllFailed(p) {
				what = "every request failed; first"
			}
			out = append(out, stageNote{kind: noteFailure, label: p.Label(), what: what, text: oneLine(*p.Error)})
			if hint := checks.FailureHint(st, p); hint != "" {
				out = append(out, stageNote{kind: noteHint, text: hint})
			}
		}
		for _, n := range append(notesOf(p.Warnings, noteWarning), notesOf(p.Notes, noteInfo)...) {
			if said[n.text] {
				continue
			}
			said[n.text] = true
			n.label = levelsLabel(on[n.text], len(st.Points))
			out = append(out, n)
		}
	}
	for _, w := range st.Warnings {
		out = append(out, stageNote{kind: noteStageWarning, text: oneLine(w)})
	}
	for _, n := range st.StopNotes() {
		out = append(out, stageNote{kind: noteStop, label: n.Label, text: oneLine(n.Text)})
	}
	return out
}

// stopLine is a stop note as a line of text: "c=8: decided at …", or the
// sweep's own.
func stopLine(n stageNote) string {
	if n.label == "" {
		return n.text
	}
	return n.label + ": " + n.text
}

// writeMDNotes writes the stage's notes (stageNotes) as a list.
func writeMDNotes(ew *errWriter, st *result.Stage) {
	notes := stageNotes(st)
	for _, n := range notes {
		switch n.kind {
		case noteStageError:
			ew.printf("- ❌ stage error: %s\n", mdText(n.text))
		case noteFailure:
			ew.printf("- ❌ %s: %s: %s\n", mdText(n.label), n.what, mdText(n.text))
		case noteHint:
			ew.printf("  %s\n", mdText(n.text))
		case noteWarning:
			ew.printf("- ⚠️ %s: %s\n", mdText(n.label), mdText(n.text))
		case noteInfo:
			ew.printf("- %s: %s\n", mdText(n.label), mdText(n.text))
		case noteStageWarning:
			ew.printf("- ⚠️ %s\n", mdText(n.text))
		case noteStop:
			ew.printf("- ⏹️ %s\n", mdText(stopLine(n)))
		}
	}
	if len(notes) > 0 {
		ew.printf("\n")
	}
}

// notesOf is a level's warnings or notes, as notes of kind k.
func notesOf(texts []string, k noteKind) []stageNote {
	out := make([]stageNote, len(texts))
	for i, t := range texts {
		out[i] = stageNote{kind: k, text: oneLine(t)}
	}
	return out
}

// levelsOf maps each warning's and note's text to the labels of the levels
// that carry it, in order.
func levelsOf(st *result.Stage) map[string][]string {
	on := map[string][]string{}
	for i := range st.Points {
		p := &st.Points[i]
		seen := map[string]bool{}
		for _, t := range append(append([]string(nil), p.Warnings...), p.Notes...) {
			if t = oneLine(t); !seen[t] {
				seen[t] = true
				on[t] = append(on[t], p.Label())
			}
		}
	}
	return on
}

// levelsLabel names the levels a note is on: its level, "every level", a
// few levels by name, or how many.
func levelsLabel(labels []string, levels int) string {
	switch {
	case len(labels) == 1:
		return labels[0]
	case len(labels) == levels:
		return "every level"
	case len(labels) <= 3:
		return strings.Join(labels, ", ")
	}
	return fmt.Sprintf("%s and %d more levels", labels[0], len(labels)-1)
}
