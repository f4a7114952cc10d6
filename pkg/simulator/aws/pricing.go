package awssim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/dovetail/dovetail/pkg/catalog"
)

func (s *Simulator) pricingHandlers() map[string]jsonHandler {
	return map[string]jsonHandler{"GetProducts": s.pricingGetProducts}
}

// regionNames are the Pricing API "location" values of the catalog's regions.
var regionNames = map[string]string{
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)", "us-west-1": "US West (N. California)",
	"us-west-2": "US West (Oregon)", "eu-west-1": "EU (Ireland)", "eu-west-2": "EU (London)", "eu-west-3": "EU (Paris)",
	"eu-central-1": "EU (Frankfurt)", "eu-north-1": "EU (Stockholm)", "ap-northeast-1": "Asia Pacific (Tokyo)",
	"ap-northeast-2": "Asia Pacific (Seoul)", "ap-northeast-3": "Asia Pacific (Osaka)", "ap-south-1": "Asia Pacific (Mumbai)",
	"ap-southeast-1": "Asia Pacific (Singapore)", "ap-southeast-2": "Asia Pacific (Sydney)",
	"ca-central-1": "Canada (Central)", "sa-east-1": "South America (Sao Paulo)",
}

type pricingFilter struct {
	Type, Field, Value string
}

func (s *Simulator) pricingGetProducts(_ *http.Request, _ *account, body []byte) (any, *apiError) {
	var in struct {
		ServiceCode   string
		Filters       []pricingFilter
		FormatVersion string
		NextToken     string
		MaxResults    *int
	}
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	if in.ServiceCode != "AmazonEC2" {
		return nil, errBadRequest("InvalidParameterException", "awssim prices only ServiceCode AmazonEC2, got %q", in.ServiceCode)
	}
	limit := 100
	if in.MaxResults != nil {
		limit = *in.MaxResults
	}
	if limit < 1 || limit > 100 {
		return nil, errBadRequest("InvalidParameterException", "MaxResults must be between 1 and 100")
	}
	for _, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			return nil, errBadRequest("InvalidParameterException", "Filter type %q is not valid", f.Type)
		}
	}
	type product struct {
		t      *catalog.InstanceType
		region string
		attrs  map[string]string
	}
	var matched []product
	onlyRegion := ""
	for _, f := range in.Filters {
		if (f.Type == "TERM_MATCH" || f.Type == "EQUALS") && f.Field == "regionCode" {
			onlyRegion = f.Value
		}
	}
	for ri := range s.cat.Regions {
		region := s.cat.Regions[ri].Name
		if onlyRegion != "" && !strings.EqualFold(region, onlyRegion) {
			continue
		}
		for i := range s.cat.Types {
			t := &s.cat.Types[i]
			if _, ok := t.OnDemandPrice(region); !ok {
				continue
			}
			for _, attrs := range productAttributes(t, region) {
				if pricingMatch(in.Filters, attrs) {
					matched = append(matched, product{t, region, attrs})
				}
			}
		}
	}
	start := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "awssim-"))
		if err != nil || n < 0 || n > len(matched) {
			return nil, errBadRequest("InvalidNextTokenException", "The next token %q is invalid", in.NextToken)
		}
		start = n
	}
	end := min(start+limit, len(matched))
	list := make([]string, 0, end-start)
	for _, p := range matched[start:end] {
		od, _ := p.t.OnDemandPrice(p.region)
		list = append(list, priceListEntry(p.attrs, od))
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": list}
	if end < len(matched) {
		out["NextToken"] = fmt.Sprintf("awssim-%d", end)
	}
	return out, nil
}

// productAttributes returns the Linux on-demand products of an instance type in a region: one with shared
// tenancy, and for a bare-metal size (product family "Compute Instance (bare metal)", as the Pricing API files
// them) a second with dedicated tenancy at the same price, which is where Karpenter reads metal prices.
func productAttributes(t *catalog.InstanceType, region string) []map[string]string {
	shared := productAttributesTenancy(t, region, "Shared")
	if !t.IsMetal() {
		return []map[string]string{shared}
	}
	return []map[string]string{shared, productAttributesTenancy(t, region, "Dedicated")}
}

func productAttributesTenancy(t *catalog.InstanceType, region, tenancy string) map[string]string {
	family, usage := "Compute Instance", "BoxUsage:"
	if t.IsMetal() {
		family = "Compute Instance (bare metal)"
	}
	if tenancy == "Dedicated" {
		usage = "DedicatedUsage:"
	}
	return map[string]string{
		"servicecode": "AmazonEC2", "productFamily": family, "instanceType": t.Name, "instanceFamily": t.Family,
		"regionCode": region, "location": regionNames[region], "locationType": "AWS Region", "operatingSystem": "Linux",
		"tenancy": tenancy, "preInstalledSw": "NA", "capacitystatus": "Used", "licenseModel": "No License required",
		"marketoption": "OnDemand", "vcpu": strconv.Itoa(t.VCPU),
		"memory":            strconv.FormatFloat(float64(t.MemoryMiB)/1024, 'f', -1, 64) + " GiB",
		"currentGeneration": map[bool]string{true: "Yes", false: "No"}[t.CurrentGeneration],
		"usagetype":         "USW2-" + usage + t.Name, "operation": "RunInstances",
	}
}

// attribute looks a filter's field up among a product's attributes. Field names match case-insensitively, as the
// Pricing API matches them: Karpenter filters on "serviceCode", the attribute is "servicecode".
func attribute(attrs map[string]string, field string) (string, bool) {
	if v, ok := attrs[field]; ok {
		return v, true
	}
	for k, v := range attrs {
		if strings.EqualFold(k, field) {
			return v, true
		}
	}
	return "", false
}

func pricingMatch(fs []pricingFilter, attrs map[string]string) bool {
	for _, f := range fs {
		v, ok := attribute(attrs, f.Field)
		switch f.Type {
		case "TERM_MATCH", "EQUALS":
			if !ok || !strings.EqualFold(v, f.Value) {
				return false
			}
		case "CONTAINS":
			if !ok || !strings.Contains(strings.ToLower(v), strings.ToLower(f.Value)) {
				return false
			}
		case "ANY_OF":
			if !ok || !contains(strings.Split(f.Value, ","), v) {
				return false
			}
		case "NONE_OF":
			if ok && contains(strings.Split(f.Value, ","), v) {
				return false
			}
		}
	}
	return true
}

func priceListEntry(attrs map[string]string, usd float64) string {
	key := attrs["regionCode"] + attrs["instanceType"]
	if attrs["tenancy"] != "Shared" {
		key += attrs["tenancy"]
	}
	sku := strings.ToUpper(shortHash(key, 16))
	term := sku + ".JRTCKXETXF"
	doc := map[string]any{
		"product":         map[string]any{"productFamily": attrs["productFamily"], "attributes": attrs, "sku": sku},
		"serviceCode":     "AmazonEC2",
		"version":         "20261101000000",
		"publicationDate": "2026-11-01T00:00:00Z",
		"terms": map[string]any{"OnDemand": map[string]any{term: map[string]any{
			"offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": "2026-11-01T00:00:00Z",
			"priceDimensions": map[string]any{term + ".6YS6EN2CT7": map[string]any{
				"rateCode": term + ".6YS6EN2CT7", "unit": "Hrs", "beginRange": "0", "endRange": "Inf",
				"description":  fmt.Sprintf("$%.4f per On Demand Linux %s Instance Hour", usd, attrs["instanceType"]),
				"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(usd, 'f', 10, 64)},
			}},
			"termAttributes": map[string]string{},
		}}},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}
