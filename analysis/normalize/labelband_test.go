package normalize

import (
	"reflect"
	"testing"
)

func TestLabelBand(t *testing.T) {
	for _, tc := range []struct {
		label  string
		prompt int64
		want   string
	}{
		{"chat", 1500, "chat, prompt 1k-2k"},
		{"chat", 100, "chat, prompt <512"},
		{"chat", 20000, "chat, prompt >=16k"},
		{"chat", -1, "chat"},
		{"a, b", 600, "a, b, prompt 512-1k"},
	} {
		got := LabelBand(tc.label, tc.prompt)
		if got != tc.want {
			t.Errorf("LabelBand(%q, %d) = %q, want %q", tc.label, tc.prompt, got, tc.want)
		}
		if l, _ := SplitLabelBand(got); l != tc.label {
			t.Errorf("SplitLabelBand(%q) label %q, want %q", got, l, tc.label)
		}
	}
	for in, want := range map[string]string{
		"chat, prompt 1k-2k × default": "chat × default",
		"chat, prompt 1k-2k":           "chat",
		"prompt 1k-2k × default":       "prompt 1k-2k × default",
		"a, b × long":                  "a, b × long",
		"chat":                         "chat",
	} {
		if got := WithoutLabelBand(in); got != want {
			t.Errorf("WithoutLabelBand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStrataMerge(t *testing.T) {
	s := Strata{
		Names: []string{"a, prompt <512", "a, prompt 512-1k", "b", "prompt unknown"},
		Num:   [][]float64{{1, 2}, {3, 4}, {5, 6}, {7, 8}},
		Den:   [][]float64{{10, 20}, {30, 40}, {50, 60}, {70, 80}},
		Own:   []bool{false, false, false, true},
	}
	got := s.Merge(func(n string) string { l, _ := SplitLabelBand(n); return l })
	want := Strata{
		Names: []string{"a", "b", "prompt unknown"},
		Num:   [][]float64{{4, 6}, {5, 6}, {7, 8}},
		Den:   [][]float64{{40, 60}, {50, 60}, {70, 80}},
		Own:   []bool{false, false, true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
}
