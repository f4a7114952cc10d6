package pricing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// DefaultTTL is how long fetched prices are used before they are fetched again.
const DefaultTTL = 30 * time.Minute

// Provider answers price questions for one region.
type Provider struct {
	ec2     sdk.EC2API
	pricing sdk.PricingAPI
	region  string
	// isolated skips the Pricing API (no internet access); on-demand prices are then the built-in ones.
	isolated bool
	clock    clock.Clock
	ttl      time.Duration

	mu              sync.Mutex
	onDemand        map[string]float64
	onDemandFetched time.Time
	spot            map[string]map[string]float64
	spotFetched     time.Time
}

// NewProvider returns a price provider; ttl zero means DefaultTTL.
func NewProvider(ec2api sdk.EC2API, pricingAPI sdk.PricingAPI, region string, isolated bool, clk clock.Clock, ttl time.Duration) *Provider {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Provider{ec2: ec2api, pricing: pricingAPI, region: region, isolated: isolated, clock: clk, ttl: ttl}
}

// OnDemand returns the hourly on-demand Linux price of every instance type in the region, in US dollars.
func (p *Provider) OnDemand(ctx context.Context) (map[string]float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.onDemand != nil && p.clock.Since(p.onDemandFetched) < p.ttl {
		return p.onDemand, nil
	}
	if p.isolated {
		prices, err := StaticOnDemand(p.region)
		if err != nil {
			return nil, err
		}
		p.onDemand, p.onDemandFetched = prices, p.clock.Now()
		return p.onDemand, nil
	}
	prices, err := p.fetchOnDemand(ctx)
	if err != nil {
		if p.onDemand != nil {
			log.FromContext(ctx).Error(err, "refreshing on-demand prices failed; keeping the previous ones")
			return p.onDemand, nil
		}
		static, serr := StaticOnDemand(p.region)
		if serr != nil {
			return nil, errors.Join(err, serr)
		}
		// The built-in prices serve until the next refresh (after the TTL) succeeds.
		log.FromContext(ctx).Error(err, "getting on-demand prices failed; using the built-in prices until the next refresh", "region", p.region)
		p.onDemand, p.onDemandFetched = static, p.clock.Now()
		return p.onDemand, nil
	}
	p.onDemand, p.onDemandFetched = prices, p.clock.Now()
	return prices, nil
}

func (p *Provider) fetchOnDemand(ctx context.Context) (map[string]float64, error) {
	filter := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	in := &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			filter("regionCode", p.region),
			filter("operatingSystem", "Linux"),
			filter("tenancy", "Shared"),
			filter("preInstalledSw", "NA"),
			filter("capacitystatus", "Used"),
		},
	}
	out := map[string]float64{}
	pager := awspricing.NewGetProductsPaginator(p.pricing, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, sdk.Wrap(err, "getting on-demand prices")
		}
		for _, doc := range page.PriceList {
			name, price, err := ParseProduct(doc)
			if err != nil {
				log.FromContext(ctx).V(1).Info("skipping unreadable price list entry", "error", err.Error())
				continue
			}
			if name != "" && price > 0 {
				out[name] = price
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the Pricing API returned no on-demand price for region %s", p.region)
	}
	return out, nil
}

// product is the part of a Pricing API product document that holds the instance type and its on-demand price.
type product struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParseProduct returns the instance type and hourly USD on-demand price of one Pricing API product document.
func ParseProduct(doc string) (string, float64, error) {
	var p product
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return "", 0, fmt.Errorf("decoding product: %w", err)
	}
	for _, term := range p.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			usd, ok := dim.PricePerUnit["USD"]
			if !ok {
				continue
			}
			price, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price %q of %s: %w", usd, p.Product.Attributes.InstanceType, err)
			}
			return p.Product.Attributes.InstanceType, price, nil
		}
	}
	return p.Product.Attributes.InstanceType, 0, nil
}

// Spot returns the latest hourly spot price per instance type and zone (type → zone → USD).
func (p *Provider) Spot(ctx context.Context) (map[string]map[string]float64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spot != nil && p.clock.Since(p.spotFetched) < p.ttl {
		return p.spot, nil
	}
	prices, err := p.fetchSpot(ctx)
	if err != nil {
		if p.spot != nil {
			log.FromContext(ctx).Error(err, "refreshing spot prices failed; keeping the previous ones")
			return p.spot, nil
		}
		return nil, err
	}
	p.spot, p.spotFetched = prices, p.clock.Now()
	return prices, nil
}

func (p *Provider) fetchSpot(ctx context.Context) (map[string]map[string]float64, error) {
	in := &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX"},
		StartTime:           aws.Time(p.clock.Now()),
	}
	out := map[string]map[string]float64{}
	at := map[[2]string]time.Time{}
	pager := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, sdk.Wrap(err, "describing spot price history")
		}
		for _, sp := range page.SpotPriceHistory {
			if err := addSpot(out, at, sp); err != nil {
				log.FromContext(ctx).V(1).Info("skipping unreadable spot price", "error", err.Error())
			}
		}
	}
	return out, nil
}

func addSpot(out map[string]map[string]float64, at map[[2]string]time.Time, sp ec2types.SpotPrice) error {
	t, z := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)
	price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
	if err != nil {
		return fmt.Errorf("spot price %q of %s in %s: %w", aws.ToString(sp.SpotPrice), t, z, err)
	}
	key := [2]string{t, z}
	ts := aws.ToTime(sp.Timestamp)
	if prev, ok := at[key]; ok && prev.After(ts) {
		return nil
	}
	at[key] = ts
	if out[t] == nil {
		out[t] = map[string]float64{}
	}
	out[t][z] = price
	return nil
}
