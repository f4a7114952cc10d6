package dashboards

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// ScrapeMarker starts each scrape in a scrapes file, followed by the scrape's time in Unix milliseconds; the
// scrape's exposition text follows on the next lines. test/e2e writes the files (metrics_test.go).
const ScrapeMarker = "# dovetail-scrape-at "

// Scrape is one scrape of /metrics.
type Scrape struct {
	At       time.Time
	Families map[string]*dto.MetricFamily
}

// ReadScrapes reads a scrapes file: one or more scrapes, each after a ScrapeMarker line; gzipped when its name
// ends in .gz.
func ReadScrapes(path string) ([]Scrape, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scrapes: %w", err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("reading scrapes %s: %w", path, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("reading scrapes %s: %w", path, err)
		}
	}
	var out []Scrape
	var cur *Scrape
	var body bytes.Buffer
	flush := func() error {
		if cur == nil {
			return nil
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(body.Bytes()))
		if err != nil {
			return fmt.Errorf("%s: scrape at %s: %w", path, cur.At.Format(time.RFC3339), err)
		}
		cur.Families = fams
		out = append(out, *cur)
		body.Reset()
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if ms, ok := strings.CutPrefix(line, ScrapeMarker); ok {
			if err := flush(); err != nil {
				return nil, err
			}
			n, err := strconv.ParseInt(strings.TrimSpace(ms), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: scrape marker %q: %w", path, line, err)
			}
			cur = &Scrape{At: time.UnixMilli(n)}
			continue
		}
		if cur == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return nil, fmt.Errorf("%s: text before the first %q line", path, strings.TrimSpace(ScrapeMarker))
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading scrapes: %w", err)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no scrape", path)
	}
	return out, nil
}

// Sample is one series' value in a scrape, as Prometheus stores it (histograms and summaries split into their
// _bucket, _sum, _count and quantile series).
type Sample struct {
	Labels labels.Labels
	Value  float64
}

// Samples flattens a scrape into the series a Prometheus server would store.
func (s Scrape) Samples() []Sample {
	var out []Sample
	names := make([]string, 0, len(s.Families))
	for n := range s.Families {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		fam := s.Families[name]
		for _, m := range fam.GetMetric() {
			base := map[string]string{}
			for _, lp := range m.GetLabel() {
				base[lp.GetName()] = lp.GetValue()
			}
			add := func(suffix string, v float64, extra ...string) {
				l := map[string]string{"__name__": name + suffix}
				for k, v := range base {
					l[k] = v
				}
				for i := 0; i+1 < len(extra); i += 2 {
					l[extra[i]] = extra[i+1]
				}
				out = append(out, Sample{Labels: labels.FromMap(l), Value: v})
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				add("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add("", m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				infSeen := false
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), +1) {
						infSeen = true
					}
					add("_bucket", float64(b.GetCumulativeCount()), "le", formatFloat(b.GetUpperBound()))
				}
				if !infSeen {
					add("_bucket", float64(h.GetSampleCount()), "le", "+Inf")
				}
				add("_sum", h.GetSampleSum())
				add("_count", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				sm := m.GetSummary()
				for _, q := range sm.GetQuantile() {
					add("", q.GetValue(), "quantile", formatFloat(q.GetQuantile()))
				}
				add("_sum", sm.GetSampleSum())
				add("_count", float64(sm.GetSampleCount()))
			default:
				add("", m.GetUntyped().GetValue())
			}
		}
	}
	return out
}

func formatFloat(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
