// Package enginetest runs Runner against real serving engines on loopback:
// llama.cpp's llama-server (from ../shared/engines) and llm-d-inference-sim
// (built from tools/engines). It has tests only; internal/engines starts the
// engines. Without them the tests skip with one line saying why, and fail
// instead under RUNNER_REQUIRE_ENGINES=1 (as .ci/run sets).
package enginetest
