package explain

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// maxUnavailableListed bounds the offerings the warning names one by one.
const maxUnavailableListed = 8

// applyUnavailable marks unavailable the offerings the controller holds unavailable after the cloud refused them
// for lack of capacity (published in its namespace's ConfigMap), as the controller's own scheduler sees them, and
// appends a warning naming them. Without the ConfigMap (no controller, or one that does not publish it) nothing
// changes.
func (o *Options) applyUnavailable(ctx context.Context, c client.Reader, its instanceTypes, warnings []string) ([]string, error) {
	ns := o.ControllerNamespace
	if ns == "" {
		ns = "kube-system"
	}
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cloudprovider.UnavailableOfferingsConfigMap}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return warnings, nil
	case err != nil:
		return append(warnings, fmt.Sprintf("could not read the offerings the controller holds unavailable (ConfigMap %s/%s): %v",
			ns, cloudprovider.UnavailableOfferingsConfigMap, err)), nil
	}
	list, err := cloudprovider.DecodeUnavailableOfferings(cm.Data[cloudprovider.UnavailableOfferingsKey], o.now())
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return warnings, nil
	}
	for _, pool := range its {
		cloudprovider.MarkUnavailable(pool, list)
	}
	var names []string
	for _, u := range list[:min(len(list), maxUnavailableListed)] {
		reason := u.Reason
		if reason == "" {
			reason = "refused"
		}
		names = append(names, fmt.Sprintf("%s %s %s (%s, until %s)", u.InstanceType, u.Zone, u.CapacityType, reason,
			u.Until.UTC().Format("15:04:05Z")))
	}
	more := ""
	if n := len(list) - len(names); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return append(warnings, fmt.Sprintf("the controller holds %d offering(s) unavailable after the cloud refused them for capacity, and so does this explanation: %s%s",
		len(list), strings.Join(names, ", "), more)), nil
}
