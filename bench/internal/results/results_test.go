package results

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestStatOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Stat
		ok   bool
	}{
		{nil, Stat{}, false},
		{[]float64{7}, Stat{7, 7, 7, 1}, true},
		{[]float64{5, 1, 3}, Stat{3, 1, 5, 3}, true},
		{[]float64{4, 1, 8, 2}, Stat{3, 1, 8, 4}, true}, // even: the mean of the middle two
	} {
		got, ok := StatOf(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("StatOf(%v) = %+v %v, want %+v %v", c.in, got, ok, c.want, c.ok)
		}
	}
	in := []float64{3, 1, 2}
	StatOf(in)
	if !reflect.DeepEqual(in, []float64{3, 1, 2}) {
		t.Errorf("StatOf sorted its argument: %v", in)
	}
}

func TestSizeName(t *testing.T) {
	for n, want := range map[int]string{0: "0", 500: "500", 1500: "1500", 10000: "10k", 2500000: "2500k", 1000000: "1M"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestAddRoundTrip: samples added in a zero Results come back from the JSON
// in order, under the keys the runner and the plotter both use.
func TestAddRoundTrip(t *testing.T) {
	var r Results
	r.Impls = []Impl{{ID: "a", Key: "cabi", Name: "convcache C ABI", Persistent: true, Ours: true}}
	r.Add("hit1_ns/10000", "a", 40)
	r.Add("hit1_ns/10000", "a", 38)
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("round trip: %+v, want %+v", back, r)
	}
	if s, ok := back.Stat("hit1_ns/10000", "a"); !ok || s != (Stat{39, 38, 40, 2}) {
		t.Errorf("Stat = %+v %v, want median 39 of 38..40 over 2", s, ok)
	}
}
