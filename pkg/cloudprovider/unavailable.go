package cloudprovider

import (
	"encoding/json"
	"fmt"
	"time"
)

// UnavailableOffering is an offering the cloud refused recently for lack of capacity; the controller does not
// offer it again until Until.
type UnavailableOffering struct {
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	CapacityType string    `json:"capacityType"`
	Reason       string    `json:"reason,omitempty"`
	Until        time.Time `json:"until"`
}

// UnavailableOfferingsLister is implemented by cloud providers that remember the offerings the cloud refused, so
// that the controller can publish them for `dovetailctl explain`.
type UnavailableOfferingsLister interface {
	// UnavailableOfferings returns the offerings unavailable now, in a stable order.
	UnavailableOfferings() []UnavailableOffering
}

// UnavailableOfferingsConfigMap is the ConfigMap, in the controller's namespace, where the controller publishes
// the offerings it holds unavailable; UnavailableOfferingsKey is its data key (a JSON list).
const (
	UnavailableOfferingsConfigMap = "dovetail-unavailable-offerings"
	UnavailableOfferingsKey       = "offerings.json"
)

// EncodeUnavailableOfferings returns the ConfigMap data value for offerings.
func EncodeUnavailableOfferings(offerings []UnavailableOffering) (string, error) {
	if offerings == nil {
		offerings = []UnavailableOffering{}
	}
	b, err := json.Marshal(offerings)
	if err != nil {
		return "", fmt.Errorf("encoding unavailable offerings: %w", err)
	}
	return string(b), nil
}

// DecodeUnavailableOfferings parses a ConfigMap data value written by EncodeUnavailableOfferings and drops the
// entries that expired before now.
func DecodeUnavailableOfferings(data string, now time.Time) ([]UnavailableOffering, error) {
	var all []UnavailableOffering
	if err := json.Unmarshal([]byte(data), &all); err != nil {
		return nil, fmt.Errorf("decoding %s of ConfigMap %s: %w", UnavailableOfferingsKey, UnavailableOfferingsConfigMap, err)
	}
	out := all[:0]
	for _, o := range all {
		if o.InstanceType == "" || o.Zone == "" || o.CapacityType == "" {
			return nil, fmt.Errorf("decoding %s of ConfigMap %s: an entry without instance type, zone or capacity type: %+v",
				UnavailableOfferingsKey, UnavailableOfferingsConfigMap, o)
		}
		if now.Before(o.Until) {
			out = append(out, o)
		}
	}
	return out, nil
}

// MarkUnavailable sets Available to false on the offerings of its that the list names, and returns how many it
// changed.
func MarkUnavailable(its []*InstanceType, unavailable []UnavailableOffering) int {
	if len(unavailable) == 0 {
		return 0
	}
	type key struct{ it, zone, ct string }
	set := make(map[key]bool, len(unavailable))
	for _, u := range unavailable {
		set[key{u.InstanceType, u.Zone, u.CapacityType}] = true
	}
	n := 0
	for _, it := range its {
		for i := range it.Offerings {
			o := &it.Offerings[i]
			if o.Available && set[key{it.Name, o.Zone, o.CapacityType}] {
				o.Available = false
				n++
			}
		}
	}
	return n
}
