package engines

import (
	"context"
	"sync"
	"testing"
)

// Pool starts each named engine once per test binary, on first use, so tests
// share a server instead of paying its start-up each; Close stops them all
// (call it from TestMain after m.Run).
type Pool struct {
	mu sync.Mutex
	m  map[string]*pooled
}

type pooled struct {
	once sync.Once
	e    *Engine
	err  error
}

// Get returns the engine called name, starting it with start the first time
// (under TestContext: a build it needs has half the time the test binary
// has left). An engine that cannot be had ends t (see Unavailable); so does
// one that failed to start for an earlier test.
func (p *Pool) Get(t testing.TB, name string, start func(ctx context.Context) (*Engine, error)) *Engine {
	t.Helper()
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*pooled{}
	}
	e := p.m[name]
	if e == nil {
		e = &pooled{}
		p.m[name] = e
	}
	p.mu.Unlock()
	e.once.Do(func() {
		ctx, cancel := TestContext(t)
		defer cancel()
		e.e, e.err = start(ctx)
	})
	if e.err != nil {
		Unavailable(t, e.err)
	}
	return e.e
}

// Close stops every engine the pool started.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.m {
		if e.e != nil {
			e.e.Stop()
		}
	}
}
