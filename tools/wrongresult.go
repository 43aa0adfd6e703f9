package tools

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/toolrl/toolrl/tools/search"
)

// The plausible wrong results of implicit faults (Faults.ImplicitRate):
// answers that read like the tool's own and are wrong, so that only a
// policy that checks can tell (ToolMaze's silent failures).

// calculatorNudges are the offsets, in units of the result's last written
// digit, that an implicit fault adds to a calculator result.
var calculatorNudges = [...]int64{-3, -2, -1, 1, 2, 3}

// wrongResult makes a nearby number: the true result plus an offset drawn
// uniformly from ±1, ±2, ±3 units of its last written digit (408 → 405..411
// but not 408; 2.75 → 2.72..2.78; -1 → -4..2), printed as the calculator
// prints (trailing fractional zeros dropped: 2.5 - 0.5 → 2). Always wrong,
// always a number of the same form.
func (c *calculatorTool) wrongResult(_ json.RawMessage, right Result, rng *faultRNG) (Result, bool) {
	wrong, ok := nudgeNumber(right.Content, calculatorNudges[rng.intn(len(calculatorNudges))])
	if !ok {
		return Result{}, false
	}
	return Result{Content: wrong}, true
}

// nudgeNumber adds d units of the last written digit to the decimal s
// ("-12.345": units of 0.001). ok is false when s is not a plain decimal.
func nudgeNumber(s string, d int64) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	intPart, frac, hasPoint := strings.Cut(body, ".")
	if intPart == "" || hasPoint && frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", false
	}
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return "", false
	}
	if neg {
		v.Neg(v)
	}
	v.Add(v, big.NewInt(d))
	out := v.String()
	sign := ""
	if strings.HasPrefix(out, "-") {
		sign, out = "-", out[1:]
	}
	if scale := len(frac); scale > 0 {
		if len(out) <= scale {
			out = strings.Repeat("0", scale-len(out)+1) + out
		}
		out = strings.TrimRight(out[:len(out)-scale]+"."+out[len(out)-scale:], "0")
		out = strings.TrimSuffix(out, ".")
	}
	if out == "0" {
		sign = ""
	}
	return sign + out, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// wrongResult returns other passages of the corpus: as many as the true
// search returned (one when it found none), drawn uniformly without
// replacement from the documents it did not return, in the tool's own
// format. ok is false when the corpus holds no other document.
func (s *searchTool) wrongResult(args json.RawMessage, _ Result, rng *faultRNG) (Result, bool) {
	var a struct {
		Query string `json:"query"`
		K     int    `json:"k"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return Result{}, false
	}
	right := s.ix.Search(a.Query, a.K)
	taken := make(map[string]bool, len(right))
	for _, h := range right {
		taken[h.Doc.ID] = true
	}
	// Documents are told apart by index; a hit's index is found by its id.
	excluded := map[int]bool{}
	for i := 0; i < s.ix.Len() && len(excluded) < len(right); i++ {
		if taken[s.ix.Doc(i).ID] {
			excluded[i] = true
		}
	}
	others := s.ix.Len() - len(excluded)
	n := min(max(len(right), 1), others)
	if n <= 0 {
		return Result{}, false
	}
	hits := make([]search.Hit, 0, n)
	for len(hits) < n {
		i := rng.intn(s.ix.Len())
		if excluded[i] {
			continue
		}
		excluded[i] = true
		hits = append(hits, search.Hit{Doc: s.ix.Doc(i)})
	}
	return Result{Content: s.ix.Format(hits)}, true
}
