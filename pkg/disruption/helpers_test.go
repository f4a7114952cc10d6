package disruption_test

import "github.com/dovetail/dovetail/pkg/disruption"

// stayReasons is why each node of a decision's result stays, by node name.
func stayReasons(res *disruption.Result) map[string]disruption.StayReason {
	out := map[string]disruption.StayReason{}
	for _, s := range res.Stays {
		out[s.Node] = s.Reason
	}
	return out
}
