package v1

import corev1 "k8s.io/api/core/v1"

// Well-known taint keys.
const (
	// DisruptedTaintKey marks a node that is being disrupted; new pods are not scheduled to it.
	DisruptedTaintKey = Group + "/disrupted"
	// UnregisteredTaintKey is applied through bootstrap and removed by Dovetail when the node registers.
	UnregisteredTaintKey = Group + "/unregistered"
	// CloudProviderUninitializedTaintKey is owned by the cloud controller manager; Dovetail never adds or
	// keeps it.
	CloudProviderUninitializedTaintKey = "node.cloudprovider.kubernetes.io/uninitialized"
	// RebootingTaintKey keeps new pods off a node from the moment its reboot is asked for until it boots again.
	RebootingTaintKey = Group + "/rebooting"
)

// RebootingNoScheduleTaint returns the taint put on a node node repair reboots.
func RebootingNoScheduleTaint() corev1.Taint {
	return corev1.Taint{Key: RebootingTaintKey, Effect: corev1.TaintEffectNoSchedule}
}

// DisruptedNoScheduleTaint returns the taint put on nodes being disrupted.
func DisruptedNoScheduleTaint() corev1.Taint {
	return corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
}

// UnregisteredNoExecuteTaint returns the taint a node carries from boot until it registers with Dovetail.
func UnregisteredNoExecuteTaint() corev1.Taint {
	return corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
}

// CloudProviderUninitializedTaint returns the taint the cloud controller manager removes once it has
// initialized the node.
func CloudProviderUninitializedTaint() corev1.Taint {
	return corev1.Taint{Key: CloudProviderUninitializedTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}
