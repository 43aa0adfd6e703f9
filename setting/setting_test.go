package setting

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/toolrl/toolrl/internal/strictyaml"
)

type inner struct {
	Temperature Value[float64]  `yaml:"temperature" flag:"temperature" default:"1" usage:"sampling temperature"`
	TopK        Value[int]      `yaml:"top_k" flag:"top-k" default:"0" usage:"keep the k most likely tokens"`
	Stop        Value[[]string] `yaml:"stop" flag:"stop" usage:"stop strings"`
}

type spec struct {
	GroupSize Value[int]           `yaml:"group_size" flag:"group-size" default:"8" usage:"samples per prompt"`
	Name      Value[string]        `yaml:"name" flag:"name" usage:"a name"`
	Async     Value[bool]          `yaml:"async" flag:"async" default:"false" usage:"overlap"`
	Timeout   Value[time.Duration] `yaml:"timeout" default:"10m" usage:"how long"`
	Seed      Value[uint64]        `yaml:"seed" flag:"seed" usage:"seed"`
	Sampling  inner                `yaml:"sampling"`
	Opt       *inner               `yaml:"opt"`
	Plain     int                  `yaml:"plain"`
	Hidden    Value[int]           `yaml:"-"`
}

func TestLayers(t *testing.T) {
	var file spec
	if err := strictyaml.Decode([]byte("group_size: 0\nsampling:\n  temperature: 0.7\n  stop: [a, b]\ntimeout: 90s\n"), &file); err != nil {
		t.Fatal(err)
	}
	if !file.GroupSize.IsSet() || file.GroupSize.Get() != 0 || file.GroupSize.Source() != File {
		t.Errorf("explicit group_size 0: %+v, want set to 0 by the file", file.GroupSize)
	}
	if file.Timeout.Get() != 90*time.Second {
		t.Errorf("timeout %v, want 90s", file.Timeout.Get())
	}
	var flags spec
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Bind(fs, &flags)
	if err := fs.Parse([]string{"--temperature", "0", "--async", "--stop", "x", "--stop", "y"}); err != nil {
		t.Fatal(err)
	}
	Overlay(&file, &flags)
	var model spec
	model.Sampling.TopK.Set(40, Model)
	model.Sampling.Temperature.Set(0.5, Model)
	Fill(&file, &model)
	if err := ApplyDefaults(&file); err != nil {
		t.Fatal(err)
	}
	if err := Set(&file, "seed", "7", Flag); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range Entries(&file) {
		got[e.Key] = e.Value + " (" + string(e.Source) + ")"
	}
	want := map[string]string{
		"group_size":           "0 (file)",
		"async":                "true (flag)",
		"timeout":              "1m30s (file)",
		"seed":                 "7 (flag)",
		"sampling.temperature": "0 (flag)",
		"sampling.top_k":       "40 (generation_config.json)",
		"sampling.stop":        "x,y (flag)",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q, want %q", k, got[k], w)
		}
	}
	if _, ok := got["name"]; ok {
		t.Errorf("name is set (%q) though no layer gave it", got["name"])
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want exactly %v", got, want)
	}
}

func TestFlagHelpShowsDefaults(t *testing.T) {
	var s spec
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	Bind(fs, &s)
	usage := fs.FlagUsages()
	for _, w := range []string{"--group-size int", "samples per prompt (default 8)", "--temperature float", "(default 1)"} {
		if !strings.Contains(usage, w) {
			t.Errorf("usage lacks %q:\n%s", w, usage)
		}
	}
	if fs.Lookup("timeout") != nil {
		t.Error("timeout declares no flag but has one")
	}
	if s.GroupSize.IsSet() {
		t.Error("binding set a value")
	}
}

func TestErrorsNameTheSetting(t *testing.T) {
	var s spec
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	Bind(fs, &s)
	if err := fs.Parse([]string{"--group-size", "many"}); err == nil || !strings.Contains(err.Error(), "group-size") || !strings.Contains(err.Error(), `"many" is not a valid int`) {
		t.Errorf("bad flag value: %v", err)
	}
	if err := SetAll(&s, []string{"sampling.tempreature=1"}, Flag); err == nil || !strings.Contains(err.Error(), `"sampling.tempreature" is not a setting; did you mean sampling.temperature?`) {
		t.Errorf("misspelt key: %v", err)
	}
	if err := SetAll(&s, []string{"top_k=1"}, Flag); err == nil || !strings.Contains(err.Error(), `"top_k" is not a setting; did you mean sampling.top_k?`) {
		t.Errorf("key without its section: %v", err)
	}
	if err := SetAll(&s, []string{"learner.lr=1"}, Flag); err == nil || !strings.Contains(err.Error(), `"learner.lr" is not a setting; the settings are async, group_size, name`) {
		t.Errorf("unknown key: %v", err)
	}
	if err := SetAll(&s, []string{"seed"}, Flag); err == nil || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Errorf("no '=': %v", err)
	}
	if err := SetAll(&s, []string{"seed=-1"}, Flag); err == nil || !strings.Contains(err.Error(), "seed:") {
		t.Errorf("bad value: %v", err)
	}
	if err := strictyaml.Decode([]byte("timeout: 5 minutes\n"), &s); err == nil || !strings.Contains(err.Error(), "not a duration") {
		t.Errorf("bad duration: %v", err)
	}
}

func TestNilPointerSectionsAreSkippedAndFilled(t *testing.T) {
	var lower, upper spec
	if n := len(Fields(&lower)); n != 8 {
		t.Errorf("%d fields without opt, want 8", n)
	}
	upper.Opt = &inner{}
	upper.Opt.TopK.Set(3, File)
	Overlay(&lower, &upper)
	if lower.Opt == nil || lower.Opt.TopK.Get() != 3 {
		t.Errorf("overlay did not create opt: %+v", lower.Opt)
	}
	if n := len(Fields(&lower)); n != 11 {
		t.Errorf("%d fields with opt, want 11", n)
	}
}

func TestMarkdownListsEveryDeclaration(t *testing.T) {
	var s spec
	md := Markdown(&s, "x.")
	for _, w := range []string{"| `x.group_size` | `--group-size` | int | `8` | samples per prompt |", "| `x.timeout` |  | duration | `10m` | how long |", "| `x.sampling.stop` | `--stop` | strings | — | stop strings |"} {
		if !strings.Contains(md, w) {
			t.Errorf("table lacks %q:\n%s", w, md)
		}
	}
}

// A spec written as JSON holds the values, and reads back with each value
// set by a file; an unset value is left out with omitempty.
func TestJSONRoundTrip(t *testing.T) {
	type small struct {
		N Value[int]           `json:"n,omitzero"`
		D Value[time.Duration] `json:"d,omitzero"`
		S Value[[]string]      `json:"s,omitzero"`
		U Value[string]        `json:"u,omitzero"`
	}
	in := small{N: Of(0), D: Of(90 * time.Second), S: Of([]string{"a"})}
	data, err := json.Marshal(in)
	if err != nil || string(data) != `{"n":0,"d":90000000000,"s":["a"]}` {
		t.Fatalf("marshal: %s, %v", data, err)
	}
	var out small
	if err := json.Unmarshal([]byte(`{"n":0,"d":"1m","s":["a"],"u":null}`), &out); err != nil {
		t.Fatal(err)
	}
	if !out.N.IsSet() || out.N.Source() != File || out.D.Get() != time.Minute || out.U.IsSet() {
		t.Errorf("unmarshal: %+v", out)
	}
}
