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
	// MetricTimedRequests counts the completed requests whose lag behind the
	// model was measured.
	MetricTimedRequests = "runner_sim_timed_requests"
	// MetricBehindRequests counts the completed requests the simulator
	// served behind its model: their time to first token or their decode
	// stretched by more than 2% of the model's and 1 ms (sim.BehindShare,
	// sim.BehindFloor).
	MetricBehindRequests = "runner_sim_behind_requests"
	// MetricRequestLag is the timed requests' lag in all, in seconds: how
	// much later than the model's time each one's last token was written.
	MetricRequestLag = "runner_sim_request_lag_seconds"
)
