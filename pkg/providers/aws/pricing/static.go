package pricing

import (
	"fmt"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// staticFallbackRegion is the region whose built-in prices serve a region the catalog does not list.
const staticFallbackRegion = "us-east-1"

// StaticOnDemand returns the built-in hourly Linux on-demand prices of the region's instance types (from the
// catalog embedded in the binary, pkg/catalog), or those of us-east-1 for a region it does not list. They serve
// when the Pricing API cannot be called (ISOLATED_VPC) or fails before any price was fetched.
func StaticOnDemand(region string) (map[string]float64, error) {
	c, err := catalog.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the built-in prices: %w", err)
	}
	out := staticPrices(c, region)
	if len(out) == 0 {
		out = staticPrices(c, staticFallbackRegion)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no built-in on-demand prices for region %s or %s", region, staticFallbackRegion)
	}
	return out, nil
}

func staticPrices(c *catalog.Catalog, region string) map[string]float64 {
	out := map[string]float64{}
	for _, t := range c.TypesIn(region) {
		if price, ok := t.OnDemandPrice(region); ok {
			out[t.Name] = price
		}
	}
	return out
}
