package runner

import (
	"strings"
	"sync"
	"testing"

	"github.com/runnerbench/runner/protocol"
)

// TestServedCheckDecidesOnce: the first answer that shows anything decides
// the stage: a success makes a later 404 that request's failure only; a
// not-served answer before any success stops the stage (every request
// after it says so) with one error naming the API and what came back; an
// answer that shows nothing decides nothing; an API without the rule never
// stops its stage.
func TestServedCheckDecidesOnce(t *testing.T) {
	api := func(name string) protocol.Protocol {
		p, ok := protocol.Lookup(name)
		if !ok {
			t.Fatalf("no api %s", name)
		}
		return p
	}
	const why = "POST http://h/v1/embeddings answered http 404 (nope)"

	c := newServedCheck(api("embeddings"))
	if c.judge(false, "", "") || c.Err() != nil {
		t.Fatal("a failure that shows nothing decided the stage")
	}
	if c.judge(true, "", "") || c.judge(false, why, "") || c.Err() != nil {
		t.Fatal("a 404 after a success stopped the stage")
	}

	c = newServedCheck(api("embeddings"))
	if !c.judge(false, why, "") {
		t.Fatal("a 404 before any success did not stop the stage")
	}
	if !c.judge(true, "", "") || !c.judge(false, "", "") {
		t.Fatal("a request after the decision did not see it")
	}
	if err := c.Err(); err == nil || !strings.HasPrefix(err.Error(), "api embeddings: "+why+": the endpoint does not serve the embeddings API") {
		t.Fatalf("err %v", err)
	}

	c = newServedCheck(api("chat"))
	if c.judge(false, why, "") || c.Err() != nil {
		t.Fatal("chat's stage stopped: it has no not-served rule")
	}
}

// TestServedCheckConcurrent: requests judged at once agree on one decision
// and one error.
func TestServedCheckConcurrent(t *testing.T) {
	p, _ := protocol.Lookup("rerank")
	c := newServedCheck(p)
	var wg sync.WaitGroup
	stops := make([]bool, 64)
	for i := range stops {
		wg.Go(func() { stops[i] = c.judge(false, "answer "+string(rune('a'+i%26)), "") })
	}
	wg.Wait()
	for i, s := range stops {
		if !s {
			t.Fatalf("request %d did not stop the stage", i)
		}
	}
	if c.Err() == nil {
		t.Fatal("no error")
	}
}
