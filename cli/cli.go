// Package cli is the runner command line: it parses arguments, dispatches to a
// subcommand, and turns the error a subcommand returns into one exit code and
// one clear line per problem on stderr. All process state (arguments, streams,
// environment, whether stdout is a terminal) comes in through Env, so the whole
// CLI runs inside tests; cmd/runner only builds an Env and exits.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/runnerbench/runner/internal/exitcode"
	suggestpkg "github.com/runnerbench/runner/internal/suggest"
	"github.com/runnerbench/runner/scenario"
)

// Env is everything the CLI needs from the process.
type Env struct {
	// Args are the command-line arguments without the program name.
	Args []string
	// Stdin, Stdout and Stderr are the process streams.
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv looks up an environment variable (os.LookupEnv in the process).
	Getenv func(string) (string, bool)
	// StdoutIsTerminal and StderrIsTerminal say whether the streams are
	// terminals, for colour and live progress.
	StdoutIsTerminal bool
	StderrIsTerminal bool
	// StdoutColumns is the terminal's width when stdout is one (0: not a
	// terminal, or unknown); the table is fitted to it.
	StdoutColumns int
}

// lookup returns an environment variable's value ("" when unset).
func (e *Env) lookup(name string) string {
	if e.Getenv == nil {
		return ""
	}
	v, _ := e.Getenv(name)
	return v
}

// errHelp is returned by a subcommand that printed its help: exit 0.
var errHelp = errors.New("help requested")

const usage = `runner benchmarks OpenAI-compatible LLM serving endpoints from YAML plans
and gates CI on the checks they declare.

usage:
  runner PLAN.yaml [flags]          run every stage (same as "runner run PLAN.yaml")
  runner run PLAN.yaml [flags]      run every stage
  runner validate PLAN.yaml...      check plans and their expressions; sends no traffic
  runner schema [plan|report]       print a JSON Schema
  runner sim [flags]                serve the built-in simulator on a loopback port
  runner compare BASE NEW           each metric's change between two runs, with its interval and verdict
  runner report DIR                 recompute a result directory's reports from its records
  runner merge SHARD_DIR... --out DIR  one result directory from a sharded run's shards
  runner export DIR --to PROTO=URL  send a finished run's final points to Prometheus or OTLP
  runner board DIR...               many runs side by side: leaderboards and Pareto frontiers
  runner publish DIR... --db DSN    write runs into a results database (SQLite or PostgreSQL)
  runner history --db DSN --plan P  each metric over time, with the runs where it changed
  runner version                    print the version

"runner COMMAND --help" describes a command's flags.

A plan reads only the environment variables and files the job allows:
--allow-env NAME[@HOST] (or RUNNER_ALLOW_ENV) and --allow-dir DIR; see docs/security.md.

exit codes: 0 every check passed, 1 a check failed, 2 invalid plan or command line,
3 the run could not be carried out, 4 internal error, 130 interrupted.
`

// commands maps subcommand names to their implementations.
var commands = map[string]func(ctx context.Context, env *Env, args []string) error{
	"run":      cmdRun,
	"validate": cmdValidate,
	"schema":   cmdSchema,
	"sim":      cmdSim,
	"compare":  cmdCompare,
	"report":   cmdReport,
	"merge":    cmdMerge,
	"export":   cmdExport,
	"board":    cmdBoard,
	"publish":  cmdPublish,
	"history":  cmdHistory,
	"version":  cmdVersion,
}

// Run runs the command line in env and returns the process exit code. It never
// panics: a panic is recovered, reported in one line and gets exit code 4.
func Run(ctx context.Context, env *Env) (code int) {
	if env == nil {
		env = &Env{}
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	if env.Getenv == nil {
		env.Getenv = func(string) (string, bool) { return "", false }
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(env.Stderr, "runner: internal error: %v (this is a bug; set RUNNER_TRACEBACK=1 for details)\n", r)
			if env.lookup("RUNNER_TRACEBACK") != "" {
				env.Stderr.Write(debug.Stack())
			}
			code = int(exitcode.Panic)
		}
	}()
	err := dispatch(ctx, env, env.Args)
	return report(ctx, env, err)
}

func dispatch(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return exitcode.Errorf(exitcode.Invalid, "no plan given: run \"runner PLAN.yaml\"")
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(args) > 1 && commands[args[1]] != nil {
			return commands[args[1]](ctx, env, []string{"--help"})
		}
		fmt.Fprint(env.Stdout, usage)
		return nil
	case "-version", "--version":
		return cmdVersion(ctx, env, nil)
	}
	if cmd := commands[name]; cmd != nil {
		return cmd(ctx, env, args[1:])
	}
	// "runner PLAN.yaml": anything that is a flag or looks like a file runs it.
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator) {
		return cmdRun(ctx, env, args)
	}
	if _, err := os.Stat(name); err == nil {
		return cmdRun(ctx, env, args)
	}
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	return exitcode.Errorf(exitcode.Invalid, "unknown command or plan file %q%s (see runner --help)", name, suggest(name, names))
}

// report prints err and returns the exit code it carries. Plan errors are
// printed one per line as file:line:col: message, so editors and CI annotate
// them; anything else gets a "runner: " prefix.
func report(ctx context.Context, env *Env, err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return int(exitcode.OK)
	}
	code := exitcode.Of(err)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) && code == exitcode.RunFailed {
		code = exitcode.Interrupted
	}
	if errs := scenario.Errors(err); len(errs) > 0 {
		for _, e := range errs {
			fmt.Fprintln(env.Stderr, e.Error())
		}
		if n := len(errs); n > 1 {
			fmt.Fprintf(env.Stderr, "runner: %d problems\n", n)
		}
		if code == exitcode.RunFailed {
			code = exitcode.Invalid // a plan error that lost its code is still a plan error
		}
		return int(code)
	}
	if code != exitcode.ChecksFailed || err.Error() != "" {
		for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
			fmt.Fprintln(env.Stderr, "runner: "+line)
		}
	}
	return int(code)
}

// newFlagSet makes a subcommand's flag set: errors come back as values (no
// printing, no os.Exit), and help is printed by parseArgs.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("runner "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags that may come before, between or after the
// positional arguments ("runner plan.yaml --out x"); everything after "--" is
// positional. It prints help to stdout for -h/--help and returns errHelp.
func parseArgs(env *Env, fs *flag.FlagSet, synopsis string, args []string) ([]string, error) {
	new(commonOpts).add(fs) // the common flags a command does not define itself
	var pos, tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(env.Stdout, fs, synopsis)
				return nil, errHelp
			}
			return nil, exitcode.Errorf(exitcode.Invalid, "%s: %v (see %s --help)", strings.TrimPrefix(fs.Name(), "runner "), err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := checkCommon(fs); err != nil {
		return nil, err
	}
	return append(pos, tail...), nil
}

func printHelp(w io.Writer, fs *flag.FlagSet, synopsis string) {
	fmt.Fprintf(w, "usage: %s\n", synopsis)
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// suggest returns ` (did you mean "x"?)` for a near miss among names.
func suggest(s string, names []string) string { return suggestpkg.Hint(s, names) }
