package scenario

import (
	"os"
	"strings"
	"testing"

	"github.com/runnerbench/runner/protocol"
)

// TestAPIsAreTheRegistry: the plan's api values are the protocol registry's,
// in its order, and docs/plans.md's plan reference lists the same values (the
// one copy of that list kept by hand).
func TestAPIsAreTheRegistry(t *testing.T) {
	names := protocol.Names()
	if len(APIs) != len(names) {
		t.Fatalf("APIs %v, registry %v", APIs, names)
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		if string(APIs[i]) != n {
			t.Errorf("APIs[%d] = %s, registry has %s", i, APIs[i], n)
		}
		quoted[i] = "`" + n + "`"
	}
	if _, ok := protocol.Lookup(string(DefaultAPI)); !ok {
		t.Errorf("default api %s is not registered", DefaultAPI)
	}
	b, err := os.ReadFile("../docs/plans.md")
	if err != nil {
		t.Fatal(err)
	}
	if row := "| `api` | " + strings.Join(quoted, ` \| `) + " |"; !strings.Contains(string(b), row) {
		t.Errorf("docs/plans.md has no row %q", row)
	}
}
