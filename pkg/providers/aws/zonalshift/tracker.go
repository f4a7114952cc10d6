package zonalshift

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// RefreshInterval is how often the zonal shifts are read again (Karpenter v1.14's interval; not a setting there).
const RefreshInterval = 30 * time.Second

// Tracker remembers the applied zonal shifts of one cluster, by zone ID, with their expiry. It is safe for
// concurrent use.
type Tracker struct {
	arc        sdk.ARCZonalShiftAPI
	clock      clock.Clock
	clusterARN string

	mu sync.RWMutex
	// expiry is, for each zone ID shifted away from, when its latest applied shift ends.
	expiry map[string]time.Time
	// read is whether a GetManagedResource answer has been recorded.
	read bool
	// triedAt is when ensureRead last tried a first read, so a failing read is retried at most once per
	// RefreshInterval rather than on every question.
	triedAt time.Time
}

// New returns a tracker for the cluster with the given ARN; nothing is read until Update or the first question.
func New(arc sdk.ARCZonalShiftAPI, clk clock.Clock, clusterARN string) *Tracker {
	return &Tracker{arc: arc, clock: clk, clusterARN: clusterARN, expiry: map[string]time.Time{}}
}

// ClusterARN is the resource the tracker reads.
func (t *Tracker) ClusterARN() string { return t.clusterARN }

// Validate finds the cluster's ARN with EKS DescribeCluster and checks that ARC zonal shift knows it
// (GetManagedResource answers for it). An error means zonal shifts cannot be followed: the operator refuses to start.
func Validate(ctx context.Context, eksAPI sdk.EKSAPI, arc sdk.ARCZonalShiftAPI, clusterName string) (string, error) {
	out, err := eksAPI.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(clusterName)})
	if err != nil {
		return "", sdk.Wrap(err, "ENABLE_ZONAL_SHIFT: describing EKS cluster %s for its ARN", clusterName)
	}
	if out.Cluster == nil || aws.ToString(out.Cluster.Arn) == "" {
		return "", fmt.Errorf("ENABLE_ZONAL_SHIFT: EKS DescribeCluster gave no ARN for cluster %s", clusterName)
	}
	arn := aws.ToString(out.Cluster.Arn)
	if _, err := arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)}); err != nil {
		return "", sdk.Wrap(err, "ENABLE_ZONAL_SHIFT: cluster %s is not known to ARC zonal shift (enable zonal shift on the cluster and allow arc-zonal-shift:GetManagedResource)", arn)
	}
	return arn, nil
}

// Update reads the cluster's zonal shifts and replaces what the tracker knew: a shift that is no longer listed
// (cancelled) no longer counts. Only the zonal shifts with status APPLIED count; the answer's autoshifts are not
// read, as in Karpenter.
func (t *Tracker) Update(ctx context.Context) error {
	out, err := t.arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(t.clusterARN)})
	if err != nil {
		return sdk.Wrap(err, "reading the zonal shifts of %s", t.clusterARN)
	}
	expiry := map[string]time.Time{}
	for _, zs := range out.ZonalShifts {
		if zs.AppliedStatus != arctypes.AppliedStatusApplied || aws.ToString(zs.AwayFrom) == "" || zs.ExpiryTime == nil {
			continue
		}
		zone := aws.ToString(zs.AwayFrom)
		if e := *zs.ExpiryTime; e.After(expiry[zone]) {
			expiry[zone] = e
		}
	}
	t.mu.Lock()
	t.expiry, t.read = expiry, true
	t.mu.Unlock()
	log.FromContext(ctx).V(1).Info("read zonal shifts", "cluster-arn", t.clusterARN, "shifted-zone-ids", t.ShiftedZoneIDs())
	return nil
}

// ensureRead reads the shifts once if nothing was read yet (a question before the first poll); a failure is
// logged and leaves every zone usable until the next try, at most once per RefreshInterval.
func (t *Tracker) ensureRead(ctx context.Context) {
	t.mu.Lock()
	now := t.clock.Now()
	if t.read || (!t.triedAt.IsZero() && now.Sub(t.triedAt) < RefreshInterval) {
		t.mu.Unlock()
		return
	}
	t.triedAt = now
	t.mu.Unlock()
	if err := t.Update(ctx); err != nil {
		log.FromContext(ctx).Error(err, "reading zonal shifts failed; no zone is treated as shifted until the next read")
	}
}

// IsShifted reports whether traffic is shifted away from the zone ID now.
func (t *Tracker) IsShifted(ctx context.Context, zoneID string) bool {
	if zoneID == "" {
		return false
	}
	t.ensureRead(ctx)
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.expiry[zoneID]
	return ok && e.After(t.clock.Now())
}

// ShiftedZoneIDs returns the zone IDs traffic is shifted away from now, sorted, as last read.
func (t *Tracker) ShiftedZoneIDs() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	now := t.clock.Now()
	var out []string
	for z, e := range t.expiry {
		if e.After(now) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}
