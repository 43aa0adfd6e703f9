package actor

import (
	"fmt"
	"regexp"
	"strconv"

	ortgo "github.com/yalue/onnxruntime_go"
)

// Names of the optimum text-generation-with-past layout.
const (
	inputIDsName       = "input_ids"
	attentionMaskName  = "attention_mask"
	positionIDsName    = "position_ids"
	useCacheBranchName = "use_cache_branch"
	logitsName         = "logits"
)

var (
	pastRE    = regexp.MustCompile(`^past_key_values\.(\d+)\.(key|value)$`)
	presentRE = regexp.MustCompile(`^present\.(\d+)\.(key|value)$`)
)

// ioLayout is what the actor learned about a model's inputs and outputs.
// Inputs are fed in the order input_ids, attention_mask, position_ids,
// past key/value per layer, [use_cache_branch]; outputs are logits then
// present key/value per layer.
type ioLayout struct {
	inputNames, outputNames []string
	layers                  int
	kvHeads, headDim        int
	vocab                   int
	kvType                  ortgo.TensorElementDataType
	kvElem                  int // bytes per cache element
	logitsType              ortgo.TensorElementDataType
	hasPositionIDs          bool
	hasUseCacheBranch       bool
	// fused: the graph attends with GroupQueryAttention over a shared
	// key/value buffer (toolrl model build --fused, onnxruntime-genai's
	// layout): no position_ids, rows right-aligned, past and present bound
	// to one buffer [B, kvH, capacity, D] per layer (see fusedengine.go).
	fused bool
}

func elemSize(t ortgo.TensorElementDataType) int {
	switch t {
	case ortgo.TensorElementDataTypeFloat:
		return 4
	case ortgo.TensorElementDataTypeFloat16:
		return 2
	}
	return 0
}

// discoverIO checks a model's inputs and outputs against the layout:
// optimum's, or the fused one when the graph has a GroupQueryAttention node
// (fused).
func discoverIO(ins, outs []ortgo.InputOutputInfo, fused bool) (ioLayout, error) {
	l := ioLayout{fused: fused}
	type kv struct{ key, value *ortgo.InputOutputInfo }
	past := map[int]*kv{}
	seen := map[string]bool{}
	wantType := func(info ortgo.InputOutputInfo, want ortgo.TensorElementDataType, what string) error {
		if info.OrtValueType != ortgo.ONNXTypeTensor || info.DataType != want {
			return fmt.Errorf("%s %q is %s, want a %s tensor", what, info.Name, info.DataType, ortgo.TensorElementDataType(want))
		}
		return nil
	}
	for i := range ins {
		info := ins[i]
		seen[info.Name] = true
		switch {
		case info.Name == inputIDsName || info.Name == attentionMaskName:
			if err := wantType(info, ortgo.TensorElementDataTypeInt64, "input"); err != nil {
				return l, err
			}
		case info.Name == positionIDsName:
			if err := wantType(info, ortgo.TensorElementDataTypeInt64, "input"); err != nil {
				return l, err
			}
			l.hasPositionIDs = true
		case info.Name == useCacheBranchName:
			if err := wantType(info, ortgo.TensorElementDataTypeBool, "input"); err != nil {
				return l, err
			}
			l.hasUseCacheBranch = true
		case pastRE.MatchString(info.Name):
			m := pastRE.FindStringSubmatch(info.Name)
			n, _ := strconv.Atoi(m[1])
			if past[n] == nil {
				past[n] = &kv{}
			}
			if m[2] == "key" {
				past[n].key = &ins[i]
			} else {
				past[n].value = &ins[i]
			}
		default:
			return l, fmt.Errorf("input %q is not one the actor feeds (want input_ids, attention_mask, position_ids, past_key_values.N.key|value, use_cache_branch)", info.Name)
		}
	}
	for _, name := range []string{inputIDsName, attentionMaskName} {
		if !seen[name] {
			return l, fmt.Errorf("input %q is missing", name)
		}
	}
	if fused && (l.hasPositionIDs || l.hasUseCacheBranch) {
		// GroupQueryAttention takes positions from each row's length; a
		// position_ids input would belong to a rotary embedding outside it.
		return l, fmt.Errorf("the graph attends with GroupQueryAttention but has input %q: the actor runs fused graphs with inputs input_ids, attention_mask and past_key_values.N.key|value (toolrl model build --fused)",
			map[bool]string{true: positionIDsName, false: useCacheBranchName}[l.hasPositionIDs])
	}
	if !l.hasPositionIDs && !fused {
		// Batches are left-padded and resumed rows have holes in their
		// masks: a model that derives positions from the cache length would
		// silently compute wrong logprobs.
		return l, fmt.Errorf("input %q is missing: the actor batches left-padded sequences and must give each token its position (optimum exports position_ids for Llama, Qwen2, Mistral, Phi and Gemma)", positionIDsName)
	}
	l.layers = len(past)
	if l.layers == 0 {
		return l, fmt.Errorf("input past_key_values.0.key is missing: the model has no key/value cache inputs (export it with --task text-generation-with-past)")
	}
	l.inputNames = []string{inputIDsName, attentionMaskName}
	if l.hasPositionIDs {
		l.inputNames = append(l.inputNames, positionIDsName)
	}
	for i := 0; i < l.layers; i++ {
		p := past[i]
		if p == nil || p.key == nil || p.value == nil {
			return l, fmt.Errorf("input past_key_values.%d.key/value is missing (the model has %d cache layers)", i, l.layers)
		}
		for _, info := range []*ortgo.InputOutputInfo{p.key, p.value} {
			if info.OrtValueType != ortgo.ONNXTypeTensor || elemSize(info.DataType) == 0 {
				return l, fmt.Errorf("input %q is %s, want a float32 or float16 tensor", info.Name, info.DataType)
			}
			if l.kvType == 0 {
				l.kvType = info.DataType
			} else if info.DataType != l.kvType {
				return l, fmt.Errorf("input %q is %s but earlier cache inputs are %s", info.Name, info.DataType, l.kvType)
			}
			d := info.Dimensions
			if len(d) != 4 || d[1] <= 0 || d[3] <= 0 {
				return l, fmt.Errorf("input %q has shape %v, want [batch, kv_heads, past, head_dim] with fixed kv_heads and head_dim", info.Name, d)
			}
			if l.kvHeads == 0 {
				l.kvHeads, l.headDim = int(d[1]), int(d[3])
			} else if int(d[1]) != l.kvHeads || int(d[3]) != l.headDim {
				return l, fmt.Errorf("input %q has shape %v, unlike past_key_values.0.key", info.Name, d)
			}
		}
		l.inputNames = append(l.inputNames, p.key.Name, p.value.Name)
	}
	if l.hasUseCacheBranch {
		l.inputNames = append(l.inputNames, useCacheBranchName)
	}
	l.kvElem = elemSize(l.kvType)

	present := map[string]bool{}
	for _, info := range outs {
		switch {
		case info.Name == logitsName:
			if info.OrtValueType != ortgo.ONNXTypeTensor || elemSize(info.DataType) == 0 {
				return l, fmt.Errorf("output %q is %s, want a float32 or float16 tensor", info.Name, info.DataType)
			}
			d := info.Dimensions
			if len(d) != 3 || d[2] <= 0 {
				return l, fmt.Errorf("output %q has shape %v, want [batch, seq, vocab] with a fixed vocab", info.Name, d)
			}
			l.logitsType, l.vocab = info.DataType, int(d[2])
		case presentRE.MatchString(info.Name):
			if info.DataType != l.kvType {
				return l, fmt.Errorf("output %q is %s, want %s like the cache inputs", info.Name, info.DataType, l.kvType)
			}
			present[info.Name] = true
		}
	}
	if l.vocab == 0 {
		return l, fmt.Errorf("output %q is missing", logitsName)
	}
	l.outputNames = []string{logitsName}
	for i := 0; i < l.layers; i++ {
		for _, kind := range []string{"key", "value"} {
			name := fmt.Sprintf("present.%d.%s", i, kind)
			if !present[name] {
				return l, fmt.Errorf("output %q is missing", name)
			}
			l.outputNames = append(l.outputNames, name)
		}
	}
	return l, nil
}
