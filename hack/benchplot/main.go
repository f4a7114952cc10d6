// Command benchplot turns the output of hack/bench-scheduling.sh (go test -bench lines of BenchmarkScheduling plus
// "# load before N: ..." comments) into an SVG plot of solve time against pod count, with Karpenter's published
// reference points and the targets, and prints a Markdown table of the figures for docs/benchmarks.md.
//
//	go run ./hack/benchplot -in docs/img/scheduling-bench.txt -svg docs/img/scheduling-time.svg
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// result is one benchmark line: the pod count and its metrics by unit ("ns/op", "cpu-s/op", "nodes", ...).
type result struct {
	pods    int
	metrics map[string]float64
	load    string
}

var (
	benchLine = regexp.MustCompile(`^BenchmarkScheduling/(\d+)(?:-\d+)?\s+\d+\s+(.*)$`)
	loadLine  = regexp.MustCompile(`^# load before (\d+): (.*)$`)
)

func main() {
	in := flag.String("in", "", "benchmark output file (default stdin)")
	svg := flag.String("svg", "", "SVG file to write (default: none)")
	flag.Parse()
	if err := run(*in, *svg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchplot:", err)
		os.Exit(1)
	}
}

func run(in, svgPath string, out io.Writer) error {
	r := io.Reader(os.Stdin)
	if in != "" {
		f, err := os.Open(in)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	results, err := parse(r)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("no BenchmarkScheduling lines in %s", nameOr(in, "stdin"))
	}
	writeTable(out, results)
	if svgPath == "" {
		return nil
	}
	return os.WriteFile(svgPath, []byte(plot(results)), 0o644)
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func parse(r io.Reader) ([]result, error) {
	loads := map[int]string{}
	byPods := map[int]result{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := loadLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			loads[n] = m[2]
			continue
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		fields := strings.Fields(m[2])
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("odd number of value/unit fields in %q", line)
		}
		res := result{pods: n, metrics: map[string]float64{}}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("value %q in %q: %w", fields[i], line, err)
			}
			res.metrics[fields[i+1]] = v
		}
		byPods[n] = res
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(byPods))
	for n, res := range byPods {
		res.load = loads[n]
		out = append(out, res)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pods < out[j].pods })
	return out, nil
}

func writeTable(w io.Writer, results []result) {
	fmt.Fprintln(w, "| pods | wall s | cpu s | pods/s (wall) | nodes | $/hour | bound $/hour | ratio | bound cpu s | peak RSS MiB | allocs | violations | load (1/5/15 min) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range results {
		m := r.metrics
		viol := "—"
		if v, ok := m["violations"]; ok {
			viol = fmt.Sprint(v)
		}
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %s | %s | %.2f | %.2f | %.3f | %.2f | %.0f | %s | %s | %s |\n",
			thousands(float64(r.pods)), m["ns/op"]/1e9, m["cpu-s/op"], thousands(m["pods/s"]), thousands(m["nodes"]),
			m["$/h"], m["bound-$/h"], m["lp-ratio"], m["bound-cpu-s"], m["peak-MiB"], short(m["allocs/op"]), viol, r.load)
	}
}

func thousands(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func short(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.0fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// point is a labelled (pods, seconds) value.
type point struct {
	pods, secs float64
}

// Karpenter v1.14.1 on a machine of this size and Dovetail's targets.
var (
	karpenter = []point{{5000, 12.9}, {20000, 75.6}}
	targets   = []point{{20000, 1.5}, {50000, 10}}
)

// plot draws seconds against pods on log-log axes.
func plot(results []result) string {
	const (
		w, h                     = 640, 400
		left, right, top, bottom = 70, 170, 30, 50
		xmin, xmax               = 500.0, 100000.0
		ymin, ymax               = 0.01, 100.0
	)
	x := func(p float64) float64 {
		return left + (math.Log10(p)-math.Log10(xmin))/(math.Log10(xmax)-math.Log10(xmin))*(w-left-right)
	}
	y := func(s float64) float64 {
		s = math.Max(ymin, math.Min(ymax, s))
		return h - bottom - (math.Log10(s)-math.Log10(ymin))/(math.Log10(ymax)-math.Log10(ymin))*(h-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Scheduling time vs pending pods (log-log)</text>`+"\n", left)
	for _, p := range []float64{1000, 5000, 10000, 20000, 50000, 100000} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(p), top, x(p), h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(p), h-bottom+16, thousands(p))
	}
	for _, s := range []float64{0.01, 0.1, 1, 10, 100} {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(s), w-right, y(s))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%g s</text>`+"\n", left-6, y(s)+4, s)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, w-left-right, h-top-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">pods</text>`+"\n", left+(w-left-right)/2, h-12)
	series := []struct {
		name, color string
		dash        bool
		pts         []point
	}{
		{"Dovetail wall", "#1f77b4", false, pick(results, func(m map[string]float64) float64 { return m["ns/op"] / 1e9 })},
		{"Dovetail CPU", "#2ca02c", false, pick(results, func(m map[string]float64) float64 { return m["cpu-s/op"] })},
		{"Karpenter v1.14.1", "#d62728", true, karpenter},
		{"target", "#ff7f0e", true, targets},
	}
	for i, sr := range series {
		var path strings.Builder
		for j, p := range sr.pts {
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, x(p.pods), y(p.secs))
		}
		dash := ""
		if sr.dash {
			dash = ` stroke-dasharray="5 4"`
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.TrimSpace(path.String()), sr.color, dash)
		for _, p := range sr.pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s: %s pods, %.2f s</title></circle>`+"\n",
				x(p.pods), y(p.secs), sr.color, sr.name, thousands(p.pods), p.secs)
		}
		ly := top + 20 + i*20
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", w-right+12, ly, w-right+36, ly, sr.color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", w-right+42, ly+4, sr.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func pick(results []result, f func(map[string]float64) float64) []point {
	var out []point
	for _, r := range results {
		if v := f(r.metrics); v > 0 {
			out = append(out, point{float64(r.pods), v})
		}
	}
	return out
}
