package analysis

import (
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources/sim"
)

var efficiencyReplicates = flag.Int("efficiency.replicates", 2,
	"simulated runs per scenario in TestEfficiencyCalibration (docs/EVIDENCE.md uses 30)")

// efficiencyScenario is a calibration case of the energy gate.
type efficiencyScenario struct {
	name, yaml string
	builtin    string
	want       Verdict // the right answer of the energy gate
	// strict: the right answer must be given (power); otherwise only the
	// wrong decision is counted (A/A and confounders: fail is the error,
	// inconclusive is allowed)
	strict bool
	// overload: the divergence finding is right; elsewhere it is a false
	// alarm
	overload bool
}

func efficiencyScenarios() []efficiencyScenario {
	const base = "duration: 10m\ntraffic:\n  rate: 60\nfleet:\n  replicas: 4\n"
	return []efficiencyScenario{
		{name: "A/A steady", yaml: "name: aa\n" + base, want: Pass},
		{name: "A/A autocorrelated load (AR(1) σ 0.3, 3 min, drift ±15%)", builtin: "aa-autocorrelated", want: Pass},
		{name: "A/A overloaded, replica lost (seed-overload)", builtin: "seed-overload", want: Pass, overload: true},
		{name: "A/A low traffic (0.1 req/s per arm)", builtin: "low-traffic", want: Pass},
		{name: "confounder: canary gets 45% of the traffic (idle power per request differs)",
			yaml: "name: split\nduration: 10m\ntraffic:\n  rate: 60\n  canary_share: 0.45\nfleet:\n  replicas: 4\n", want: Pass},
		{name: "canary draws 10% less power", yaml: "name: down\n" + base + "canary:\n  gpu: {idle_power_w: 81, max_power_w: 630}\n", want: Pass, strict: true},
		{name: "canary draws 10% more power", yaml: "name: up\n" + base + "canary:\n  gpu: {idle_power_w: 99, max_power_w: 770}\n", want: Fail, strict: true},
	}
}

// TestEfficiencyCalibration judges seeded replicates of scenarios built to
// trouble the energy gate — autocorrelated load, an overload with a lost
// replica, an unequal traffic split whose idle power per request differs
// without any change — from the simulator's metrics alone, and reports the
// energy gate's fail / pass / inconclusive rates with Monte Carlo standard
// errors, and how often the divergence finding is named. A/A and
// confounders must fail at most 5% (+2 SE); the ±10% power cases must be
// decided right at least 90% (−2 SE); the finding must be named in at
// least 90% of the overload runs and at most 5% of the others.
//
//	go test ./analysis -run TestEfficiencyCalibration -efficiency.replicates 30 -v
func TestEfficiencyCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	n := *efficiencyReplicates
	pol := loadPolicy(t, "efficiency")
	var table []string
	for si, s := range efficiencyScenarios() {
		var sc sim.Scenario
		var err error
		if s.builtin != "" {
			sc, err = sim.Builtin(s.builtin)
			sc.Duration = 10 * time.Minute // seed-overload: the overload is minutes 6–10
		} else {
			sc, err = sim.ParseScenario(s.name, []byte(s.yaml))
		}
		if err != nil {
			t.Fatal(err)
		}
		counts := map[Verdict]int{}
		found := 0 // runs with a divergence finding
		for i := range n {
			_, _, metB, metC := simWithMetrics(t, sc, uint64(1000*(si+1)+i))
			r, err := Judge(&metB, &metC, Config{Policy: pol, Seed: uint64(i + 1)})
			if err != nil {
				t.Fatal(err)
			}
			counts[r.Metrics[0].Verdict]++
			if len(r.Findings) > 0 {
				found++
			}
		}
		rate := func(v Verdict) (float64, float64) {
			p := float64(counts[v]) / float64(n)
			return p, math.Sqrt(p * (1 - p) / float64(n))
		}
		fail, failSE := rate(Fail)
		pass, passSE := rate(Pass)
		inc, incSE := rate(Inconclusive)
		fr := float64(found) / float64(n)
		table = append(table, fmt.Sprintf("| %s | %s | %.1f ± %.1f%% | %.1f ± %.1f%% | %.1f ± %.1f%% | %.1f ± %.1f%% |", s.name, s.want,
			100*fail, 100*failSE, 100*pass, 100*passSE, 100*inc, 100*incSE, 100*fr, 100*math.Sqrt(fr*(1-fr)/float64(n))))
		if s.overload && fr < 0.9-2*math.Sqrt(0.09/float64(n)) {
			t.Errorf("%s: divergence named in %.1f%% of runs, want ≥ 90%%", s.name, 100*fr)
		}
		if !s.overload && fr > 0.05+2*math.Sqrt(0.05*0.95/float64(n)) {
			t.Errorf("%s: divergence falsely named in %.1f%% of runs, want ≤ 5%%", s.name, 100*fr)
		}
		bound := 2 * math.Sqrt(0.05*0.95/float64(n))
		switch {
		case s.strict && s.want == Fail:
			if fail < 0.9-2*math.Sqrt(0.09/float64(n)) {
				t.Errorf("%s: fail rate %.1f%% < 90%%", s.name, 100*fail)
			}
		case s.strict && s.want == Pass:
			if pass < 0.9-2*math.Sqrt(0.09/float64(n)) {
				t.Errorf("%s: pass rate %.1f%% < 90%%", s.name, 100*pass)
			}
		default:
			if fail > 0.05+bound {
				t.Errorf("%s: false-fail rate %.1f%% > 5%% + 2 SE", s.name, 100*fail)
			}
		}
	}
	t.Logf("energy_per_good_request gate of the efficiency policy, %d replicates per scenario, metrics only:\n"+
		"| scenario | right answer | fail | pass | inconclusive | divergence named |\n|---|---|--:|--:|--:|--:|\n%s", n, strings.Join(table, "\n"))
}
