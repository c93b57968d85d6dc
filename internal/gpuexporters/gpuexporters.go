// Package gpuexporters serves recorded GPU exporter pages over loopback for
// tests: NVIDIA's DCGM exporter and AMD's device metrics exporter (the pages
// in testdata/, each citing where its format comes from), with their energy
// counters advancing from the GPUs' power as a real exporter's do, so a test
// knows the energy a window truly used. There is no GPU here; these pages
// are the closest a test can get to one.
package gpuexporters

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed testdata/*.prom
var pages embed.FS

// Kind names an exporter.
type Kind string

// The exporters recorded.
const (
	DCGM Kind = "dcgm-exporter"
	AMD  Kind = "amd-device-metrics-exporter"
)

// Options change how the exporter behaves.
type Options struct {
	// Collect is how often the DCGM exporter refreshes its values (its -c
	// flag, 30 s by default): between two refreshes every read returns the
	// same numbers, the energy counter included. 0 means at every read
	// (as AMD's exporter, which reads amd-smi at each scrape).
	Collect time.Duration
	// BlankEnergy makes DCGM report the energy counter as DCGM's int64
	// blank (a GPU without the field), so energy must come from power.
	BlankEnergy bool
}

// Exporter is a running loopback exporter.
type Exporter struct {
	URL  string
	kind Kind
	opt  Options
	srv  *http.Server
	ln   net.Listener

	start time.Time
	lines []line
	power float64 // W, every GPU together
}

// line is one line of the page; energy lines carry their GPU's power and
// starting value.
type line struct {
	text    string
	prefix  string // up to and with the space before the value
	energy  bool
	power   float64 // W of the line's GPU (energy lines)
	initial float64 // the counter's value at start
}

// energyMetric and powerMetric are each exporter's names.
var (
	energyMetric = map[Kind]string{DCGM: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", AMD: "gpu_energy_consumed"}
	powerMetric  = map[Kind]string{DCGM: "DCGM_FI_DEV_POWER_USAGE", AMD: "gpu_package_power"}
	// energyUnit is the counter's unit in joules.
	energyUnit = map[Kind]float64{DCGM: 1e-3, AMD: 1e-6}
)

// Start serves kind's page on a free loopback port.
func Start(kind Kind, opt Options) (*Exporter, error) {
	data, err := pages.ReadFile("testdata/" + string(kind) + ".prom")
	if err != nil {
		return nil, fmt.Errorf("gpuexporters: no page for %q", kind)
	}
	e := &Exporter{kind: kind, opt: opt, start: time.Now()}
	powers := map[string]float64{} // by the line's labels
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		t := sc.Text()
		l := line{text: t}
		if i := strings.LastIndexByte(t, ' '); i > 0 && !strings.HasPrefix(t, "#") {
			name, labels, _ := strings.Cut(t[:i], "{")
			v, _ := strconv.ParseFloat(t[i+1:], 64)
			l.prefix = t[:i+1]
			switch name {
			case powerMetric[kind]:
				powers[labels] = v
				e.power += v
			case energyMetric[kind]:
				l.energy, l.initial = true, v
			}
		}
		e.lines = append(e.lines, l)
	}
	for i := range e.lines {
		if l := &e.lines[i]; l.energy {
			_, labels, _ := strings.Cut(strings.TrimSuffix(l.prefix, " "), "{")
			l.power = powers[labels]
		}
	}
	e.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e.URL = "http://" + e.ln.Addr().String() + "/metrics"
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", e.serve)
	e.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = e.srv.Serve(e.ln) }()
	return e, nil
}

// Close stops the server.
func (e *Exporter) Close() { _ = e.srv.Close() }

// PowerW is every GPU's power together: what the page reports.
func (e *Exporter) PowerW() float64 { return e.power }

// EnergyJ is the energy every GPU truly used between a and b (J): their
// constant power over the interval.
func (e *Exporter) EnergyJ(a, b time.Time) float64 { return e.power * b.Sub(a).Seconds() }

func (e *Exporter) serve(w http.ResponseWriter, _ *http.Request) {
	// The values the exporter last collected: a refresh every Collect.
	at := time.Since(e.start)
	if c := e.opt.Collect; c > 0 {
		at = at.Truncate(c)
	}
	var b bytes.Buffer
	for _, l := range e.lines {
		if !l.energy {
			b.WriteString(l.text)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(l.prefix)
		switch {
		case e.kind == DCGM && e.opt.BlankEnergy:
			b.WriteString("9223372036854775794")
		case e.kind == DCGM:
			// DCGM counts whole millijoules.
			v := math.Floor(l.initial + l.power*at.Seconds()/energyUnit[e.kind])
			b.WriteString(strconv.FormatFloat(v, 'f', 0, 64))
		default:
			v := l.initial + l.power*at.Seconds()/energyUnit[e.kind]
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}
