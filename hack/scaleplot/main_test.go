package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	const good = "seconds,phase,controllerCPUSeconds,controllerRSSMiB\n0.0,setup,1.00,100.0\n10.0,setup,3.00,120.0\n20.0,rest,3.50,121.0\n"
	for _, tc := range []struct {
		name, in, err string
		samples       int
	}{
		{name: "a run", in: good, samples: 3},
		{name: "another layout", in: "t,rss\n1,2\n", err: "first line"},
		{name: "a bad number", in: "seconds,phase,controllerCPUSeconds,controllerRSSMiB\n0,setup,x,1\n1,setup,1,1\n", err: "controllerCPUSeconds"},
		{name: "time going back", in: "seconds,phase,controllerCPUSeconds,controllerRSSMiB\n5,setup,1,1\n4,setup,1,1\n", err: "does not follow"},
		{name: "one sample", in: "seconds,phase,controllerCPUSeconds,controllerRSSMiB\n5,setup,1,1\n", err: "fewer than two"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(strings.NewReader(tc.in))
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case len(got) != tc.samples:
				t.Fatalf("%d samples, want %d", len(got), tc.samples)
			}
		})
	}
}

func TestPlot(t *testing.T) {
	samples, err := parse(strings.NewReader("seconds,phase,controllerCPUSeconds,controllerRSSMiB\n0,setup,0,100\n10,setup,5,150\n20,rest,5.5,151\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := plot(&b, samples, "a <run>"); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"<svg", "a &lt;run&gt;", ">setup<", ">rest<", "controller RSS (MiB)", "controller CPU (cores)", "<polyline"} {
		if !strings.Contains(svg, want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	// 0.5 cores over the first interval, 0.05 over the second: the CPU axis tops at 0.5.
	if !strings.Contains(svg, ">0.5<") {
		t.Errorf("CPU axis does not top at 0.5 cores:\n%s", svg)
	}
}
