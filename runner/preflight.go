package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/runnerbench/runner/internal/redact"
)

// httpStatusError is a GET answered with a status other than 200.
type httpStatusError struct {
	url    string // redacted
	status int
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("GET %s: http %d", e.url, e.status) }

// maxListedModels bounds how many of the server's models a warning names.
const maxListedModels = 10

// checkModels warns when the server's model list (GET /v1/models, an
// OpenAI list: {"data": [{"id": ...}]}) does not name the plan's model:
// every request would then fail, or be served by another model than the one
// the report names. Nothing is said of an answer that is not such a list.
func (e *Engine) checkModels(body []byte) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) == 0 {
		return
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID == e.model {
			return
		}
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	shown := make([]string, 0, min(len(ids), maxListedModels)+1)
	for i, id := range ids {
		if i == maxListedModels {
			shown = append(shown, fmt.Sprintf("and %d more", len(ids)-maxListedModels))
			break
		}
		shown = append(shown, strconv.Quote(id)) // server text: quoted, so it cannot break a log line
	}
	e.warn(fmt.Sprintf("model %q is not among the models %s lists (%s): requests may fail, or be answered by another model than the report names; set the endpoint's model to one of them",
		e.model, redact.URL(e.url("/models")), strings.Join(shown, ", ")))
}

// checkBaseURL warns when the server answered its health check but not
// <base_url>/models with a 404, and base_url has no /v1: the mistake behind
// most "every request failed with 404" runs (OpenAI-compatible servers
// serve under /v1, and base_url is the API root, /v1 included).
func (e *Engine) checkBaseURL(modelsErr error) {
	var se *httpStatusError
	if !errors.As(modelsErr, &se) || se.status != http.StatusNotFound {
		return
	}
	u, err := url.Parse(e.baseURL)
	if err != nil || slices.Contains(strings.Split(u.Path, "/"), "v1") {
		return
	}
	base := redact.URL(e.baseURL)
	e.warn(fmt.Sprintf("GET %s answered 404 and base_url %s has no /v1: OpenAI-compatible servers serve /v1/models and /v1/chat/completions; did you mean base_url: %s/v1?",
		se.url, base, base))
}
