package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
)

// Reasons of ValidationSucceeded=False that Karpenter v1.15 reports for an EC2NodeClass, and Dovetail with it.
const (
	// ReasonInvalidKubeletConfiguration: spec.kubelet has a name the upstream KubeletConfiguration lacks, a value
	// of the wrong type, or a value out of range.
	ReasonInvalidKubeletConfiguration = "InvalidKubeletConfiguration"
	// ReasonUnsupportedKubeletConfiguration: spec.kubelet sets fields the node class's AMI family does not apply.
	ReasonUnsupportedKubeletConfiguration = "UnsupportedKubeletConfiguration"
	// ReasonKubeletExpressionsDisabled: spec.kubelet holds a CEL expression and the NodeClassCEL gate is off.
	ReasonKubeletExpressionsDisabled = "KubeletExpressionsDisabled"
	// ReasonKubeletExpressionInvalid: a CEL expression of spec.kubelet does not compile.
	ReasonKubeletExpressionInvalid = "KubeletExpressionInvalid"
	// ReasonKubeletExpressionEvaluationFailed: a CEL expression of spec.kubelet fails for some instance type.
	ReasonKubeletExpressionEvaluationFailed = "KubeletExpressionEvaluationFailed"
	// ReasonInstanceProfileNotFound: spec.instanceProfile names a profile IAM does not have.
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	// ReasonUserDataSizeLimitExceeded: the rendered user data is larger than EC2 accepts (UserDataSizeLimit).
	ReasonUserDataSizeLimitExceeded = "UserDataSizeLimitExceeded"
)

// UserDataSizeLimit is the largest user data EC2 accepts, in bytes before base64 encoding (16 KiB).
const UserDataSizeLimit = 16 * 1024

// ValidationError refuses an EC2NodeClass with the reason its ValidationSucceeded condition carries.
type ValidationError struct {
	Reason  string
	Message string
}

func (e *ValidationError) Error() string { return e.Message }

// ValidationReason returns the reason of the first ValidationError in err's chain, or "" when there is none.
func ValidationReason(err error) string {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Reason
	}
	return ""
}

// Eviction signals the kubelet knows, and the resources it can reserve; other keys it ignores silently.
var (
	kubeletEvictionSignals      = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
	kubeletReservedResources    = []string{"cpu", "memory", "ephemeral-storage", "pid"}
	kubeletFieldsSetByBootstrap = map[string]string{
		"registerWithTaints": "the node's taints come from the NodeClaim (they are written at bootstrap)",
	}
)

// ValidateKubelet checks spec.kubelet as Karpenter v1.15 does once its schema stopped checking it: names and
// types against the upstream KubeletConfiguration, then key sets, ranges and pairings. A maxPods string and
// reserved values that are not quantities are CEL expressions: only their shape is checked here.
func ValidateKubelet(k KubeletConfiguration) []error {
	if len(k) == 0 {
		return nil
	}
	if errs := validateKubeletTypes(k); len(errs) > 0 {
		return errs
	}
	return validateKubeletValues(k)
}

func validateKubeletTypes(k KubeletConfiguration) []error {
	if mp, ok := k["maxPods"]; ok && isJSONString(mp.Raw) {
		k = maps.Clone(k)
		k["maxPods"] = KubeletValue(0)
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return []error{fmt.Errorf("spec.kubelet: %w", err)}
	}
	strict, err := sigsjson.UnmarshalStrict(raw, &kubeletv1beta1.KubeletConfiguration{})
	if err != nil {
		return []error{fmt.Errorf("spec.kubelet: %w", err)}
	}
	var errs []error
	for _, e := range strict {
		errs = append(errs, fmt.Errorf("spec.kubelet: %w", e))
	}
	return errs
}

//nolint:gocyclo // one flat list of independent checks
func validateKubeletValues(k KubeletConfiguration) []error {
	var errs []error
	add := func(format string, a ...interface{}) { errs = append(errs, fmt.Errorf(format, a...)) }
	for _, name := range slices.Sorted(maps.Keys(kubeletFieldsSetByBootstrap)) {
		if _, ok := k[name]; ok {
			add("spec.kubelet.%s may not be set: %s", name, kubeletFieldsSetByBootstrap[name])
		}
	}
	for _, field := range []string{"evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim"} {
		m, ok := stringMapField(k, field)
		if !ok {
			continue
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(kubeletEvictionSignals, key) {
				add("spec.kubelet.%s: %q is not an eviction signal (one of %s)", field, key, strings.Join(kubeletEvictionSignals, ", "))
			}
			v := m[key]
			if field == "evictionSoftGracePeriod" {
				if d, err := time.ParseDuration(v); err != nil || d < 0 {
					add("spec.kubelet.%s[%s]: %q is not a non-negative duration", field, key, v)
				}
				continue
			}
			if !evictionThresholdValid(v) {
				add("spec.kubelet.%s[%s]: %q is neither a percentage from 0 to 100 nor a non-negative quantity", field, key, v)
			}
		}
	}
	soft, _ := stringMapField(k, "evictionSoft")
	grace, _ := stringMapField(k, "evictionSoftGracePeriod")
	for _, s := range slices.Sorted(maps.Keys(soft)) {
		if _, ok := grace[s]; !ok {
			add("spec.kubelet.evictionSoft[%s]: no evictionSoftGracePeriod for this signal", s)
		}
	}
	for _, s := range slices.Sorted(maps.Keys(grace)) {
		if _, ok := soft[s]; !ok {
			add("spec.kubelet.evictionSoftGracePeriod[%s]: no evictionSoft threshold for this signal", s)
		}
	}
	for _, field := range []string{"kubeReserved", "systemReserved"} {
		m, _ := stringMapField(k, field)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if !slices.Contains(kubeletReservedResources, key) {
				add("spec.kubelet.%s: %q is not a reservable resource (one of %s)", field, key, strings.Join(kubeletReservedResources, ", "))
			}
			if strings.HasPrefix(m[key], "-") {
				add("spec.kubelet.%s[%s]: %q is negative", field, key, m[key])
			}
		}
	}
	for _, field := range []string{"imageGCHighThresholdPercent", "imageGCLowThresholdPercent"} {
		if v, ok := intField(k, field); ok && (v < 0 || v > 100) {
			add("spec.kubelet.%s: %d is not between 0 and 100", field, v)
		}
	}
	for _, field := range []string{"podsPerCore", "evictionMaxPodGracePeriod", "maxPods"} {
		if v, ok := intField(k, field); ok && v < 0 {
			add("spec.kubelet.%s: %d is negative", field, v)
		}
	}
	high, hok := intField(k, "imageGCHighThresholdPercent")
	low, lok := intField(k, "imageGCLowThresholdPercent")
	if hok && lok && high <= low {
		add("spec.kubelet.imageGCHighThresholdPercent (%d) must be greater than imageGCLowThresholdPercent (%d)", high, low)
	}
	return errs
}

// evictionThresholdValid: a percentage from 0 to 100, or a non-negative quantity.
func evictionThresholdValid(v string) bool {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		return err == nil && f >= 0 && f <= 100
	}
	q, err := resource.ParseQuantity(v)
	return err == nil && q.Sign() >= 0
}

func stringMapField(k KubeletConfiguration, field string) (map[string]string, bool) {
	v, ok := k[field]
	if !ok {
		return nil, false
	}
	var out map[string]string
	if err := json.Unmarshal(v.Raw, &out); err != nil {
		return nil, false
	}
	return out, true
}

func intField(k KubeletConfiguration, field string) (int64, bool) {
	v, ok := k[field]
	if !ok {
		return 0, false
	}
	var out int64
	if err := json.Unmarshal(v.Raw, &out); err != nil {
		return 0, false
	}
	return out, true
}

func isJSONString(raw []byte) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil
}
