// Command scaleplot turns the series.csv of a bench-scale run (make bench-scale with BENCH_SCALE_OUT) into an SVG
// plot of the controller's RSS and CPU over the run, one panel each, with the phases shaded and named.
//
//	go run ./hack/scaleplot -in out/series.csv -svg docs/img/bench-scale.svg -title "1,000 nodes, commit abc1234"
package main

import (
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// sample is one line of series.csv.
type sample struct {
	seconds, cpuSeconds, rssMiB float64
	phase                       string
}

// header is the layout test/bench writes (seriesHeader there).
var header = []string{"seconds", "phase", "controllerCPUSeconds", "controllerRSSMiB"}

func main() {
	in := flag.String("in", "", "series.csv of a bench-scale run (required)")
	svg := flag.String("svg", "", "SVG file to write (required)")
	title := flag.String("title", "bench-scale", "the plot's title")
	flag.Parse()
	if *in == "" || *svg == "" {
		fmt.Fprintln(os.Stderr, "scaleplot: -in and -svg are required")
		os.Exit(2)
	}
	if err := run(*in, *svg, *title); err != nil {
		fmt.Fprintln(os.Stderr, "scaleplot:", err)
		os.Exit(1)
	}
}

func run(in, out, title string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	samples, err := parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := plot(o, samples, title); err != nil {
		_ = o.Close()
		return err
	}
	return o.Close()
}

func parse(r io.Reader) ([]sample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != strings.Join(header, ",") {
		return nil, fmt.Errorf("first line is not %q", strings.Join(header, ","))
	}
	var out []sample
	for i, row := range rows[1:] {
		if len(row) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+2, len(row), len(header))
		}
		var s sample
		s.phase = row[1]
		for j, dst := range []*float64{&s.seconds, &s.cpuSeconds, &s.rssMiB} {
			col := []int{0, 2, 3}[j]
			v, err := strconv.ParseFloat(row[col], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %q: %w", i+2, header[col], row[col], err)
			}
			*dst = v
		}
		if len(out) > 0 && s.seconds <= out[len(out)-1].seconds {
			return nil, fmt.Errorf("line %d: time %.1f s does not follow %.1f s", i+2, s.seconds, out[len(out)-1].seconds)
		}
		out = append(out, s)
	}
	if len(out) < 2 {
		return nil, errors.New("fewer than two samples")
	}
	return out, nil
}

const (
	width, panelHeight = 900.0, 220.0
	left, right        = 70.0, 20.0
	top, gap, bottom   = 40.0, 50.0, 40.0
)

// plot writes the two panels: RSS (MiB) at each sample, and CPU (cores) over each interval between samples.
func plot(w io.Writer, samples []sample, title string) error {
	end := samples[len(samples)-1].seconds
	x := func(sec float64) float64 { return left + (width-left-right)*sec/end }
	rss := make([][2]float64, len(samples))
	var cores [][2]float64
	maxRSS, maxCores := 0.0, 0.0
	for i, s := range samples {
		rss[i] = [2]float64{s.seconds, s.rssMiB}
		maxRSS = math.Max(maxRSS, s.rssMiB)
		if i > 0 {
			c := (s.cpuSeconds - samples[i-1].cpuSeconds) / (s.seconds - samples[i-1].seconds)
			cores = append(cores, [2]float64{samples[i-1].seconds, c}, [2]float64{s.seconds, c})
			maxCores = math.Max(maxCores, c)
		}
	}
	height := top + 2*panelHeight + gap + bottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14">%s</text>`+"\n", left, escape(title))
	panels := []struct {
		name   string
		points [][2]float64
		max    float64
		color  string
	}{
		{"controller RSS (MiB)", rss, niceMax(maxRSS), "#1f77b4"},
		{"controller CPU (cores)", cores, niceMax(maxCores), "#d62728"},
	}
	for p, panel := range panels {
		y0 := top + float64(p)*(panelHeight+gap)
		y := func(v float64) float64 { return y0 + panelHeight - panelHeight*v/panel.max }
		// Phases: alternate shading, named at the top of the first panel.
		for i, start := 0, 0; i <= len(samples); i++ {
			if i < len(samples) && samples[i].phase == samples[start].phase {
				continue
			}
			from, to := samples[start].seconds, samples[i-1].seconds
			if i < len(samples) {
				to = samples[i].seconds
			}
			if phaseIndex(samples, start)%2 == 1 {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f0f0f0"/>`+"\n", x(from), y0, x(to)-x(from), panelHeight)
			}
			if p == 0 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">%s</text>`+"\n", x(from)+3, y0+14, escape(samples[start].phase))
			}
			start = i
		}
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`+"\n", left, y0, width-left-right, panelHeight)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">%s</text>`+"\n", left, y0-6, escape(panel.name))
		for _, v := range []float64{0, panel.max / 2, panel.max} {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, strconv.FormatFloat(v, 'g', 4, 64))
		}
		var pts []string
		for _, pt := range panel.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(pt[0]), y(pt[1])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", panel.color, strings.Join(pts, " "))
	}
	axisY := top + 2*panelHeight + gap
	for _, frac := range []float64{0, 0.25, 0.5, 0.75, 1} {
		sec := end * frac
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.0f min</text>`+"\n", x(sec), axisY+16, sec/60)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// phaseIndex is the rank of the phase starting at sample i among the run's phases.
func phaseIndex(samples []sample, i int) int {
	n := 0
	for j := 1; j <= i; j++ {
		if samples[j].phase != samples[j-1].phase {
			n++
		}
	}
	return n
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (1 for nothing measured).
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
