package instancetype_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	awspricing "github.com/dovetail/dovetail/pkg/providers/aws/pricing"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// TestLearnedMemoryKeepsTheSmallestWithinTheTTL: the smallest memory a node reported is kept per instance type and
// AMI set; a larger report changes nothing, an equal one renews the TTL, and past the TTL the value is gone.
func TestLearnedMemoryKeepsTheSmallestWithinTheTTL(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	l := instancetype.NewLearnedMemory(clk, 0)
	q := resource.MustParse
	type step struct {
		advance      time.Duration
		observe      string // "" for none
		changed      bool
		want         string // "" for nothing learned
		instanceType string
		amis         string
	}
	steps := []step{
		{want: ""},
		{observe: "7800Mi", changed: true, want: "7800Mi"},
		{observe: "7900Mi", changed: false, want: "7800Mi"},
		{observe: "7700Mi", changed: true, want: "7700Mi"},
		{want: "", amis: "other"},
		{want: "", instanceType: "c5.large"},
		{advance: 59 * 24 * time.Hour, observe: "7700Mi", changed: false, want: "7700Mi"},
		// 59 + 59 days: past the first TTL, within the renewed one.
		{advance: 59 * 24 * time.Hour, want: "7700Mi"},
		{advance: 2 * 24 * time.Hour, want: ""},
		{observe: "8000Mi", changed: true, want: "8000Mi"},
	}
	for i, s := range steps {
		clk.Step(s.advance)
		it, amis := "m5.large", "amis-a"
		if s.instanceType != "" {
			it = s.instanceType
		}
		if s.amis != "" {
			amis = s.amis
		}
		if s.observe != "" {
			if got := l.Observe(it, amis, q(s.observe)); got != s.changed {
				t.Errorf("step %d: Observe(%s) changed = %t, want %t", i, s.observe, got, s.changed)
			}
		}
		got, ok := l.Get(it, amis)
		switch {
		case s.want == "" && ok:
			t.Errorf("step %d: learned %s for %s/%s, want nothing", i, got.String(), it, amis)
		case s.want != "" && (!ok || got.Cmp(q(s.want)) != 0):
			t.Errorf("step %d: learned %s (%t), want %s", i, got.String(), ok, s.want)
		}
	}
}

// TestListOffersLearnedMemory: List offers the learned memory for the AMI set it was learned with, in place of the
// VM_MEMORY_OVERHEAD_PERCENT estimate, and only for that instance type and AMI set.
func TestListOffersLearnedMemory(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := awssdk.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKIDACCOUNTA", "s", ""),
		BaseEndpoint: awssdk.String(srv.URL), RetryMaxAttempts: 1, HTTPClient: sdk.NewHTTPClient(srv.Client())}
	ec2api := ec2.NewFromConfig(cfg)
	prices := awspricing.NewProvider(ec2api, pricing.NewFromConfig(cfg), "us-west-2", false, clk, 0)
	p := instancetype.NewProvider(ec2api, prices, unavailable.New(clk, 0), clk, 0)
	ctx := context.Background()
	memory := func(amis, name string) string {
		t.Helper()
		its, err := p.List(ctx, instancetype.Request{Settings: instancetype.Settings{VMMemoryOverheadPercent: 0.075},
			Zones: []string{"us-west-2a"}, AMIs: amis})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			if it.Name == name {
				return it.Capacity.Memory().String()
			}
		}
		t.Fatalf("%s not listed", name)
		return ""
	}
	// m5.large has 8192 MiB: the estimate keeps 92.5 % (7577 MiB).
	estimate := "7577Mi"
	if got := memory("amis-a", "m5.large"); got != estimate {
		t.Fatalf("m5.large memory before learning = %s, want the estimate %s", got, estimate)
	}
	p.LearnedMemory().Observe("m5.large", "amis-a", resource.MustParse("7800Mi"))
	for _, c := range []struct{ amis, name, want string }{
		{"amis-a", "m5.large", "7800Mi"},
		{"amis-b", "m5.large", estimate},
		{"amis-a", "c5.large", memory("amis-b", "c5.large")},
	} {
		if got := memory(c.amis, c.name); got != c.want {
			t.Errorf("%s with AMI set %s: memory %s, want %s", c.name, c.amis, got, c.want)
		}
	}
	// The learned value does not leak into the shared shape: the other AMI set still sees the estimate after.
	if got := memory("amis-b", "m5.large"); got != estimate {
		t.Errorf("m5.large with AMI set amis-b after listing amis-a: %s, want %s", got, estimate)
	}
}
