package aws_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// zoneAvailability returns, for each zone, whether any offering of the instance type is available there.
func zoneAvailability(t *testing.T, p *provider, name string) map[string]bool {
	t.Helper()
	its, err := p.GetInstanceTypes(context.Background(), test.NodePool("default").NodeClass("default").Obj())
	if err != nil {
		t.Fatalf("GetInstanceTypes: %v", err)
	}
	out := map[string]bool{}
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			out[o.Zone] = out[o.Zone] || o.Available
		}
	}
	if len(out) == 0 {
		t.Fatalf("instance type %s missing", name)
	}
	return out
}

// TestZonalShiftAgainstSimulator follows an ARC zonal shift through the SDK: offerings in the shifted zone are
// unavailable and launches go elsewhere, an instance there is not terminated, and everything is back once the
// shift expires.
func TestZonalShiftAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	p := w.provider(t, "uid-a")
	nc := p.resolvedNodeClass(t)
	if err := p.EnableZonalShift(ctx); err != nil {
		t.Fatalf("EnableZonalShift: %v", err)
	}
	if !p.ZonalShiftEnabled() {
		t.Fatal("ZonalShiftEnabled = false after EnableZonalShift")
	}
	zones := map[string]string{} // zone ID -> name
	for _, s := range nc.Status.Subnets {
		zones[s.ZoneID] = s.Zone
	}
	const shiftedID = "usw2-az1"
	shiftedName := zones[shiftedID]
	if shiftedName == "" {
		t.Fatalf("no subnet in %s: %v", shiftedID, zones)
	}
	// A launch before the shift, pinned to the zone that will be shifted.
	before, err := p.Create(ctx, test.NodeClaim("before", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, shiftedName).Obj())
	if err != nil {
		t.Fatalf("Create before the shift: %v", err)
	}
	if got := zoneAvailability(t, p, "m5.large"); !got[shiftedName] {
		t.Fatalf("before the shift %s is unavailable: %v", shiftedName, got)
	}

	shift, err := w.sim.StartZonalShift(shiftedID, time.Hour, "drill")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.UpdateZonalShifts(ctx); err != nil {
		t.Fatalf("UpdateZonalShifts: %v", err)
	}
	if got := p.ShiftedZoneIDs(); len(got) != 1 || got[0] != shiftedID {
		t.Fatalf("ShiftedZoneIDs = %v, want [%s]", got, shiftedID)
	}
	got := zoneAvailability(t, p, "m5.large")
	for name, available := range got {
		if want := name != shiftedName; available != want {
			t.Errorf("during the shift, zone %s available = %t, want %t", name, available, want)
		}
	}
	for i := 0; i < 3; i++ {
		created, err := p.Create(ctx, claim("during-"+string(rune('a'+i)), "m5.large"))
		if err != nil {
			t.Fatalf("Create during the shift: %v", err)
		}
		if z := created.Labels[corev1.LabelTopologyZone]; z == shiftedName {
			t.Errorf("launch %d went to the shifted zone %s", i, z)
		}
	}
	pinned := test.NodeClaim("pinned", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, shiftedName).Obj()
	if _, err := p.Create(ctx, pinned); !cloudprovider.IsInsufficientCapacity(err) {
		t.Errorf("Create pinned to the shifted zone = %v, want InsufficientCapacityError", err)
	}
	if before.Labels[awsv1.LabelTopologyZoneID] != shiftedID {
		t.Fatalf("the first launch has zone ID %q, want %s", before.Labels[awsv1.LabelTopologyZoneID], shiftedID)
	}
	if err := p.Delete(ctx, before); err == nil || !strings.Contains(err.Error(), "shifted away") {
		t.Errorf("Delete of an instance in the shifted zone = %v, want a refusal naming the shift", err)
	}

	// The shift ends (cancelled): the next read restores the zone.
	if !w.sim.CancelZonalShift(shift.ID) {
		t.Fatal("CancelZonalShift: no such shift")
	}
	if err := p.UpdateZonalShifts(ctx); err != nil {
		t.Fatalf("UpdateZonalShifts: %v", err)
	}
	if got := zoneAvailability(t, p, "m5.large"); !got[shiftedName] {
		t.Errorf("after the shift ended %s is still unavailable: %v", shiftedName, got)
	}
	if _, err := p.Create(ctx, pinned); err != nil {
		t.Errorf("Create pinned to the restored zone: %v", err)
	}
	if err := p.Delete(ctx, before); err != nil && !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete after the shift: %v", err)
	}

	// A shift that expires (not cancelled) stops counting at its expiry even before the next read.
	if _, err := w.sim.StartZonalShift(shiftedID, 10*time.Minute, "short"); err != nil {
		t.Fatal(err)
	}
	if err := p.UpdateZonalShifts(ctx); err != nil {
		t.Fatal(err)
	}
	if got := zoneAvailability(t, p, "m5.large"); got[shiftedName] {
		t.Errorf("short shift: %s still available", shiftedName)
	}
	w.clock.Step(11 * time.Minute)
	if got := zoneAvailability(t, p, "m5.large"); !got[shiftedName] {
		t.Errorf("short shift expired: %s still unavailable", shiftedName)
	}
}

// TestZonalShiftRefusedForUnknownCluster: with ENABLE_ZONAL_SHIFT the provider does not start for a cluster ARC
// does not know (here: EKS does not know it either).
func TestZonalShiftRefusedForUnknownCluster(t *testing.T) {
	w := newWorld(t)
	p := w.providerWith(t, "uid-a", func(o *aws.Options) {
		o.Settings = &settings.Settings{ClusterName: "not-this-one", VMMemoryOverheadPercent: 0.075, EnableZonalShift: true}
	})
	err := p.EnableZonalShift(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ENABLE_ZONAL_SHIFT") {
		t.Fatalf("EnableZonalShift = %v, want an error naming ENABLE_ZONAL_SHIFT", err)
	}
	if p.ZonalShiftEnabled() {
		t.Error("ZonalShiftEnabled after a refusal")
	}
}
