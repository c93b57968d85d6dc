package host

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestRaiseFileLimitDecisions(t *testing.T) {
	tests := []struct {
		name      string
		need      int
		cur, max  uint64
		wantSet   uint64 // 0 = no call
		wantErr   bool
		errDetail []string
	}{
		{"enough already", 1000, 65536, 65536, 0, false, nil},
		{"raise to need plus margin", 10000, 1024, 1 << 20, 10000 + fileMargin, false, nil},
		{"raise capped at hard", 10000, 1024, 10200, 10200, false, nil},
		{"hard too low", 10000, 1024, 4096, 4096, true, []string{"10000", "4096"}},
		{"hard too low, soft at hard", 10000, 4096, 4096, 0, true, []string{"needs about 10256", "hard limit is 4096"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := syscall.Rlimit{Cur: tt.cur, Max: tt.max}
			var set uint64
			err := raiseFileLimit(tt.need, &lim, func(l *syscall.Rlimit) error {
				if l.Max != tt.max {
					t.Errorf("hard limit changed to %d", l.Max)
				}
				set = l.Cur
				return nil
			})
			if set != tt.wantSet {
				t.Errorf("soft limit set to %d, want %d", set, tt.wantSet)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrFileLimit) {
					t.Errorf("error %v does not wrap ErrFileLimit", err)
				}
				for _, s := range tt.errDetail {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
			}
		})
	}
}

func TestRaiseFileLimitSetterError(t *testing.T) {
	lim := syscall.Rlimit{Cur: 1024, Max: 1 << 20}
	boom := errors.New("boom")
	err := raiseFileLimit(5000, &lim, func(*syscall.Rlimit) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the setter's error wrapped", err)
	}
}

// TestRaiseFileLimitProcess raises this process's own soft limit (never
// above the hard limit) and checks the kernel now reports it.
func TestRaiseFileLimitProcess(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	need := int(min(lim.Max, 1<<16)) - fileMargin
	if need <= 0 {
		t.Skip("hard limit too small to test")
	}
	if err := RaiseFileLimit(need); err != nil {
		t.Fatal(err)
	}
	var now syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur < uint64(need)+fileMargin && now.Cur != lim.Max {
		t.Fatalf("soft limit %d after RaiseFileLimit(%d) (hard %d)", now.Cur, need, lim.Max)
	}
	if err := RaiseFileLimit(int(lim.Max) + 1_000_000); !errors.Is(err, ErrFileLimit) {
		t.Fatalf("need above the hard limit: got %v", err)
	}
}
