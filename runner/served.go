package runner

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/runnerbench/runner/protocol"
)

// servedCheck is a stage's rule for an endpoint that does not serve its API
// (an API with protocol.NotServedStops): an answer that says so (a 404, 405
// or 501 at the API's path, an event stream of another API or where a JSON
// answer was due, another API's JSON answer) before any request of the
// stage succeeded stops the stage with one clear error, instead of a level
// of failed requests. Once a request has succeeded, a 404 is that
// request's failure only.
//
// It is decided once per stage, by the first answer that shows either; a
// request after that only reads the decision. An API without the rule is
// decided (served) from the start.
type servedCheck struct {
	api   protocol.Protocol
	state atomic.Int32 // undecided, served or notServed
	err   atomic.Pointer[error]
}

const (
	undecided int32 = iota
	served
	notServed
)

func newServedCheck(api protocol.Protocol) *servedCheck {
	c := &servedCheck{api: api}
	if _, stops := api.(protocol.NotServedStops); !stops {
		c.state.Store(served)
	}
	return c
}

// judge decides, while the stage is undecided, by one request's answer: ok
// (it succeeded), why (the wire's NotServed: "" when the answer showed
// nothing of it) and noModel (the wire's NoModel: the server said it does
// not serve the endpoint's model, which stops the stage as well, with that
// said instead). It reports whether the stage must stop, because the
// endpoint does not serve its API or its model.
func (c *servedCheck) judge(ok bool, why, noModel string) bool {
	switch s := c.state.Load(); {
	case s != undecided:
		return s == notServed
	case ok:
		c.state.CompareAndSwap(undecided, served)
		return false
	case why == "" && noModel == "":
		return false
	}
	err := fmt.Errorf("api %s: %s: the endpoint does not serve the %s API at this path (is base_url right, and does the server implement it?)",
		c.api.Name(), why, c.api.Name())
	if noModel != "" {
		err = errors.New(noModel)
	}
	c.err.CompareAndSwap(nil, &err) // the first such answer names the error
	c.state.CompareAndSwap(undecided, notServed)
	return c.state.Load() == notServed
}

// Err is the stage's error when the endpoint does not serve its API.
func (c *servedCheck) Err() error {
	if c.state.Load() != notServed {
		return nil
	}
	return *c.err.Load()
}
