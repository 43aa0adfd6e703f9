package learner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/safetensors"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
)

// StateFile holds the optimiser's moments in a published version (AdamW m
// and v of every parameter, as "m.NAME" and "v.NAME", float32 whatever the
// learner's precision), so that a resumed learner continues the same
// optimisation.
const StateFile = "learner_state.safetensors"

// StateSchema names the learner's part of a version's manifest meta.
const StateSchema = "toolrl.learner/v1"

// State is the learner's meta in a published version's manifest.
type State struct {
	Schema string `json:"schema"`
	// Version is the policy version these weights are.
	Version int64 `json:"version"`
	// Steps and Updates count optimiser steps and trained batches so far.
	Steps   int   `json:"optimizer_steps"`
	Updates int64 `json:"updates"`
	// Consumed lists the Redis stream entry ids of the records trained on
	// since the previous version: a learner restarted after this version was
	// published acknowledges them instead of training on them again.
	Consumed []string `json:"consumed,omitempty"`
	// Records counts the records trained on since the previous version.
	Records int `json:"records"`
	// Base is the model folder version 0 came from.
	Base string `json:"base,omitempty"`
	// Iteration is the training loop's iteration that published this
	// version (toolrl train); 0 outside a loop.
	Iteration int `json:"iteration,omitempty"`
	// RolloutQuantization names the quantization of the version's copy for
	// actors in policystore.QuantizedForm (e.g. "int8-b32-acc4"); empty when
	// the version has only its float32 form.
	RolloutQuantization string `json:"rollout_quantization,omitempty"`
	// Precision is the learner's (train.Precision; empty: float32). The
	// weights and moments are written as float32 in either; a learner of
	// either precision resumes from them.
	Precision string `json:"precision,omitempty"`
}

// Base is the model folder a learner started from: its config and the files
// every published version carries unchanged (tokenizer, prompt format,
// tools, ...).
type Base struct {
	Dir    string
	Config llama.Config
	// Files are the folder's top-level files other than the config, the
	// weights and the ONNX graph, by name.
	Files map[string][]byte
	// RolloutQuantization, when enabled, makes every published version also
	// hold a quantized copy of its weights for actors, in the version's
	// policystore.QuantizedForm folder (see WriteQuantized). The learner
	// itself always trains and resumes from the float32 weights.
	RolloutQuantization llama.Quantization
}

// ReadBase reads the files a published version copies from dir.
func ReadBase(dir string, cfg llama.Config) (Base, error) {
	b := Base{Dir: dir, Config: cfg, Files: map[string][]byte{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Base{}, fmt.Errorf("read model folder %s: %w", dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || name == "config.json" || name == StateFile || name == policystore.ManifestFile ||
			strings.HasPrefix(name, "model") && strings.Contains(name, ".safetensors") || strings.HasPrefix(name, ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return Base{}, fmt.Errorf("read model folder %s: %w", dir, err)
		}
		b.Files[name] = data
	}
	return b, nil
}

// Publish writes the current weights as policy version l.Version()+1 into
// store (a complete model folder: config, tokenizer and the base's other
// files, model.safetensors, onnx/model.onnx, and the optimiser state; with
// base.RolloutQuantization also the quantized copy for actors in
// policystore.QuantizedForm), then advances the learner's version. consumed and records describe what was
// trained on since the previous version (see State).
//
// A float64 learner writes its weights and moments rounded to float32 and
// continues from the rounded values, so that every version is computed from
// exactly the previous version's files (what a resumed learner, an actor or
// another trainer reads).
func (l *Learner) Publish(ctx context.Context, store *policystore.Store, base Base, consumed []string, records int) (policystore.Version, error) {
	next := l.version + 1
	// Never a diverged policy: actors would sample garbage from it, and
	// latest would point to it.
	if err := l.checkWeights(); err != nil {
		return policystore.Version{}, fmt.Errorf("learner: publish version %d: %w", next, err)
	}
	st := State{Schema: StateSchema, Version: next, Steps: l.step, Updates: l.updates, Consumed: consumed, Records: records, Base: base.Dir, Iteration: l.iteration,
		RolloutQuantization: base.RolloutQuantization.String()}
	if p := l.model.Precision(); p != train.Float32 {
		st.Precision = string(p)
	}
	l.model.RoundTo32()
	meta, err := json.Marshal(st)
	if err != nil {
		return policystore.Version{}, fmt.Errorf("learner: publish version %d: %w", next, err)
	}
	v, err := store.Publish(ctx, next, meta, func(dir string) error { return l.writeFolder(dir, base) })
	if err != nil {
		return policystore.Version{}, fmt.Errorf("learner: publish version %d: %w", next, err)
	}
	l.version = next
	return v, nil
}

func (l *Learner) writeFolder(dir string, base Base) error {
	spec := l.folderSpec(base)
	spec.Safetensors, spec.SafetensorsDType = true, safetensors.F32
	if _, err := llama.WriteFolder(dir, spec); err != nil {
		return err
	}
	if base.RolloutQuantization.Enabled() {
		if err := l.WriteQuantized(filepath.Join(dir, policystore.QuantizedForm), base); err != nil {
			return err
		}
	}
	var tensors []safetensors.Tensor
	for _, p := range l.model.Moments() {
		shape := make([]int64, len(p.Shape))
		for i, s := range p.Shape {
			shape[i] = int64(s)
		}
		tensors = append(tensors, safetensors.Tensor{Name: "m." + p.Name, Shape: shape, Data: p.M}, safetensors.Tensor{Name: "v." + p.Name, Shape: shape, Data: p.V})
	}
	return safetensors.WriteFile(filepath.Join(dir, StateFile), tensors, safetensors.F32,
		map[string]string{"optimizer": "adamw", "optimizer_steps": strconv.Itoa(l.step)})
}

// folderSpec is the model folder of the learner's current weights: the
// base's config (float32), tokenizer and other files, an ONNX graph with
// external data when it needs it; no safetensors, no quantization.
func (l *Learner) folderSpec(base Base) llama.FolderSpec {
	cfg := base.Config
	cfg.TorchDType = "float32"
	extra := map[string][]byte{}
	for name, data := range base.Files {
		extra[name] = data
	}
	take := func(name string) []byte {
		data := extra[name]
		delete(extra, name)
		return data
	}
	return llama.FolderSpec{
		Config: cfg, Weights: l.model.LlamaWeights(), TokenizerJSON: take("tokenizer.json"), TokenizerConfig: take("tokenizer_config.json"),
		GenerationConfig: take("generation_config.json"), ExtraFiles: extra,
		ONNX: llama.ONNXOptions{External: llama.ExternalAuto},
	}
}

// ReadState returns a published version's learner state from its manifest.
func ReadState(v policystore.Version) (State, error) {
	var st State
	if len(v.Manifest.Meta) == 0 {
		return st, fmt.Errorf("policy version %d (%s): no learner state in its manifest", v.Number, v.Dir)
	}
	if err := json.Unmarshal(v.Manifest.Meta, &st); err != nil {
		return st, fmt.Errorf("policy version %d (%s): learner state: %w", v.Number, v.Dir, err)
	}
	if st.Schema != StateSchema {
		return st, fmt.Errorf("policy version %d (%s): learner state schema %q, want %q", v.Number, v.Dir, st.Schema, StateSchema)
	}
	return st, nil
}

// Resume loads a published version's weights and optimiser state into l
// (whose model must have that version's architecture) and sets its version
// and step counts.
func (l *Learner) Resume(v policystore.Version) (State, error) {
	st, err := ReadState(v)
	if err != nil {
		return st, err
	}
	m, _, err := LoadModel(v.Dir)
	if err != nil {
		return st, err
	}
	if m.Config != l.model.Arch() {
		return st, fmt.Errorf("policy version %d (%s): architecture %+v differs from the learner's %+v", v.Number, v.Dir, m.Config, l.model.Arch())
	}
	f, err := safetensors.Open(filepath.Join(v.Dir, StateFile))
	if err != nil {
		return st, fmt.Errorf("policy version %d: optimiser state: %w", v.Number, err)
	}
	defer f.Close()
	ms, vs := map[string][]float32{}, map[string][]float32{}
	for _, p := range m.Params {
		mv, err := f.Float32("m." + p.Name)
		if err != nil {
			return st, fmt.Errorf("policy version %d: optimiser state: %w", v.Number, err)
		}
		vv, err := f.Float32("v." + p.Name)
		if err != nil {
			return st, fmt.Errorf("policy version %d: optimiser state: %w", v.Number, err)
		}
		if len(mv) != len(p.M) || len(vv) != len(p.V) {
			return st, fmt.Errorf("policy version %d: optimiser state of %s has %d/%d values, want %d", v.Number, p.Name, len(mv), len(vv), len(p.M))
		}
		ms[p.Name], vs[p.Name] = mv, vv
	}
	if err := l.model.SetState(m.Weights(), ms, vs); err != nil {
		return st, fmt.Errorf("policy version %d: %w", v.Number, err)
	}
	l.version, l.step, l.updates, l.iteration = st.Version, st.Steps, st.Updates, st.Iteration
	l.batches = st.Updates
	return st, nil
}
