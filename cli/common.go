package cli

import (
	"flag"
	"slices"
	"strings"

	"github.com/runnerbench/runner/internal/exitcode"
	"github.com/runnerbench/runner/reporters"
)

// commonOpts holds the values of the common flags every subcommand accepts
// (addCommonFlags), so a script can pass the same ones to each, where a
// command does not define them itself: accepted, checked, and otherwise
// without effect (no log, no progress, or an output that is the command's
// answer, as version's and schema's are).
type commonOpts struct {
	LogFormat, LogLevel string
	NoProgress, Quiet   bool
}

// add registers on fs the common flags it lacks, bound to c (parseArgs
// does, for every command: what a command does not define it accepts and
// ignores).
func (c *commonOpts) add(fs *flag.FlagSet) {
	addCommonFlags(fs, &c.LogFormat, &c.LogLevel, &c.NoProgress, &c.Quiet, "info")
}

// addCommonFlags registers on fs each common flag it does not define yet
// (run, report, merge and validate define some with their own help),
// bound to the given variables, with level as --log-level's default.
func addCommonFlags(fs *flag.FlagSet, format, level *string, noProgress, quiet *bool, defLevel string) {
	def := func(name string, add func()) {
		if fs.Lookup(name) == nil {
			add()
		}
	}
	def("log-format", func() { fs.StringVar(format, "log-format", "text", "log `format`: text or json") })
	def("log-level", func() { fs.StringVar(level, "log-level", defLevel, "log `level`: debug, info, warn or error") })
	def("no-progress", func() {
		fs.BoolVar(noProgress, "no-progress", false, "no live progress display (accepted by every command)")
	})
	def("quiet", func() {
		fs.BoolVar(quiet, "quiet", false, "accepted by every command; here the output is the answer, and it is printed")
	})
}

// checkCommon refuses a --log-format or --log-level that is not one of the
// accepted values, naming the command and the flag.
func checkCommon(fs *flag.FlagSet) error {
	cmd := strings.TrimPrefix(fs.Name(), "runner ")
	format, level := fs.Lookup("log-format").Value.String(), fs.Lookup("log-level").Value.String()
	if !slices.Contains(LogFormats, format) {
		return exitcode.Errorf(exitcode.Invalid, "%s: --log-format: %q is not one of %s", cmd, format, strings.Join(LogFormats, ", "))
	}
	if !slices.Contains(LogLevels, level) {
		return exitcode.Errorf(exitcode.Invalid, "%s: --log-level: %q is not one of %s%s", cmd, level, strings.Join(LogLevels, ", "), suggest(level, LogLevels))
	}
	return nil
}

// registerWide registers --wide on a command that draws the terminal table.
func (o *RunOptions) registerWide(fs *flag.FlagSet) { registerWide(fs, &o.Wide) }

// registerWide registers --wide on any command that draws terminal tables
// (run, report, compare, board): one flag, one meaning.
func registerWide(fs *flag.FlagSet, wide *bool) {
	fs.BoolVar(wide, "wide", false, "draw the terminal table as wide as its content, not fitted to the terminal's width")
}

// tableWidth is the width the terminal table is fitted to: the terminal's,
// reporters.DefaultWidth when stdout is not a terminal (or its width is
// unknown), 0 (as wide as the content) with --wide.
func tableWidth(env *Env, o *RunOptions) int { return fitWidth(env, o.Wide) }

// fitWidth is the width every command's terminal tables are fitted to (see
// tableWidth).
func fitWidth(env *Env, wide bool) int {
	switch {
	case wide:
		return 0
	case env.StdoutIsTerminal && env.StdoutColumns > 0:
		return env.StdoutColumns
	}
	return reporters.DefaultWidth
}
