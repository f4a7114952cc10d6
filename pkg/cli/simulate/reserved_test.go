package simulate

import (
	"testing"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
)

// TestCatalogReservedOfferings: a node class's resolved capacity reservations become reserved offerings of
// their instance type, in their zone, priced as the controller prices them.
func TestCatalogReservedOfferings(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	nc := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{
		Subnets:              []awsv1.Subnet{{ID: "subnet-a", Zone: "us-west-2a"}, {ID: "subnet-b", Zone: "us-west-2b"}},
		CapacityReservations: []awsv1.CapacityReservation{{ID: "cr-1", InstanceType: "m5.large", AvailabilityZone: "us-west-2a"}},
	}}
	its, err := catalogInstanceTypes(cat, "us-west-2", nc)
	if err != nil {
		t.Fatal(err)
	}
	var od float64
	var reserved []cloudprovider.Offering
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.CapacityType == cloudprovider.CapacityTypeReserved {
				if it.Name != "m5.large" {
					t.Errorf("reserved offering on %s", it.Name)
				}
				reserved = append(reserved, o)
			}
			if it.Name == "m5.large" && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				od = o.Price
			}
		}
	}
	if len(reserved) != 1 || reserved[0].Zone != "us-west-2a" || reserved[0].ReservationID != "cr-1" || !reserved[0].Available ||
		reserved[0].Price != capacityreservation.Price(od) || od == 0 {
		t.Errorf("reserved offerings = %+v (on-demand price %g)", reserved, od)
	}
}
