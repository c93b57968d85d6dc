// Command runner benchmarks OpenAI-compatible LLM serving endpoints from
// declarative YAML plans and gates CI on the checks they declare. Everything
// is in package cli; main only hands it the process and exits with its code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/runnerbench/runner/cli"
)

func main() {
	// The first Ctrl-C cancels ctx: the run stops, marks itself interrupted and
	// still writes its reports. stop() restores the default handler, so a
	// second Ctrl-C kills the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cols, _, err := term.GetSize(int(os.Stdout.Fd()))
	if err != nil {
		cols = 0 // not a terminal: the table is fitted to reporters.DefaultWidth
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, &cli.Env{
		Args:             os.Args[1:],
		Stdin:            os.Stdin,
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		Getenv:           os.LookupEnv,
		StdoutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		StderrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		StdoutColumns:    cols,
	})
	stop()
	os.Exit(code)
}
