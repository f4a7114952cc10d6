package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/kubeletcel"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
)

// validateKubelet checks spec.kubelet as Karpenter v1.15 does before anything is launched, returning an
// *awsv1.ValidationError with the reason of the ValidationSucceeded condition:
//   - InvalidKubeletConfiguration: names, types and values (awsv1.ValidateKubelet);
//   - KubeletExpressionsDisabled: a CEL expression in maxPods, kubeReserved or systemReserved while the NodeClassCEL
//     gate is off (env nil); KubeletExpressionInvalid: one that does not compile (env set);
//   - UnsupportedKubeletConfiguration: fields the AMI family does not apply. AL2023 writes the whole configuration
//     into its NodeConfig and Custom uses none of it; AL2, Bottlerocket and Windows apply only the fields Dovetail
//     reads (awsv1.ParsedKubelet), Bottlerocket not podsPerCore, and each only one clusterDNS address.
func validateKubelet(family string, k awsv1.KubeletConfiguration, env *kubeletcel.Env) error {
	if len(k) == 0 {
		return nil
	}
	if errs := awsv1.ValidateKubelet(k); len(errs) > 0 {
		msgs := make([]string, 0, len(errs))
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		return &awsv1.ValidationError{Reason: awsv1.ReasonInvalidKubeletConfiguration, Message: strings.Join(msgs, "; ")}
	}
	parsed, err := k.Parse()
	if err != nil {
		return &awsv1.ValidationError{Reason: awsv1.ReasonInvalidKubeletConfiguration, Message: err.Error()}
	}
	if parsed.HasExpressions() {
		if env == nil {
			return &awsv1.ValidationError{Reason: awsv1.ReasonKubeletExpressionsDisabled,
				Message: "spec.kubelet holds a CEL expression, but the NodeClassCEL feature gate (AWS_FEATURE_GATES) is off"}
		}
		exprs := parsed.ReservedExpressions()
		if parsed.MaxPods != nil && parsed.MaxPods.Type == intstr.String {
			exprs["maxPods"] = parsed.MaxPods.StrVal
		}
		for _, field := range slices.Sorted(maps.Keys(exprs)) {
			if err := env.Compile(exprs[field]); err != nil {
				return &awsv1.ValidationError{Reason: awsv1.ReasonKubeletExpressionInvalid, Message: "spec.kubelet." + field + ": " + err.Error()}
			}
		}
	}
	if family == awsv1.AMIFamilyAL2023 || family == awsv1.AMIFamilyCustom {
		return nil
	}
	var msgs []string
	unsupported := awsv1.UnmodelledKubeletFields(k)
	if parsed.PodsPerCore != nil && family == awsv1.AMIFamilyBottlerocket {
		unsupported = append(unsupported, "podsPerCore")
	}
	if len(unsupported) > 0 {
		msgs = append(msgs, fmt.Sprintf("spec.kubelet: the %s AMI family does not apply %s (only AL2023 passes every kubelet field to the node)",
			family, strings.Join(unsupported, ", ")))
	}
	if len(parsed.ClusterDNS) > 1 {
		msgs = append(msgs, fmt.Sprintf("spec.kubelet.clusterDNS: the %s AMI family takes one address, %d are set", family, len(parsed.ClusterDNS)))
	}
	if len(msgs) > 0 {
		return &awsv1.ValidationError{Reason: awsv1.ReasonUnsupportedKubeletConfiguration, Message: strings.Join(msgs, "; ")}
	}
	return nil
}

// validateUserDataSize refuses rendered user data larger than EC2 accepts.
func validateUserDataSize(rendered string) error {
	if len(rendered) > awsv1.UserDataSizeLimit {
		return &awsv1.ValidationError{Reason: awsv1.ReasonUserDataSizeLimitExceeded, Message: fmt.Sprintf(
			"the rendered user data is %d bytes, more than the %d EC2 accepts; shorten spec.userData or spec.kubelet",
			len(rendered), awsv1.UserDataSizeLimit)}
	}
	return nil
}

// evaluateKubelet evaluates the node class's kubelet CEL expressions for every instance type, as Karpenter v1.15
// does before a node class is ready: one that fails anywhere is KubeletExpressionEvaluationFailed.
func (p *CloudProvider) evaluateKubelet(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	k := p.kubeletOf(nc)
	if k.CEL == nil {
		return nil
	}
	infos, err := p.instanceTypes.Infos(ctx)
	if err != nil {
		return fmt.Errorf("listing instance types to evaluate spec.kubelet: %w", err)
	}
	for _, info := range infos {
		if err := instancetype.ResolveKubelet(info, k, p.settings.ReservedENIs); err != nil {
			return &awsv1.ValidationError{Reason: awsv1.ReasonKubeletExpressionEvaluationFailed, Message: err.Error()}
		}
	}
	return nil
}
