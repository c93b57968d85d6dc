package export

import (
	"context"
	"math"
	"net/http"
	"sort"
	"strconv"
	"time"

	remote "github.com/prometheus/client_golang/exp/api/remote"
	writev2 "github.com/prometheus/client_golang/exp/api/remote/genproto/v2"
)

// remoteWrite sends Prometheus remote-write 2.0 requests with the
// Prometheus authors' client (snappy, the protocol's headers, its one retry
// on a 5xx); Prometheus's receiver accepts 2.0 by default.
type remoteWrite struct{ api *remote.API }

func newRemoteWrite(t Target, client *http.Client) (*remoteWrite, error) {
	c := *client
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = headerTransport{base: base, headers: t.Headers}
	api, err := remote.NewAPI(t.URL,
		remote.WithAPIHTTPClient(&c), remote.WithAPIPath(""), remote.WithAPINoRetryOnRateLimit(),
		remote.WithAPIBackoff(remote.BackoffConfig{Min: 20 * time.Millisecond, Max: 50 * time.Millisecond, MaxRetries: 1}))
	if err != nil {
		return nil, err
	}
	return &remoteWrite{api: api}, nil
}

func (w *remoteWrite) post(ctx context.Context, b *batch) error {
	req := encodeRemoteWrite(b)
	if len(req.Timeseries) == 0 {
		return nil
	}
	_, err := w.api.Write(ctx, remote.WriteV2MessageType, req)
	return err
}

// encodeRemoteWrite turns a batch into a remote-write 2.0 request: one
// series per gauge or counter, a summary as its quantiles, _sum and _count.
// Histograms (the semantic conventions', for OTLP) are not sent here.
func encodeRemoteWrite(b *batch) *writev2.Request {
	st := writev2.NewSymbolTable()
	ts := b.at.UnixMilli()
	var out []*writev2.TimeSeries
	add := func(n string, labels []label, extra []label, v float64, typ writev2.Metadata_MetricType, unit string) {
		if math.IsNaN(v) {
			return
		}
		ls := make([]string, 0, 2*(len(labels)+len(extra)+1))
		all := append(append([]label{{"__name__", n}}, labels...), extra...)
		sort.Slice(all, func(i, j int) bool { return all[i].k < all[j].k })
		for _, l := range all {
			ls = append(ls, l.k, l.v)
		}
		out = append(out, &writev2.TimeSeries{
			LabelsRefs: st.SymbolizeLabels(ls, nil),
			Samples:    []*writev2.Sample{{Value: v, Timestamp: ts}},
			Metadata:   &writev2.Metadata{Type: typ, UnitRef: st.Symbolize(unit)},
		})
	}
	for i := range b.series {
		s := &b.series[i]
		n, unit := s.name.Prom(), promUnit(s.name.unit)
		switch s.name.typ {
		case gauge:
			add(n, s.labels, nil, s.value, writev2.Metadata_METRIC_TYPE_GAUGE, unit)
		case counter:
			add(n, s.labels, nil, s.value, writev2.Metadata_METRIC_TYPE_COUNTER, unit)
		case summary:
			for j, q := range quantiles {
				add(n, s.labels, []label{{"quantile", strconv.FormatFloat(q, 'f', -1, 64)}}, s.qs[j], writev2.Metadata_METRIC_TYPE_SUMMARY, unit)
			}
			add(n+"_sum", s.labels, nil, s.sum, writev2.Metadata_METRIC_TYPE_SUMMARY, unit)
			add(n+"_count", s.labels, nil, float64(s.count), writev2.Metadata_METRIC_TYPE_SUMMARY, unit)
		}
	}
	return &writev2.Request{Symbols: st.Symbols(), Timeseries: out}
}

// promUnit is the unit remote write's metadata names.
func promUnit(u unit) string {
	switch u {
	case uSeconds:
		return "seconds"
	case uRatio:
		return "ratio"
	}
	return ""
}

// promSamples counts what encodeRemoteWrite sends of s.
func promSamples(s *series) int {
	switch s.name.typ {
	case histo:
		return 0
	case summary:
		n := 2
		for _, q := range s.qs {
			if !math.IsNaN(q) {
				n++
			}
		}
		return n
	}
	return 1
}
