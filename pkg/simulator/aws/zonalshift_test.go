package awssim

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// TestARCZonalShiftGetManagedResource answers ARC GetManagedResource for the cluster through the SDK: no shift,
// then a shift away from one zone ID (applied, with its expiry), gone once expired or cancelled; another resource
// is not registered.
func TestARCZonalShiftGetManagedResource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arc := arczonalshift.NewFromConfig(e.cfg)
	cluster, err := eks.NewFromConfig(e.cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(e.sim.opts.ClusterName)})
	if err != nil {
		t.Fatal(err)
	}
	clusterARN := aws.ToString(cluster.Cluster.Arn)
	get := func() *arczonalshift.GetManagedResourceOutput {
		t.Helper()
		out, err := arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(clusterARN)})
		if err != nil {
			t.Fatalf("GetManagedResource: %v", err)
		}
		return out
	}
	if out := get(); len(out.ZonalShifts) != 0 || aws.ToString(out.Arn) != clusterARN {
		t.Fatalf("before any shift: arn %s, %d shifts", aws.ToString(out.Arn), len(out.ZonalShifts))
	}
	zs, err := e.sim.StartZonalShift("usw2-az1", time.Hour, "drill")
	if err != nil {
		t.Fatal(err)
	}
	out := get()
	if len(out.ZonalShifts) != 1 {
		t.Fatalf("%d shifts, want 1", len(out.ZonalShifts))
	}
	got := out.ZonalShifts[0]
	if aws.ToString(got.AwayFrom) != "usw2-az1" || got.AppliedStatus != arctypes.AppliedStatusApplied ||
		!aws.ToTime(got.ExpiryTime).Equal(zs.Expiry) || aws.ToString(got.ZonalShiftId) != zs.ID {
		t.Errorf("shift = away from %s, %s, expiry %v, id %s; want usw2-az1, APPLIED, %v, %s", aws.ToString(got.AwayFrom),
			got.AppliedStatus, aws.ToTime(got.ExpiryTime), aws.ToString(got.ZonalShiftId), zs.Expiry, zs.ID)
	}
	if w := out.AppliedWeights["usw2-az1"]; w != 0 {
		t.Errorf("applied weight of the shifted zone = %v, want 0", w)
	}
	e.clock.Step(time.Hour)
	if out := get(); len(out.ZonalShifts) != 0 {
		t.Errorf("after expiry: %d shifts", len(out.ZonalShifts))
	}
	zs2, err := e.sim.StartZonalShift("usw2-az2", time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if !e.sim.CancelZonalShift(zs2.ID) || len(get().ZonalShifts) != 0 {
		t.Errorf("a cancelled shift is still reported")
	}
	if _, err := e.sim.StartZonalShift("usw2-az9", time.Hour, ""); err == nil {
		t.Errorf("a shift away from an unknown zone ID was accepted")
	}
	_, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:1:cluster/other")})
	if code, status := apiCode(t, err); code != "ResourceNotFoundException" || status != 404 {
		t.Errorf("another resource: %s (HTTP %d), want ResourceNotFoundException 404", code, status)
	}
}
