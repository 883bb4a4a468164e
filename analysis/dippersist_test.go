package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/policies"
)

// TestDipHeldForDeclaredPersistence: under a declared window.persistence a
// good-share dip no longer than twice it and no deeper than such a
// slowdown can go on the run's spread is held inconclusive, not failed; a
// stall that holds back nearly every request still fails, as does any dip
// without the declaration, and a burst of errors fails on the served
// shares whatever is declared.
func TestDipHeldForDeclaredPersistence(t *testing.T) {
	plain := chat(t)
	declared := *plain
	declared.Window.Persistence = policies.Duration(160 * time.Second)
	const n = 180
	// both arms wander between 80 and 100% good from bucket to bucket,
	// each on its own (a seeded uniform draw per arm and bucket)
	wander := func(phase int) func(t int, c *dipCell) {
		return func(t int, c *dipCell) {
			g := 160 + math.Round(40*rand.New(rand.NewPCG(uint64(phase), uint64(t))).Float64())
			c.goodLo, c.goodHi, c.served = g, g, 200
		}
	}
	dip := func(phase, from, to int, good, served float64) func(t int, c *dipCell) {
		return func(t int, c *dipCell) {
			wander(phase)(t, c)
			if t >= from && t < to {
				c.goodLo, c.goodHi, c.served = good, good, served
			}
		}
	}
	b := dipCells(n, wander(0))
	for _, tc := range []struct {
		name                 string
		c                    []dipCell
		withoutIt, declaredV Verdict
		reason               string
	}{
		{"5 min at 30% good: within a slowdown's depth on this spread", dipCells(n, dip(5, 90, 120, 60, 200)), Fail, Inconclusive, "cannot be told from an outage"},
		{"2 min at 40% good: as deep as that", dipCells(n, dip(5, 90, 102, 80, 200)), Fail, Inconclusive, "cannot be told from an outage"},
		{"5 min at 20% good: deeper", dipCells(n, dip(5, 90, 120, 40, 200)), Fail, Fail, "Bonferroni"},
		{"1 min stalled: deeper than a slowdown goes", dipCells(n, dip(5, 90, 96, 0, 200)), Fail, Fail, "Bonferroni"},
		{"2 min of errors: the served shares", dipCells(n, dip(5, 90, 102, 130, 150)), Fail, Fail, "served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e0, ok0 := dipEval(plain, b, tc.c, 10, 1000, 300)
			e, ok := dipEval(&declared, b, tc.c, 10, 1000, 300)
			if !ok0 || !ok || e0.m.Verdict != tc.withoutIt || e.m.Verdict != tc.declaredV {
				t.Fatalf("without: %v %s; declared: %v %s (%s)", ok0, e0.m.Verdict, ok, e.m.Verdict, e.m.Reason)
			}
			if !strings.Contains(e.m.Reason, tc.reason) {
				t.Errorf("reason: %s", e.m.Reason)
			}
		})
	}
}
