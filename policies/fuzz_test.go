package policies

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary YAML as a policy file. It must never panic;
// errors name the file; an accepted policy validates (bucket within
// 1 s … 10 min, at least one gate).
func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		b, ok := BuiltinText(n)
		if !ok {
			f.Fatalf("no text for built-in %s", n)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"name: p\nslo: {ttft: 1s, tpot: 80ms}\nwindow: {warmup: auto, bucket: 10s, implausible: drop}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n",
		"name: p\nslo: {ttft: 1 second}\n",
		"&a [*a]",
		"a: &x {b: *x}",
		"name: p\nclasses:\n  - {name: long, when: {prompt_tokens: {min: 8192}}, slo: {ttft: 5s}}\ngates: [{metric: ttft_p99, margin: 10%}]\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("p.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "p.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if b := p.Window.Bucket.Seconds(); b < 1 || b > 600 {
			t.Fatalf("accepted bucket %v", b)
		}
	})
}

// TestPolicySizeCap (hardening item 6): a policy path that is not a page
// of YAML (/dev/zero given by mistake) is refused after 1 MiB, not read
// until memory runs out.
func TestPolicySizeCap(t *testing.T) {
	_, err := Load("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "larger than 1024 KiB") {
		t.Errorf("got %v, want the size cap", err)
	}
}
