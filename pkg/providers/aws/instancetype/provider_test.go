package instancetype_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	awspricing "github.com/dovetail/dovetail/pkg/providers/aws/pricing"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// countingEC2 counts DescribeInstanceTypes calls.
type countingEC2 struct {
	sdk.EC2API
	describes atomic.Int32
}

func (c *countingEC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	if in.NextToken == nil {
		c.describes.Add(1)
	}
	return c.EC2API.DescribeInstanceTypes(ctx, in, opts...)
}

func TestProviderCachesForTTLAndAppliesAvailability(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	sim, err := awssim.New(awssim.Options{Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := awssdk.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKIDACCOUNTA", "s", ""),
		BaseEndpoint: awssdk.String(srv.URL), RetryMaxAttempts: 1, HTTPClient: sdk.NewHTTPClient(srv.Client())}
	counter := &countingEC2{EC2API: ec2.NewFromConfig(cfg)}
	cache := unavailable.New(clk, 0)
	prices := awspricing.NewProvider(counter, pricing.NewFromConfig(cfg), "us-west-2", false, clk, 0)
	p := instancetype.NewProvider(counter, prices, cache, clk, 0)
	ctx := context.Background()
	req := instancetype.Request{Settings: instancetype.Settings{VMMemoryOverheadPercent: 0.075}, Zones: []string{"us-west-2a"}}

	list := func() []*cloudprovider.InstanceType {
		t.Helper()
		its, err := p.List(ctx, req)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return its
	}
	first := list()
	list()
	if n := counter.describes.Load(); n != 1 {
		t.Errorf("DescribeInstanceTypes called %d times within the TTL, want 1", n)
	}
	for _, it := range first {
		for _, o := range it.Offerings {
			if o.Zone != "us-west-2a" {
				t.Fatalf("%s offered in %s, only us-west-2a requested", it.Name, o.Zone)
			}
		}
	}
	cache.MarkUnavailable(ctx, "test", unavailable.Offering{InstanceType: "m5.large", Zone: "us-west-2a", CapacityType: "spot"})
	for _, it := range list() {
		for _, o := range it.Offerings {
			if it.Name == "m5.large" && o.CapacityType == "spot" && o.Available {
				t.Errorf("m5.large spot offering available after being marked")
			}
			if it.Name == "m5.large" && o.CapacityType == "on-demand" && !o.Available {
				t.Errorf("m5.large on-demand offering unavailable; only spot was marked")
			}
		}
	}
	// A launch lists only the types its NodeClaim allows, with the same offerings as the full list.
	allowed := req
	allowed.Allow = func(name string) bool { return name == "m5.large" || name == "c5.xlarge" }
	only, err := p.List(ctx, allowed)
	if err != nil {
		t.Fatal(err)
	}
	var want []*cloudprovider.InstanceType
	for _, it := range list() {
		if allowed.Allow(it.Name) {
			want = append(want, it)
		}
	}
	if len(only) != 2 || !reflect.DeepEqual(only, want) {
		t.Errorf("List with Allow returned %d types, want m5.large and c5.xlarge as in the full list", len(only))
	}
	clk.Step(instancetype.DefaultTTL)
	list()
	if n := counter.describes.Load(); n != 2 {
		t.Errorf("DescribeInstanceTypes called %d times after the TTL, want 2", n)
	}
}
