package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// metricsOptions are the judge's flags for reading each arm's engine and GPU
// metrics beside its per-request files: requests come from the files,
// internal work (GPU utilisation, power, memory, KV usage, queue) from the
// metrics, aligned on the files' wall-clock times.
type metricsOptions struct {
	Baseline, Canary []string // --baseline-metrics, --canary-metrics: scrape / OpenMetrics files
	PrometheusURL    string   // --metrics-prometheus: query this API for the requests' window
}

func (o *metricsOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Baseline, "baseline-metrics", nil, "the baseline's engine/GPU metrics beside its request files: scrape or OpenMetrics files (a file holding both arms, like the simulator's metrics.om, is split by its deployment label)")
	fs.StringArrayVar(&o.Canary, "canary-metrics", nil, "the canary's engine/GPU metrics beside its request files (see --baseline-metrics)")
	fs.StringVar(&o.PrometheusURL, "metrics-prometheus", "", "read both arms' engine/GPU metrics for the request files' window from this Prometheus-compatible API, with --baseline-selector/--canary-selector (and the --prometheus-* auth flags)")
}

func (o *metricsOptions) enabled() bool {
	return len(o.Baseline) > 0 || len(o.Canary) > 0 || o.PrometheusURL != ""
}

// check validates the combination with the other judge flags (usage errors).
func (o *metricsOptions) check(j *judgeOptions) error {
	if !o.enabled() {
		return nil
	}
	if j.prom.enabled() {
		return usageError("--baseline-metrics, --canary-metrics and --metrics-prometheus go beside request files; with --prometheus the metrics are the input already")
	}
	if o.PrometheusURL != "" && (len(o.Baseline) > 0 || len(o.Canary) > 0) {
		return usageError("give metrics either as files (--baseline-metrics/--canary-metrics) or from --metrics-prometheus, not both")
	}
	if o.PrometheusURL == "" && (len(o.Baseline) == 0) != (len(o.Canary) == 0) {
		return usageError("give metrics for both arms: --baseline-metrics FILE and --canary-metrics FILE (the same file for both when it holds both arms)")
	}
	return nil
}

// attach reads the metrics and sets them on both datasets. The window of a
// Prometheus query is the request files' span, widened to whole steps.
func (a *app) attachMetrics(ctx context.Context, o *judgeOptions, base, can *sources.Dataset) error {
	m := &o.metrics
	if len(m.Baseline) > 0 {
		for _, x := range []struct {
			ds    *sources.Dataset
			paths []string
		}{{base, m.Baseline}, {can, m.Canary}} {
			ds, err := readMetricsFiles(ctx, x.ds.Arm, x.paths, a.io.In, a.io.ErrOut)
			if err != nil {
				return inputError(fmt.Errorf("%s metrics: %w", x.ds.Arm, err))
			}
			x.ds.Metrics = ds.Agg
			x.ds.Inputs = append(x.ds.Inputs, ds.Inputs...)
		}
		return nil
	}
	lo, hi, err := requestSpan(base, can)
	if err != nil {
		return inputError(err)
	}
	step := o.prom.Step
	start := time.Unix(int64(math.Floor(lo/step.Seconds())*step.Seconds()), 0).UTC()
	end := time.Unix(int64(math.Ceil(hi/step.Seconds())*step.Seconds()), 0).UTC()
	if !end.After(start) {
		end = start.Add(step)
	}
	p := o.prom
	p.URL = m.PrometheusURL
	p.Start, p.End, p.Last = start.Format(time.RFC3339), end.Format(time.RFC3339), 0
	b, c, err := p.load(ctx, a.env, a.now)
	if err != nil {
		return err
	}
	base.Metrics, can.Metrics = b.Agg, c.Agg
	base.Inputs = append(base.Inputs, b.Inputs...)
	can.Inputs = append(can.Inputs, c.Inputs...)
	return nil
}

// readMetricsFiles reads an arm's scrape files in order as snapshots;
// anything else (a request log given by mistake) is an error naming the
// files.
func readMetricsFiles(ctx context.Context, arm sources.Arm, paths []string, stdin io.Reader, progress io.Writer) (sources.Dataset, error) {
	ds, _, err := readArm(ctx, arm, paths, "", requestlog.Options{}, stdin, progress)
	if err != nil {
		return ds, err
	}
	if ds.Agg == nil {
		return ds, fmt.Errorf("%s: not a Prometheus text or OpenMetrics scrape: give request files with --%s and metrics with --%s-metrics",
			strings.Join(paths, ", "), arm, arm)
	}
	return ds, nil
}

// requestSpan is the arrival-time span of both arms' requests, unix
// seconds; an error when the files carry no wall-clock times.
func requestSpan(ds ...*sources.Dataset) (lo, hi float64, err error) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, d := range ds {
		if d.Clock != sources.ClockEpoch {
			return lo, hi, fmt.Errorf("%s: --metrics-prometheus needs request files with wall-clock (epoch) arrival times to find the window; these have %s times", d.Arm, d.Clock)
		}
		for i := range d.Requests {
			t := d.Requests[i].Time
			if sources.Known(t) {
				lo, hi = math.Min(lo, t), math.Max(hi, t)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return lo, hi, fmt.Errorf("no arrival times in the request files: the metrics window is unknown")
	}
	return lo, hi, nil
}
