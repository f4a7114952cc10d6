package pricing

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

func TestParseProduct(t *testing.T) {
	cases := []struct {
		name      string
		doc       string
		wantType  string
		wantPrice float64
		wantErr   bool
	}{
		{
			name:     "on-demand term",
			doc:      `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"X.Y":{"priceDimensions":{"X.Y.Z":{"pricePerUnit":{"USD":"0.0960000000"}}}}}}}`,
			wantType: "m5.large", wantPrice: 0.096,
		},
		{name: "no terms", doc: `{"product":{"attributes":{"instanceType":"m5.large"}}}`, wantType: "m5.large"},
		{name: "bad price", doc: `{"product":{"attributes":{"instanceType":"m5.large"}},"terms":{"OnDemand":{"a":{"priceDimensions":{"b":{"pricePerUnit":{"USD":"x"}}}}}}}`, wantErr: true},
		{name: "not JSON", doc: `{`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			typ, price, err := ParseProduct(tc.doc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && (typ != tc.wantType || price != tc.wantPrice) {
				t.Errorf("ParseProduct = %s, %v; want %s, %v", typ, price, tc.wantType, tc.wantPrice)
			}
		})
	}
}

func TestAddSpotKeepsLatest(t *testing.T) {
	out, at := map[string]map[string]float64{}, map[[2]string]time.Time{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sp := func(price string, ts time.Time) ec2types.SpotPrice {
		return ec2types.SpotPrice{InstanceType: "m5.large", AvailabilityZone: aws.String("us-west-2a"), SpotPrice: aws.String(price), Timestamp: aws.Time(ts)}
	}
	for _, s := range []ec2types.SpotPrice{sp("0.03", t0.Add(time.Hour)), sp("0.05", t0), sp("0.04", t0.Add(2*time.Hour))} {
		if err := addSpot(out, at, s); err != nil {
			t.Fatal(err)
		}
	}
	if d := cmp.Diff(map[string]map[string]float64{"m5.large": {"us-west-2a": 0.04}}, out); d != "" {
		t.Errorf("spot prices (-want +got):\n%s", d)
	}
	if err := addSpot(out, at, sp("abc", t0)); err == nil {
		t.Errorf("unparsable price accepted")
	}
}
