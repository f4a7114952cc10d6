package instance

import (
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func reservedOff(zone, id, rt string, avail bool) cloudprovider.Offering {
	return cloudprovider.Offering{Zone: zone, CapacityType: cloudprovider.CapacityTypeReserved, Price: 0.096 / 1e7, Available: avail,
		ReservationID: id, ReservationType: rt}
}

// TestSelectOverridesReserved: reserved offerings go first while available; a requirement on a reservation
// label narrows to that reservation; when reservations are full, the next capacity type the NodeClaim allows
// is chosen.
func TestSelectOverridesReserved(t *testing.T) {
	od, res := cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved
	ct := "karpenter.sh/capacity-type"
	full := []*cloudprovider.InstanceType{it("m5.large", "amd64", off("us-west-2a", od, 0.096),
		reservedOff("us-west-2a", "cr-1", "default", false), reservedOff("us-west-2b", "cr-2", "capacity-block", false))}
	open := []*cloudprovider.InstanceType{it("m5.large", "amd64", off("us-west-2a", od, 0.096),
		reservedOff("us-west-2a", "cr-1", "default", true), reservedOff("us-west-2b", "cr-2", "capacity-block", true))}
	for _, tc := range []struct {
		name    string
		types   []*cloudprovider.InstanceType
		reqs    []corev1.NodeSelectorRequirement
		wantCT  string
		wantIDs []string
		wantErr bool
	}{
		{name: "reserved first", types: open, reqs: []corev1.NodeSelectorRequirement{req(ct, corev1.NodeSelectorOpIn, od, res)},
			wantCT: res, wantIDs: []string{"cr-1", "cr-2"}},
		{name: "reservation type requirement", types: open, reqs: []corev1.NodeSelectorRequirement{
			req(awsv1.LabelCapacityReservationType, corev1.NodeSelectorOpIn, "capacity-block")}, wantCT: res, wantIDs: []string{"cr-2"}},
		{name: "reservation id requirement", types: open, reqs: []corev1.NodeSelectorRequirement{
			req(awsv1.LabelCapacityReservationID, corev1.NodeSelectorOpIn, "cr-1")}, wantCT: res, wantIDs: []string{"cr-1"}},
		{name: "exhausted falls back to on-demand", types: full, reqs: []corev1.NodeSelectorRequirement{req(ct, corev1.NodeSelectorOpIn, od, res)},
			wantCT: od, wantIDs: []string{""}},
		{name: "exhausted and reserved only", types: full, reqs: []corev1.NodeSelectorRequirement{req(ct, corev1.NodeSelectorOpIn, res)}, wantErr: true},
		{name: "on-demand only ignores reservations", types: open, reqs: []corev1.NodeSelectorRequirement{req(ct, corev1.NodeSelectorOpIn, od)},
			wantCT: od, wantIDs: []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gotCT, choices, err := SelectOverrides(SelectInput{Requirements: tc.reqs, InstanceTypes: tc.types, Subnets: subnets})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			var ids []string
			for _, c := range choices {
				ids = append(ids, c.ReservationID)
			}
			if gotCT != tc.wantCT || !cmp.Equal(ids, tc.wantIDs) {
				t.Errorf("got %s %v, want %s %v", gotCT, ids, tc.wantCT, tc.wantIDs)
			}
		})
	}
}

func TestReservationLabels(t *testing.T) {
	want := map[string]string{
		awsv1.LabelCapacityReservationID:            "cr-1",
		awsv1.LabelCapacityReservationType:          "capacity-block",
		awsv1.LabelCapacityReservationInterruptible: "true",
	}
	if d := cmp.Diff(want, ReservationLabels("cr-1", "capacity-block", true)); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
	if got := ReservationLabels("cr-2", "", false)[awsv1.LabelCapacityReservationType]; got != "default" {
		t.Errorf("type of an untyped reservation = %q, want default", got)
	}
	if got := OfferingReservationLabels(off("us-west-2a", cloudprovider.CapacityTypeOnDemand, 1)); got != nil {
		t.Errorf("on-demand offering labels = %v, want none", got)
	}
}

func TestFleetInputCapacityBlock(t *testing.T) {
	for _, tc := range []struct {
		rt   string
		want ec2types.DefaultTargetCapacityType
	}{{"default", ec2types.DefaultTargetCapacityTypeOnDemand}, {"capacity-block", ec2types.DefaultTargetCapacityTypeCapacityBlock}} {
		in, err := FleetInput(FleetRequest{CapacityType: cloudprovider.CapacityTypeReserved,
			Choices:         []Choice{{InstanceType: "m5.large", SubnetID: "subnet-a", ReservationID: "cr-1", ReservationType: tc.rt}},
			LaunchTemplates: map[string]string{"m5.large": "lt-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := in.TargetCapacitySpecification.DefaultTargetCapacityType; got != tc.want {
			t.Errorf("%s: DefaultTargetCapacityType %s, want %s", tc.rt, got, tc.want)
		}
	}
}
