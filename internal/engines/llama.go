package engines

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// LlamaModel is the model name llama-server serves (its -a alias).
const LlamaModel = "tiny"

// llamaFiles returns the llama-server binary and the tiny model under
// root/../shared/engines.
func llamaFiles(root string) (bin, model string, err error) {
	dir := filepath.Join(root, "..", "shared", "engines")
	bin = filepath.Join(dir, "llama.cpp", "llama-server")
	model = filepath.Join(dir, "models", "tiny-llama-phi3vocab.gguf")
	for _, f := range []string{bin, model} {
		if _, err := os.Stat(f); err != nil {
			return "", "", &UnavailableError{Reason: fmt.Sprintf("llama-server: %s not found (the engines live in ../shared/engines beside the repository)", f)}
		}
	}
	return bin, model, nil
}

// LlamaOptions choose how llama-server runs.
type LlamaOptions struct {
	// Draft makes the model draft for itself (speculative decoding,
	// --spec-type draft-simple): at temperature 0 every draft is accepted.
	Draft bool
	// Embeddings serves /v1/embeddings (--embeddings --pooling mean: without
	// a pooling type it answers 400 "Pooling type 'none' is not OAI
	// compatible"); such a server is for embeddings, not chat.
	Embeddings bool
	// DefaultBatch keeps llama-server's default physical batch (512
	// tokens) for embeddings and reranking, as a user who starts it with
	// --embeddings --pooling mean alone gets: a longer input is refused.
	DefaultBatch bool
	// Reranking serves /v1/rerank (--reranking).
	Reranking bool
	// APIKey makes the server require this key (--api-key), as a bearer
	// token or in x-api-key.
	APIKey string
	// EOSBias makes the phi-3 vocabulary's end-of-generation tokens
	// (<|endoftext|> 32000, <|end|> 32007) all but certain for every request
	// (--logit-bias, the server's default): a request stops after one token
	// unless ignore_eos is honoured, on every API, whatever fields its API
	// passes on.
	EOSBias bool
	// HTTPThreads is its --threads-http (0: 32, as below).
	HTTPThreads int
}

// StartLlama starts llama-server on a free loopback port with the tiny model:
// 4 slots of 4096 tokens, Prometheus metrics on, one compute thread and 32
// HTTP threads. One compute thread, because llama.cpp's threads spin-wait for
// each other, so on a small shared machine two of them stall for hundreds of
// milliseconds whenever one loses its core. 32 HTTP threads, because with
// fewer threads than connections it leaves some connections unanswered while
// others are kept alive: Runner opening a level's connections before it then
// waits out its bound (runner/client's Prime) at every level.
func StartLlama(ctx context.Context, root string, o LlamaOptions) (*Engine, error) {
	bin, model, err := llamaFiles(root)
	if err != nil {
		return nil, err
	}
	args := []string{"-m", model, "--host", "127.0.0.1", "--port", "PORT", "-a", LlamaModel,
		"-c", "16384", "-np", "4", "-t", "1", "--threads-http", strconv.Itoa(cmp.Or(o.HTTPThreads, 32)), "--metrics", "--no-webui"}
	if o.Draft {
		args = append(args, "-md", model, "--spec-type", "draft-simple")
	}
	// A pooled input (an embedding's text, a rerank's query and document)
	// must fit one physical batch (-ub, 512 by default): a longer one is
	// refused with a 500 "input is too large to process". 4096 is a slot's
	// whole context, so longer inputs fit (DefaultBatch keeps 512).
	batch := []string{"-b", "4096", "-ub", "4096"}
	if o.DefaultBatch {
		batch = nil
	}
	if o.Embeddings {
		args = append(append(args, "--embeddings", "--pooling", "mean"), batch...)
	}
	if o.Reranking {
		args = append(append(args, "--reranking"), batch...)
	}
	if o.APIKey != "" {
		args = append(args, "--api-key", o.APIKey)
	}
	if o.EOSBias {
		args = append(args, "--logit-bias", "32000+100", "--logit-bias", "32007+100")
	}
	return start(ctx, "llama-server", bin, nil, args)
}
