package results

import (
	"fmt"
	"slices"
)

// Impl is one implementation compared: its id in the table (a..e), the
// suffix of its worker binary (bench_<key>) and its column title.
type Impl struct {
	ID         string `json:"id"`
	Key        string `json:"key"`
	Name       string `json:"name"`
	Persistent bool   `json:"persistent"`
	Ours       bool   `json:"ours"` // convcache itself, not a baseline
}

// Results is the whole of results.json.
type Results struct {
	Date        string                          `json:"date"`
	Machine     string                          `json:"machine"`
	Command     string                          `json:"command"`
	Reps        int                             `json:"reps"`
	RepsLarge   int                             `json:"reps_large"`
	Sizes       []int                           `json:"sizes"`
	LoadSizes   []int                           `json:"load_sizes,omitempty"` // the load rows' stores: a 1-entry one and Sizes
	Writers     []int                           `json:"writers"`
	PerWriter   int                             `json:"per_writer"`
	HitMillis   int                             `json:"hit_ms"`
	Impls       []Impl                          `json:"impls"`
	Samples     map[string]map[string][]float64 `json:"samples"` // metric -> impl id -> samples
	Notes       []string                        `json:"notes"`
	LoadAvg     [2]string                       `json:"load_average"` // at the start and the end
	WallSeconds float64                         `json:"wall_seconds"`
}

// Add records one repeat's sample of metric for implementation id.
func (r *Results) Add(metric, id string, v float64) {
	if r.Samples == nil {
		r.Samples = map[string]map[string][]float64{}
	}
	m := r.Samples[metric]
	if m == nil {
		m = map[string][]float64{}
		r.Samples[metric] = m
	}
	m[id] = append(m[id], v)
}

// Stat is a metric's median and range over its N repeats.
type Stat struct {
	Med, Min, Max float64
	N             int
}

// StatOf summarises samples; ok is false when there are none.
func StatOf(v []float64) (s Stat, ok bool) {
	if len(v) == 0 {
		return Stat{}, false
	}
	sorted := slices.Clone(v)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return Stat{med, sorted[0], sorted[len(sorted)-1], len(sorted)}, true
}

// Stat summarises metric's samples for implementation id.
func (r *Results) Stat(metric, id string) (Stat, bool) {
	return StatOf(r.Samples[metric][id])
}

// LoadSizesOrSizes is the store sizes of the load rows: LoadSizes, or
// Sizes in a results file written before LoadSizes existed.
func (r *Results) LoadSizesOrSizes() []int {
	if len(r.LoadSizes) > 0 {
		return r.LoadSizes
	}
	return r.Sizes
}

// SizeName is an entry count as the table and the charts write it: 10k, 1M.
func SizeName(n int) string {
	switch {
	case n >= 1000000 && n%1000000 == 0:
		return fmt.Sprintf("%dM", n/1000000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}
