package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/runnerbench/runner/cli"
	"github.com/runnerbench/runner/pipeline"
	"github.com/runnerbench/runner/result"
	"github.com/runnerbench/runner/scenario"
)

// decoder decodes manifests into the official API types, strictly: an
// unknown or misspelt field, or a duplicate one, is an error.
func decoder() runtime.Decoder {
	s := runtime.NewScheme()
	if err := errors.Join(corev1.AddToScheme(s), batchv1.AddToScheme(s)); err != nil {
		panic(err)
	}
	return kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{Yaml: true, Strict: true})
}

// decode decodes every document of a manifest.
func decode(data []byte) ([]runtime.Object, error) {
	dec := decoder()
	r := kyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
}

// manifests are the directory's objects, decoded strictly.
type manifests struct {
	pvc    *corev1.PersistentVolumeClaim
	plan   *corev1.ConfigMap
	shards *batchv1.Job
	merge  *batchv1.Job
}

func load(t *testing.T) *manifests {
	t.Helper()
	files, _ := filepath.Glob("*.yaml")
	if len(files) != 4 {
		t.Fatalf("manifests: %v", files)
	}
	m := &manifests{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(objs) != 1 {
			t.Fatalf("%s: %d objects", f, len(objs))
		}
		switch o := objs[0].(type) {
		case *corev1.PersistentVolumeClaim:
			m.pvc = o
		case *corev1.ConfigMap:
			m.plan = o
		case *batchv1.Job:
			if o.Name == "runner-merge" {
				m.merge = o
			} else {
				m.shards = o
			}
		default:
			t.Fatalf("%s: unexpected %T", f, o)
		}
	}
	if m.pvc == nil || m.plan == nil || m.shards == nil || m.merge == nil {
		t.Fatalf("manifests incomplete: %+v", m)
	}
	return m
}

// TestStrictDecoding: a misspelt or unknown field anywhere fails to decode,
// so the manifests' passing decode means every field is the API's.
func TestStrictDecoding(t *testing.T) {
	data, err := os.ReadFile("shards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"completionMode: Indexed", "completionMod: Indexed", `unknown field "spec.completionMod"`},
		{"readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true", `unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`},
		{"  parallelism: 4\n", "  parallelism: 4\n  parallelism: 5\n", `key "parallelism" already set in map`},
	} {
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%q is not in shards.yaml", c.from)
		}
		if _, err := decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), strings.Trim(c.want, " ")) {
			t.Errorf("%s: got %v, want an error saying %s", c.to, err, c.want)
		}
	}
	if _, err := decode([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")); err != nil {
		t.Errorf("a valid manifest: %v", err)
	}
}

// container is the Job's only container.
func container(t *testing.T, j *batchv1.Job) *corev1.Container {
	t.Helper()
	if n := len(j.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("%s: %d containers", j.Name, n)
	}
	return &j.Spec.Template.Spec.Containers[0]
}

// checkPod holds a Job's pod to what a benchmark pod must be: never
// restarted, non-root, nothing writable but the results volume.
func checkPod(t *testing.T, j *batchv1.Job, pvc string) {
	t.Helper()
	ps := &j.Spec.Template.Spec
	c := container(t, j)
	sc := ps.SecurityContext
	switch {
	case j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != 0 || ps.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("%s: retries a pod (backoffLimit %v, restartPolicy %s)", j.Name, j.Spec.BackoffLimit, ps.RestartPolicy)
	case sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0:
		t.Errorf("%s: not non-root: %+v", j.Name, sc)
	case c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation:
		t.Errorf("%s: container security context %+v", j.Name, c.SecurityContext)
	}
	var claim string
	for _, v := range ps.Volumes {
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name && m.MountPath == "/results" }) {
				t.Errorf("%s: the results volume is not mounted at /results", j.Name)
			}
		}
	}
	if claim != pvc {
		t.Errorf("%s: results on claim %q, the PVC is %q", j.Name, claim, pvc)
	}
}

// envFrom is where a container's variable comes from: "configmap/key" or the
// field path.
func envFrom(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name != name || e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			return r.Name + "/" + r.Key
		}
		if r := e.ValueFrom.FieldRef; r != nil {
			return r.FieldPath
		}
	}
	return ""
}

// TestShardJob: the Indexed Job runs N shards of the ConfigMap's plan, each
// told N, the run's start instant and its own results directory; the merge
// Job merges exactly those N directories.
func TestShardJob(t *testing.T) {
	m := load(t)
	j := m.shards
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion || j.Spec.Completions == nil || j.Spec.Parallelism == nil || *j.Spec.Parallelism != *j.Spec.Completions {
		t.Fatalf("shards: completionMode %v, completions %v, parallelism %v", j.Spec.CompletionMode, j.Spec.Completions, j.Spec.Parallelism)
	}
	n := int(*j.Spec.Completions)
	c := container(t, j)
	for _, a := range []string{fmt.Sprintf("--shards=%d", n), "--start-at=$(START_AT)", "--out=/results/$(RUN_ID)/shard-$(JOB_COMPLETION_INDEX)"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("shards: args %q lack %s", c.Args, a)
		}
	}
	cm := m.plan.Name
	for name, want := range map[string]string{"START_AT": cm + "/start-at", "RUN_ID": cm + "/run-id",
		"JOB_COMPLETION_INDEX": "metadata.annotations['batch.kubernetes.io/job-completion-index']"} {
		if got := envFrom(c, name); got != want {
			t.Errorf("shards: $%s from %q, want %q", name, got, want)
		}
	}
	for _, key := range []string{"start-at", "run-id", "plan.yaml"} {
		if _, ok := m.plan.Data[key]; !ok {
			t.Errorf("the ConfigMap has no %s", key)
		}
	}
	checkPlanMounts(t, m, c)
	checkPod(t, j, m.pvc.Name)
	checkPod(t, m.merge, m.pvc.Name)
	mc := container(t, m.merge)
	want := []string{"merge"}
	for i := range n {
		want = append(want, fmt.Sprintf("/results/$(RUN_ID)/shard-%d", i))
	}
	want = append(want, "--out=/results/$(RUN_ID)/merged")
	if !slices.Equal(mc.Args, want) || envFrom(mc, "RUN_ID") != cm+"/run-id" {
		t.Errorf("merge: args %q (RUN_ID from %q), want %q", mc.Args, envFrom(mc, "RUN_ID"), want)
	}
}

// checkPlanMounts: every file of the ConfigMap is mounted on its own in
// /plan, from the ConfigMap.
func checkPlanMounts(t *testing.T, m *manifests, c *corev1.Container) {
	t.Helper()
	var vol string
	for _, v := range m.shards.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == m.plan.Name {
			vol = v.Name
		}
	}
	for key := range m.plan.Data {
		if key == "start-at" || key == "run-id" {
			continue
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool {
			return vm.Name == vol && vm.SubPath == key && vm.MountPath == "/plan/"+key && vm.ReadOnly
		}) {
			t.Errorf("shards: %s of the ConfigMap is not mounted read-only at /plan/%s by subPath", key, key)
		}
	}
}

// writePlan writes the ConfigMap's files into a directory and returns the
// plan's path there.
func writePlan(t *testing.T, m *manifests) string {
	t.Helper()
	dir := t.TempDir()
	for k, v := range m.plan.Data {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "plan.yaml")
}

// TestConfigMapPlanShards: the ConfigMap's plan loads (its files found
// beside it) and can run as the Job's N shards: every level bounded by
// duration, every cap splittable.
func TestConfigMapPlanShards(t *testing.T) {
	m := load(t)
	p, err := scenario.Load(writePlan(t, m), scenario.Options{})
	if err != nil {
		t.Fatalf("the ConfigMap's plan: %v", err)
	}
	n := int(*m.shards.Spec.Completions)
	for i := range n {
		if _, err := pipeline.Sharding(p, p.Stages, result.Shard{Index: i, Count: n}, time.Now().Add(time.Hour), cli.DefaultSlotWarmup, cli.DefaultSlotDrain); err != nil {
			t.Errorf("shard %d/%d: %v", i, n, err)
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand expands $(VAR) in args as the kubelet does.
func expand(args []string, env map[string]string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = varRef.ReplaceAllStringFunc(a, func(s string) string { return env[varRef.FindStringSubmatch(s)[1]] })
	}
	return out
}

// runCLI runs the runner command line in-process.
func runCLI(args []string, env map[string]string) (int, string) {
	var stderr bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Args: args, Stdout: io.Discard, Stderr: &stderr,
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	return code, stderr.String()
}

// TestJobArgsParse: the runner accepts the Jobs' arguments as the kubelet
// expands them. Sending no traffic, the shard is stopped at its one check
// that needs the clock (a start instant already passed), which comes after
// every flag, the plan and the shard index were accepted; the merge at the
// shard directories, which do not exist here.
func TestJobArgsParse(t *testing.T) {
	m := load(t)
	env := map[string]string{"START_AT": "2001-01-01T00:00:00Z", "RUN_ID": "r1", "JOB_COMPLETION_INDEX": "3"}
	args := expand(container(t, m.shards).Args, env)
	args[slices.Index(args, "/plan/plan.yaml")] = writePlan(t, m)
	code, stderr := runCLI(args, env)
	if code != 2 || !strings.Contains(stderr, "--start-at 2001-01-01T00:00:00Z passed") {
		t.Errorf("shard args %q: exit %d\n%s", args, code, stderr)
	}
	env["JOB_COMPLETION_INDEX"] = "4"
	if code, stderr := runCLI(args, env); code != 2 || !strings.Contains(stderr, `$JOB_COMPLETION_INDEX is "4", want 0 to 3`) {
		t.Errorf("an index beyond --shards: exit %d\n%s", code, stderr)
	}
	margs := expand(container(t, m.merge).Args, env)
	if code, stderr := runCLI(margs, env); code != 2 || !strings.Contains(stderr, "/results/r1/shard-0: not a result directory") {
		t.Errorf("merge args %q: exit %d\n%s", margs, code, stderr)
	}
}
