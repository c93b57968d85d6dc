package export

import (
	"math"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// encodeOTLP turns a batch into the body of an OTLP/HTTP export request
// (ExportMetricsServiceRequest). The request message is a single repeated
// field of ResourceMetrics, written here with protowire, so the collector
// package (and the gRPC stack it imports) stays out of the binary.
func encodeOTLP(b *batch) ([]byte, error) {
	rm := &metricspb.ResourceMetrics{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "runner")}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{
			Scope:   &commonpb.InstrumentationScope{Name: "github.com/runnerbench/runner/export"},
			Metrics: otlpMetrics(b),
		}},
	}
	inner, err := proto.Marshal(rm)
	if err != nil {
		return nil, err
	}
	out := protowire.AppendTag(nil, 1, protowire.BytesType) // resource_metrics = 1
	return protowire.AppendBytes(out, inner), nil
}

func otlpMetrics(b *batch) []*metricspb.Metric {
	at, start := uint64(b.at.UnixNano()), uint64(b.start.UnixNano())
	if b.start.IsZero() || start > at {
		start = at
	}
	out := make([]*metricspb.Metric, 0, len(b.series))
	for i := range b.series {
		s := &b.series[i]
		if !inOTLP(s.name) {
			continue
		}
		m := &metricspb.Metric{Name: s.name.OTel(), Unit: s.name.unit.otel}
		attrs := attributes(s.labels)
		switch s.name.typ {
		case gauge:
			m.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{
				{Attributes: attrs, TimeUnixNano: at, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: s.value}}}}}
		case counter:
			m.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, IsMonotonic: true,
				DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at,
					Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: s.value}}}}}
		case summary:
			dp := &metricspb.SummaryDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at, Count: s.count, Sum: s.sum}
			for j, q := range quantiles {
				if !math.IsNaN(s.qs[j]) {
					dp.QuantileValues = append(dp.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: q, Value: s.qs[j]})
				}
			}
			m.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: []*metricspb.SummaryDataPoint{dp}}}
		case histo:
			dp := &metricspb.HistogramDataPoint{Attributes: attrs, StartTimeUnixNano: start, TimeUnixNano: at,
				Count: s.count, Sum: &s.sum, BucketCounts: s.counts, ExplicitBounds: s.bounds}
			if s.minMax {
				dp.Min, dp.Max = &s.min, &s.max
			}
			m.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE,
				DataPoints:             []*metricspb.HistogramDataPoint{dp}}}
		}
		out = append(out, m)
	}
	return out
}

func attributes(labels []label) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, len(labels))
	for i, l := range labels {
		out[i] = str(l.k, l.v)
	}
	return out
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// inOTLP says whether OTLP carries n: not the live latency summaries,
// which the semantic conventions' histograms carry there.
func inOTLP(n name) bool { return n != liveTTFT && n != liveITL && n != liveE2E }

// otlpSamples counts what encodeOTLP sends of s.
func otlpSamples(s *series) int {
	if !inOTLP(s.name) {
		return 0
	}
	switch s.name.typ {
	case summary:
		n := 2
		for _, q := range s.qs {
			if !math.IsNaN(q) {
				n++
			}
		}
		return n
	case histo:
		return len(s.counts) + 2
	}
	return 1
}
