package scenario

import (
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const setPlan = `# the plan's own comment
version: 1
name: t
endpoints:
  target:
    base_url: http://127.0.0.1:8000/v1   # the server under test
prompts:
  p: {synthetic: {input_tokens: 32}}  # short prompts
stages:
  - name: warm
    endpoint: target
    prompts: p
    concurrency: [1]
  - name: sweep
    endpoint: target
    prompts: p
    concurrency: [1, 2, 4]
    checks:
      - {name: ok, expr: failed == 0}
`

func sets(t *testing.T, args ...string) Options {
	t.Helper()
	o := env()
	for _, a := range args {
		s, err := ParseSet("--set", a)
		if err != nil {
			t.Fatal(err)
		}
		o.Sets = append(o.Sets, s)
	}
	return o
}

// TestSetOverridesAField: --set replaces a stage's field (the stage by its
// name), a URL, and adds a field the plan does not have; the plan's source
// is then the plan with them, and loads to the same plan.
func TestSetOverridesAField(t *testing.T) {
	p, err := load(t, setPlan, sets(t, "stages.sweep.concurrency=[1,2]", "endpoints.target.base_url=http://127.0.0.1:8001/v1",
		"stages.1.duration=2s", "endpoints.target.timeouts.connect=3s"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(p *Plan, from string) {
		t.Helper()
		st := p.Stages[1]
		if len(st.Concurrency) != 2 || st.Concurrency[1] != 2 || st.Duration.D().String() != "2s" {
			t.Errorf("%s: sweep concurrency %v duration %s", from, st.Concurrency, st.Duration.D())
		}
		if ep := p.Endpoints["target"]; ep.BaseURL != "http://127.0.0.1:8001/v1" || ep.Timeouts.Connect.D().String() != "3s" {
			t.Errorf("%s: base_url %q connect %s", from, ep.BaseURL, ep.Timeouts.Connect.D())
		}
		if p.Stages[0].Concurrency[0] != 1 || len(p.Stages[1].Checks) != 1 {
			t.Errorf("%s: other fields changed: %+v", from, p.Stages[0])
		}
	}
	check(p, "loaded")
	src := string(p.Source)
	for _, want := range []string{"# the plan's own comment", "# short prompts", "8001"} {
		if !strings.Contains(src, want) {
			t.Errorf("the plan's source lacks %q:\n%s", want, src)
		}
	}
	again, err := load(t, src, env())
	if err != nil {
		t.Fatalf("the plan with its overrides does not load: %v\n%s", err, src)
	}
	check(again, "reloaded")
	if again.Hash != p.Hash {
		t.Errorf("hash %s of the source, the plan says %s", again.Hash, p.Hash)
	}
	plain, _ := load(t, setPlan, env())
	if plain.Hash == p.Hash || string(plain.Source) != setPlan {
		t.Error("without --set the source is not the file's bytes")
	}
}

// TestSetErrorsNameTheFlag: a value validated as if in the plan, a path
// that leads nowhere and a value that is not YAML are each one message
// naming the flag; the file's own problems keep their line and column.
func TestSetErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		set  string
		want []string
	}{
		{"stages.sweep.concurrency=[0,2]", []string{"--set stages.sweep.concurrency: ", "concurrency"}},
		{"stages.sweep.concurrency=fast", []string{"--set stages.sweep.concurrency: ", "expected a list"}},
		{"stages.swep.concurrency=[1]", []string{"--set stages.swep.concurrency: ", `no element named "swep"`, `did you mean "sweep"`}},
		{"stages.sweep.concurrenc=[1]", []string{"--set stages.sweep.concurrenc: ", `unknown key "concurrenc"`, `did you mean "concurrency"`}},
		{"stages.sweep.concurrency=[1,", []string{"--set stages.sweep.concurrency: ", "invalid YAML"}},
		{"name.x=1", []string{"--set name.x: ", "not a mapping or a list"}},
	} {
		_, err := load(t, setPlan, sets(t, c.set))
		if err == nil {
			t.Errorf("--set %s: no error", c.set)
			continue
		}
		msg := err.Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("--set %s: %q lacks %q", c.set, msg, w)
			}
		}
		if strings.Count(msg, "\n") != 0 {
			t.Errorf("--set %s: more than one message: %q", c.set, msg)
		}
	}
	_, err := load(t, strings.Replace(setPlan, "[1, 2, 4]", "[0]", 1), sets(t, "stages.warm.concurrency=[-1]"))
	if err == nil || !strings.Contains(err.Error(), ":17:") || !strings.Contains(err.Error(), "--set stages.warm.concurrency: ") {
		t.Errorf("want the file's problem at its line and the flag's by name: %v", err)
	}
	if _, err := ParseSet("--set", "stages.sweep.concurrency"); err == nil || !strings.Contains(err.Error(), "PATH=VALUE") {
		t.Errorf("no '=': %v", err)
	}
}

// TestSetKeepsEveryExamplePlan: the text a --set writes for the record is
// the same plan again, for every example plan (block scalars, anchors,
// comments, prompt files): only the overridden field differs.
func TestSetKeepsEveryExamplePlan(t *testing.T) {
	files, _ := filepath.Glob("../plans/*.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, err := Load(f, env())
			if err != nil {
				t.Fatal(err)
			}
			got, err := Load(f, sets(t, "description=set for one run"))
			if err != nil {
				t.Fatal(err)
			}
			again, err := LoadBytes(f, got.Source, filepath.Dir(f), env())
			if err != nil {
				t.Fatalf("the recorded text does not load: %v\n%s", err, got.Source)
			}
			if again.Description != "set for one run" {
				t.Errorf("description %q", again.Description)
			}
			again.Description = want.Description
			a, _ := yaml.Marshal(want)
			b, _ := yaml.Marshal(again)
			if string(a) != string(b) {
				t.Errorf("the recorded plan differs from the file's:\n%s\n---\n%s", a, b)
			}
		})
	}
}

// TestSetTrafficFields: --set reaches the fields of traffic as people make
// it (users and think time, session header, giving up, models, probes, a
// series' numbers), and a bad value there is one message naming the flag.
func TestSetTrafficFields(t *testing.T) {
	plan := strings.Replace(setPlan, "    concurrency: [1]\n", "    series: {over: rate, linear: {from: 1, to: 8, duration: 10s}}\n", 1)
	plan = strings.Replace(plan, "    concurrency: [1, 2, 4]\n", "    users: [2]\n", 1)
	p, err := load(t, plan, sets(t, "stages.warm.series.linear.to=20", "stages.warm.series.linear.duration=4s",
		"stages.sweep.users=[3,6]", "stages.sweep.think_time={min: 1s, max: 2s}", "stages.sweep.session_header=x-session-id",
		"stages.sweep.cancel_after=2s", "stages.sweep.cancel_share=0.25", "stages.sweep.probe={rate: 2}",
		`stages.sweep.models=[{name: a, weight: 3}, {name: b}]`))
	if err != nil {
		t.Fatal(err)
	}
	w, s := p.Stages[0], p.Stages[1]
	if l := w.Series.Linear; l.To != 20 || l.From != 1 || l.Duration.D().String() != "4s" {
		t.Errorf("series %+v", *l)
	}
	if len(s.Users) != 2 || s.Users[1] != 6 || s.ThinkTime == nil || s.SessionHeader != "x-session-id" {
		t.Errorf("users %v think %v session header %q", s.Users, s.ThinkTime, s.SessionHeader)
	}
	if s.CancelAfter.D().String() != "2s" || s.CancelShare != 0.25 || s.Probe == nil || s.Probe.Rate != 2 {
		t.Errorf("cancel after %s share %g probe %+v", s.CancelAfter.D(), s.CancelShare, s.Probe)
	}
	if len(s.Models) != 2 || s.Models[0].Name != "a" || *s.Models[0].Weight != 3 || s.Models[1].Name != "b" {
		t.Errorf("models %+v", s.Models)
	}
	for set, want := range map[string]string{
		"stages.sweep.cancel_share=2":              "cancel_share",
		"stages.warm.series.linear.duration=100ms": "lasts at least 1s",
		"stages.sweep.users=[0]":                   "users",
	} {
		_, err := load(t, plan, sets(t, set))
		name, _, _ := strings.Cut(set, "=")
		if err == nil || !strings.Contains(err.Error(), "--set "+name+": ") || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("--set %s: %v", set, err)
		}
	}
}
