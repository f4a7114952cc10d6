package simulate

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
)

// DRASettings are the controller settings that decide what becomes of pods asking for dynamic resource
// allocation. The zero value plans their claims with no built-in device models.
type DRASettings struct {
	// IgnoreDRARequests is the controller's IGNORE_DRA_REQUESTS. True (Karpenter's default) leaves pods with
	// resource claims out of provisioning: they are reported with the reason the controller gives them.
	IgnoreDRARequests bool
	// AWSFeatureGates is the controller's AWS_FEATURE_GATES: DRANVIDIAGPU and DRAEFA give instance types their
	// built-in device models when claims are planned.
	AWSFeatureGates string
	// envError is set when IGNORE_DRA_REQUESTS in the environment, the flag's default, is not a boolean.
	envError error
}

// flagSet is the part of a cobra command's flag set AddDRAFlags uses.
type flagSet interface {
	BoolVar(p *bool, name string, value bool, usage string)
	StringVar(p *string, name string, value string, usage string)
}

// AddDRAFlags adds --ignore-dra-requests (default: IGNORE_DRA_REQUESTS, else Karpenter's default true) and
// --aws-feature-gates (default: AWS_FEATURE_GATES).
func AddDRAFlags(f flagSet, s *DRASettings) {
	ignore := true
	if v, ok := os.LookupEnv("IGNORE_DRA_REQUESTS"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.envError = fmt.Errorf("IGNORE_DRA_REQUESTS: %q is not a boolean (the default of --ignore-dra-requests)", v)
		} else {
			ignore = b
		}
	}
	f.BoolVar(&s.IgnoreDRARequests, "ignore-dra-requests", ignore,
		"the controller's IGNORE_DRA_REQUESTS: true leaves pods with resource claims out, as the controller does; false plans their claims (default: IGNORE_DRA_REQUESTS when set)")
	f.StringVar(&s.AWSFeatureGates, "aws-feature-gates", os.Getenv("AWS_FEATURE_GATES"),
		"the controller's AWS_FEATURE_GATES: with DRANVIDIAGPU=true and DRAEFA=true instance types carry their built-in GPU and EFA device models when claims are planned (default: AWS_FEATURE_GATES)")
}

// validate checks the settings and returns the device model gates.
func (s DRASettings) validate() (nvidiaGPU, efa bool, err error) {
	if s.envError != nil {
		return false, false, s.envError
	}
	gates, err := settings.ParseAWSFeatureGates(s.AWSFeatureGates)
	if err != nil {
		return false, false, fmt.Errorf("--aws-feature-gates: %w", err)
	}
	return gates[settings.AWSFeatureDRANVIDIAGPU], gates[settings.AWSFeatureDRAEFA], nil
}

// Validate checks the settings: an IGNORE_DRA_REQUESTS that is not a boolean, an unknown AWS feature gate.
func (s DRASettings) Validate() error {
	_, _, err := s.validate()
	return err
}

// IgnoredReason is the reason the controller gives a pending pod it leaves out for its resource claims
// (IGNORE_DRA_REQUESTS=true), or "" when it plans the pod.
func (s DRASettings) IgnoredReason(p *corev1.Pod) string {
	if s.IgnoreDRARequests && metrics.AsksForDynamicResources(p) {
		return provisioning.ReasonDRARequests
	}
	return ""
}

// holdDRAPods takes out of pods those the controller leaves out for their resource claims, as it does.
func (s DRASettings) holdDRAPods(pods []*corev1.Pod) (rest []*corev1.Pod, held []*corev1.Pod) {
	if !s.IgnoreDRARequests {
		return pods, nil
	}
	rest = make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if s.IgnoredReason(p) != "" {
			held = append(held, p)
			continue
		}
		rest = append(rest, p)
	}
	return rest, held
}

// addHeld reports the held pods as unschedulable with the controller's reason.
func (r *report) addHeld(held []*corev1.Pod) {
	if len(held) == 0 {
		return
	}
	for _, p := range held {
		r.Unschedulable = append(r.Unschedulable, unschedulable{Pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}.String(),
			Reason: provisioning.ReasonDRARequests})
	}
	sort.SliceStable(r.Unschedulable, func(i, j int) bool {
		ni, pi, _ := strings.Cut(r.Unschedulable[i].Pod, "/")
		nj, pj, _ := strings.Cut(r.Unschedulable[j].Pod, "/")
		if ni != nj {
			return ni < nj
		}
		return pi < pj
	})
}
