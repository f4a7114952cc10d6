package pricing

import (
	"context"
	"errors"
	"testing"
	"time"

	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// fakePricing answers GetProducts with err, or with one product.
type fakePricing struct {
	err   error
	calls int
}

func (f *fakePricing) GetProducts(context.Context, *awspricing.GetProductsInput, ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	doc := `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"x":{"priceDimensions":{"y":{"pricePerUnit":{"USD":"0.5"}}}}}}}`
	return &awspricing.GetProductsOutput{PriceList: []string{doc}}, nil
}

func catalogPrice(t *testing.T, region, name string) float64 {
	t.Helper()
	c, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	it, ok := c.Type(name)
	if !ok {
		t.Fatalf("%s not in the catalog", name)
	}
	p, ok := it.OnDemandPrice(region)
	if !ok {
		t.Fatalf("%s has no price in %s", name, region)
	}
	return p
}

// TestOnDemandFallsBackToBuiltInPrices: ISOLATED_VPC never calls the Pricing API and serves the built-in prices;
// a Pricing API failure before any price was fetched serves them too, and the next refresh replaces them; a
// region the catalog lacks gets us-east-1's.
func TestOnDemandFallsBackToBuiltInPrices(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	want := catalogPrice(t, "us-west-2", "m5.large")

	api := &fakePricing{}
	isolated := NewProvider(nil, api, "us-west-2", true, clk, 0)
	got, err := isolated.OnDemand(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got["m5.large"] != want || len(got) < 100 {
		t.Errorf("isolated: m5.large %v of %d prices, want %v of hundreds", got["m5.large"], len(got), want)
	}
	if api.calls != 0 {
		t.Errorf("isolated: %d Pricing API calls", api.calls)
	}

	api = &fakePricing{err: errors.New("no route to api.pricing.us-east-1.amazonaws.com")}
	p := NewProvider(nil, api, "us-west-2", false, clk, 0)
	got, err = p.OnDemand(ctx)
	if err != nil {
		t.Fatalf("Pricing API down at start: %v", err)
	}
	if got["m5.large"] != want {
		t.Errorf("Pricing API down at start: m5.large %v, want the built-in %v", got["m5.large"], want)
	}
	api.err = nil
	clk.Step(DefaultTTL)
	if got, err = p.OnDemand(ctx); err != nil || got["m5.large"] != 0.5 || len(got) != 1 {
		t.Errorf("after the API recovered: %v, %v; want the fetched price", got, err)
	}

	unknown, err := StaticOnDemand("xx-nowhere-1")
	if err != nil || unknown["m5.large"] != catalogPrice(t, "us-east-1", "m5.large") {
		t.Errorf("unknown region: m5.large %v, %v; want us-east-1's", unknown["m5.large"], err)
	}
}
