package sim

// Config is the simulated engine. It is plain data: the plan's `simulator:`
// block and `runner sim --config` decode into it. Zero values mean the defaults
// documented on each field (applied by Defaults).
type Config struct {
	// Model name served by /v1/models. Default "sim".
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Seed makes every random choice reproducible. Default 1.
	Seed int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// TTFTMs is the fixed prefill cost per scheduling step in ms. Default 20.
	TTFTMs float64 `yaml:"ttft_ms,omitempty" json:"ttft_ms,omitempty"`
	// PrefillMsPerToken is the prefill cost per uncached input token. Default 0.02.
	PrefillMsPerToken float64 `yaml:"prefill_ms_per_token,omitempty" json:"prefill_ms_per_token,omitempty"`
	// ITLMs is the decode step time with one running sequence. Default 10.
	ITLMs float64 `yaml:"itl_ms,omitempty" json:"itl_ms,omitempty"`
	// ITLMsPerSeq is the extra decode step time per additional running sequence. Default 0.
	ITLMsPerSeq float64 `yaml:"itl_ms_per_seq,omitempty" json:"itl_ms_per_seq,omitempty"`
	// MaxNumSeqs is the continuous-batching limit; requests beyond it wait in a FIFO queue. Default 256.
	MaxNumSeqs int `yaml:"max_num_seqs,omitempty" json:"max_num_seqs,omitempty"`
}
