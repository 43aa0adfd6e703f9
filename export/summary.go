package export

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/toolrl/toolrl/traj"
)

// Summary accumulates the statistics `toolrl inspect` prints: counts, token
// totals, rewards and their parts, tool-call rates and, for advantage
// records, advantage and KL moments. The zero value is not ready: use
// NewSummary. It keeps one float64 per record (for the reward quantiles and
// histogram) and one string per group.
type Summary struct {
	Kind    Kind  // what the records are
	Records int64 // records added
	groups  map[string]struct{}

	PromptTokens   int64
	ResponseTokens int64
	PolicyTokens   int64 // response tokens with loss mask 1
	InjectedTokens int64 // response tokens with loss mask 0

	MinPolicyVersion, MaxPolicyVersion int64            // range of policy_version
	FinishReasons                      map[string]int64 // trajectories only: count per finish_reason

	rewards []float64
	parts   map[string]*partStats

	ModelTurns      int64 // assistant turns (steps): a turn of N parallel calls is N model segments
	Calls           int64 // calls: model segments that ended in one
	ParseErrors     int64 // calls that did not parse or validate
	RecordsWithCall int64
	ToolResults     int64 // tool segments
	ToolOK          int64
	ToolTruncated   int64
	ErrorClasses    map[string]int64 // failed tool results per error class
	Faults          map[string]int64 // tool results per injected fault (tools.yaml faults:)
	latencySum      float64
	SegmentsMissing int64 // records without segments (no call statistics)

	// Advantage records only.
	advantageSum, advantageSq float64
	AdvantageTokens           int64
	klSum                     float64
	KLTokens                  int64
	ZeroVariance, Stale       int64 // records flagged zero_variance, stale
}

type partStats struct {
	n   int64
	sum float64
}

// NewSummary returns an empty summary for records of kind.
func NewSummary(kind Kind) *Summary {
	return &Summary{
		Kind: kind, groups: map[string]struct{}{}, FinishReasons: map[string]int64{},
		parts: map[string]*partStats{}, ErrorClasses: map[string]int64{}, Faults: map[string]int64{},
		MinPolicyVersion: math.MaxInt64, MaxPolicyVersion: math.MinInt64,
	}
}

// Groups is the number of distinct group ids seen.
func (s *Summary) Groups() int { return len(s.groups) }

// RewardParts returns the reward part names seen, sorted.
func (s *Summary) RewardParts() []string {
	names := make([]string, 0, len(s.parts))
	for name := range s.parts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// AddTrajectory counts one trajectory.
func (s *Summary) AddTrajectory(t *traj.Trajectory) {
	s.add(t.GroupID, t.PolicyVersion, t.PromptLen, t.LossMask, t.Reward, t.Segments)
	s.FinishReasons[string(t.FinishReason)]++
}

// AddAdvantage counts one advantage record.
func (s *Summary) AddAdvantage(a *traj.AdvantageRecord) {
	s.add(a.GroupID, a.PolicyVersion, a.PromptLen, a.LossMask, a.Reward, a.Segments)
	for i, adv := range a.Advantages {
		if a.LossMask[i] == 1 {
			s.advantageSum += float64(adv)
			s.advantageSq += float64(adv) * float64(adv)
			s.AdvantageTokens++
		}
	}
	for i, k := range a.KL {
		if a.LossMask[i] == 1 {
			s.klSum += float64(k)
			s.KLTokens++
		}
	}
	if a.ZeroVariance {
		s.ZeroVariance++
	}
	if a.Stale {
		s.Stale++
	}
}

func (s *Summary) add(group string, version int64, promptLen int, mask traj.Mask, r traj.Reward, segs []traj.Segment) {
	s.Records++
	s.groups[group] = struct{}{}
	s.MinPolicyVersion = min(s.MinPolicyVersion, version)
	s.MaxPolicyVersion = max(s.MaxPolicyVersion, version)
	s.PromptTokens += int64(promptLen)
	s.ResponseTokens += int64(len(mask))
	for _, m := range mask {
		if m == 1 {
			s.PolicyTokens++
		}
	}
	s.InjectedTokens = s.ResponseTokens - s.PolicyTokens
	s.rewards = append(s.rewards, r.Total)
	for name, v := range r.Parts {
		p := s.parts[name]
		if p == nil {
			p = &partStats{}
			s.parts[name] = p
		}
		p.n++
		p.sum += v
	}
	if segs == nil && len(mask) > 0 {
		s.SegmentsMissing++
		return
	}
	called := false
	for i, seg := range segs {
		switch seg.Kind {
		case traj.SegmentModel:
			if i == 0 || segs[i-1].Turn != seg.Turn || segs[i-1].Kind == traj.SegmentTool {
				s.ModelTurns++ // a turn begins (traj.Trajectory.Steps)
			}
			if seg.Call != nil {
				s.Calls++
				called = true
				if seg.Call.ParseError != "" {
					s.ParseErrors++
				}
			}
		case traj.SegmentTool:
			s.ToolResults++
			if res := seg.Result; res != nil {
				if res.OK {
					s.ToolOK++
				} else {
					s.ErrorClasses[res.ErrorClass]++
				}
				if res.Truncated {
					s.ToolTruncated++
				}
				if res.Fault != "" {
					s.Faults[res.Fault]++
				}
				s.latencySum += res.LatencyMS
			}
		}
	}
	if called {
		s.RecordsWithCall++
	}
}

// RewardStats are the moments and quantiles of the total rewards.
type RewardStats struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
	Min  float64 `json:"min"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	Max  float64 `json:"max"`
}

// Rewards returns the statistics of the total rewards (zero when empty).
func (s *Summary) Rewards() RewardStats {
	n := len(s.rewards)
	if n == 0 {
		return RewardStats{}
	}
	sorted := slices.Clone(s.rewards)
	slices.Sort(sorted)
	var sum, sq float64
	for _, r := range sorted {
		sum += r
	}
	mean := sum / float64(n)
	for _, r := range sorted {
		sq += (r - mean) * (r - mean)
	}
	q := func(p float64) float64 { return sorted[int(math.Round(p*float64(n-1)))] }
	return RewardStats{Mean: mean, Std: math.Sqrt(sq / float64(n)), Min: sorted[0], P50: q(0.5), P90: q(0.9), Max: sorted[n-1]}
}

// HistogramBin is one bin of the reward histogram: [Lo, Hi), the last bin
// closed.
type HistogramBin struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int64   `json:"count"`
}

// Histogram bins the total rewards into bins equal-width bins between their
// minimum and maximum (one bin when they are all equal).
func (s *Summary) Histogram(bins int) []HistogramBin {
	if len(s.rewards) == 0 || bins < 1 {
		return nil
	}
	lo, hi := slices.Min(s.rewards), slices.Max(s.rewards)
	if lo == hi {
		return []HistogramBin{{Lo: lo, Hi: hi, Count: int64(len(s.rewards))}}
	}
	width := (hi - lo) / float64(bins)
	out := make([]HistogramBin, bins)
	for i := range out {
		out[i] = HistogramBin{Lo: lo + float64(i)*width, Hi: lo + float64(i+1)*width}
	}
	out[bins-1].Hi = hi
	for _, r := range s.rewards {
		i := min(int((r-lo)/width), bins-1)
		out[i].Count++
	}
	return out
}

func ratio(a, b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}

// WriteText prints the summary for a person, with a text histogram of the
// total rewards in bins bins, bars at most width characters wide.
func (s *Summary) WriteText(w io.Writer, bins, width int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "records          %d %s in %d groups\n", s.Records, s.Kind, s.Groups())
	if s.Records == 0 {
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "policy versions  %d..%d\n", s.MinPolicyVersion, s.MaxPolicyVersion)
	fmt.Fprintf(&b, "tokens           prompt %d, response %d (policy %d, injected %d), mean response %.1f\n",
		s.PromptTokens, s.ResponseTokens, s.PolicyTokens, s.InjectedTokens, float64(s.ResponseTokens)/float64(s.Records))
	if len(s.FinishReasons) > 0 {
		fmt.Fprintf(&b, "finish reasons   %s\n", countsLine(s.FinishReasons))
	}
	r := s.Rewards()
	fmt.Fprintf(&b, "reward           mean %.4g  std %.4g  min %.4g  p50 %.4g  p90 %.4g  max %.4g\n", r.Mean, r.Std, r.Min, r.P50, r.P90, r.Max)
	for _, name := range s.RewardParts() {
		p := s.parts[name]
		fmt.Fprintf(&b, "  %-14s mean %.4g over %d records (%.1f%%)\n", name, p.sum/float64(p.n), p.n, 100*float64(p.n)/float64(s.Records))
	}
	if s.SegmentsMissing == s.Records {
		fmt.Fprintf(&b, "tool calls       no segments in these records\n")
	} else {
		fmt.Fprintf(&b, "tool calls       %d in %d model turns: %s per record, %s per turn; %s of records call\n",
			s.Calls, s.ModelTurns, ratio(s.Calls, s.Records-s.SegmentsMissing), ratio(s.Calls, s.ModelTurns), ratio(s.RecordsWithCall, s.Records-s.SegmentsMissing))
		fmt.Fprintf(&b, "                 parse errors %d (%s of calls); results %d, ok %s, truncated %d",
			s.ParseErrors, ratio(s.ParseErrors, s.Calls), s.ToolResults, ratio(s.ToolOK, s.ToolResults), s.ToolTruncated)
		if s.ToolResults > 0 {
			fmt.Fprintf(&b, ", mean latency %.3g ms", s.latencySum/float64(s.ToolResults))
		}
		b.WriteString("\n")
		if len(s.ErrorClasses) > 0 {
			fmt.Fprintf(&b, "                 errors: %s\n", countsLine(s.ErrorClasses))
		}
		if len(s.Faults) > 0 {
			fmt.Fprintf(&b, "                 injected faults: %s\n", countsLine(s.Faults))
		}
	}
	if s.Kind == Advantages {
		if s.AdvantageTokens > 0 {
			mean := s.advantageSum / float64(s.AdvantageTokens)
			std := math.Sqrt(max(0, s.advantageSq/float64(s.AdvantageTokens)-mean*mean))
			fmt.Fprintf(&b, "advantages       mean %.4g  std %.4g over %d policy tokens\n", mean, std, s.AdvantageTokens)
		}
		if s.KLTokens > 0 {
			fmt.Fprintf(&b, "kl               mean %.4g over %d policy tokens\n", s.klSum/float64(s.KLTokens), s.KLTokens)
		}
		fmt.Fprintf(&b, "zero variance    %d records; stale %d records\n", s.ZeroVariance, s.Stale)
	}
	hist := s.Histogram(bins)
	var peak int64
	for _, h := range hist {
		peak = max(peak, h.Count)
	}
	b.WriteString("reward histogram\n")
	for i, h := range hist {
		bar := int(math.Round(float64(width) * float64(h.Count) / float64(peak)))
		closing := ")"
		if i == len(hist)-1 {
			closing = "]"
		}
		fmt.Fprintf(&b, "  [%9.4g, %9.4g%s %6d %s\n", h.Lo, h.Hi, closing, h.Count, strings.Repeat("#", bar))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func countsLine(counts map[string]int64) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return int(counts[b] - counts[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s %d", name, counts[k])
	}
	return strings.Join(parts, ", ")
}

// SummaryReport is the summary as data, for `toolrl inspect --json`.
type SummaryReport struct {
	Kind             string             `json:"kind"`
	Records          int64              `json:"records"`
	Groups           int                `json:"groups"`
	PromptTokens     int64              `json:"prompt_tokens"`
	ResponseTokens   int64              `json:"response_tokens"`
	PolicyTokens     int64              `json:"policy_tokens"`
	InjectedTokens   int64              `json:"injected_tokens"`
	MinPolicyVersion int64              `json:"min_policy_version"`
	MaxPolicyVersion int64              `json:"max_policy_version"`
	FinishReasons    map[string]int64   `json:"finish_reasons,omitempty"`
	Reward           RewardStats        `json:"reward"`
	RewardParts      map[string]float64 `json:"reward_part_means,omitempty"`
	Calls            int64              `json:"calls"`
	ModelTurns       int64              `json:"model_turns"`
	ParseErrors      int64              `json:"parse_errors"`
	RecordsWithCall  int64              `json:"records_with_call"`
	ToolResults      int64              `json:"tool_results"`
	ToolOK           int64              `json:"tool_ok"`
	ToolTruncated    int64              `json:"tool_truncated"`
	ErrorClasses     map[string]int64   `json:"error_classes,omitempty"`
	Faults           map[string]int64   `json:"faults,omitempty"`
	AdvantageMean    *float64           `json:"advantage_mean,omitempty"`
	AdvantageStd     *float64           `json:"advantage_std,omitempty"`
	KLMean           *float64           `json:"kl_mean,omitempty"`
	ZeroVariance     int64              `json:"zero_variance"`
	Stale            int64              `json:"stale"`
	Histogram        []HistogramBin     `json:"reward_histogram"`
}

// Report returns the summary as data, with a reward histogram of bins bins.
func (s *Summary) Report(bins int) SummaryReport {
	r := SummaryReport{
		Kind: s.Kind.String(), Records: s.Records, Groups: s.Groups(),
		PromptTokens: s.PromptTokens, ResponseTokens: s.ResponseTokens, PolicyTokens: s.PolicyTokens, InjectedTokens: s.InjectedTokens,
		FinishReasons: s.FinishReasons, Reward: s.Rewards(),
		Calls: s.Calls, ModelTurns: s.ModelTurns, ParseErrors: s.ParseErrors, RecordsWithCall: s.RecordsWithCall,
		ToolResults: s.ToolResults, ToolOK: s.ToolOK, ToolTruncated: s.ToolTruncated, ErrorClasses: s.ErrorClasses, Faults: s.Faults,
		ZeroVariance: s.ZeroVariance, Stale: s.Stale, Histogram: s.Histogram(bins),
	}
	if s.Records > 0 {
		r.MinPolicyVersion, r.MaxPolicyVersion = s.MinPolicyVersion, s.MaxPolicyVersion
	}
	if len(s.parts) > 0 {
		r.RewardParts = make(map[string]float64, len(s.parts))
		for name, p := range s.parts {
			r.RewardParts[name] = p.sum / float64(p.n)
		}
	}
	if s.AdvantageTokens > 0 {
		mean := s.advantageSum / float64(s.AdvantageTokens)
		std := math.Sqrt(max(0, s.advantageSq/float64(s.AdvantageTokens)-mean*mean))
		r.AdvantageMean, r.AdvantageStd = &mean, &std
	}
	if s.KLTokens > 0 {
		kl := s.klSum / float64(s.KLTokens)
		r.KLMean = &kl
	}
	return r
}
