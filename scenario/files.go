package scenario

import (
	"crypto/x509"
	"maps"
	"os"
	"slices"
)

// MaxCAFileBytes bounds a tls.ca_file: a system's whole CA bundle is a few
// hundred KiB.
const MaxCAFileBytes = 4 << 20

// readPlanFile reads the file that the plan names at field path (such as
// prompts.x.file or endpoints.e.tls.ca_file) through the plan's file policy
// (package planfs): inside the plan's tree, a regular file, at most limit
// bytes. what names the file in messages ("prompt file"). Problems are
// reported at path's position; ok is false after one.
func (v *validator) readPlanFile(path, name, what string, limit int64) ([]byte, bool) {
	data, msg := v.files.Read(name, what, limit)
	if msg != "" {
		v.errf(path, "%s: %s", path, msg)
		return nil, false
	}
	return data, true
}

// openPlanFile opens the file the plan names at field path for reading as
// a stream, through the same gate as readPlanFile, for files too large to
// hold. Problems are reported at path's position; ok is false after one.
// The caller closes the file.
func (v *validator) openPlanFile(path, name, what string) (*os.File, bool) {
	f, msg := v.files.Open(name, what)
	if msg != "" {
		v.errf(path, "%s: %s", path, msg)
		return nil, false
	}
	return f, true
}

// loadCAFiles reads every endpoint's tls.ca_file, so the engine trusts
// exactly the certificates the loader checked, and a missing or empty file is
// a plan error with its position rather than a failure after start-up.
func (v *validator) loadCAFiles() {
	for _, name := range slices.Sorted(maps.Keys(v.plan.Endpoints)) {
		ep := v.plan.Endpoints[name]
		if ep == nil || ep.TLS == nil || ep.TLS.CAFile == "" {
			continue
		}
		path := "endpoints." + name + ".tls.ca_file"
		data, ok := v.readPlanFile(path, ep.TLS.CAFile, "CA file", MaxCAFileBytes)
		if !ok {
			continue
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			v.errf(path, "%s: no PEM certificates found in CA file %q", path, ep.TLS.CAFile)
			continue
		}
		ep.TLS.CAPEM = data
	}
}
