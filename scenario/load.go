package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnerbench/runner/scenario/envpolicy"
	"github.com/runnerbench/runner/scenario/planfs"
)

// MaxPlanBytes bounds the size of a plan file.
const MaxPlanBytes = 4 << 20

// Options are what the job that runs a plan decides, not the plan: a plan
// may come from a pull request, and the job holds the secrets and the files.
type Options struct {
	// Getenv looks up environment variables for ${VAR}; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// AllowEnv says which variables the plan may read and where their values
	// may go; nil allows none (a ${VAR:-default} whose variable is unset
	// still takes its default).
	AllowEnv *envpolicy.AllowList
	// AllowDirs are directories, besides the plan's own, whose files the plan
	// may name (prompt files, tls.ca_file).
	AllowDirs []string
	// Sets override plan fields for one run (--set), applied in order before
	// the plan is decoded; the plan's Source (and Hash) is then the plan
	// with them.
	Sets []Set
}

// Load reads, decodes, validates and compiles the plan at path. Every problem
// found is returned at once, joined, each an *Error formatted as
// "file:line:col: message" (see Errors).
func Load(path string, opts Options) (*Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read plan: " + planfs.PathErr(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read plan: " + planfs.PathErr(err)}
	}
	if len(data) > MaxPlanBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("plan is larger than %d MiB", MaxPlanBytes>>20)}
	}
	return LoadBytes(path, data, filepath.Dir(path), opts)
}

// LoadBytes is Load for a plan already in memory. name is used in messages and
// as Plan.Path; dir is the plan's directory, where the files it names are.
func LoadBytes(name string, data []byte, dir string, opts Options) (*Plan, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	probs := &problems{file: name}
	files := planfs.New(dir, opts.AllowDirs)
	if files.Err() != nil {
		probs.add(pos{}, "%v", files.Err())
		return nil, probs.err()
	}
	if len(data) > MaxPlanBytes {
		probs.add(pos{}, "plan is larger than %d MiB", MaxPlanBytes>>20)
		return nil, probs.err()
	}
	doc, root := parseDoc(probs, data, "plan", "a mapping with version, name, endpoints, prompts and stages")
	if root == nil {
		return nil, probs.err()
	}
	source := data
	if len(opts.Sets) > 0 {
		source = applySets(probs, doc, root, opts.Sets)
	}
	sum := sha256.Sum256(source)
	p := &Plan{Path: name, Source: source, Hash: hex.EncodeToString(sum[:])}
	d := newDecoder(probs, getenv)
	d.allow = opts.AllowEnv
	d.decode(root, reflect.ValueOf(p).Elem(), "", 0)
	if d.tooBig {
		// A half-decoded oversized plan is not worth validating: its checks
		// alone could take seconds to compile.
		return nil, probs.err()
	}

	v := &validator{plan: p, probs: probs, at: d.at, keyAt: d.keyAt, dec: d, dir: dir, files: files, lines: strings.Split(string(data), "\n")}
	v.validate()
	v.checkEnv()
	p.ApplyDefaults()
	v.loadCAFiles()
	v.loadPrompts()
	v.loadImages()
	v.checkTraces()
	v.compileChecks()
	if err := probs.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// parseRoot parses data as one YAML document whose root is a mapping, and
// returns that mapping; on any problem it records it and returns nil. want
// names the file's kind and shape says what the mapping should hold, for the
// messages.
func parseRoot(probs *problems, data []byte, noun, shape string) *yaml.Node {
	_, root := parseDoc(probs, data, noun, shape)
	return root
}

// parseDoc is parseRoot that also returns the document node (nil with
// the root).
func parseDoc(probs *problems, data []byte, noun, shape string) (*yaml.Node, *yaml.Node) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		line, msg := yamlSyntaxError(err)
		probs.add(pos{line, 0}, "%s", msg)
		return nil, nil
	}
	// A second document would be silently ignored; say so instead.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		probs.add(posOf(&extra), "the %s file holds more than one YAML document (---); put one %s per file", noun, noun)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		probs.add(pos{1, 1}, "%s is empty: expected %s", noun, shape)
		return nil, nil
	}
	root := doc.Content[0]
	for root.Kind == yaml.AliasNode && root.Alias != nil {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		probs.add(posOf(root), "a %s is %s; got %s", noun, shape, kindName(root))
		return nil, nil
	}
	return &doc, root
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntaxError pulls the line out of a yaml.v3 syntax error.
func yamlSyntaxError(err error) (int, string) {
	s := err.Error()
	if m := yamlLineRE.FindStringSubmatch(s); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, "invalid YAML: " + m[2]
	}
	return 0, "invalid YAML: " + strings.TrimPrefix(s, "yaml: ")
}
