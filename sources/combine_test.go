package sources

import (
	"maps"
	"math"
	"strings"
	"testing"
)

func run(clock Clock, t0 float64, n int, dur float64) Dataset {
	d := Dataset{Clock: clock, Duration: dur}
	for i := 0; i < n; i++ {
		r := NewRequest()
		if clock != ClockNone {
			r.Time = t0 + float64(i)
		}
		d.Requests = append(d.Requests, r)
	}
	return d
}

func times(d Dataset) (lo, hi float64) { return span(&d) }

// TestCombine: overlapping wall-clock files are replicas over one window;
// files that follow one another, or that cannot be aligned, are runs whose
// durations add up, placed back to back.
func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    []Dataset
		duration float64
		lo, hi   float64 // combined arrival span; NaN when no times
		warn     string
	}{
		{"epoch overlap: replicas", []Dataset{run(ClockEpoch, 1000, 100, 0), run(ClockEpoch, 1050, 100, 0)}, 0, 1000, 1149, "overlap are replicas"},
		{"epoch runs an hour apart", []Dataset{run(ClockEpoch, 4600, 100, 0), run(ClockEpoch, 1000, 100, 0)}, 0, 1000, 1099 + 99, "the 3501 s between runs are left out"},
		{"epoch, one after another within ten spacings: one recording", []Dataset{run(ClockEpoch, 1100.5, 100, 0), run(ClockEpoch, 1000, 100, 0)}, 0, 1000, 1199.5, "consecutive parts of one recording"},
		{"epoch, eleven spacings apart: runs", []Dataset{run(ClockEpoch, 1110, 100, 0), run(ClockEpoch, 1000, 100, 0)}, 0, 1000, 1099 + 99, "the 11 s between runs are left out"},
		{"relative clocks: runs", []Dataset{run(ClockRelative, 5, 60, 60), run(ClockRelative, 7, 60, 60)}, 120, 0, 120, "cannot be aligned"},
		{"no times: runs, durations add", []Dataset{run(ClockNone, 0, 200, 78.9), run(ClockNone, 0, 200, 78.7)}, 157.6, math.NaN(), math.NaN(), "summed duration, 157.6 s"},
		{"no times, duration unknown", []Dataset{run(ClockNone, 0, 150, 0), run(ClockNone, 0, 150, 0)}, 0, math.NaN(), math.NaN(), "repeated runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := Combine(tc.files)
			if n := len(ds.Requests); n != len(tc.files[0].Requests)+len(tc.files[1].Requests) {
				t.Errorf("%d requests", n)
			}
			if math.Abs(ds.Duration-tc.duration) > 1e-9 {
				t.Errorf("duration %v, want %v", ds.Duration, tc.duration)
			}
			lo, hi := times(ds)
			if !(lo == tc.lo || math.IsNaN(lo) && math.IsNaN(tc.lo)) || !(hi == tc.hi || math.IsNaN(hi) && math.IsNaN(tc.hi)) {
				t.Errorf("span [%v, %v], want [%v, %v]", lo, hi, tc.lo, tc.hi)
			}
			if w := strings.Join(ds.Warnings, "\n"); !strings.Contains(w, tc.warn) {
				t.Errorf("warnings %q lack %q", w, tc.warn)
			}
		})
	}
	// the inputs are not modified
	a := run(ClockEpoch, 5000, 10, 0)
	Combine([]Dataset{run(ClockEpoch, 1000, 10, 0), a})
	if a.Requests[0].Time != 5000 {
		t.Error("Combine moved its input's times")
	}
}

// TestCombineStated: an arm's stated settings are those every file
// states alike; a setting its files disagree on is left out (that arm
// cannot be compared on it), and one only some files state too.
func TestCombineStated(t *testing.T) {
	file := func(path string, stated map[string]string) Dataset {
		return Dataset{Clock: ClockNone, Inputs: []Input{{Path: path}}, Stated: stated,
			Requests: []Request{{Time: math.NaN(), Status: StatusOK, TTFT: 0.1}}}
	}
	ds := Combine([]Dataset{
		file("a.json", map[string]string{"request_rate": "4", "burstiness": "1", "model_id": "m"}),
		file("b.json", map[string]string{"request_rate": "8", "burstiness": "1", "model_id": "m"}),
		file("c.json", map[string]string{"burstiness": "1"}),
	})
	if want := map[string]string{"burstiness": "1"}; !maps.Equal(ds.Stated, want) {
		t.Errorf("stated %v, want %v", ds.Stated, want)
	}
	if one := Combine([]Dataset{file("a.json", map[string]string{"request_rate": "4"})}); one.Stated["request_rate"] != "4" {
		t.Errorf("one file: stated %v", one.Stated)
	}
}
