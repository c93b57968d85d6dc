package html

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/runnerbench/runner/result"
)

func TestDbg(t *testing.T) {
	var r result.Report
	json.Unmarshal([]byte("{\"stages\":[{\"name\":\"s\",\"load\":\"rate\",\"points\":[{\"rate\":1e308,\"output_tps_total\":-1e308,\"ttft_p50_mhist\":[{\"le_ms\":1e-300,\"count\":9},{\"le_ms\":1e308,\"count\":-3}]}]}]}"), &r)
	st := time.Now()
	var b bytes.Buffer
	Write(&b, &r, nil)
	t.Log(time.Since(st), b.Len())
}
