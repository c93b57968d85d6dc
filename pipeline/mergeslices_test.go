package pipeline

import (
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

// TestMergeITLSlices: the shards' gaps by slice land on the merged window's
// slices: a shard whose window opened 2 s after the first's puts its slice 0
// in the merged slice 2; a skipped shard adds nothing; an unsliced level
// has none.
func TestMergeITLSlices(t *testing.T) {
	spec := result.LevelSpec{Label: "c=2", Concurrency: 2, SliceNs: int64(time.Second)}
	gaps := func(n int) result.ITL {
		var g result.ITL
		for range n {
			g.Add(time.Millisecond)
		}
		return g
	}
	a := &result.LevelRecord{Spec: spec, Start: t0, End: t0.Add(4 * time.Second), ITLSlices: []result.ITL{gaps(1), gaps(2), gaps(3)}}
	b := &result.LevelRecord{Spec: spec, Start: t0.Add(2*time.Second + 3*time.Millisecond), End: t0.Add(5 * time.Second), ITLSlices: []result.ITL{gaps(10), gaps(20)}}
	skipped := &result.LevelRecord{Spec: spec, Skipped: true, ITLSlices: []result.ITL{gaps(100)}}
	m := mergeLevel([]*result.LevelRecord{a, b, skipped})
	var got []int64
	for _, s := range m.ITLSlices {
		got = append(got, s.Count)
	}
	if want := []int64{1, 2, 13, 20}; len(got) != len(want) || got[0] != 1 || got[1] != 2 || got[2] != 13 || got[3] != 20 {
		t.Fatalf("merged slices hold %v gaps, want %v", got, want)
	}
	spec.SliceNs = 0
	a.Spec, b.Spec = spec, spec
	if m := mergeLevel([]*result.LevelRecord{a, b}); m.ITLSlices != nil {
		t.Fatalf("an unsliced level merged slices: %v", m.ITLSlices)
	}
}
