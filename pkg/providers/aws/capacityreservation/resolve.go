package capacityreservation

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// Resolved is one reservation as the node class status shows it, with the instances it can still take.
type Resolved struct {
	awsv1.CapacityReservation
	Available int
}

// Resolve returns the active reservations any term selects, sorted by id. A term with an id selects that
// reservation; otherwise its tags ("*" matches any value), ownerID and instanceMatchCriteria must all match.
// Matching nothing is not an error: a reservation may be bought later.
func Resolve(ctx context.Context, api sdk.EC2API, terms []awsv1.CapacityReservationSelectorTerm, now time.Time) ([]Resolved, error) {
	found := map[string]ec2types.CapacityReservation{}
	for _, t := range terms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{filter("state", "active")}}
		if t.ID != "" {
			in.CapacityReservationIds = []string{t.ID}
		}
		for _, k := range sortedKeys(t.Tags) {
			if v := t.Tags[k]; v == "*" {
				in.Filters = append(in.Filters, filter("tag-key", k))
			} else {
				in.Filters = append(in.Filters, filter("tag:"+k, v))
			}
		}
		if t.OwnerID != "" {
			in.Filters = append(in.Filters, filter("owner-id", t.OwnerID))
		}
		if t.InstanceMatchCriteria != "" {
			in.Filters = append(in.Filters, filter("instance-match-criteria", t.InstanceMatchCriteria))
		}
		pager := ec2.NewDescribeCapacityReservationsPaginator(api, in)
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if t.ID != "" && sdk.ErrorCode(err) == "InvalidCapacityReservationId.NotFound" {
				break // selects nothing (yet)
			}
			if err != nil {
				return nil, sdk.Wrap(err, "describing capacity reservations")
			}
			for _, cr := range page.CapacityReservations {
				if cr.State != "" && cr.State != ec2types.CapacityReservationStateActive {
					continue
				}
				found[aws.ToString(cr.CapacityReservationId)] = cr
			}
		}
	}
	out := make([]Resolved, 0, len(found))
	for _, id := range sortedKeys(found) {
		out = append(out, convert(found[id], now))
	}
	return out, nil
}

func convert(cr ec2types.CapacityReservation, now time.Time) Resolved {
	rt := awsv1.CapacityReservationTypeDefault
	if cr.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
		rt = awsv1.CapacityReservationTypeCapacityBlock
	}
	r := Resolved{CapacityReservation: awsv1.CapacityReservation{
		ID: aws.ToString(cr.CapacityReservationId), AvailabilityZone: aws.ToString(cr.AvailabilityZone),
		InstanceType: aws.ToString(cr.InstanceType), InstanceMatchCriteria: string(cr.InstanceMatchCriteria),
		OwnerID: aws.ToString(cr.OwnerId), ReservationType: rt, State: State(rt, cr.EndDate, now),
		Interruptible: aws.ToBool(cr.Interruptible),
	}, Available: int(aws.ToInt32(cr.AvailableInstanceCount))}
	if cr.EndDate != nil {
		end := metav1.NewTime(cr.EndDate.UTC())
		r.EndTime = &end
	}
	if r.State == awsv1.CapacityReservationStateExpiring {
		r.Available = 0
	}
	return r
}

func filter(name string, values ...string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String(name), Values: values}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Describe renders the ids of reservations for messages.
func Describe(rs []awsv1.CapacityReservation) string {
	ids := make([]string, 0, len(rs))
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return strings.Join(ids, ", ")
}
