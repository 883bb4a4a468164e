package sim

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Range is a scenario parameter drawn per replicate by Draw: one uniform
// draw in [Min, Max] is written to every key path in Keys, so keys that
// move together (a regression of both prefill and decode) share the draw.
//
// A key path is written as in a scenario file: traffic.rate,
// traffic.classes[1].weight, client.retry.backoff, duration, and arm keys
// under fleet. (both arms), baseline. or canary. — e.g.
// fleet.batch_noise.sigma, canary.decode_speed, canary.class_weights.long,
// canary.class_latency.chat.ttft. Min and Max are written in the key's
// own type: numbers for numbers (an integer key gets the draw rounded),
// durations with a unit (30s, 250ms).
type Range struct {
	Keys []string `yaml:"keys"`
	Min  string   `yaml:"min"`
	Max  string   `yaml:"max"`
}

// Drawn is one parameter value chosen by Draw.
type Drawn struct {
	Key   string
	Value string
}

// Draw returns a copy of sc with every Range drawn from seed (the same
// scenario and seed give the same draw), and the values chosen in range
// order. A scenario without ranges is returned unchanged. The result is
// validated.
func (sc Scenario) Draw(seed uint64) (Scenario, []Drawn, error) {
	if len(sc.Ranges) == 0 {
		return sc, nil, nil
	}
	out := sc.clone()
	rng := newRand(seed, streamRanges)
	var drawn []Drawn
	for i, r := range sc.Ranges {
		u := rng.Float64()
		for _, k := range r.Keys {
			v, err := setRange(&out, k, r, u)
			if err != nil {
				return Scenario{}, nil, fmt.Errorf("ranges[%d]: %w", i, err)
			}
			drawn = append(drawn, Drawn{Key: k, Value: v})
		}
	}
	if err := out.Validate(); err != nil {
		return Scenario{}, nil, fmt.Errorf("scenario %q with drawn %s: %w", sc.Name, describeDrawn(drawn), err)
	}
	return out, drawn, nil
}

func describeDrawn(d []Drawn) string {
	parts := make([]string, len(d))
	for i, x := range d {
		parts[i] = x.Key + "=" + x.Value
	}
	return strings.Join(parts, ", ")
}

// checkRanges reports the first range that does not resolve or whose
// bounds are not of its keys' type or out of order; both ends are tried.
func (sc *Scenario) checkRanges() []*fieldError {
	v := &validator{}
	for i, r := range sc.Ranges {
		path := fmt.Sprintf("ranges[%d]", i)
		if len(r.Keys) == 0 {
			v.check(false, path+".keys", "list at least one key path, e.g. canary.decode_speed")
			continue
		}
		for _, u := range []float64{0, 1} {
			c := sc.clone()
			for _, k := range r.Keys {
				if _, err := setRange(&c, k, r, u); err != nil {
					v.check(false, path, "%v", err)
				}
			}
			if len(v.errs) > 0 {
				return v.errs
			}
			errs := c.validate()
			if len(errs) > 0 {
				v.check(false, path, "at its %s end: %s", map[float64]string{0: "min", 1: "max"}[u], errs[0])
				return v.errs
			}
		}
	}
	return v.errs
}

// clone copies sc deeply enough that setting a drawn value in the copy
// leaves sc unchanged (slices and maps are copied).
func (sc Scenario) clone() Scenario {
	c := sc
	c.Traffic.Schedule = slices.Clone(sc.Traffic.Schedule)
	c.Traffic.Bursts = slices.Clone(sc.Traffic.Bursts)
	c.Traffic.Classes = slices.Clone(sc.Traffic.Classes)
	c.Client.Retry.On = slices.Clone(sc.Client.Retry.On)
	c.SLO.Classes = maps.Clone(sc.SLO.Classes)
	c.Failures = slices.Clone(sc.Failures)
	c.Ranges = slices.Clone(sc.Ranges)
	for _, a := range []*ArmSpec{&c.Baseline, &c.Canary} {
		a.ClassWeights = maps.Clone(a.ClassWeights)
		a.ClassLatency = maps.Clone(a.ClassLatency)
		a.ErrorBursts = slices.Clone(a.ErrorBursts)
	}
	return c
}

// setRange writes the value at u ∈ [0, 1] of range r to key k of sc and
// returns it as text.
func setRange(sc *Scenario, k string, r Range, u float64) (string, error) {
	segs := strings.Split(k, ".")
	var targets []reflect.Value
	root := reflect.ValueOf(sc).Elem()
	switch segs[0] {
	case "fleet":
		targets = []reflect.Value{root.FieldByName("Baseline"), root.FieldByName("Canary")}
	case "baseline":
		targets = []reflect.Value{root.FieldByName("Baseline")}
	case "canary":
		targets = []reflect.Value{root.FieldByName("Canary")}
	case "traffic", "client", "slo":
		targets = []reflect.Value{root.FieldByName(map[string]string{"traffic": "Traffic", "client": "Client", "slo": "SLO"}[segs[0]])}
	case "duration":
		targets = []reflect.Value{root.FieldByName("Duration")}
	default:
		return "", fmt.Errorf("key %q: want a path under fleet, baseline, canary, traffic, client or slo, or duration", k)
	}
	rest := segs[1:]
	var text string
	for _, t := range targets {
		s, err := setPath(t, rest, r, u)
		if err != nil {
			return "", fmt.Errorf("key %q: %w", k, err)
		}
		text = s
	}
	return text, nil
}

// setPath walks segs (yaml keys, with [i] list indexes) from v and sets the
// leaf.
func setPath(v reflect.Value, segs []string, r Range, u float64) (string, error) {
	if len(segs) == 0 {
		return setLeaf(v, r, u)
	}
	seg := segs[0]
	idx := -1
	if i := strings.IndexByte(seg, '['); i >= 0 && strings.HasSuffix(seg, "]") {
		n, err := strconv.Atoi(seg[i+1 : len(seg)-1])
		if err != nil || n < 0 {
			return "", fmt.Errorf("bad list index in %q", seg)
		}
		seg, idx = seg[:i], n
	}
	switch v.Kind() {
	case reflect.Struct:
		f, ok := fieldByTag(v, seg)
		if !ok {
			return "", fmt.Errorf("no key %q", seg)
		}
		if idx >= 0 {
			if f.Kind() != reflect.Slice || idx >= f.Len() {
				return "", fmt.Errorf("%s[%d]: no such list item", seg, idx)
			}
			f = f.Index(idx)
		}
		return setPath(f, segs[1:], r, u)
	case reflect.Map:
		if idx >= 0 {
			return "", fmt.Errorf("%q: a mapping has no list items", seg)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		key := reflect.ValueOf(seg)
		elem := reflect.New(v.Type().Elem()).Elem()
		if cur := v.MapIndex(key); cur.IsValid() {
			elem.Set(cur)
		}
		s, err := setPath(elem, segs[1:], r, u)
		if err != nil {
			return "", err
		}
		v.SetMapIndex(key, elem)
		return s, nil
	}
	return "", fmt.Errorf("%q: not a mapping", seg)
}

func fieldByTag(v reflect.Value, tag string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == tag {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// setLeaf sets a number or duration leaf to the value at u of [Min, Max].
func setLeaf(v reflect.Value, r Range, u float64) (string, error) {
	if v.Type() == reflect.TypeFor[time.Duration]() {
		lo, err1 := time.ParseDuration(r.Min)
		hi, err2 := time.ParseDuration(r.Max)
		if err1 != nil || err2 != nil || hi < lo {
			return "", fmt.Errorf("min and max must be durations with a unit, min ≤ max (got %q, %q)", r.Min, r.Max)
		}
		d := lo + time.Duration(math.Round(u*float64(hi-lo)))
		v.SetInt(int64(d))
		return d.String(), nil
	}
	lo, err1 := strconv.ParseFloat(r.Min, 64)
	hi, err2 := strconv.ParseFloat(r.Max, 64)
	if err1 != nil || err2 != nil || !finite(lo) || !finite(hi) || hi < lo {
		return "", fmt.Errorf("min and max must be numbers, min ≤ max (got %q, %q)", r.Min, r.Max)
	}
	x := lo + u*(hi-lo)
	switch v.Kind() {
	case reflect.Float64:
		v.SetFloat(x)
		return strconv.FormatFloat(x, 'g', 4, 64), nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := int64(math.Round(x))
		v.SetInt(n)
		return strconv.FormatInt(n, 10), nil
	}
	return "", fmt.Errorf("not a number or duration key (a %s)", v.Type())
}
