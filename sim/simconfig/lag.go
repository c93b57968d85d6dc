package simconfig

// Names of the simulator's counters of how far it fell behind its own
// timing model, as its /metrics serves them (with `_total`), for the client
// that reads them over a measured window (runner/servermetrics, aggregate).
const (
	// MetricSteps counts the engine's scheduler steps.
	MetricSteps = "runner_sim_steps"
	// MetricLateSteps counts the steps that ended more than 1 ms after the
	// model planned (sim.LateStep).
	MetricLateSteps = "runner_sim_late_steps"
	// MetricStepLateness is the late steps' lateness in all, in seconds.
	MetricStepLateness = "runner_sim_step_lateness_seconds"
	// MetricLagRatio is a histogram of completed requests by how much the
	// simulator's lateness stretched them against the model: the larger of
	// their time to first token's and their decode's lag over what the model
	// gave that part (0 for a lag of at most 1 ms, sim.BehindFloor). Its
	// count is the requests timed; its bounds are LagRatioBounds.
	MetricLagRatio = "runner_sim_request_lag_ratio"
	// MetricTTFTLagRatio, MetricDecodeLagRatio and MetricE2ELagRatio are the
	// same for each part alone: the time to first token's lag over the
	// model's, the decode's (first to last token), and the whole request's
	// (arrival to last token), so a comparison widens each metric by the
	// stretch of the part it measures.
	MetricTTFTLagRatio   = "runner_sim_ttft_lag_ratio"
	MetricDecodeLagRatio = "runner_sim_decode_lag_ratio"
	MetricE2ELagRatio    = "runner_sim_e2e_lag_ratio"
	// MetricRequestLag is the timed requests' lag in all, in seconds: how
	// much later than the model's time each one's last token was written.
	MetricRequestLag = "runner_sim_request_lag_seconds"
)

// LagRatioBounds are MetricLagRatio's bucket bounds: from 1% to 100 times
// the model, about 1.5 apart, so the bound a comparison widens its
// intervals by is at most half again the true stretch.
var LagRatioBounds = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 100}
